// UCX's atomics into card memory (memory the hpam domain allocated): every
// entry (posted, fetching, compare-and-swap; 32 and 64 bits) completes
// within the call, UCS_OK with the old value written and no completion
// called, as posix's do; and an rkey forged or stale (a wrong key, another
// allocation's slot with this one's key, a range widened past the
// allocation, memory freed or set up again since) is refused by the
// owner's card, counted, and changes no byte.
#include <algorithm>
#include <cstring>
#include <vector>

#include "uct_fixture.hpp"

extern "C" {
#include "uct_hpam_rkey.h"
}

using namespace hpam_uct_test;

namespace {

class uct_card_atomics : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(UCS_OK,
              open_md({{"JOB", unique_job()}, {"NIC", "hamlyn"}, {"CROSS_MEMORY", "n"}}, &md));
    ASSERT_EQ(UCS_OK, a.open(md, "hamlyn"));
    ASSERT_EQ(UCS_OK, b.open(md, "hamlyn"));
    ASSERT_EQ(UCS_OK, connect(a, b, &ab));
  }
  void TearDown() override {
    if (ab) uct_ep_destroy(ab);
    close_together({&a, &b});
    if (md) uct_md_close(md);
  }
  // memh's packed rkey, changed by `edit`, unpacked.
  template <class Edit>
  uct_rkey_bundle_t rkey_of(uct_mem_h memh, Edit edit) {
    std::vector<uint8_t> packed(88);
    EXPECT_EQ(UCS_OK, uct_md_mkey_pack(md, memh, packed.data()));
    edit(*reinterpret_cast<uct_hpam_packed_rkey_t*>(packed.data()));
    uct_rkey_bundle_t r{};
    EXPECT_EQ(UCS_OK, uct_rkey_unpack(hpam_component(), packed.data(), &r));
    return r;
  }
  uct_rkey_bundle_t rkey_of(uct_mem_h memh) {
    return rkey_of(memh, [](uct_hpam_packed_rkey_t&) {});
  }
  hpam_dep_counters_t counters() {
    hpam_dep_counters_t c;
    uct_hpam_md_dep_counters(md, &c);
    return c;
  }
  // Every atomic entry at `at` with rkey: each returns `expect`, writes no
  // result and calls no completion. Returns how many ran.
  int each_refused(uint64_t at, uct_rkey_t rkey, ucs_status_t expect) {
    const uint64_t untouched = 0x5EED5EED5EED5EEDull;
    int n = 0;
    auto check = [&](ucs_status_t st, uint64_t result, const char* what) {
      EXPECT_EQ(expect, st) << what;
      EXPECT_EQ(untouched, result) << what;
      ++n;
    };
    for (unsigned op = UCT_ATOMIC_OP_ADD; op <= UCT_ATOMIC_OP_XOR; ++op) {
      check(uct_ep_atomic64_post(ab, static_cast<uct_atomic_op_t>(op), 1, at, rkey), untouched,
            "post64");
      check(uct_ep_atomic32_post(ab, static_cast<uct_atomic_op_t>(op), 1, at, rkey), untouched,
            "post32");
    }
    completion c;
    for (unsigned op = UCT_ATOMIC_OP_ADD; op <= UCT_ATOMIC_OP_SWAP; ++op) {
      uint64_t r64 = untouched;
      check(uct_ep_atomic64_fetch(ab, static_cast<uct_atomic_op_t>(op), 1, &r64, at, rkey, &c.comp),
            r64, "fetch64");
      uint64_t r32 = untouched;
      check(uct_ep_atomic32_fetch(ab, static_cast<uct_atomic_op_t>(op), 1,
                                  reinterpret_cast<uint32_t*>(&r32), at, rkey, &c.comp),
            r32, "fetch32");
    }
    uint64_t r64 = untouched, r32 = untouched;
    check(uct_ep_atomic_cswap64(ab, 0, 1, at, rkey, &r64, &c.comp), r64, "cswap64");
    check(uct_ep_atomic_cswap32(ab, 0, 1, at, rkey, reinterpret_cast<uint32_t*>(&r32), &c.comp),
          r32, "cswap32");
    EXPECT_FALSE(c.done);
    return n;
  }

  // The first atomic of a test: an add of v, retried while the endpoint
  // waits for the peer's hello (UCS_ERR_NO_RESOURCE); what it returned then.
  ucs_status_t first_add(uint64_t v, uint64_t at, uct_rkey_t rkey) {
    ucs_status_t st = UCS_ERR_NO_RESOURCE;
    EXPECT_TRUE(progress_until({&a, &b}, [&] {
      return (st = uct_ep_atomic64_post(ab, UCT_ATOMIC_OP_ADD, v, at, rkey)) != UCS_ERR_NO_RESOURCE;
    }));
    return st;
  }

  uct_md_h md = nullptr;
  side a, b;
  uct_ep_h ab = nullptr;
};

