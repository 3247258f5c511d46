// Remote keys and memory access over the transport: the rkey wire format
// (round trip, every malformed form refused), put/get/atomics by ticket
// between two interfaces of one job, ranges outside the registration
// refused, and a lost peer failing its endpoints with an error naming it.
#include "uct_fixture.hpp"

extern "C" {
#include "uct_hpam_rkey.h"
}

using namespace hpam_uct_test;

namespace {

uct_hpam_memh_t sample_memh() {
  uct_hpam_memh_t m{};
  for (int i = 0; i < HPAM_TICKET_BYTES; ++i) m.ticket.bytes[i] = uint8_t(i * 7 + 1);
  m.base = 0x7f0000001000ull;
  m.length = 4096;
  return m;
}

TEST(uct_rkey, pack_unpack_round_trip) {
  const uct_hpam_memh_t m = sample_memh();
  unsigned char buf[sizeof(uct_hpam_packed_rkey_t) + 1];
  uct_hpam_rkey_pack(&m, 5, 0x1234, buf + 1);  // any alignment
  uct_hpam_rkey_t r{};
  char err[160];
  ASSERT_EQ(0, uct_hpam_rkey_unpack(buf + 1, &r, err, sizeof err)) << err;
  EXPECT_EQ(0, std::memcmp(&m.ticket, &r.ticket, sizeof r.ticket));
  EXPECT_EQ(m.base, r.base);
  EXPECT_EQ(m.length, r.length);
  EXPECT_EQ(5u, r.owner);
  EXPECT_EQ(0x1234u, r.job_hash);
}

TEST(uct_rkey, malformed_is_refused) {
  const uct_hpam_memh_t m = sample_memh();
  struct mutation {
    const char* what;
    void (*apply)(uct_hpam_packed_rkey_t&);
    const char* message;
  } cases[] = {
      {"magic", [](uct_hpam_packed_rkey_t& p) { p.magic ^= 1; }, "not an hpam remote key"},
      {"version", [](uct_hpam_packed_rkey_t& p) { p.version = 2; }, "of version 2"},
      {"size", [](uct_hpam_packed_rkey_t& p) { p.size = 40; }, "size 40"},
      {"reserved", [](uct_hpam_packed_rkey_t& p) { p.reserved = 1; }, "malformed"},
      {"length 0", [](uct_hpam_packed_rkey_t& p) { p.length = 0; }, "malformed"},
      {"wraps", [](uct_hpam_packed_rkey_t& p) { p.base = ~0ull - 10; }, "malformed"},
  };
  for (const auto& c : cases) {
    uct_hpam_packed_rkey_t p;
    uct_hpam_rkey_pack(&m, 1, 2, &p);
    c.apply(p);
    uct_hpam_rkey_t r{};
    char err[160] = "";
    EXPECT_EQ(-1, uct_hpam_rkey_unpack(&p, &r, err, sizeof err)) << c.what;
    EXPECT_NE(nullptr, std::strstr(err, c.message)) << c.what << ": " << err;
  }
}

TEST(uct_rkey, offset_stays_inside_the_registration) {
  uct_hpam_rkey_t r{};
  r.base = 1000;
  r.length = 100;
  uint64_t off = 77;
  EXPECT_EQ(0, uct_hpam_rkey_offset(&r, 1000, 100, &off));
  EXPECT_EQ(0u, off);
  EXPECT_EQ(0, uct_hpam_rkey_offset(&r, 1092, 8, &off));
  EXPECT_EQ(92u, off);
  EXPECT_EQ(0, uct_hpam_rkey_offset(&r, 1100, 0, &off));
  EXPECT_EQ(-1, uct_hpam_rkey_offset(&r, 1093, 8, &off));
  EXPECT_EQ(-1, uct_hpam_rkey_offset(&r, 999, 1, &off));
  EXPECT_EQ(-1, uct_hpam_rkey_offset(&r, 1101, 0, &off));
  EXPECT_EQ(-1, uct_hpam_rkey_offset(&r, 1050, ~0ull, &off));
}

// The card, and whether deposits go by cross-memory attach or (as where the
// kernel forbids it) by packets that the owner deposits when it polls.
// The target memory: registered by the user, or allocated by the memory
// domain (card memory: peers write it and do its atomics directly).
struct rma_case {
  const char* nic;
  const char* cross_memory;
  bool allocated = false;
};

class uct_rma : public ::testing::TestWithParam<rma_case> {
 protected:
  void SetUp() override {
    ASSERT_EQ(UCS_OK, open_md({{"JOB", unique_job()},
                               {"NIC", GetParam().nic},
                               {"CROSS_MEMORY", GetParam().cross_memory},
                               {"GIVE_UP_MS", "500"}},
                              &md));
    ASSERT_EQ(UCS_OK, a.open(md, GetParam().nic));
    ASSERT_EQ(UCS_OK, b.open(md, GetParam().nic));
    ASSERT_EQ(UCS_OK, connect(a, b, &ab));
    if (GetParam().allocated) {
      ASSERT_EQ(UCS_OK, allocate_on(md, sizeof own, &mem));
      ASSERT_EQ(UCT_ALLOC_METHOD_MD, mem.method);
      target = static_cast<uint64_t*>(mem.address);
      memh = mem.memh;
      for (int i = 0; i < 64; ++i) ASSERT_EQ(0u, target[i]);  // zeroed
    } else {
      ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, target, sizeof own, UCT_MD_MEM_ACCESS_ALL, &memh));
    }
    std::vector<uint8_t> packed(88);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, memh, packed.data()));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(hpam_component(), packed.data(), &rkey));
  }
  void TearDown() override {
    if (rkey.rkey) uct_rkey_release(hpam_component(), &rkey);
    if (ab) uct_ep_destroy(ab);
    close_together({&a, &b});
    if (GetParam().allocated && memh) {
      uct_mem_free(&mem);
    } else if (memh) {
      uct_md_mem_dereg(md, memh);
    }
    if (md) uct_md_close(md);
  }
  // Retries while the transport says "not now" (the hello is under way).
  template <class Op>
  ucs_status_t start(Op op) {
    ucs_status_t st = UCS_ERR_NO_RESOURCE;
    progress_until({&a, &b}, [&] { return (st = op()) != UCS_ERR_NO_RESOURCE; });
    return st;
  }
  template <class Op>
  ucs_status_t run(Op op) {
    completion c;
    const ucs_status_t st = start([&] { return op(&c.comp); });
    if (st != UCS_INPROGRESS) return st;
    EXPECT_TRUE(progress_until({&a, &b}, [&] { return c.done; }));
    return c.status;
  }
  uint64_t addr(size_t i) const { return reinterpret_cast<uint64_t>(&target[i]); }
  // A well-formed rkey of the target with a forged protection key (bytes
  // 16-23 of the ticket, nic/hamlyn/ticket.hpp).
  void forge(uct_rkey_bundle_t* forged) {
    std::vector<uint8_t> packed(88);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, memh, packed.data()));
    reinterpret_cast<uct_hpam_packed_rkey_t*>(packed.data())->ticket.bytes[16] ^= 0x5a;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(hpam_component(), packed.data(), forged));
  }

  uct_md_h md = nullptr;
  side a, b;
  uct_ep_h ab = nullptr;
  uct_mem_h memh = nullptr;
  uct_rkey_bundle_t rkey{};
  alignas(64) uint64_t own[64] = {};
  uint64_t* target = own;  // own, or the domain's allocation
  uct_allocated_memory_t mem{};
};

