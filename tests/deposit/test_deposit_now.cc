// Atomics carried out within the call into card memory (endpoint::
// atomic_now: the checks of every direct deposit, then one CPU atomic on
// the word). Each of the six operations, 32 and 64 bits, lands as a CPU
// atomic would; a wrong key, another slot's index, a range past the slot,
// a revoked, rekeyed or set-up-again slot and a misaligned word are
// refused, counted where the receiving interface counts them, and change
// no byte.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <memory>
#include <vector>

#include "../common/test_util.hpp"
#include "deposit/deposit.hpp"
#include "endpoint_pair.hpp"

namespace hpam::deposit {
namespace {

struct now_pair : endpoint_pair {
  now_pair() : endpoint_pair("depnow", [](setup&) {}) {}
  nic::hamlyn::arrival_totals refusals() const { return e[1]->card().arrivals(); }
};

// Card memory of endpoint 1, filled with a pattern, and a copy to compare.
struct card_area {
  uint8_t* bytes = nullptr;
  size_t size;
  ticket t;
  std::vector<uint8_t> copy;
  card_area(endpoint& owner, size_t n, uint8_t seed) : size(n) {
    void* a = nullptr;
    EXPECT_EQ(owner.allocate_memory(n, a, t), status::ok);
    bytes = static_cast<uint8_t*>(a);
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
    keep();
  }
  void keep() { copy.assign(bytes, bytes + size); }
  bool unchanged() const { return std::memcmp(copy.data(), bytes, size) == 0; }
};

constexpr atomic_op all_ops[] = {atomic_op::add,     atomic_op::bit_and, atomic_op::bit_or,
                                 atomic_op::bit_xor, atomic_op::swap,    atomic_op::compare_swap};

uint64_t word_at(const uint8_t* p, size_t width) {
  uint64_t v = 0;
  std::memcpy(&v, p, width);
  return v;
}

uint64_t after(atomic_op op, uint64_t old, uint64_t v, uint64_t cmp, uint64_t mask) {
  switch (op) {
    case atomic_op::add:
      return (old + v) & mask;
    case atomic_op::bit_and:
      return old & v;
    case atomic_op::bit_or:
      return old | v;
    case atomic_op::bit_xor:
      return old ^ v;
    case atomic_op::swap:
      return v;
    case atomic_op::compare_swap:
      return old == cmp ? v : old;
  }
  return old;
}

class atomic_now_card : public ::testing::TestWithParam<atomic_width> {
 protected:
  size_t width() const { return static_cast<size_t>(GetParam()); }
  uint64_t mask() const { return width() == 4 ? 0xFFFFFFFFull : ~0ull; }
  // Each of the six with t at offset: every one refused with `why`, the
  // memory of `areas` unchanged and `fetched` untouched.
  void all_refused(now_pair& j, const ticket& t, uint64_t offset, status why,
                   std::initializer_list<const card_area*> areas) {
    for (atomic_op op : all_ops) {
      uint64_t fetched = 0x5EED;
      EXPECT_EQ(j.e[0]->atomic_now(op, GetParam(), t, offset, 0x0101010101010101ull, 0, &fetched),
                why)
          << static_cast<int>(op);
      EXPECT_EQ(fetched, 0x5EEDu) << static_cast<int>(op);
      for (const card_area* a : areas) EXPECT_TRUE(a->unchanged()) << static_cast<int>(op);
    }
  }
};

TEST_P(atomic_now_card, each_operation_lands_as_a_cpu_atomic_and_fetches_the_old_value) {
  now_pair j;
  card_area a(*j.e[1], 256, 3);
  for (atomic_op op : all_ops) {
    for (int swaps = 0; swaps < 2; ++swaps) {
      const uint64_t offset = 8 * (1 + static_cast<int>(op)) + (swaps ? 0 : width() % 8);
      const uint64_t old = word_at(a.bytes + offset, width());
      const uint64_t operand = 0xF0E1D2C3B4A59687ull;
      const uint64_t compare = swaps ? old : old + 1;  // compare-and-swap: swaps, or not
      uint64_t fetched = 0;
      ASSERT_EQ(j.e[0]->atomic_now(op, GetParam(), a.t, offset, operand, compare, &fetched),
                status::ok);
      EXPECT_EQ(fetched, old);
      EXPECT_EQ(word_at(a.bytes + offset, width()),
                after(op, old, operand & mask(), compare & mask(), mask()));
      std::memcpy(a.copy.data() + offset, a.bytes + offset, width());
      EXPECT_TRUE(a.unchanged()) << "the word alone changes";
    }
  }
  // The non-fetching form (fetched null) lands the same.
  const uint64_t old = word_at(a.bytes + 128, width());
  ASSERT_EQ(j.e[0]->atomic_now(atomic_op::add, GetParam(), a.t, 128, 5, 0, nullptr), status::ok);
  EXPECT_EQ(word_at(a.bytes + 128, width()), (old + 5) & mask());
}

TEST_P(atomic_now_card, a_forged_ticket_is_refused_counted_and_changes_no_byte) {
  now_pair j;
  card_area a(*j.e[1], 256, 3), b(*j.e[1], 256, 101);
  ASSERT_NE(a.t.slot, b.t.slot);
  auto before = j.refusals();

  ticket wrong_key = a.t;
  wrong_key.protection_key ^= 1;
  all_refused(j, wrong_key, 8, status::rejected, {&a, &b});
  ticket no_key = a.t;
  no_key.protection_key = 0;
  all_refused(j, no_key, 8, status::rejected, {&a, &b});
  ticket other_slot = a.t;  // b's slot with a's key
  other_slot.slot = b.t.slot;
  all_refused(j, other_slot, 8, status::rejected, {&a, &b});
  EXPECT_EQ(j.refusals().key_rejections - before.key_rejections, 18u);

  // Past the end: the ticket's own range says so (nothing reaches the card);
  // a ticket forged wider meets the slot's bound, which refuses and counts.
  before = j.refusals();
  all_refused(j, a.t, 256, status::invalid_argument, {&a, &b});
  all_refused(j, a.t, 256 - width() / 2, status::invalid_argument, {&a, &b});
  ticket wide = a.t;
  wide.range += 4096;
  all_refused(j, wide, 256, status::rejected, {&a, &b});
  all_refused(j, wide, 256 - width() / 2, status::rejected, {&a, &b});
  all_refused(j, wide, 1024, status::rejected, {&a, &b});
  EXPECT_EQ(j.refusals().bounds_rejections - before.bounds_rejections, 18u);
  EXPECT_EQ(j.refusals().key_rejections, before.key_rejections);

  // A word not aligned to its width: refused (held and let go, not counted).
  all_refused(j, a.t, 2, status::invalid_argument, {&a, &b});
  all_refused(j, a.t, 8 + width() / 2, status::invalid_argument, {&a, &b});
  uint64_t fetched = 0;
  EXPECT_EQ(j.e[0]->atomic_now(atomic_op::add, GetParam(), a.t, 8, 1, 0, &fetched), status::ok)
      << "the ticket itself still works";
}

TEST_P(atomic_now_card, a_revoked_rekeyed_or_set_up_again_slot_refuses_at_the_next_atomic) {
  now_pair j;
  card_area a(*j.e[1], 256, 3), b(*j.e[1], 256, 101);
  uint64_t fetched = 0;
  // Both slots held and kept by the receiving interface (direct_window).
  ASSERT_EQ(j.e[0]->atomic_now(atomic_op::add, GetParam(), a.t, 0, 1, 0, &fetched), status::ok);
  ASSERT_EQ(j.e[0]->atomic_now(atomic_op::add, GetParam(), b.t, 0, 1, 0, &fetched), status::ok);
  a.keep();
  b.keep();

  // Rekeyed: the old key is refused at once; the new one works.
  auto before = j.refusals();
  const uint64_t new_key = a.t.protection_key ^ 0x5A5A5A5A5A5A5A5Aull;
  ASSERT_EQ(j.e[1]->card().slots().rekey(a.t.slot, new_key), status::ok);
  all_refused(j, a.t, 8, status::rejected, {&a, &b});
  EXPECT_EQ(j.refusals().key_rejections - before.key_rejections, 6u);
  ticket rekeyed = a.t;
  rekeyed.protection_key = new_key;
  ASSERT_EQ(j.e[0]->atomic_now(atomic_op::add, GetParam(), rekeyed, 8, 1, 0, &fetched), status::ok);
  a.keep();

  // Revoked: refused (counted) until set up again.
  before = j.refusals();
  ASSERT_EQ(j.e[1]->revoke(b.t), status::ok);
  all_refused(j, b.t, 8, status::rejected, {&a, &b});
  EXPECT_EQ(j.refusals().revoked_rejections - before.revoked_rejections, 6u);

  // Released and set up again at the same index, smaller: the old ticket
  // (old key, old range) is refused, the new area untouched.
  ASSERT_EQ(j.e[1]->deregister(b.t), status::ok);
  card_area c(*j.e[1], 64, 55);
  ASSERT_EQ(c.t.slot, b.t.slot) << "set up again at the same index";
  before = j.refusals();
  all_refused(j, b.t, 8, status::rejected, {&a, &c});
  all_refused(j, b.t, 128, status::rejected, {&a, &c});
  EXPECT_EQ(j.refusals().key_rejections - before.key_rejections, 12u);
  ticket stale_range = c.t;  // the new key with the old range: the new bound refuses
  stale_range.range = b.t.range;
  all_refused(j, stale_range, 128, status::rejected, {&a, &c});
  EXPECT_EQ(j.refusals().bounds_rejections - before.bounds_rejections, 6u);
  ASSERT_EQ(j.e[0]->atomic_now(atomic_op::add, GetParam(), c.t, 56, 1, 0, &fetched), status::ok);
}

INSTANTIATE_TEST_SUITE_P(widths, atomic_now_card,
                         ::testing::Values(atomic_width::w32, atomic_width::w64),
                         [](const ::testing::TestParamInfo<atomic_width>& i) {
                           return i.param == atomic_width::w32 ? "w32" : "w64";
                         });

// An operation or width outside the enumerations is refused before anything.
TEST(atomic_now, an_unknown_operation_or_width_is_refused) {
  now_pair j;
  card_area a(*j.e[1], 64, 9);
  uint64_t fetched = 0;
  EXPECT_EQ(
      j.e[0]->atomic_now(static_cast<atomic_op>(6), atomic_width::w64, a.t, 0, 1, 0, &fetched),
      status::invalid_argument);
  EXPECT_EQ(
      j.e[0]->atomic_now(atomic_op::add, static_cast<atomic_width>(2), a.t, 0, 1, 0, &fetched),
      status::invalid_argument);
  EXPECT_TRUE(a.unchanged());
}

}  // namespace
}  // namespace hpam::deposit
