// Batched deposits (setup::batch_limit): small puts and gets by
// cross-memory attach wait and are carried out together at the next
// progress, one system call per destination. Every entry is checked when
// its batch is carried out; a forged, out-of-bounds or revoked entry inside
// a batch is refused and counted while the rest of the batch lands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "../common/test_util.hpp"
#include "deposit/deposit.hpp"
#include "endpoint_pair.hpp"

namespace hpam::deposit {
namespace {

struct batch_pair : endpoint_pair {
  explicit batch_pair(uint32_t batch_limit = 256)
      : endpoint_pair("depbatch", [=](setup& s) { s.batch_limit = batch_limit; }) {}
  status outcome(op_handle h) { return finish(h, 100'000); }
};

// Private memory of endpoint 1 with guard bytes around it.
struct guarded {
  static constexpr size_t guard = 256;
  std::vector<uint8_t> storage;
  uint8_t* mem;
  size_t bytes;
  explicit guarded(size_t n) : storage(n + 2 * guard, 0xEE), mem(storage.data() + guard), bytes(n) {
    std::memset(mem, 0, n);
  }
  bool guards_intact() const {
    for (size_t i = 0; i < storage.size(); ++i)
      if ((i < guard || i >= guard + bytes) && storage[i] != 0xEE) return false;
    return true;
  }
};

TEST(deposit_batch, small_puts_wait_for_progress_then_land_in_one_batch) {
  batch_pair j;
  ASSERT_TRUE(j.e[0]->cross_memory_to(1));
  guarded g(64 * 1024);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  std::mt19937 rng(7);
  std::vector<uint8_t> expect(g.bytes, 0);
  std::vector<op_handle> hs;
  const uint64_t batches_before = j.e[0]->card().terminus().batches();
  for (int i = 0; i < 600; ++i) {  // lengths 0..256 at distinct 256-byte cells
    const size_t len = rng() % 257;
    const uint64_t at = static_cast<uint64_t>(i) * 100 % (g.bytes - 256);
    std::vector<uint8_t> data(len);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    op_handle h;
    ASSERT_EQ(j.e[0]->put(data.data(), len, t, at, &h), status::ok);
    std::copy(data.begin(), data.end(),
              expect.begin() + static_cast<std::ptrdiff_t>(at));  // later puts win
    data.assign(len, 0x5A);  // the put copied its bytes: the buffer may be reused at once
    hs.push_back(h);
  }
  EXPECT_EQ(j.e[0]->test(hs.front()), op_state::pending);
  for (size_t i = 0; i < g.bytes; ++i) ASSERT_EQ(g.mem[i], 0) << "deposited before progress: " << i;
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->card().terminus().batches() - batches_before, 1u);
  EXPECT_EQ(j.e[0]->card().terminus().batched_messages(), 600u);
  for (op_handle h : hs) ASSERT_EQ(j.e[0]->test(h), op_state::sent);
  EXPECT_EQ(std::memcmp(g.mem, expect.data(), g.bytes), 0);
  EXPECT_TRUE(g.guards_intact());
  EXPECT_EQ(j.e[1]->card().arrivals().packets, 600u);
}

TEST(deposit_batch, small_gets_wait_for_progress_and_see_earlier_puts) {
  batch_pair j;
  guarded g(8192);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  for (size_t i = 0; i < g.bytes; ++i) g.mem[i] = static_cast<uint8_t>(i * 7);
  const uint64_t word = 0x1122334455667788ull;
  op_handle hp;
  ASSERT_EQ(j.e[0]->put(&word, 8, t, 800, &hp), status::ok);  // waits: the get below must see it
  std::vector<uint64_t> got(512, 0);
  std::vector<op_handle> hs(got.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(j.e[0]->get(&got[i], 8, t, (i * 8 * 13) % (g.bytes - 8), &hs[i]), status::ok);
  EXPECT_EQ(j.e[0]->test(hs[0]), op_state::pending);
  j.e[0]->progress();
  ASSERT_EQ(j.e[0]->test(hp), op_state::sent);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(j.e[0]->test(hs[i]), op_state::sent) << i;
    uint64_t expect;
    std::memcpy(&expect, g.mem + (i * 8 * 13) % (g.bytes - 8), 8);
    ASSERT_EQ(got[i], expect) << i;
  }
  uint64_t at800 = 0;
  std::memcpy(&at800, g.mem + 800, 8);
  EXPECT_EQ(at800, word);
  // A get carried out at once (too long for a batch) sees a waiting put too.
  const uint64_t word2 = 0xA5A5A5A5A5A5A5A5ull;
  ASSERT_EQ(j.e[0]->put(&word2, 8, t, 1600, &hp), status::ok);
  std::vector<uint8_t> big(2048, 0);
  op_handle hb;
  ASSERT_EQ(j.e[0]->get(big.data(), big.size(), t, 0, &hb), status::ok);
  ASSERT_EQ(j.outcome(hb), status::ok);
  EXPECT_EQ(std::memcmp(big.data() + 1600, &word2, 8), 0);
  EXPECT_TRUE(g.guards_intact());
}

// The hostile entries of a batch: each refused and counted in the owner's
// card, nothing written for it; every other entry lands.
TEST(deposit_batch, forged_entries_inside_a_batch_are_refused_and_counted_the_rest_lands) {
  batch_pair j;
  guarded g(4096), other(4096);
  ticket t, revoked;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  ASSERT_EQ(j.e[1]->register_memory(other.mem, other.bytes, revoked), status::ok);
  ASSERT_EQ(j.e[1]->revoke(revoked), status::ok);
  ticket wrong_key = t, wide = t, no_slot = t;
  wrong_key.protection_key ^= 0x40;
  wide.range = t.range + 4096;  // claims more than the slot's bound
  no_slot.slot = 1u << 30;      // a slot the card does not have
  // Refusals are counted in the header alone (arrivals() adds the hold lines'
  // fast arrivals to packets and messages only).
  const auto& c = j.e[1]->card().header().counters;
  const uint64_t key0 = c.key_rejections, bounds0 = c.bounds_rejections,
                 revoked0 = c.revoked_rejections, malformed0 = c.malformed;
  struct entry {
    const ticket* tk;
    uint64_t at;
    status expect;
  };
  const entry entries[] = {{&t, 0, status::ok},
                           {&wrong_key, 64, status::rejected},
                           {&t, 128, status::ok},
                           {&wide, 4090, status::rejected},
                           {&t, 256, status::ok},
                           {&revoked, 0, status::rejected},
                           {&no_slot, 512, status::rejected},
                           {&t, 4088, status::ok}};
  const uint64_t value = 0x0102030405060708ull;
  op_handle h[8];
  for (int i = 0; i < 8; ++i)
    ASSERT_EQ(j.e[0]->put(&value, 8, *entries[i].tk, entries[i].at, &h[i]), status::ok) << i;
  const uint64_t batches0 = j.e[0]->card().terminus().batches();
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->card().terminus().batches() - batches0, 1u);  // all eight in one batch
  for (int i = 0; i < 8; ++i) {
    status err = status::ok;
    const op_state s = j.e[0]->test(h[i], &err);
    EXPECT_EQ(s == op_state::sent ? status::ok : err, entries[i].expect) << i;
  }
  EXPECT_EQ(c.key_rejections - key0, 1u);
  EXPECT_EQ(c.bounds_rejections - bounds0, 1u);
  EXPECT_EQ(c.revoked_rejections - revoked0, 1u);
  EXPECT_EQ(c.malformed - malformed0, 1u);
  for (uint64_t at : {0u, 128u, 256u, 4088u}) {
    EXPECT_EQ(std::memcmp(g.mem + at, &value, 8), 0) << at;
  }
  for (size_t i = 0; i < g.bytes; ++i) {
    const bool written = i < 8 || (i >= 128 && i < 136) || (i >= 256 && i < 264) || i >= 4088;
    if (!written) {
      ASSERT_EQ(g.mem[i], 0) << i;
    }
  }
  for (size_t i = 0; i < other.bytes; ++i) ASSERT_EQ(other.mem[i], 0) << i;
  EXPECT_TRUE(g.guards_intact());
  EXPECT_TRUE(other.guards_intact());
  // The same refusals inside a batch of gets; the good ones read.
  uint64_t got[8];
  for (int i = 0; i < 8; ++i) {
    got[i] = 0;
    ASSERT_EQ(j.e[0]->get(&got[i], 8, *entries[i].tk, entries[i].at, &h[i]), status::ok) << i;
  }
  j.e[0]->progress();
  for (int i = 0; i < 8; ++i) {
    status err = status::ok;
    const op_state s = j.e[0]->test(h[i], &err);
    EXPECT_EQ(s == op_state::sent ? status::ok : err, entries[i].expect) << i;
    EXPECT_EQ(got[i], entries[i].expect == status::ok ? value : 0u) << i;
  }
  EXPECT_EQ(c.key_rejections - key0, 2u);
  EXPECT_EQ(c.bounds_rejections - bounds0, 2u);
  EXPECT_EQ(c.revoked_rejections - revoked0, 2u);
  EXPECT_EQ(c.malformed - malformed0, 2u);
}

// A slot revoked while puts to it wait for their batch: they are refused
// when the batch is carried out (the checks are made then, not at posting).
TEST(deposit_batch, a_revoke_before_the_batch_refuses_its_entries) {
  batch_pair j;
  guarded g(1024);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  const uint64_t value = 9;
  op_handle h1, h2;
  ASSERT_EQ(j.e[0]->put(&value, 8, t, 0, &h1), status::ok);
  ASSERT_EQ(j.e[0]->put(&value, 8, t, 8, &h2), status::ok);
  ASSERT_EQ(j.e[1]->revoke(t), status::ok);
  EXPECT_EQ(j.outcome(h1), status::rejected);
  EXPECT_EQ(j.outcome(h2), status::rejected);
  for (size_t i = 0; i < g.bytes; ++i) ASSERT_EQ(g.mem[i], 0) << i;
}

TEST(deposit_batch, batch_limit_zero_deposits_each_at_once) {
  batch_pair j(0);
  guarded g(1024);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  const uint64_t value = 0x77;
  op_handle h;
  ASSERT_EQ(j.e[0]->put(&value, 8, t, 16, &h), status::ok);
  EXPECT_EQ(j.e[0]->test(h), op_state::sent);
  EXPECT_EQ(g.mem[16], 0x77);
  uint64_t got = 0;
  ASSERT_EQ(j.e[0]->get(&got, 8, t, 16, &h), status::ok);
  EXPECT_EQ(j.e[0]->test(h), op_state::sent);
  EXPECT_EQ(got, value);
  EXPECT_EQ(j.e[0]->card().terminus().batches(), 0u);
}

// More puts than one batch holds: the queue carries out a full batch on
// its own, and every put lands.
TEST(deposit_batch, a_full_batch_goes_at_once) {
  batch_pair j;
  guarded g(8 * 3000);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  for (uint64_t i = 0; i < 3000; ++i) {
    status st;
    while ((st = j.e[0]->put(&i, 8, t, i * 8, nullptr)) == status::would_block) j.e[0]->progress();
    ASSERT_EQ(st, status::ok) << i;
  }
  EXPECT_GE(j.e[0]->card().terminus().batches(), 2u);  // before any progress call
  j.e[0]->progress();
  for (uint64_t i = 0; i < 3000; ++i) {
    uint64_t v;
    std::memcpy(&v, g.mem + i * 8, 8);
    ASSERT_EQ(v, i) << i;
  }
  EXPECT_TRUE(g.guards_intact());
}

// Lone deposits: after a run of one put (or get) between two progress
// calls, the next one with nothing waiting is carried out within the call
// (no record: a completed handle), checked as any other; the second of a
// run waits for its batch again.
TEST(deposit_batch, a_lone_put_or_get_goes_at_once_the_second_of_a_run_waits) {
  batch_pair j;
  guarded g(4096);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  nic::hamlyn::send_terminus& terminus = j.e[0]->card().terminus();
  const uint64_t value = 0x1122334455667788ull;
  op_handle h;
  ASSERT_EQ(j.e[0]->put(&value, 8, t, 0, &h), status::ok);  // no run yet: it waits
  EXPECT_FALSE(completed(h));
  EXPECT_EQ(j.e[0]->test(h), op_state::pending);
  j.e[0]->progress();  // a run of one
  EXPECT_EQ(j.e[0]->test(h), op_state::sent);
  const uint64_t lone0 = j.e[0]->lone_puts(), batches0 = terminus.batches(),
                 posted0 = terminus.completion_word();
  const uint64_t packets0 = j.e[1]->card().arrivals().packets;
  for (uint64_t i = 1; i <= 3; ++i) {  // put, progress: each alone, each at once
    const uint64_t v = value + i;
    ASSERT_EQ(j.e[0]->put(&v, 8, t, 8 * i, &h), status::ok);
    EXPECT_TRUE(completed(h));
    EXPECT_EQ(j.e[0]->test(h), op_state::sent);
    EXPECT_EQ(std::memcmp(g.mem + 8 * i, &v, 8), 0) << "not deposited within the call";
    j.e[0]->progress();
  }
  EXPECT_EQ(j.e[0]->lone_puts() - lone0, 3u);
  EXPECT_EQ(terminus.batches(), batches0);
  EXPECT_EQ(terminus.completion_word(), posted0) << "past the work queue";
  EXPECT_EQ(j.e[1]->card().arrivals().packets - packets0, 3u);  // counted as any arrival
  // A run of two: the first goes at once, the second waits for its batch.
  op_handle h1, h2;
  ASSERT_EQ(j.e[0]->put(&value, 8, t, 64, &h1), status::ok);
  ASSERT_EQ(j.e[0]->put(&value, 8, t, 72, &h2), status::ok);
  EXPECT_TRUE(completed(h1));
  EXPECT_FALSE(completed(h2));
  EXPECT_EQ(g.mem[72], 0);
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->test(h2), op_state::sent);
  EXPECT_EQ(std::memcmp(g.mem + 72, &value, 8), 0);
  // After a run of two, the next put waits too (until a run of one again).
  ASSERT_EQ(j.e[0]->put(&value, 8, t, 80, &h), status::ok);
  EXPECT_FALSE(completed(h));
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->test(h), op_state::sent);
  // Gets: the same rule, each at once after a run of one.
  uint64_t got = 0;
  ASSERT_EQ(j.e[0]->get(&got, 8, t, 8, &h), status::ok);  // the first run: it waits
  EXPECT_FALSE(completed(h));
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->test(h), op_state::sent);
  for (uint64_t i = 1; i <= 3; ++i) {
    got = 0;
    ASSERT_EQ(j.e[0]->get(&got, 8, t, 8 * i, &h), status::ok);
    EXPECT_TRUE(completed(h));
    EXPECT_EQ(got, value + i);
    j.e[0]->progress();
  }
  ASSERT_EQ(j.e[0]->get(&got, 8, t, 0, &h1), status::ok);
  ASSERT_EQ(j.e[0]->get(&got, 8, t, 8, &h2), status::ok);
  EXPECT_TRUE(completed(h1));
  EXPECT_FALSE(completed(h2));
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->test(h2), op_state::sent);
  EXPECT_EQ(got, value + 1);
  EXPECT_TRUE(g.guards_intact());
}

