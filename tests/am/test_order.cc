// Ordered mode: requests to a peer take its D instances in turn and never
// search, so request n goes out only once request n-D has been answered.
// Then, whatever the wire does, a receiver sees request n run only after
// every request before n-D+1 ran: it can restore the order of launch by
// holding at most D-1 requests (the BTL does, btl/btl_hpam_order.c).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "am/endpoint_impl.hpp"
#include "protocol_fixture.hpp"

namespace hpam::test {
namespace {

enum : unsigned { h_numbered = 1 };

// Request numbers in the order their handlers ran, and the largest gap seen
// between a request and the first one not yet run when it ran.
struct arrivals {
  std::vector<uint8_t> ran;  // ran[k]: request k's handler has run
  uint64_t first_missing = 0;
  uint64_t widest = 0;
  int reruns = 0;
};

void on_numbered(hpam_token*, void* ctx, void*, size_t, uint64_t k) {
  auto* a = static_cast<arrivals*>(ctx);
  if (k >= a->ran.size()) a->ran.resize(k + 1, 0);
  if (a->ran[k]) a->reruns++;
  a->ran[k] = 1;
  a->widest = std::max(a->widest, k - std::min(k, a->first_missing));
  while (a->first_missing < a->ran.size() && a->ran[a->first_missing]) a->first_missing++;
}

template <class Card>
class order : public ::testing::Test {
 protected:
  // Sends n numbered medium requests from 0 to 1 under every fault kind;
  // returns what process 1 saw.
  arrivals run(bool ordered, uint32_t depth, int n) {
    job_options o;
    o.depth = depth;
    o.ordered = ordered;
    o.timeout_ns = 50'000;
    o.receive_budget = 1;
    o.faults.drop = 0.05;
    o.faults.duplicate = 0.05;
    o.faults.reorder = 0.05;
    o.faults.delay = 0.05;
    o.faults.delay_ns = 200'000;
    local_job<Card> j(o, "order");
    arrivals a;
    (void)j[1].register_handler_bulk(h_numbered, on_numbered, &a);
    char byte = 'x';
    const iovec iov{&byte, 1};
    for (int k = 0; k < n; ++k)
      while (j[0].request_medium(1, h_numbered, &iov, 1, static_cast<uint64_t>(k), false) ==
             hpam::status::busy) {
        j.time().advance(10'000);
        j.pump();
      }
    for (int r = 0; r < 200000 && j[0].request_outstanding(1); ++r) {
      j.time().advance(10'000);
      j.pump();
    }
    EXPECT_FALSE(j[0].request_outstanding(1));
    return a;
  }
};
using order_cards = ::testing::Types<nic::medusa_card, nic::hamlyn_am_card>;
TYPED_TEST_SUITE(order, order_cards);

TYPED_TEST(order, ordered_requests_run_within_d_of_the_first_missing) {
  const uint32_t depth = 4;
  const int n = 3000;
  const arrivals a = this->run(true, depth, n);
  EXPECT_EQ(a.first_missing, static_cast<uint64_t>(n));  // every request ran
  EXPECT_EQ(a.reruns, 0);                                // and only once
  EXPECT_LT(a.widest, depth);                            // never more than D-1 ahead
  EXPECT_GT(a.widest, 0u);                               // the faults did reorder
}

// Without it, the instances run independently: a lost request lets later
// ones run far ahead of it (what ordered mode exists to prevent).
TYPED_TEST(order, unordered_requests_can_run_far_ahead) {
  const uint32_t depth = 4;
  const int n = 3000;
  const arrivals a = this->run(false, depth, n);
  EXPECT_EQ(a.first_missing, static_cast<uint64_t>(n));
  EXPECT_EQ(a.reruns, 0);
  EXPECT_GE(a.widest, depth);
}

}  // namespace
}  // namespace hpam::test