// A flush completes a put remotely: the bytes are in the target's memory,
// whichever path the deposit took (by packets: once the owner deposited them).
TEST_P(uct_rma, put_get_between_interfaces) {
  const uint64_t v = 0x1122334455667788ull;
  ASSERT_EQ(UCS_OK, start([&] { return uct_ep_put_short(ab, &v, 8, addr(3), rkey.rkey); }));
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return uct_ep_flush(ab, 0, nullptr) == UCS_OK; }));
  EXPECT_EQ(v, target[3]);
  uint64_t block[16];
  for (int i = 0; i < 16; ++i) block[i] = 100 + i;
  uct_iov_t iov{block, sizeof block, nullptr, 0, 1};
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_put_zcopy(ab, &iov, 1, addr(16), rkey.rkey, c);
            }));
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return uct_ep_flush(ab, 0, nullptr) == UCS_OK; }));
  EXPECT_EQ(0, std::memcmp(block, &target[16], sizeof block));
  uint64_t back[16] = {};
  uct_iov_t into{back, sizeof back, nullptr, 0, 1};
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_get_zcopy(ab, &into, 1, addr(16), rkey.rkey, c);
            }));
  EXPECT_EQ(0, std::memcmp(block, back, sizeof back));
  struct unpacked {
    uint64_t words[4];
    static void unpack(void* arg, const void* data, size_t length) {
      std::memcpy(static_cast<unpacked*>(arg)->words, data, length);
    }
  } u{};
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_get_bcopy(ab, unpacked::unpack, &u, sizeof u.words, addr(16), rkey.rkey,
                                      c);
            }));
  EXPECT_EQ(100u, u.words[0]);
  EXPECT_EQ(103u, u.words[3]);
}