// A lone deposit is checked as one in a batch: a forged key, a range beyond
// the slot, a revoked slot are refused within the call (returned, counted in
// the owner's card), nothing written, and good gets between them read.
TEST(deposit_batch, a_forged_lone_deposit_is_refused_at_once_and_counted) {
  batch_pair j;
  guarded g(1024);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  const uint64_t value = 0x0102030405060708ull;
  op_handle h;
  ASSERT_EQ(j.e[0]->put(&value, 8, t, 0, &h), status::ok);
  j.e[0]->progress();  // a run of one: lone deposits from here on
  ASSERT_EQ(j.e[0]->test(h), op_state::sent);
  std::memset(g.mem, 0, 8);
  ticket wrong_key = t, wide = t;
  wrong_key.protection_key ^= 0x40;
  wide.range = t.range + 4096;
  const auto& c = j.e[1]->card().header().counters;  // refusals: the header's alone
  const uint64_t key0 = c.key_rejections, bounds0 = c.bounds_rejections,
                 lone0 = j.e[0]->lone_puts();
  EXPECT_EQ(j.e[0]->put(&value, 8, wrong_key, 16, &h), status::rejected);
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->put(&value, 8, wide, 1020, &h), status::rejected);
  j.e[0]->progress();
  uint64_t got = 0;
  ASSERT_EQ(j.e[0]->get(&got, 8, t, 0, &h), status::ok);  // the first get run waits
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->get(&got, 8, wrong_key, 16, &h), status::rejected);
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->get(&got, 8, wide, 1020, &h), status::rejected);
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->lone_puts() - lone0, 0u);  // refused: none carried out
  EXPECT_EQ(c.key_rejections - key0, 2u);
  EXPECT_EQ(c.bounds_rejections - bounds0, 2u);
  ASSERT_EQ(j.e[1]->revoke(t), status::ok);
  const uint64_t revoked0 = c.revoked_rejections;
  EXPECT_EQ(j.e[0]->put(&value, 8, t, 32, &h), status::rejected);
  j.e[0]->progress();
  EXPECT_EQ(c.revoked_rejections - revoked0, 1u);
  for (size_t i = 0; i < g.bytes; ++i) ASSERT_EQ(g.mem[i], 0) << i;
  EXPECT_TRUE(g.guards_intact());
}

