// The protocol over Medusa and Hamlyn cards that deliver long packets by reference
// (am::endpoint_config::by_reference, nic::card_setup::deliver_by_reference):
// a request read in its sender's block, resent while that first copy still
// waits unread, answered through the first copy, and its block written with
// the next request before the receiver reaches the resent copy. Every
// handler sees exactly the bytes its request carried, once.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "am/endpoint_impl.hpp"
#include "protocol_fixture.hpp"

namespace hpam::test {
namespace {

constexpr unsigned h_keep = 5;
constexpr size_t long_message = 600;  // Medusa: longer than an RX_READY cell holds
// Hamlyn: longer than card_setup::by_reference_above (4 KiB)
constexpr size_t long_hamlyn_message = 6000;

void keep(hpam_token*, void* ctx, void* data, size_t len, uint64_t) {
  const auto* p = static_cast<const uint8_t*>(data);
  static_cast<std::vector<std::vector<uint8_t>>*>(ctx)->emplace_back(p, p + len);
}

std::vector<uint8_t> message(uint8_t tag, size_t len) {
  std::vector<uint8_t> m(len);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(tag * 37 + i);
  return m;
}

template <class Card>
void a_resent_request_and_its_rewritten_block_arrive_byte_exact(size_t len) {
  for (bool by_reference : {true, false}) {
    job_options o;
    o.depth = 1;  // the next request takes the same block
    o.receive_budget = 1;
    o.adaptive_timeout = false;  // the paper's timer: a timeout resends, polled or not
    o.by_reference = by_reference;
    local_job<Card> j(o, "byref");
    std::vector<std::vector<uint8_t>> seen;
    ASSERT_EQ(j[1].register_handler_bulk(h_keep, keep, &seen), hpam::status::ok);
    auto send = [&](const std::vector<uint8_t>& m) {
      iovec iov{const_cast<uint8_t*>(m.data()), m.size()};
      return j[0].request_medium(1, h_keep, &iov, 1, 0, false);
    };
    const std::vector<uint8_t> a = message(1, len), b = message(2, len);
    ASSERT_EQ(send(a), hpam::status::ok);
    j.time().advance(2 * o.timeout_ns);
    for (int i = 0; i < 4 && j[0].peer_counters(1).retransmissions == 0; ++i) (void)j[0].poll();
    ASSERT_EQ(j[0].peer_counters(1).retransmissions, 1u);
    (void)j[1].poll();  // the first copy of a, answered at once
    ASSERT_EQ(seen.size(), 1u);
    (void)j[0].poll();  // the answer: the instance, and its block, are free
    ASSERT_EQ(send(b), hpam::status::ok);
    for (int i = 0; i < 4; ++i) j.pump();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0], a);
    EXPECT_EQ(seen[1], b);
    EXPECT_EQ(j[1].peer_counters(0).duplicates_reflected, 1u);  // a's resent copy
    EXPECT_EQ(j[0].card().by_reference_sends(), by_reference ? 2u : 0u);
    EXPECT_EQ(j[1].card().malformed(), 0u);
  }
}

TEST(by_reference, a_resent_request_and_its_rewritten_block_arrive_byte_exact) {
  a_resent_request_and_its_rewritten_block_arrive_byte_exact<nic::medusa_card>(long_message);
}

TEST(by_reference, hamlyn_a_resent_request_and_its_rewritten_block_arrive_byte_exact) {
  a_resent_request_and_its_rewritten_block_arrive_byte_exact<nic::hamlyn_am_card>(
      long_hamlyn_message);
}

}  // namespace
}  // namespace hpam::test