// An interface flush covers what UCX queued on an endpoint's pending queue
// before it (UCX's worker flush asks the interfaces only): the put waiting
// there has landed when the flush says done.
TEST_P(uct_rma, interface_flush_waits_for_pending_requests) {
  struct put_req {
    uct_pending_req_t req{};
    uct_ep_h ep;
    uint64_t remote;
    uct_rkey_t rkey;
    uint64_t value = 0x5555aaaa5555aaaaull;
    int calls = 0;
  } p;
  p.ep = ab;
  p.remote = addr(5);
  p.rkey = rkey.rkey;
  p.req.func = [](uct_pending_req_t* r) {
    auto* q = reinterpret_cast<put_req*>(r);
    q->calls++;
    return uct_ep_put_short(q->ep, &q->value, 8, q->remote, q->rkey);
  };
  ASSERT_EQ(UCS_OK, uct_ep_pending_add(ab, &p.req, 0));
  EXPECT_EQ(UCS_INPROGRESS, uct_iface_flush(a.iface, 0, nullptr));
  EXPECT_EQ(0u, target[5]);
  ASSERT_TRUE(
      progress_until({&a, &b}, [&] { return uct_iface_flush(a.iface, 0, nullptr) == UCS_OK; }));
  EXPECT_GE(p.calls, 1);
  EXPECT_EQ(p.value, target[5]);
}

TEST_P(uct_rma, atomics_are_atomic_at_the_target) {
  target[0] = 10;
  uint64_t old = 0;
  ASSERT_EQ(UCS_OK, start([&] {
              return uct_ep_atomic64_post(ab, UCT_ATOMIC_OP_ADD, 5, addr(0), rkey.rkey);
            }));
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_atomic64_fetch(ab, UCT_ATOMIC_OP_ADD, 1, &old, addr(0), rkey.rkey, c);
            }));
  EXPECT_EQ(15u, old);  // the post before it completed first
  EXPECT_EQ(16u, target[0]);
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_atomic64_fetch(ab, UCT_ATOMIC_OP_SWAP, 99, &old, addr(0), rkey.rkey, c);
            }));
  EXPECT_EQ(16u, old);
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_atomic_cswap64(ab, 98, 7, addr(0), rkey.rkey, &old, c);
            }));
  EXPECT_EQ(99u, old);  // no match: unchanged
  EXPECT_EQ(99u, target[0]);
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_atomic_cswap64(ab, 99, 7, addr(0), rkey.rkey, &old, c);
            }));
  EXPECT_EQ(7u, target[0]);
  auto* words = reinterpret_cast<uint32_t*>(&target[1]);
  words[0] = 0xf0;
  words[1] = 0x5555;
  uint32_t old32 = 0;
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_atomic32_fetch(ab, UCT_ATOMIC_OP_OR, 0x0f, &old32, addr(1), rkey.rkey,
                                           c);
            }));
  EXPECT_EQ(0xf0u, old32);
  ASSERT_EQ(UCS_OK, run([&](uct_completion_t* c) {
              return uct_ep_atomic_cswap32(ab, 0xff, 1, addr(1), rkey.rkey, &old32, c);
            }));
  EXPECT_EQ(1u, words[0]);
  EXPECT_EQ(0x5555u, words[1]);  // the neighbouring word is untouched
  EXPECT_EQ(UCS_ERR_UNSUPPORTED,
            uct_ep_atomic64_post(ab, UCT_ATOMIC_OP_SWAP, 1, addr(0), rkey.rkey));
}

TEST_P(uct_rma, outside_the_registration_is_refused) {
  const uint64_t v = 1;
  log_capture log;
  EXPECT_EQ(UCS_ERR_INVALID_PARAM,
            start([&] { return uct_ep_put_short(ab, &v, 8, addr(64), rkey.rkey); }));
  EXPECT_TRUE(log.contains("is not inside the registration")) << log.all();
  EXPECT_EQ(UCS_ERR_INVALID_PARAM,
            start([&] { return uct_ep_put_short(ab, &v, 8, addr(0) - 8, rkey.rkey); }));
}