// poll(): a stream of gets, each followed by a poll, waits while it grows
// and goes as one batch (one process_vm_readv) at the first poll with
// nothing new; the forged entries inside it are refused and counted, every
// other entry reads its bytes.
TEST(deposit_batch, a_stream_of_gets_each_polled_is_one_batch_forged_entries_refused) {
  batch_pair j;
  guarded g(8192);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  for (size_t i = 0; i < g.bytes; ++i) g.mem[i] = static_cast<uint8_t>(i * 13 + 5);
  ticket wrong_key = t, wide = t;
  wrong_key.protection_key ^= 0x40;
  wide.range = t.range + 4096;  // claims more than the slot's bound
  // Refusals: the header's alone.
  const auto& c = j.e[1]->card().header().counters;
  const uint64_t key0 = c.key_rejections, bounds0 = c.bounds_rejections;
  constexpr int n = 200;
  std::vector<uint64_t> got(n, 0);
  std::vector<op_handle> h(n);
  auto tk = [&](int i) -> const ticket& { return i == 77 ? wrong_key : i == 150 ? wide : t; };
  auto at = [&](int i) -> uint64_t { return i == 150 ? 8190 : (i * 40) % (g.bytes - 8); };
  const uint64_t batches0 = j.e[0]->get_batches();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(j.e[0]->get(&got[i], 8, tk(i), at(i), &h[i]), status::ok) << i;
    j.e[0]->poll();  // as UCX's worker progress after each get
  }
  EXPECT_EQ(j.e[0]->get_batches(), batches0) << "carried out while the stream grew";
  EXPECT_EQ(j.e[0]->test(h[n - 1]), op_state::pending);
  j.e[0]->poll();  // nothing new: the batch goes
  EXPECT_EQ(j.e[0]->get_batches() - batches0, 1u);
  for (int i = 0; i < n; ++i) {
    status err = status::ok;
    const op_state s = j.e[0]->test(h[i], &err);
    if (i == 77 || i == 150) {
      EXPECT_EQ(s, op_state::error) << i;
      EXPECT_EQ(err, status::rejected) << i;
      EXPECT_EQ(got[i], 0u) << i;
      continue;
    }
    ASSERT_EQ(s, op_state::sent) << i;
    ASSERT_EQ(std::memcmp(&got[i], g.mem + at(i), 8), 0) << i;
  }
  EXPECT_EQ(c.key_rejections - key0, 1u);
  EXPECT_EQ(c.bounds_rejections - bounds0, 1u);
  EXPECT_TRUE(g.guards_intact());
}

