// Sequence numbers are 32 bits per [peer][instance], and the wire holds a
// packet at most wire::max_delay_ns: an old copy of a request or reply that
// arrives after the instance has carried 65,536 newer ones (a 16-bit wrap)
// never runs its handler again, is never taken for the next request, and is
// never accepted as the answer to a newer request.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "am/endpoint_impl.hpp"
#include "hpam_knobs.h"
#include "nic/wire/wire.hpp"
#include "protocol_fixture.hpp"

namespace hpam::test {
namespace {

enum : unsigned { h_count = 1, h_counted = 2 };

struct counts {
  uint64_t runs = 0;              // request handler runs at the receiver
  std::vector<uint64_t> answers;  // at the requester: the run number each reply names
};

template <class Card>
void on_count(hpam_token* t, void* ctx, uint64_t, uint64_t, uint64_t, uint64_t) {
  auto* c = static_cast<counts*>(ctx);
  const uint64_t w[4] = {c->runs++, 0, 0, 0};
  (void)static_cast<am::endpoint<Card>*>(t->endpoint)->reply_4(*t, h_counted, w);
}
void on_counted(hpam_token*, void* ctx, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  static_cast<counts*>(ctx)->answers.push_back(a0);
}

// A copy of the packet of class `cls` and sequence `seq` in one of the
// card's outbound blocks (the descriptor blocks of a two-process job, D = 1).
// Its length from its protocol header (a short4 packet, and the trailer of
// an ack riding on it): the wire header in the block is not written for a
// packet a Medusa card carried headless.
template <class Card>
std::vector<std::byte> capture(Card& card, am::msg_class cls, uint32_t seq, uint32_t& block) {
  for (uint32_t b = 0; b < 2; ++b) {
    const std::byte* pkt = card.tx_block(b);
    const am::am_header& h = *am::header_of(pkt);
    const am::control_word c = am::read_control(h);
    if (c.cls == cls && c.sequence == seq) {
      EXPECT_EQ(c.kind, am::msg_kind::short4);
      block = b;
      const uint32_t length =
          am::header_bytes(c.kind) + (cls == am::msg_class::request && (h.refusal & am::carries_ack)
                                          ? sizeof(am::ack_entry)
                                          : 0);
      return std::vector<std::byte>(pkt, pkt + length);
    }
  }
  ADD_FAILURE() << "no packet of sequence " << seq << " in the outbound blocks";
  return {};
}

// The wire delivering an old copy: the saved bytes go out again from `block`.
template <class Card>
void replay(Card& card, int dest, uint32_t block, const std::vector<std::byte>& pkt) {
  std::memcpy(card.tx_block(block), pkt.data(), pkt.size());
  card.launch(dest, block, static_cast<uint32_t>(pkt.size()));
}

template <class Card>
class sequence : public ::testing::Test {};
using sequence_cards = ::testing::Types<nic::medusa_card, nic::hamlyn_am_card>;
TYPED_TEST_SUITE(sequence, sequence_cards);

TYPED_TEST(sequence, old_copies_after_a_16_bit_wrap_are_never_taken_for_new) {
  job_options o;
  o.depth = 1;
  local_job<TypeParam> j(o, "seq");
  counts at_requester, at_receiver;
  ASSERT_EQ(j[1].register_handler4(h_count, on_count<TypeParam>, &at_receiver), hpam::status::ok);
  ASSERT_EQ(j[0].register_handler4(h_counted, on_counted, &at_requester), hpam::status::ok);
  auto round_trip = [&] {
    const uint64_t w[4] = {};
    ASSERT_EQ(j[0].request_4(1, h_count, w, false), hpam::status::ok);
    (void)j[1].poll();
    (void)j[0].poll();
    ASSERT_FALSE(j[0].request_outstanding(1));
  };
  // Request #1 and its reply, kept as the wire might keep a delayed copy.
  const uint64_t w[4] = {};
  ASSERT_EQ(j[0].request_4(1, h_count, w, false), hpam::status::ok);
  uint32_t request_block = 0, reply_block = 0;
  const auto old_request = capture(j[0].card(), am::msg_class::request, 1, request_block);
  (void)j[1].poll();
  const auto old_reply = capture(j[1].card(), am::msg_class::reply, 1, reply_block);
  (void)j[0].poll();
  ASSERT_FALSE(old_request.empty());
  ASSERT_FALSE(old_reply.empty());
  // Requests #2 .. #65,536 on the same (only) instance: a 16-bit sequence
  // would now expect 1 again.
  for (int i = 2; i <= 65536; ++i) {
    round_trip();
    if (this->HasFatalFailure()) return;
  }
  ASSERT_EQ(at_receiver.runs, 65536u);

  // The old request arrives: not run again (and not reflected as a duplicate).
  replay(j[0].card(), 1, request_block, old_request);
  (void)j[1].poll();
  EXPECT_EQ(at_receiver.runs, 65536u);
  EXPECT_EQ(j[1].peer_counters(0).requests_received, 65536u);

  // Request #65,537 is outstanding when the old reply #1 arrives: a stale
  // reply, not its answer.
  ASSERT_EQ(j[0].request_4(1, h_count, w, false), hpam::status::ok);
  replay(j[1].card(), 0, reply_block, old_reply);
  (void)j[0].poll();
  EXPECT_TRUE(j[0].request_outstanding(1));
  EXPECT_EQ(at_requester.answers.size(), 65536u);
  // #65,537 runs once, as new, and its own answer comes back.
  for (int r = 0; r < 10 && j[0].request_outstanding(1); ++r) j.pump();
  EXPECT_EQ(at_receiver.runs, 65537u);
  ASSERT_EQ(at_requester.answers.size(), 65537u);
  EXPECT_EQ(at_requester.answers.back(), 65536u);
  for (size_t i = 0; i < at_requester.answers.size(); ++i)
    ASSERT_EQ(at_requester.answers[i], i) << "answer " << i;
}

TEST(sequence_bound, wire_refuses_a_delay_beyond_its_bound) {
  nic::fault_config f;
  f.delay = 0.5;
  f.delay_ns = nic::wire::max_delay_ns;
  EXPECT_NO_THROW(nic::wire(f, 0, 1024, sys::clock()));
  f.delay_ns = nic::wire::max_delay_ns + 1;
  EXPECT_THROW(nic::wire(f, 0, 1024, sys::clock()), std::invalid_argument);
  // The knob refuses it too, naming itself.
  const int k = hpam_knob_find("fault_delay_us");
  ASSERT_GE(k, 0);
  char msg[256];
  hpam_knob_value_t v{};
  v.i = static_cast<int64_t>(nic::wire::max_delay_ns / 1000);
  EXPECT_EQ(hpam_knob_check(static_cast<size_t>(k), v, nullptr, nullptr, HPAM_KNOB_STYLE_MCA, msg,
                            sizeof msg),
            HPAM_OK);
  v.i += 1;
  EXPECT_EQ(hpam_knob_check(static_cast<size_t>(k), v, nullptr, nullptr, HPAM_KNOB_STYLE_MCA, msg,
                            sizeof msg),
            HPAM_ERR_INVALID);
  EXPECT_NE(std::string(msg).find("btl_hpam_fault_delay_us"), std::string::npos) << msg;
}

}  // namespace
}  // namespace hpam::test