// A well-formed rkey with a forged protection key (bytes 16-23 of the
// ticket, nic/hamlyn/ticket.hpp) among good puts: the owner's deposit card
// refuses each forged put and counts it, no byte of it is written, and every
// good put around it lands. The put itself says rejected where the checks
// run within the call (card memory, this process's memory by cross-memory
// attach); by packets the owner refuses it when it serves them, after the
// put completed locally (UCX's put completion is local; the flush is not an
// acknowledgement of each deposit).
TEST_P(uct_rma, forged_key_among_puts_is_refused_counted_the_rest_lands) {
  uct_rkey_bundle_t forged{};
  ASSERT_NO_FATAL_FAILURE(forge(&forged));
  hpam_dep_counters_t before, after;
  uct_hpam_md_dep_counters(md, &before);
  constexpr int n = 8;
  uint64_t v[n];
  completion c[n];
  ucs_status_t st[n];
  for (int i = 0; i < n; ++i) {
    v[i] = 0xF00D0000u + static_cast<uint64_t>(i);
    uct_iov_t from{&v[i], 8, nullptr, 0, 1};
    const uct_rkey_t key = i % 2 ? forged.rkey : rkey.rkey;
    st[i] = start([&] { return uct_ep_put_zcopy(ab, &from, 1, addr(i), key, &c[i].comp); });
  }
  const bool by_packets = !GetParam().allocated && std::string(GetParam().cross_memory) == "n";
  for (int i = 0; i < n; ++i) {
    if (st[i] == UCS_INPROGRESS) {
      ASSERT_TRUE(progress_until({&a, &b}, [&] { return c[i].done; })) << i;
      st[i] = c[i].status;
    }
    EXPECT_EQ(i % 2 && !by_packets ? UCS_ERR_REJECTED : UCS_OK, st[i]) << i;
  }
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return uct_ep_flush(ab, 0, nullptr) == UCS_OK; }));
  for (int i = 0; i < n; ++i) EXPECT_EQ(i % 2 ? 0u : v[i], target[i]) << i;
  uct_hpam_md_dep_counters(md, &after);
  // By packets the flush's mark (a one-byte get with the last put's ticket,
  // uct_hpam_flush.c) is refused and counted too.
  EXPECT_EQ(before.key_rejections + n / 2 + (by_packets ? 1 : 0), after.key_rejections);
  uct_rkey_release(hpam_component(), &forged);
}

// A stream of gets, UCX's progress after each (as ucx_perftest's get
// stream): every good one reads its word, a forged key in the middle is
// refused (and counted by the owner's card), the rest land. Into user
// memory by cross-memory attach the stream waits while it grows and goes as
// one batch at the first progress with nothing new (hpam_dep_poll).
TEST_P(uct_rma, a_stream_of_gets_lands_a_forged_key_in_it_is_refused) {
  for (int i = 0; i < 64; ++i) target[i] = 0xC0DE0000u + static_cast<uint64_t>(i);
  uct_rkey_bundle_t forged{};
  ASSERT_NO_FATAL_FAILURE(forge(&forged));
  hpam_dep_counters_t before, after;
  uct_hpam_md_dep_counters(md, &before);
  constexpr int n = 48;
  uint64_t got[n] = {};
  completion c[n];
  ucs_status_t st[n];
  const uct_unpack_callback_t unpack = [](void* arg, const void* data, size_t length) {
    std::memcpy(arg, data, length);
  };
  for (int i = 0; i < n; ++i) {
    const uct_rkey_t key = i == 20 ? forged.rkey : rkey.rkey;
    st[i] =
        start([&] { return uct_ep_get_bcopy(ab, unpack, &got[i], 8, addr(i), key, &c[i].comp); });
    a.progress();
  }
  const bool batched = !GetParam().allocated && std::string(GetParam().cross_memory) == "y";
  if (batched) {
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(UCS_INPROGRESS, st[i]) << i;
      EXPECT_FALSE(c[i].done) << i << ": carried out while the stream grew";
    }
    a.progress();  // nothing new: the batch goes, and completes
    for (int i = 0; i < n; ++i) EXPECT_TRUE(c[i].done) << i;
  }
  for (int i = 0; i < n; ++i) {
    if (st[i] == UCS_INPROGRESS) {
      ASSERT_TRUE(progress_until({&a, &b}, [&] { return c[i].done; })) << i;
      st[i] = c[i].status;
    }
    EXPECT_EQ(i == 20 ? UCS_ERR_REJECTED : UCS_OK, st[i]) << i;
    EXPECT_EQ(i == 20 ? 0u : target[i], got[i]) << i;
  }
  uct_hpam_md_dep_counters(md, &after);
  EXPECT_EQ(before.key_rejections + 1, after.key_rejections);
  uct_rkey_release(hpam_component(), &forged);
}