// A batch's entries of one slot in one page are read as one piece (into
// scratch, then copied): overlapping and repeated ranges, entries of two
// slots side by side in a page (never one piece), and more such pages than
// the scratch holds (the rest read straight) each get their own bytes.
TEST(deposit_batch, gets_in_one_page_read_once_per_slot_each_gets_its_bytes) {
  batch_pair j;
  guarded g(64 * 4096);
  ticket a, b;  // two registrations side by side: a page holds both at 4096 * 40 + 2048
  ASSERT_EQ(j.e[1]->register_memory(g.mem, 40 * 4096 + 2048, a), status::ok);
  ASSERT_EQ(j.e[1]->register_memory(g.mem + 40 * 4096 + 2048, 24 * 4096 - 2048, b), status::ok);
  for (size_t i = 0; i < g.bytes; ++i) g.mem[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  struct entry {
    const ticket* tk;
    uint64_t at;  // offset in the ticket
    uint64_t len;
  };
  std::vector<entry> es;
  for (uint64_t page = 0; page < 40; ++page)  // two entries a page, 40 pages: scratch runs out
    for (uint64_t at : {page * 4096 + 24, page * 4096 + 8}) es.push_back({&a, at, 8});
  for (int i = 0; i < 6; ++i) {  // both slots inside one page, alternating; a repeated range
    es.push_back({&a, 40 * 4096 + 16 * static_cast<uint64_t>(i), 16});
    es.push_back({&b, 8 * static_cast<uint64_t>(i % 3), 8});
  }
  es.push_back({&a, 100, 300});  // overlapping the page-0 entries, in a new piece
  es.push_back({&a, 96, 8});
  std::vector<std::vector<uint8_t>> got(es.size());
  std::vector<op_handle> h(es.size());
  for (size_t i = 0; i < es.size(); ++i) {
    got[i].assign(es[i].len, 0);
    ASSERT_EQ(j.e[0]->get(got[i].data(), es[i].len, *es[i].tk, es[i].at, &h[i]), status::ok) << i;
  }
  const uint64_t batches0 = j.e[0]->get_batches();
  j.e[0]->progress();
  EXPECT_EQ(j.e[0]->get_batches() - batches0, 1u);
  for (size_t i = 0; i < es.size(); ++i) {
    ASSERT_EQ(j.e[0]->test(h[i]), op_state::sent) << i;
    const uint8_t* from = g.mem + (es[i].tk == &b ? 40 * 4096 + 2048 : 0) + es[i].at;
    ASSERT_EQ(std::memcmp(got[i].data(), from, es[i].len), 0) << i;
  }
  EXPECT_TRUE(g.guards_intact());
}

// progress() (a flush) carries out a growing batch at once; a lone get
// followed only by polls completes (after a batch of one, at the first).
TEST(deposit_batch, a_flush_carries_out_the_growing_batch_a_lone_get_completes_by_polls) {
  batch_pair j;
  guarded g(4096);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  for (size_t i = 0; i < g.bytes; ++i) g.mem[i] = static_cast<uint8_t>(i * 3 + 1);
  uint64_t got[16] = {};
  op_handle h[16];
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(j.e[0]->get(&got[i], 8, t, 64 * i, &h[i]), status::ok);
    j.e[0]->poll();
  }
  EXPECT_EQ(j.e[0]->test(h[15]), op_state::pending);
  j.e[0]->progress();
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(j.e[0]->test(h[i]), op_state::sent) << i;
    ASSERT_EQ(std::memcmp(&got[i], g.mem + 64 * i, 8), 0) << i;
  }
  // Lone gets, polled until done, nothing posted meanwhile: each completes.
  for (int round = 0; round < 40; ++round) {
    uint64_t v = 0;
    op_handle lone;
    const uint64_t off = (round * 24) % 4000;
    ASSERT_EQ(j.e[0]->get(&v, 8, t, off, &lone), status::ok) << round;
    int polls = 0;
    op_state s = completed(lone) ? op_state::sent : j.e[0]->test(lone);
    while (s == op_state::pending && polls < 3) {
      j.e[0]->poll();
      ++polls;
      s = j.e[0]->test(lone);
    }
    ASSERT_EQ(s, op_state::sent) << round;
    EXPECT_LE(polls, 2) << round;  // one empty poll at most
    ASSERT_EQ(std::memcmp(&v, g.mem + off, 8), 0) << round;
  }
  EXPECT_TRUE(g.guards_intact());
}