// Card memory of the domain, a pattern in it, and a copy to compare.
struct card_words {
  uct_allocated_memory_t mem{};
  uint64_t* words = nullptr;
  std::vector<uint64_t> copy;
  card_words(uct_md_h md, uint64_t seed) {
    EXPECT_EQ(UCS_OK, allocate_on(md, 256, &mem));
    EXPECT_EQ(UCT_HPAM_MEMH_CARD, static_cast<uct_hpam_memh_t*>(mem.memh)->allocated);
    words = static_cast<uint64_t*>(mem.address);
    for (int i = 0; i < 32; ++i) words[i] = seed * 0x0101010101010101ull + i;
    keep();
  }
  void keep() { copy.assign(words, words + 32); }
  bool unchanged() const { return std::equal(copy.begin(), copy.end(), words); }
  uint64_t at(int i) const { return reinterpret_cast<uint64_t>(&words[i]); }
};

TEST_F(uct_card_atomics, every_form_completes_within_the_call_with_its_old_value) {
  card_words x(md, 3);
  uct_rkey_bundle_t rkey = rkey_of(x.mem.memh);
  ASSERT_EQ(UCS_OK, first_add(5, x.at(0), rkey.rkey));
  EXPECT_EQ(x.copy[0] + 5, x.words[0]);
  completion c;
  uint64_t old = 0;
  uint32_t old32 = 0;
  const uint64_t w1 = x.words[1];
  ASSERT_EQ(UCS_OK,
            uct_ep_atomic64_fetch(ab, UCT_ATOMIC_OP_ADD, 7, &old, x.at(1), rkey.rkey, &c.comp));
  EXPECT_EQ(w1, old);
  EXPECT_EQ(w1 + 7, x.words[1]);
  ASSERT_EQ(UCS_OK,
            uct_ep_atomic64_fetch(ab, UCT_ATOMIC_OP_SWAP, 99, &old, x.at(1), rkey.rkey, &c.comp));
  EXPECT_EQ(w1 + 7, old);
  EXPECT_EQ(99u, x.words[1]);
  ASSERT_EQ(UCS_OK, uct_ep_atomic_cswap64(ab, 98, 1, x.at(1), rkey.rkey, &old, &c.comp));
  EXPECT_EQ(99u, old);  // no swap
  EXPECT_EQ(99u, x.words[1]);
  ASSERT_EQ(UCS_OK, uct_ep_atomic_cswap64(ab, 99, 1, x.at(1), rkey.rkey, &old, &c.comp));
  EXPECT_EQ(1u, x.words[1]);
  // 32 bits: the low word of words[2] (little-endian) alone.
  const uint64_t w2 = x.words[2];
  ASSERT_EQ(UCS_OK, uct_ep_atomic32_fetch(ab, UCT_ATOMIC_OP_XOR, 0xFFFFFFFFu, &old32, x.at(2),
                                          rkey.rkey, &c.comp));
  EXPECT_EQ(static_cast<uint32_t>(w2), old32);
  EXPECT_EQ(w2 ^ 0xFFFFFFFFull, x.words[2]);
  ASSERT_EQ(UCS_OK, uct_ep_atomic_cswap32(ab, static_cast<uint32_t>(~w2), 7, x.at(2), rkey.rkey,
                                          &old32, &c.comp));
  EXPECT_EQ((w2 & ~0xFFFFFFFFull) | 7u, x.words[2]);
  ASSERT_EQ(UCS_OK, uct_ep_atomic32_post(ab, UCT_ATOMIC_OP_OR, 0x80, x.at(3), rkey.rkey));
  EXPECT_EQ(x.copy[3] | 0x80u, x.words[3]);
  EXPECT_FALSE(c.done);  // no completion for what completed within its call
  uct_rkey_release(hpam_component(), &rkey);
  uct_mem_free(&x.mem);
}