TEST_P(uct_rma, tampered_rkey_is_refused_by_unpack) {
  std::vector<uint8_t> packed(88);
  ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, memh, packed.data()));
  packed[0] ^= 0xff;
  uct_rkey_bundle_t bad{};
  log_capture log;
  EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_unpack(hpam_component(), packed.data(), &bad));
  EXPECT_TRUE(log.contains("not an hpam remote key")) << log.all();
}

// The peer stops answering (its interface is gone): after the give-up time
// its endpoints fail through UCX's error handler, and the error names it.
TEST_P(uct_rma, lost_peer_fails_its_endpoints_naming_it) {
  ASSERT_EQ(UCS_OK,
            uct_iface_set_am_handler(
                b.iface, 3, [](void*, void*, size_t, unsigned) { return UCS_OK; }, nullptr, 0));
  b.close();  // serves until its drain gives up on a (0.5 s), then removes its card
  log_capture log;
  ASSERT_EQ(UCS_OK, uct_ep_am_short(ab, 3, 0, nullptr, 0));
  ASSERT_TRUE(progress_until(
      {&a}, [&] { return !a.errors.empty(); }, 20))
      << log.all();
  EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, a.errors[0]);
  EXPECT_TRUE(log.contains("hpam: lost peer: process")) << log.all();
  EXPECT_TRUE(log.contains("pid " + std::to_string(getpid()))) << log.all();
  EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, uct_ep_am_short(ab, 3, 0, nullptr, 0));
  EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, uct_ep_flush(ab, 0, nullptr));
}

// Card memory from the domain's allocation: a peer's put, get and atomics
// are done within the call (a copy or a CPU atomic on the mapped card), with
// no progress by anyone, even where cross-memory attach is forbidden.
TEST(uct_card_memory, peers_write_read_and_update_it_within_the_call) {
  uct_md_h md = nullptr;
  ASSERT_EQ(UCS_OK,
            open_md({{"JOB", unique_job()}, {"NIC", "hamlyn"}, {"CROSS_MEMORY", "n"}}, &md));
  side a, b;
  ASSERT_EQ(UCS_OK, a.open(md, "hamlyn"));
  ASSERT_EQ(UCS_OK, b.open(md, "hamlyn"));
  uct_ep_h ab = nullptr;
  ASSERT_EQ(UCS_OK, connect(a, b, &ab));
  uct_allocated_memory_t mem{};
  ASSERT_EQ(UCS_OK, allocate_on(md, 4096, &mem));
  EXPECT_EQ(UCT_HPAM_MEMH_CARD, static_cast<uct_hpam_memh_t*>(mem.memh)->allocated);
  auto* words = static_cast<uint64_t*>(mem.address);
  std::vector<uint8_t> packed(88);
  ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, mem.memh, packed.data()));
  uct_rkey_bundle_t rkey{};
  ASSERT_EQ(UCS_OK, uct_rkey_unpack(hpam_component(), packed.data(), &rkey));
  const uint64_t at = reinterpret_cast<uint64_t>(words);
  const uint64_t v = 0xC0FFEE0123456789ull;
  ucs_status_t st = UCS_ERR_NO_RESOURCE;
  ASSERT_TRUE(progress_until({&a, &b}, [&] {  // (the hello first)
    return (st = uct_ep_put_short(ab, &v, 8, at + 8, rkey.rkey)) != UCS_ERR_NO_RESOURCE;
  }));
  ASSERT_EQ(UCS_OK, st);
  EXPECT_EQ(v, words[1]);  // there on return
  const uint64_t w = 0x0102030405060708ull;
  ASSERT_EQ(UCS_OK, uct_ep_put_short(ab, &w, 8, at + 4088, rkey.rkey));
  EXPECT_EQ(w, words[511]);
  uint64_t old = 0;
  completion c;
  ASSERT_EQ(UCS_OK,
            uct_ep_atomic64_fetch(ab, UCT_ATOMIC_OP_ADD, 5, &old, at + 8, rkey.rkey, &c.comp));
  EXPECT_EQ(v, old);  // done within the call: no completion to wait for
  EXPECT_EQ(v + 5, words[1]);
  ASSERT_EQ(UCS_OK, uct_ep_atomic_cswap64(ab, v + 5, 3, at + 8, rkey.rkey, &old, &c.comp));
  EXPECT_EQ(3u, words[1]);
  uint64_t back = 0;
  uct_iov_t into{&back, 8, nullptr, 0, 1};
  ASSERT_EQ(UCS_OK, uct_ep_get_zcopy(ab, &into, 1, at + 4088, rkey.rkey, &c.comp));
  EXPECT_EQ(w, back);
  EXPECT_FALSE(c.done);  // no callback for what completed within its call
  log_capture log;
  EXPECT_EQ(UCS_ERR_INVALID_PARAM,
            uct_ep_put_short(ab, &v, 8, at + 4090, rkey.rkey));  // past its end
  EXPECT_EQ(3u, words[1]);
  uct_rkey_release(hpam_component(), &rkey);
  uct_ep_destroy(ab);
  close_together({&a, &b});
  uct_mem_free(&mem);
  uct_md_close(md);
}

