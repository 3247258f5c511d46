// deposit::endpoint between endpoints of one job in one process: put, get
// and atomics by ticket on card memory and on private memory, by
// cross-memory attach and by the fallback packets, handles, refusals,
// revocation, hybrid connections.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "../common/test_util.hpp"
#include "deposit/deposit.hpp"
#include "endpoint_pair.hpp"

namespace hpam::deposit {
namespace {

struct pair_of_endpoints : endpoint_pair {
  explicit pair_of_endpoints(bool cross_memory, uint32_t packet_size = 4096)
      : endpoint_pair("dep", [=](setup& s) {
          s.cross_memory = cross_memory;
          s.packet_size = packet_size;
          s.card_memory = 4u << 20;
        }) {}
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed ^ (i * 29) ^ (i >> 9));
  return v;
}

// Memory kinds x paths: card memory, private memory by cross-memory attach,
// private memory by packets.
struct target_kind {
  bool card_memory;
  bool cross_memory;
};
class deposit_paths : public ::testing::TestWithParam<target_kind> {
 protected:
  void SetUp() override {
    j = std::make_unique<pair_of_endpoints>(GetParam().cross_memory, 1024);
    if (GetParam().card_memory) {
      void* a = nullptr;
      ASSERT_EQ(j->e[1]->allocate_memory(bytes, a, t), status::ok);
      target = static_cast<uint8_t*>(a);
    } else {
      storage.assign(bytes + 2 * 512, 0xEE);
      target = storage.data() + 512;
      ASSERT_EQ(j->e[1]->register_memory(target, bytes, t), status::ok);
      EXPECT_EQ(j->e[0]->cross_memory_to(1), GetParam().cross_memory);
    }
    std::memset(target, 0, bytes);
  }
  bool guards_intact() const {
    for (size_t i = 0; i < storage.size(); ++i)
      if ((i < 512 || i >= 512 + bytes) && storage[i] != 0xEE) return false;
    return true;
  }
  static constexpr size_t bytes = 256 * 1024;
  std::unique_ptr<pair_of_endpoints> j;
  std::vector<uint8_t> storage;
  uint8_t* target = nullptr;
  ticket t{};
};

TEST_P(deposit_paths, put_then_get_round_trips_every_size) {
  for (size_t len : {size_t{0}, size_t{1}, size_t{8}, size_t{255}, size_t{4096}, size_t{100'000}}) {
    const auto data = pattern(len, static_cast<uint8_t>(len));
    op_handle h;
    ASSERT_EQ(j->e[0]->put(data.data(), len, t, 1000, &h), status::ok);
    ASSERT_EQ(j->finish(h), status::ok) << len;
    if (len) {
      for (int i = 0; i < 100; ++i)
        j->e[1]->progress();  // fallback packets land when the owner polls
      EXPECT_EQ(std::memcmp(target + 1000, data.data(), len), 0) << len;
    }
    std::vector<uint8_t> back(len + 1, 0x11);
    ASSERT_EQ(j->e[0]->get(back.data(), len, t, 1000, &h), status::ok);
    ASSERT_EQ(j->finish(h), status::ok) << len;
    if (len) {
      EXPECT_EQ(std::memcmp(back.data(), data.data(), len), 0) << len;
    }
    EXPECT_EQ(back[len], 0x11);  // not one byte more
  }
  EXPECT_TRUE(guards_intact());
}

TEST_P(deposit_paths, atomics_fetch_the_old_value) {
  struct row {
    atomic_op op;
    atomic_width w;
    uint64_t operand, compare, old, after;
  };
  const row rows[] = {{atomic_op::add, atomic_width::w64, 5, 0, 0, 5},
                      {atomic_op::add, atomic_width::w64, 1ull << 33, 0, 5, (1ull << 33) + 5},
                      {atomic_op::swap, atomic_width::w64, 42, 0, (1ull << 33) + 5, 42},
                      {atomic_op::compare_swap, atomic_width::w64, 7, 41, 42, 42},
                      {atomic_op::compare_swap, atomic_width::w64, 7, 42, 42, 7},
                      {atomic_op::bit_or, atomic_width::w64, 8, 0, 7, 15},
                      {atomic_op::bit_and, atomic_width::w64, 9, 0, 15, 9},
                      {atomic_op::bit_xor, atomic_width::w64, 1, 0, 9, 8}};
  uint64_t* word = reinterpret_cast<uint64_t*>(target + 64);
  for (const row& r : rows) {
    uint64_t fetched = ~0ull;
    op_handle h;
    ASSERT_EQ(j->e[0]->atomic(r.op, r.w, t, 64, r.operand, r.compare, &fetched, &h), status::ok);
    ASSERT_EQ(j->finish(h), status::ok);
    EXPECT_EQ(fetched, r.old);
    EXPECT_EQ(*word, r.after);
  }
  uint32_t* w32 = reinterpret_cast<uint32_t*>(target + 128);
  *w32 = 0xFFFFFFFF;
  uint64_t fetched = 0;
  op_handle h;
  ASSERT_EQ(j->e[0]->atomic(atomic_op::add, atomic_width::w32, t, 128, 2, 0, &fetched, &h),
            status::ok);
  ASSERT_EQ(j->finish(h), status::ok);
  EXPECT_EQ(fetched, 0xFFFFFFFFu);
  EXPECT_EQ(*w32, 1u);
  EXPECT_EQ(w32[1], 0u);  // the add did not carry into the next word
  // Misaligned: an error (at once, or through the handle), nothing changed.
  const status mis = j->e[0]->atomic(atomic_op::add, atomic_width::w64, t, 4, 1, 0, &fetched, &h);
  EXPECT_EQ(is_ok(mis) ? j->finish(h) : mis, status::invalid_argument);
  EXPECT_TRUE(guards_intact());
}

TEST_P(deposit_paths, wrong_key_and_revoked_ticket_write_nothing) {
  ticket bad = t;
  bad.protection_key ^= 0x10;
  const auto data = pattern(3000, 3);
  op_handle h;
  const status posted = j->e[0]->put(data.data(), data.size(), bad, 0, &h);
  if (is_ok(posted)) (void)j->finish(h);
  uint64_t v = 0;
  EXPECT_NE(j->e[0]->atomic(atomic_op::add, atomic_width::w64, bad, 0, 1, 0, &v, nullptr),
            status::ok);
  std::vector<uint8_t> back(16);
  const status g = j->e[0]->get(back.data(), 16, bad, 0, &h);
  EXPECT_TRUE(g == status::rejected || (is_ok(g) && j->finish(h) == status::rejected));
  for (int i = 0; i < 100; ++i) j->e[1]->progress();
  EXPECT_GE(j->e[1]->card().arrivals().key_rejections, 2u);
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(target[i], 0) << i;
  // An atomic with the good ticket first (adding 0): on private memory the
  // sender then leaves the slot to the owner for this ticket's atomics, and
  // the owner must refuse them once the slot is revoked.
  ASSERT_EQ(j->e[0]->atomic(atomic_op::add, atomic_width::w64, t, 0, 0, 0, &v, &h), status::ok);
  ASSERT_EQ(j->finish(h), status::ok);
  ASSERT_EQ(j->e[1]->revoke(t), status::ok);
  if (is_ok(j->e[0]->put(data.data(), data.size(), t, 0, &h))) (void)j->finish(h);
  const status after = j->e[0]->atomic(atomic_op::add, atomic_width::w64, t, 0, 1, 0, &v, &h);
  EXPECT_NE(is_ok(after) ? j->finish(h) : after, status::ok);
  for (int i = 0; i < 100; ++i) j->e[1]->progress();
  EXPECT_GE(j->e[1]->card().arrivals().revoked_rejections, 1u);
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(target[i], 0) << i;
  EXPECT_EQ(j->e[1]->deregister(t), status::ok);
  EXPECT_TRUE(guards_intact());
}

INSTANTIATE_TEST_SUITE_P(kinds, deposit_paths,
                         ::testing::Values(target_kind{true, true}, target_kind{false, true},
                                           target_kind{false, false}),
                         [](const ::testing::TestParamInfo<target_kind>& i) {
                           return std::string(i.param.card_memory ? "card_memory"
                                                                  : "private_memory") +
                                  (i.param.cross_memory ? "_cross" : "_fallback");
                         });

TEST(deposit, handles_report_once_then_are_refused) {
  pair_of_endpoints j(true);
  void* a;
  ticket t;
  ASSERT_EQ(j.e[1]->allocate_memory(4096, a, t), status::ok);
  uint64_t v = 1;
  op_handle h;
  // Card memory: carried out within the call, no record (sent, every time).
  ASSERT_EQ(j.e[0]->put(&v, 8, t, 0, &h), status::ok);
  EXPECT_TRUE(completed(h));
  EXPECT_EQ(j.e[0]->test(h), op_state::sent);
  EXPECT_EQ(j.e[0]->test(h), op_state::sent);
  // A put that waits (more packets than the owner's FIFO holds, until the
  // owner polls) names its work-queue entry, no record: pending, then sent
  // as often as asked. A handle the terminus never gave is refused.
  pair_of_endpoints f(false);
  std::vector<uint8_t> mem(200'000, 0);
  ticket p;
  ASSERT_EQ(f.e[1]->register_memory(mem.data(), mem.size(), p), status::ok);
  const auto data = pattern(mem.size(), 3);
  ASSERT_EQ(f.e[0]->put(data.data(), data.size(), p, 0, &h), status::ok);
  EXPECT_FALSE(completed(h));
  EXPECT_EQ(f.e[0]->test(h), op_state::pending);
  ASSERT_EQ(f.finish(h), status::ok);
  EXPECT_EQ(f.e[0]->test(h), op_state::sent);
  status e = status::ok;
  op_handle future = h;
  future.generation += 1000;  // an entry not posted yet
  EXPECT_EQ(f.e[0]->test(future, &e), op_state::error);
  EXPECT_EQ(e, status::invalid_argument);
  // A record (a get that waits for the owner to answer): reported once.
  std::vector<uint8_t> back(mem.size(), 0);
  ASSERT_EQ(f.e[0]->get(back.data(), back.size(), p, 0, &h), status::ok);
  EXPECT_FALSE(completed(h));
  ASSERT_EQ(f.finish(h), status::ok);
  EXPECT_EQ(back, data);
  e = status::ok;
  EXPECT_EQ(f.e[0]->test(h, &e), op_state::error);  // already reported: the handle is gone
  EXPECT_EQ(e, status::invalid_argument);
  EXPECT_EQ(j.e[0]->put(&v, 8, t, 4090, &h), status::invalid_argument);  // beyond the ticket
  EXPECT_EQ(j.e[0]->test(op_handle{}), op_state::error);
}

TEST(deposit, fallback_put_waits_for_the_owner_to_poll) {
  pair_of_endpoints j(false, 1024);
  std::vector<uint8_t> mem(200'000, 0);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(mem.data(), mem.size(), t), status::ok);
  const auto data = pattern(mem.size(), 1);
  op_handle h;
  ASSERT_EQ(j.e[0]->put(data.data(), data.size(), t, 0, &h), status::ok);
  EXPECT_EQ(j.e[0]->test(h), op_state::pending);  // more packets than the owner's FIFO holds
  EXPECT_EQ(mem[0], 0);                           // and none deposited before the owner polls
  ASSERT_EQ(j.finish(h), status::ok);
  for (int i = 0; i < 100; ++i) j.e[1]->progress();
  EXPECT_EQ(mem, data);
  EXPECT_GT(j.e[1]->card().arrivals().fallback_packets, 0u);
}

// quiet(): false while progress() has anything to do, true once it has
// done it. Every case the test covers: a packet in the inbound FIFO (the
// owner's), runs of puts and gets (local), requests that wait for room in a
// full FIFO (waiting_) and answers that wait for room at their requester
// (pending_), each served only by progress calls made while not quiet.
TEST(deposit, quiet_until_there_is_something_to_do) {
  endpoint_pair f("depquiet", [](setup& s) {
    s.cross_memory = false;  // every deposit a packet the owner serves
    s.inbound_packets = 4;
  });
  EXPECT_TRUE(f.e[0]->quiet());
  EXPECT_TRUE(f.e[1]->quiet());
  std::vector<uint64_t> mem(64);
  for (size_t i = 0; i < mem.size(); ++i) mem[i] = 1000 + i;
  ticket t;
  ASSERT_EQ(f.e[1]->register_memory(mem.data(), mem.size() * 8, t), status::ok);
  EXPECT_TRUE(f.e[1]->quiet());

  // A put: local work for the sender, then a packet for the owner.
  uint64_t v = 7;
  op_handle h;
  ASSERT_EQ(f.e[0]->put(&v, 8, t, 0, &h), status::ok);
  EXPECT_FALSE(f.e[0]->quiet());
  ASSERT_EQ(f.finish(h), status::ok);
  EXPECT_FALSE(f.e[1]->quiet());  // the packet waits in the owner's FIFO
  f.e[1]->progress();
  EXPECT_TRUE(f.e[1]->quiet());
  EXPECT_EQ(mem[0], 7u);
  f.e[0]->progress();  // the flush point that ends the put's run
  EXPECT_TRUE(f.e[0]->quiet());

  // Sixteen gets by packets into a FIFO of four: requests wait for room at
  // the owner, then answers for room at the requester (neither progresses
  // but when not quiet).
  std::vector<uint64_t> back(16, 0);
  std::vector<op_handle> hs(back.size());
  for (size_t i = 0; i < back.size(); ++i)
    ASSERT_EQ(f.e[0]->get(&back[i], 8, t, 8 * (i + 1), &hs[i]), status::ok);
  EXPECT_FALSE(f.e[0]->quiet());
  f.e[0]->progress();
  EXPECT_FALSE(f.e[0]->quiet());  // requests still wait for room
  EXPECT_FALSE(f.e[1]->quiet());
  for (size_t i = 0; i < back.size(); ++i) {
    ASSERT_EQ(f.finish(hs[i]), status::ok) << i;
    EXPECT_EQ(back[i], 1001 + i);
  }
  for (int i = 0; i < 100 && !(f.e[0]->quiet() && f.e[1]->quiet()); ++i) {
    for (auto& x : f.e) {
      if (!x->quiet()) x->progress();
    }
  }
  EXPECT_TRUE(f.e[0]->quiet());
  EXPECT_TRUE(f.e[1]->quiet());

  // Answers that wait for room: the requester's FIFO full of the owner's
  // four puts (each one packet, all sent: nothing left in the owner's work
  // queue), the owner serves a get (its request packet waits in its cell to
  // be served again: deferred), then an atomic (its answer waits: pending).
  std::vector<uint64_t> mine(8, 0);
  ticket m;
  ASSERT_EQ(f.e[0]->register_memory(mine.data(), mine.size() * 8, m), status::ok);
  const auto fill_requester = [&] {
    for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ(f.e[1]->put(&v, 8, m, 8 * i, nullptr), status::ok);
    f.e[1]->progress();
    ASSERT_TRUE(f.e[1]->quiet());   // all four went
    ASSERT_FALSE(f.e[0]->quiet());  // and wait in the requester's FIFO
  };
  const auto settle = [&] {
    for (int i = 0; i < 100 && !(f.e[0]->quiet() && f.e[1]->quiet()); ++i) {
      for (auto& x : f.e) {
        if (!x->quiet()) x->progress();
      }
    }
    EXPECT_TRUE(f.e[0]->quiet());
    EXPECT_TRUE(f.e[1]->quiet());
  };
  fill_requester();
  uint64_t got = 0;
  ASSERT_EQ(f.e[0]->get(&got, 8, t, 8 * 20, &h), status::ok);
  f.e[1]->progress();             // the request's answer finds no room
  EXPECT_FALSE(f.e[1]->quiet());  // deferred
  ASSERT_EQ(f.finish(h), status::ok);
  EXPECT_EQ(got, 1020u);
  settle();
  fill_requester();
  ASSERT_EQ(f.e[0]->atomic(atomic_op::add, atomic_width::w64, t, 8 * 21, 5, 0, &got, &h),
            status::ok);
  f.e[1]->progress();             // the operation done, its answer finds no room
  EXPECT_FALSE(f.e[1]->quiet());  // pending
  ASSERT_EQ(f.finish(h), status::ok);
  EXPECT_EQ(got, 1021u);
  EXPECT_EQ(mem[21], 1026u);
  EXPECT_EQ(mine[3], 7u);
  settle();

  // What quiet_bind hands the C API reads as quiet() does.
  const endpoint::quiet_words w = f.e[1]->quiet_bind();
  const auto c_quiet = [&w] {
    const uint64_t c = *w.cursor;
    const auto* seq =
        reinterpret_cast<const std::atomic<uint64_t>*>(w.cells + ((c & w.mask) << w.shift));
    return *w.work == 0 && !*w.deferred && seq->load() != c + 1;
  };
  EXPECT_TRUE(c_quiet());
  ASSERT_EQ(f.e[0]->put(&v, 8, t, 8, &h), status::ok);
  ASSERT_EQ(f.finish(h), status::ok);
  EXPECT_FALSE(c_quiet());
  EXPECT_FALSE(f.e[1]->quiet());
  f.e[1]->progress();
  EXPECT_TRUE(c_quiet());
  EXPECT_EQ(mem[1], 7u);
}

TEST(deposit, hybrid_connection_on_private_memory_goes_through_the_owner) {
  pair_of_endpoints j(true, 1024);
  std::vector<uint64_t> mem(128, 0);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(mem.data(), mem.size() * 8, t), status::ok);
  connection_ticket ct;
  ASSERT_EQ(j.e[1]->open_connection(0, t, 1u << 0, 0, ct), status::ok);  // the tail is readable
  ASSERT_EQ(j.e[1]->set_register(ct, 0, 16), status::ok);                // queue tail at byte 16
  hybrid_op app{};
  app.code = hybrid_code::store_post_increment;
  app.reg_i = 0;
  app.reg_j = use_operand;
  app.cond_reg = 0;
  app.condition = compare_fn::ge;
  app.compare = 40;  // notify once the queue holds three records
  for (uint64_t v = 1; v <= 3; ++v) {
    op_handle h;
    uint64_t at = 0;
    ASSERT_EQ(j.e[0]->hybrid(ct, app, &v, 8, nullptr, 0, &at, &h), status::ok);
    ASSERT_EQ(j.finish(h), status::ok);
    EXPECT_EQ(at, 8 + 8 * v);
  }
  EXPECT_EQ(mem[2], 1u);
  EXPECT_EQ(mem[4], 3u);
  EXPECT_EQ(j.e[1]->get_register(ct, 0), 40u);
  notification n;
  ASSERT_TRUE(j.e[1]->next_notification(n));
  EXPECT_EQ(n.metadata_index, hybrid_notification_index);
  EXPECT_EQ(n.metadata, 40u);
  EXPECT_EQ(n.length, ct.connection);
  EXPECT_FALSE(j.e[1]->next_notification(n));
  // Another process's ticket for this connection is refused (it names proc 0 only).
  EXPECT_EQ(j.e[1]->hybrid(ct, app, mem.data(), 8, nullptr, 0, nullptr, nullptr), status::rejected);
  connection_ticket forged = ct;
  forged.connection_key++;
  EXPECT_EQ(j.e[0]->hybrid(forged, app, mem.data(), 8, nullptr, 0, nullptr, nullptr),
            status::rejected);
}

}  // namespace
}  // namespace hpam::deposit

namespace hpam::deposit {
namespace {

// Forged operation, reply and read-request packets in an endpoint's inbound
// FIFO: refused or answered with an error, memory untouched, no crash.
TEST(deposit, forged_packets_change_nothing) {
  pair_of_endpoints j(false, 1024);
  std::vector<uint64_t> mem(64, 0x0123456789ABCDEFull);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(mem.data() + 8, 32 * 8, t), status::ok);
  connection_ticket ct;
  ASSERT_EQ(j.e[1]->open_connection(0, t, 0xFF, 0xFF, ct), status::ok);
  std::mt19937_64 rng(3);
  std::vector<std::byte> junk(1024 - 64);
  for (auto& b : junk) b = static_cast<std::byte>(rng());
  uint64_t pushed = 0;
  for (int i = 0; i < 3000; ++i) {
    nic::hamlyn::packet_header h{};
    h.destination = 1;
    h.source = static_cast<uint32_t>(rng() % 3);
    h.slot = static_cast<uint32_t>(rng() % 2 ? t.slot : rng());
    h.metadata_index = static_cast<uint32_t>(rng() % 3 == 0 ? ct.connection : rng());
    h.protection_key = rng();  // never a right key or connection key
    h.offset = rng() % 2 ? rng() % 512 : rng();
    h.length = static_cast<uint32_t>(rng() % 2 ? rng() % 900 : rng());
    h.metadata_length = static_cast<uint32_t>(rng() % 2 ? sizeof(hybrid_op) : rng() % 100);
    h.flags = static_cast<uint32_t>(1 + rng() % 3);  // read_request, operation, reply
    h.fast_word = rng() % 2 ? rng() % 4 : rng();
    const size_t room = 1024 - 64 - std::min<size_t>(h.metadata_length, 1024 - 64);
    iovec piece{junk.data(), std::min<size_t>(room, h.length)};
    if (j.e[0]->card().push_packet(1, h, &piece, 1)) ++pushed;
    j.e[1]->progress();
    j.e[0]->progress();
  }
  for (int i = 0; i < 1000; ++i) {
    j.e[1]->progress();
    j.e[0]->progress();
  }
  EXPECT_GT(pushed, 1000u);
  for (uint64_t v : mem) ASSERT_EQ(v, 0x0123456789ABCDEFull);
  for (uint32_t r = 0; r < address_registers; ++r) EXPECT_EQ(j.e[1]->get_register(ct, r), 0u);
  notification n;
  EXPECT_FALSE(j.e[1]->next_notification(n));
  // The endpoints still work.
  uint64_t v = 5, fetched = 0;
  op_handle h;
  ASSERT_EQ(j.e[0]->atomic(atomic_op::add, atomic_width::w64, t, 0, v, 0, &fetched, &h),
            status::ok);
  ASSERT_EQ(j.finish(h), status::ok);
  EXPECT_EQ(fetched, 0x0123456789ABCDEFull);
}

}  // namespace
}  // namespace hpam::deposit

namespace hpam::deposit {
namespace {

// An operation packet with a condition but no connection (a plain ticket
// atomic whose condition holds): the owner that serves it answers with an
// error and lives on (the old code raised a notification through a null
// connection and died).
// Runs in a child (EXPECT_EXIT): its exit code says what went wrong.
void serve_a_conditional_operation_without_connection() {
  pair_of_endpoints j(false, 1024);
  std::vector<uint64_t> mem(8, 7);
  ticket t;
  if (!is_ok(j.e[1]->register_memory(mem.data(), mem.size() * 8, t))) std::exit(2);
  hybrid_op op{};
  op.code = hybrid_code::fetch_add;
  op.width = 8;
  op.value = 1;
  op.reg_j = use_operand;
  op.cond_reg = use_operand;
  op.condition = compare_fn::ge;  // always holds
  nic::hamlyn::packet_header h{};
  h.destination = 1;
  h.source = 0;
  h.slot = t.slot;
  h.metadata_index = 0xFFFFFFFFu;       // no connection
  h.protection_key = t.protection_key;  // the right key
  h.metadata_length = sizeof op;
  h.flags = nic::hamlyn::encode_flags(nic::hamlyn::packet_kind::operation, false);
  iovec piece{&op, sizeof op};
  if (!j.e[0]->card().push_packet(1, h, &piece, 1)) std::exit(3);
  for (int i = 0; i < 100; ++i) {
    j.e[1]->progress();
    j.e[0]->progress();
  }
  notification n;
  if (j.e[1]->next_notification(n)) std::exit(4);
  if (mem[0] != 7 || j.e[1]->completed_remote_ops() != 1) std::exit(5);
  std::exit(0);
}

TEST(deposit, a_condition_without_a_connection_does_not_crash_the_owner) {
  EXPECT_EXIT(serve_a_conditional_operation_without_connection(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace hpam::deposit