// put_now / get_now / atomic_now: card memory (and this process's own)
// within the call, after the same checks; any other memory not at all.
TEST(deposit_now, card_memory_within_the_call_other_memory_not_at_all) {
  batch_pair j;
  void* a = nullptr;
  ticket card;
  ASSERT_EQ(j.e[1]->allocate_memory(4096, a, card), status::ok);
  auto* words = static_cast<uint64_t*>(a);
  const uint64_t v = 0xABCDEF0123456789ull;
  ASSERT_EQ(j.e[0]->put_now(&v, 8, card, 64), status::ok);
  EXPECT_EQ(words[8], v);
  uint64_t back = 0, old = 0;
  ASSERT_EQ(j.e[0]->get_now(&back, 8, card, 64), status::ok);
  EXPECT_EQ(back, v);
  // get_now_to: the bytes handed over where they are; never for a refusal.
  struct taken {
    int calls = 0;
    uint64_t word = 0;
  } got;
  auto take = [](void* arg, const void* data, size_t len) {
    auto* t = static_cast<taken*>(arg);
    t->calls++;
    if (len == 8) std::memcpy(&t->word, data, 8);
  };
  ASSERT_EQ(j.e[0]->get_now_to(take, &got, 8, card, 64), status::ok);
  EXPECT_EQ(got.calls, 1);
  EXPECT_EQ(got.word, v);
  ASSERT_EQ(j.e[0]->atomic_now(atomic_op::add, atomic_width::w64, card, 64, 1, 0, &old),
            status::ok);
  EXPECT_EQ(old, v);
  EXPECT_EQ(words[8], v + 1);
  ASSERT_EQ(
      j.e[0]->atomic_now(atomic_op::compare_swap, atomic_width::w64, card, 64, 5, v + 1, &old),
      status::ok);
  EXPECT_EQ(words[8], 5u);
  // Refusals: wrong key (counted), beyond the ticket, misaligned atomic.
  ticket forged = card;
  forged.protection_key ^= 1;
  const uint64_t keys = j.e[1]->card().arrivals().key_rejections;
  EXPECT_EQ(j.e[0]->put_now(&v, 8, forged, 0), status::rejected);
  EXPECT_EQ(j.e[0]->get_now(&back, 8, forged, 0), status::rejected);
  EXPECT_EQ(j.e[0]->get_now_to(take, &got, 8, forged, 0), status::rejected);
  EXPECT_EQ(j.e[0]->get_now_to(take, &got, 8, card, 4090), status::invalid_argument);
  EXPECT_EQ(got.calls, 1);
  EXPECT_EQ(j.e[1]->card().arrivals().key_rejections - keys, 3u);
  EXPECT_EQ(j.e[0]->put_now(&v, 8, card, 4090), status::invalid_argument);
  EXPECT_EQ(j.e[0]->atomic_now(atomic_op::add, atomic_width::w64, card, 4, 1, 0, &old),
            status::invalid_argument);
  EXPECT_EQ(words[0], 0u);
  // Another process's private memory: not here (nothing written, no record).
  guarded g(1024);
  ticket priv;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, priv), status::ok);
  EXPECT_EQ(j.e[0]->put_now(&v, 8, priv, 0), status::not_supported);
  EXPECT_EQ(j.e[0]->get_now(&back, 8, priv, 0), status::not_supported);
  EXPECT_EQ(j.e[0]->get_now_to(take, &got, 8, priv, 0), status::not_supported);
  EXPECT_EQ(got.calls, 1);
  EXPECT_EQ(j.e[0]->atomic_now(atomic_op::add, atomic_width::w64, priv, 0, 1, 0, &old),
            status::not_supported);
  for (size_t i = 0; i < g.bytes; ++i) ASSERT_EQ(g.mem[i], 0) << i;
  // Its own process's memory: within the call.
  EXPECT_EQ(j.e[1]->put_now(&v, 8, priv, 8), status::ok);
  EXPECT_EQ(std::memcmp(g.mem + 8, &v, 8), 0);
  // A revoked slot refuses (counted), its memory untouched.
  ASSERT_EQ(j.e[1]->revoke(card), status::ok);
  EXPECT_EQ(j.e[0]->put_now(&v, 8, card, 0), status::rejected);
  EXPECT_EQ(words[0], 0u);
  EXPECT_TRUE(g.guards_intact());
}