// Card memory is counted against the card's memory (CARD_MEMORY): once it
// is used up, allocations get private memory (registered as mem_reg would),
// which works the same; freed card memory is allocated again.
TEST(uct_card_memory, running_out_falls_back_to_private_memory) {
  uct_md_h md = nullptr;
  ASSERT_EQ(UCS_OK,
            open_md({{"JOB", unique_job()}, {"NIC", "hamlyn"}, {"CARD_MEMORY", "65536"}}, &md));
  side a, b;
  ASSERT_EQ(UCS_OK, a.open(md, "hamlyn"));
  ASSERT_EQ(UCS_OK, b.open(md, "hamlyn"));
  uct_ep_h ab = nullptr;
  ASSERT_EQ(UCS_OK, connect(a, b, &ab));
  uct_allocated_memory_t card{}, more{}, again{};
  ASSERT_EQ(UCS_OK, allocate_on(md, 48 * 1024, &card));
  ASSERT_EQ(UCS_OK, allocate_on(md, 48 * 1024, &more));
  EXPECT_EQ(UCT_HPAM_MEMH_CARD, static_cast<uct_hpam_memh_t*>(card.memh)->allocated);
  EXPECT_EQ(UCT_HPAM_MEMH_PRIVATE, static_cast<uct_hpam_memh_t*>(more.memh)->allocated);
  EXPECT_EQ(UCT_ALLOC_METHOD_MD, more.method);
  auto* words = static_cast<uint64_t*>(more.address);
  for (size_t i = 0; i < 6 * 1024; ++i) ASSERT_EQ(0u, words[i]);  // zeroed too
  std::vector<uint8_t> packed(88);
  ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, more.memh, packed.data()));
  uct_rkey_bundle_t rkey{};
  ASSERT_EQ(UCS_OK, uct_rkey_unpack(hpam_component(), packed.data(), &rkey));
  const uint64_t v = 77;
  ucs_status_t st = UCS_ERR_NO_RESOURCE;
  ASSERT_TRUE(progress_until({&a, &b}, [&] {
    return (st = uct_ep_put_short(ab, &v, 8, reinterpret_cast<uint64_t>(&words[100]), rkey.rkey)) !=
           UCS_ERR_NO_RESOURCE;
  }));
  ASSERT_EQ(UCS_OK, st);
  ASSERT_TRUE(progress_until({&a, &b}, [&] { return uct_ep_flush(ab, 0, nullptr) == UCS_OK; }));
  EXPECT_EQ(v, words[100]);
  uct_rkey_release(hpam_component(), &rkey);
  uct_mem_free(&card);
  ASSERT_EQ(UCS_OK, allocate_on(md, 48 * 1024, &again));
  EXPECT_EQ(UCT_HPAM_MEMH_CARD, static_cast<uct_hpam_memh_t*>(again.memh)->allocated);
  uct_mem_free(&again);
  uct_mem_free(&more);
  uct_ep_destroy(ab);
  close_together({&a, &b});
  uct_md_close(md);
}

INSTANTIATE_TEST_SUITE_P(nics, uct_rma,
                         ::testing::Values(rma_case{"medusa", "y"}, rma_case{"hamlyn", "y"},
                                           rma_case{"medusa", "n"}, rma_case{"hamlyn", "n"},
                                           rma_case{"medusa", "y", true},
                                           rma_case{"hamlyn", "n", true}),
                         [](const ::testing::TestParamInfo<rma_case>& i) {
                           return std::string(i.param.nic) +
                                  (*i.param.cross_memory == 'y' ? "_cross_memory" : "_packets") +
                                  (i.param.allocated ? "_card_memory" : "");
                         });

}  // namespace