TEST_F(uct_card_atomics, a_forged_or_stale_rkey_is_refused_counted_and_changes_no_byte) {
  card_words x(md, 3), y(md, 101);
  uct_rkey_bundle_t good = rkey_of(x.mem.memh);
  ASSERT_EQ(UCS_OK, first_add(0, x.at(0), good.rkey));
  hpam_dep_counters_t before = counters();

  // Ticket bytes (nic/hamlyn/ticket.hpp): slot 4-7, key 16-23, range 32-39.
  uct_rkey_bundle_t wrong_key =
      rkey_of(x.mem.memh, [](uct_hpam_packed_rkey_t& p) { p.ticket.bytes[16] ^= 0x5a; });
  uint32_t y_slot;
  {
    std::vector<uint8_t> packed(88);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, y.mem.memh, packed.data()));
    std::memcpy(&y_slot, reinterpret_cast<uct_hpam_packed_rkey_t*>(packed.data())->ticket.bytes + 4,
                4);
  }
  uct_rkey_bundle_t other_slot = rkey_of(
      x.mem.memh, [&](uct_hpam_packed_rkey_t& p) { std::memcpy(p.ticket.bytes + 4, &y_slot, 4); });
  int n = each_refused(x.at(4), wrong_key.rkey, UCS_ERR_REJECTED);
  n += each_refused(x.at(4), other_slot.rkey, UCS_ERR_REJECTED);
  EXPECT_EQ(before.key_rejections + n, counters().key_rejections);
  EXPECT_TRUE(x.unchanged());
  EXPECT_TRUE(y.unchanged());

  // Past the end: the rkey's own range refuses it before the card (nothing
  // counted); widened, with its ticket, the slot's bound refuses it.
  before = counters();
  {
    log_capture log;
    each_refused(x.at(32), good.rkey, UCS_ERR_INVALID_PARAM);
  }
  uct_rkey_bundle_t wide = rkey_of(x.mem.memh, [](uct_hpam_packed_rkey_t& p) {
    p.length += 4096;
    uint64_t range;
    std::memcpy(&range, p.ticket.bytes + 32, 8);
    range += 4096;
    std::memcpy(p.ticket.bytes + 32, &range, 8);
  });
  n = each_refused(x.at(32), wide.rkey, UCS_ERR_REJECTED);
  n += each_refused(x.at(32 + 64), wide.rkey, UCS_ERR_REJECTED);
  EXPECT_EQ(before.bounds_rejections + n, counters().bounds_rejections);
  EXPECT_EQ(before.key_rejections, counters().key_rejections);
  EXPECT_TRUE(x.unchanged());
  EXPECT_TRUE(y.unchanged());
  ASSERT_EQ(UCS_OK, uct_ep_atomic64_post(ab, UCT_ATOMIC_OP_ADD, 0, x.at(31), wide.rkey))
      << "inside the slot, a widened rkey still works";

  // Freed: y's rkey is refused (the slot revoked or free), counted; then set
  // up again (the same slot, a new key): the old rkey changes nothing there.
  uct_rkey_bundle_t y_rkey = rkey_of(y.mem.memh);
  ASSERT_EQ(UCS_OK, uct_ep_atomic64_post(ab, UCT_ATOMIC_OP_ADD, 0, y.at(0), y_rkey.rkey));
  uct_mem_free(&y.mem);
  before = counters();
  n = each_refused(y.at(0), y_rkey.rkey, UCS_ERR_REJECTED);
  EXPECT_EQ(before.revoked_rejections + n, counters().revoked_rejections);
  card_words z(md, 55);
  before = counters();
  n = each_refused(y.at(0), y_rkey.rkey, UCS_ERR_REJECTED);
  const hpam_dep_counters_t now = counters();
  EXPECT_EQ(before.key_rejections + before.revoked_rejections + n,
            now.key_rejections + now.revoked_rejections);
  EXPECT_TRUE(z.unchanged());
  EXPECT_TRUE(x.unchanged());

  for (uct_rkey_bundle_t* r : {&good, &wrong_key, &other_slot, &wide, &y_rkey})
    uct_rkey_release(hpam_component(), r);
  uct_mem_free(&z.mem);
  uct_mem_free(&x.mem);
}

}  // namespace