// A put longer than a batch, with nothing queued before it, is deposited as
// one piece (one cross-memory write, not one a packet) under the same
// checks, its packets counted as the work queue's would be; a forged key or
// a range past the area is refused and counted and writes nothing; behind
// a waiting batch it takes the work queue, in order.
TEST(deposit_batch, a_put_longer_than_a_batch_is_one_checked_deposit_counted_as_its_packets) {
  batch_pair j;
  ASSERT_TRUE(j.e[0]->cross_memory_to(1));
  guarded g(64 * 1024);
  ticket t;
  ASSERT_EQ(j.e[1]->register_memory(g.mem, g.bytes, t), status::ok);
  std::vector<uint8_t> data(20000);
  std::mt19937 rng(11);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const auto& c = j.e[1]->card().header().counters;  // refusals: the header's alone
  const uint64_t packets0 = j.e[1]->card().arrivals().packets, key0 = c.key_rejections,
                 whole0 = j.e[0]->whole_puts();
  op_handle h;
  ASSERT_EQ(j.e[0]->put(data.data(), data.size(), t, 1000, &h), status::ok);
  EXPECT_EQ(j.e[0]->whole_puts() - whole0, 1u);
  EXPECT_EQ(j.e[0]->test(h), op_state::sent);  // done within the call
  EXPECT_EQ(std::memcmp(g.mem + 1000, data.data(), data.size()), 0);
  const uint64_t per_packet = j.e[0]->card().packet_data_bytes();
  EXPECT_EQ(j.e[1]->card().arrivals().packets - packets0,
            (data.size() + per_packet - 1) / per_packet);
  EXPECT_TRUE(g.guards_intact());

  ticket forged = t;
  forged.protection_key ^= 1;
  std::vector<uint8_t> other(data.size(), 0x5A);
  EXPECT_NE(j.e[0]->put(other.data(), other.size(), forged, 1000, &h), status::ok);
  EXPECT_EQ(c.key_rejections - key0, 1u);
  EXPECT_NE(j.e[0]->put(other.data(), other.size(), t, g.bytes - 100, &h), status::ok);
  EXPECT_EQ(std::memcmp(g.mem + 1000, data.data(), data.size()), 0) << "a refused put wrote";
  EXPECT_EQ(j.e[0]->whole_puts() - whole0, 1u);

  // Behind a small put waiting for its batch: the work queue, in order.
  const uint8_t small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  op_handle hs, hl;
  ASSERT_EQ(j.e[0]->put(small, sizeof small, t, 0, &hs), status::ok);
  ASSERT_EQ(j.e[0]->put(small, sizeof small, t, 8, &hs), status::ok);  // a run of two: waits
  ASSERT_EQ(j.e[0]->put(other.data(), other.size(), t, 1000, &hl), status::ok);
  EXPECT_EQ(j.e[0]->whole_puts() - whole0, 1u);
  EXPECT_EQ(j.outcome(hl), status::ok);
  EXPECT_EQ(j.outcome(hs), status::ok);
  EXPECT_EQ(std::memcmp(g.mem + 8, small, sizeof small), 0);
  EXPECT_EQ(std::memcmp(g.mem + 1000, other.data(), other.size()), 0);
  EXPECT_TRUE(g.guards_intact());
}

}  // namespace
}  // namespace hpam::deposit
