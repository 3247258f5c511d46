// A peer holding the right key can still be buggy or hostile: the receive
// checks behind the key check, over every card type. Stores and gets are
// bound to the destination's segment and refused (negatively acknowledged,
// counted, reported) outside it; a reply must match what its request asked;
// a malformed request neither consumes a sequence number nor is
// acknowledged.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "hostile_peer.hpp"
#include "protocol_fixture.hpp"

namespace hpam::test {
namespace {

using am::msg_class;
using am::msg_kind;
enum : unsigned { h_count = 1, h_bulk = 2, h_reply4 = 3 };

struct seen {
  int count_runs = 0;
  int bulk_runs = 0;
  void* bulk_data = nullptr;
  size_t bulk_len = 0;
  uint64_t bulk_arg = 0;
};
void on_count(hpam_token*, void* ctx, uint64_t, uint64_t, uint64_t, uint64_t) {
  static_cast<seen*>(ctx)->count_runs++;
}
void on_bulk(hpam_token*, void* ctx, void* data, size_t len, uint64_t arg) {
  auto* s = static_cast<seen*>(ctx);
  s->bulk_runs++;
  s->bulk_data = data;
  s->bulk_len = len;
  s->bulk_arg = arg;
}

template <class Ep>
void install(Ep& e, seen& s) {
  ASSERT_EQ(e.register_handler4(h_count, on_count, &s), hpam::status::ok);
  ASSERT_EQ(e.register_handler_bulk(h_bulk, on_bulk, &s), hpam::status::ok);
}

// Two ordinary endpoints of one job.
template <class Card>
class segment_rules : public ::testing::Test {
 protected:
  segment_rules() : job_(job_options{}) {
    install(job_[0], s_[0]);
    install(job_[1], s_[1]);
  }
  // Polls both until nothing is outstanding; returns what process 0's polls reported.
  hpam::status settle() {
    hpam::status reported = hpam::status::ok;
    for (int r = 0; r < 1000; ++r) {
      const hpam::status st = job_[0].poll();
      if (st != hpam::status::ok) reported = st;
      (void)job_[1].poll();
      if (!job_[0].request_outstanding(1) && !job_[1].request_outstanding(0)) break;
    }
    const hpam::status st = job_[0].poll();
    return st != hpam::status::ok ? st : reported;
  }
  local_job<Card> job_;
  seen s_[2];
};
TYPED_TEST_SUITE(segment_rules, card_types);

// Ranges around a 256-byte segment at [64, 320) of a 512-byte buffer.
TYPED_TEST(segment_rules, store_outside_the_segment_is_refused_counted_and_reported) {
  auto& j = this->job_;
  std::vector<uint8_t> area(512, 0xEE), src(64, 0x5A);
  ASSERT_EQ(j[1].set_segment(area.data() + 64, 256), hpam::status::ok);
  const struct { size_t at, len; } bad[] = {{0, 64}, {32, 64}, {300, 64}, {320, 1}, {500, 12}};
  uint64_t refused = 0;
  for (const auto& b : bad) {
    ASSERT_EQ(j[0].request_store(1, h_bulk, src.data(), b.len,
                                 reinterpret_cast<uint64_t>(area.data() + b.at), 0, false),
              hpam::status::ok);
    EXPECT_EQ(this->settle(), hpam::status::rejected) << "at " << b.at;
    ++refused;
    EXPECT_EQ(j[0].peer_counters(1).refusals_received, refused);
    EXPECT_EQ(j[1].peer_counters(0).segment_rejections, refused);
    EXPECT_NE(j[0].last_error().find("segment"), std::string::npos) << j[0].last_error();
  }
  EXPECT_EQ(this->s_[1].bulk_runs, 0);
  for (uint8_t b : area) ASSERT_EQ(b, 0xEE);  // nothing landed
  // Inside, at both edges: accepted.
  for (size_t at : {size_t{64}, size_t{256}}) {
    ASSERT_EQ(j[0].request_store(1, h_bulk, src.data(), 64,
                                 reinterpret_cast<uint64_t>(area.data() + at), 0, false),
              hpam::status::ok);
    EXPECT_EQ(this->settle(), hpam::status::ok);
  }
  EXPECT_EQ(this->s_[1].bulk_runs, 2);
  EXPECT_EQ(area[64], 0x5A);
  EXPECT_EQ(area[319], 0x5A);
  EXPECT_EQ(area[63], 0xEE);
  EXPECT_EQ(area[320], 0xEE);
}

TYPED_TEST(segment_rules, get_outside_the_segment_is_refused_and_nothing_is_read) {
  auto& j = this->job_;
  std::vector<uint8_t> area(512, 0x77), local(64, 0);
  ASSERT_EQ(j[1].set_segment(area.data() + 256, 256), hpam::status::ok);
  ASSERT_EQ(j[0].request_get(1, h_bulk, reinterpret_cast<uint64_t>(area.data() + 200), local.data(),
                             64, 0, false),
            hpam::status::ok);
  EXPECT_EQ(this->settle(), hpam::status::rejected);
  EXPECT_EQ(this->s_[0].bulk_runs, 0);
  for (uint8_t b : local) ASSERT_EQ(b, 0);
  EXPECT_EQ(j[1].peer_counters(0).segment_rejections, 1u);
  EXPECT_EQ(j[0].peer_counters(1).refusals_received, 1u);
  // An address whose range wraps around the address space.
  ASSERT_EQ(j[0].request_get(1, h_bulk, ~uint64_t{0} - 8, local.data(), 64, 0, false),
            hpam::status::ok);
  EXPECT_EQ(this->settle(), hpam::status::rejected);
  EXPECT_EQ(j[0].peer_counters(1).refusals_received, 2u);
}

TYPED_TEST(segment_rules, without_a_segment_every_store_and_get_is_refused) {
  auto& j = this->job_;
  std::vector<uint8_t> area(64, 0), src(64, 1);
  ASSERT_EQ(j[1].set_segment(area.data(), area.size()), hpam::status::ok);
  ASSERT_EQ(j[1].set_segment(nullptr, 0), hpam::status::ok);  // disabled
  ASSERT_EQ(j[0].request_store(1, h_bulk, src.data(), 8, reinterpret_cast<uint64_t>(area.data()), 0,
                               false),
            hpam::status::ok);
  EXPECT_EQ(this->settle(), hpam::status::rejected);
  EXPECT_EQ(area[0], 0);
  EXPECT_EQ(j[1].set_segment(nullptr, 10), hpam::status::invalid_argument);
  EXPECT_EQ(j[1].set_segment(reinterpret_cast<void*>(~uintptr_t{0} - 4), 10),
            hpam::status::invalid_argument);
  // To myself, the same rule, returned at once.
  EXPECT_EQ(j[0].request_store(0, h_bulk, src.data(), 8, reinterpret_cast<uint64_t>(area.data()), 0,
                               false),
            hpam::status::rejected);
}

// A request naming a handler the receiver never registered is refused by a
// negative acknowledgement, not acknowledged as if it had run.
TYPED_TEST(segment_rules, request_for_an_unregistered_handler_is_refused) {
  auto& j = this->job_;
  const uint64_t w[4] = {};
  ASSERT_EQ(j[0].request_4(1, 77, w, false), hpam::status::ok);
  EXPECT_EQ(this->settle(), hpam::status::rejected);
  EXPECT_EQ(j[0].peer_counters(1).refusals_received, 1u);
  EXPECT_NE(j[0].last_error().find("no handler"), std::string::npos) << j[0].last_error();
  EXPECT_EQ(j[1].peer_counters(0).requests_received, 0u);
}

// A handler's store reply must land inside the requester's segment.
template <class Card>
void reply_into(hpam_token* t, void*, uint64_t target, uint64_t, uint64_t, uint64_t) {
  static const char bytes[16] = "overwritten....";
  (void)static_cast<am::endpoint<Card>*>(t->endpoint)
      ->reply_store(*t, h_bulk, bytes, sizeof bytes, target, 0);
}

TYPED_TEST(segment_rules, store_reply_outside_the_requester_segment_is_refused) {
  auto& j = this->job_;
  ASSERT_EQ(j[1].register_handler4(h_reply4, reply_into<TypeParam>, nullptr), hpam::status::ok);
  std::vector<uint8_t> canary(16, 0xCC), seg(64, 0);
  ASSERT_EQ(j[0].set_segment(seg.data(), seg.size()), hpam::status::ok);
  const uint64_t w[4] = {reinterpret_cast<uint64_t>(canary.data()), 0, 0, 0};
  ASSERT_EQ(j[0].request_4(1, h_reply4, w, false), hpam::status::ok);
  EXPECT_EQ(this->settle(), hpam::status::rejected);
  for (uint8_t b : canary) ASSERT_EQ(b, 0xCC);
  EXPECT_EQ(this->s_[0].bulk_runs, 0);
  EXPECT_EQ(j[0].peer_counters(1).segment_rejections, 1u);
  const uint64_t inside[4] = {reinterpret_cast<uint64_t>(seg.data()), 0, 0, 0};
  ASSERT_EQ(j[0].request_4(1, h_reply4, inside, false), hpam::status::ok);
  EXPECT_EQ(this->settle(), hpam::status::ok);
  EXPECT_EQ(this->s_[0].bulk_runs, 1);
  EXPECT_EQ(seg[0], 'o');
}

// --- a hostile peer with the right key -----------------------------------

template <class Card>
class hostile : public ::testing::Test {
 protected:
  hostile() { install(x_.victim(), s_); }
  // n malformed requests came from peer 1: each counted, none run or
  // answered, and none used up sequence 1, so the genuine request with it
  // still runs once, is acknowledged at sequence 1, and is not counted.
  void refused_as_malformed_then_genuine_runs(uint64_t n) {
    EXPECT_EQ(x_.victim().peer_counters(1).malformed, n);
    EXPECT_EQ(s_.count_runs, 0);
    EXPECT_EQ(s_.bulk_runs, 0);
    am::am_header answer;
    EXPECT_FALSE(x_.receive(answer)) << "a malformed request was answered";
    x_.send(hostile_peer<Card>::header(msg_class::request, msg_kind::short4, 0, 1, h_count));
    EXPECT_EQ(x_.victim().poll(), hpam::status::ok);
    EXPECT_EQ(s_.count_runs, 1);
    ASSERT_TRUE(x_.receive(answer));
    const am::control_word c = am::read_control(answer);
    EXPECT_EQ(c.kind, msg_kind::ack);
    EXPECT_EQ(c.sequence, 1u);
    EXPECT_EQ(answer.refusal, 0u);
    EXPECT_EQ(x_.victim().peer_counters(1).malformed, n);
  }
  hostile_peer<Card> x_;
  seen s_;
};
TYPED_TEST_SUITE(hostile, card_types);

// The reply to a get names a target (the echo of the request's own word):
// it is ignored; the bytes go where the request descriptor says, and the
// handler and argument are the requester's.
TYPED_TEST(hostile, get_reply_goes_where_the_request_said) {
  auto& v = this->x_.victim();
  std::vector<uint8_t> local(64, 0), canary(64, 0xCC);
  ASSERT_EQ(v.set_segment(canary.data(), canary.size()), hpam::status::ok);  // even inside it
  ASSERT_EQ(v.request_get(1, h_bulk, 0x1000, local.data(), local.size(), 7, false),
            hpam::status::ok);
  am::am_header req;
  ASSERT_TRUE(this->x_.receive(req));
  const am::control_word c = am::read_control(req);
  ASSERT_EQ(c.kind, msg_kind::get);
  auto h = hostile_peer<TypeParam>::header(msg_class::reply, msg_kind::store, c.instance,
                                           c.sequence, h_count);
  h.word[am::bulk_word::target] = reinterpret_cast<uint64_t>(canary.data());
  h.word[am::bulk_word::arg] = 99;
  h.word[am::bulk_word::length] = 64;
  const std::vector<uint8_t> data(64, 0xAB);
  this->x_.send(h, data.data(), 64);
  EXPECT_EQ(v.poll(), hpam::status::ok);
  for (uint8_t b : canary) ASSERT_EQ(b, 0xCC);
  for (uint8_t b : local) ASSERT_EQ(b, 0xAB);
  EXPECT_EQ(this->s_.bulk_runs, 1);
  EXPECT_EQ(this->s_.bulk_data, local.data());
  EXPECT_EQ(this->s_.bulk_arg, 7u);
  EXPECT_FALSE(v.request_outstanding(1));
}

TYPED_TEST(hostile, get_reply_of_another_length_is_refused) {
  auto& v = this->x_.victim();
  for (uint32_t len : {32u, 128u}) {
    std::vector<uint8_t> local(256, 0);
    ASSERT_EQ(v.request_get(1, h_bulk, 0x1000, local.data(), 64, 7, false), hpam::status::ok);
    am::am_header req;
    ASSERT_TRUE(this->x_.receive(req));
    const am::control_word c = am::read_control(req);
    auto h = hostile_peer<TypeParam>::header(msg_class::reply, msg_kind::store, c.instance,
                                             c.sequence, h_bulk);
    h.word[am::bulk_word::target] = reinterpret_cast<uint64_t>(local.data());
    h.word[am::bulk_word::length] = len;
    const std::vector<uint8_t> data(len, 0xAB);
    this->x_.send(h, data.data(), len);
    EXPECT_EQ(v.poll(), hpam::status::rejected) << len;
    for (uint8_t b : local) ASSERT_EQ(b, 0) << len;
    EXPECT_FALSE(v.request_outstanding(1));  // answered, though badly
  }
  EXPECT_EQ(this->s_.bulk_runs, 0);
  EXPECT_EQ(v.peer_counters(1).malformed, 2u);
}

// A get answered by a plain acknowledgement is not a success either.
TYPED_TEST(hostile, get_answered_by_an_empty_ack_is_reported) {
  auto& v = this->x_.victim();
  std::vector<uint8_t> local(64, 0);
  ASSERT_EQ(v.request_get(1, h_bulk, 0x1000, local.data(), 64, 7, false), hpam::status::ok);
  am::am_header req;
  ASSERT_TRUE(this->x_.receive(req));
  const am::control_word c = am::read_control(req);
  this->x_.send(
      hostile_peer<TypeParam>::header(msg_class::reply, msg_kind::ack, c.instance, c.sequence, 0));
  EXPECT_EQ(v.poll(), hpam::status::rejected);
  EXPECT_EQ(this->s_.bulk_runs, 0);
}

// A malformed request (its length word disagrees with its payload) is
// dropped and counted; it is not acknowledged and does not use up its
// sequence number, so the genuine request with that number still runs.
TYPED_TEST(hostile, malformed_request_neither_consumes_its_sequence_nor_is_acked) {
  auto& v = this->x_.victim();
  std::vector<uint8_t> seg(64, 0);
  ASSERT_EQ(v.set_segment(seg.data(), seg.size()), hpam::status::ok);
  auto bad = hostile_peer<TypeParam>::header(msg_class::request, msg_kind::store, 0, 1, h_bulk);
  bad.word[am::bulk_word::target] = reinterpret_cast<uint64_t>(seg.data());
  bad.word[am::bulk_word::length] = 10;
  const std::vector<uint8_t> data(20, 1);
  this->x_.send(bad, data.data(), 20);
  EXPECT_EQ(v.poll(), hpam::status::ok);
  this->refused_as_malformed_then_genuine_runs(1);
}

// A request's flags (am_header::refusal of a request) are request_flags
// only: one with another bit set is malformed, dropped and counted, its
// sequence not consumed, so the genuine request still runs.
TYPED_TEST(hostile, a_request_with_an_unknown_flag_is_malformed) {
  auto& v = this->x_.victim();
  for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x20}}) {  // 0x80 carries_ack, 0x40 resent
    auto bad = hostile_peer<TypeParam>::header(msg_class::request, msg_kind::short4, 0, 1, h_count);
    bad.refusal = bit;
    this->x_.send(bad);
    EXPECT_EQ(v.poll(), hpam::status::ok);
  }
  this->refused_as_malformed_then_genuine_runs(2);
}

// A request of the ack kind (a kind only replies have), with or without a
// payload, is malformed: dropped and counted, not answered, its sequence
// number not consumed, so the genuine request with that number still runs.
TYPED_TEST(hostile, a_request_of_the_ack_kind_is_malformed) {
  auto& v = this->x_.victim();
  const std::vector<uint8_t> data(16, 1);
  for (uint32_t len : {0u, 16u}) {
    this->x_.send(hostile_peer<TypeParam>::header(msg_class::request, msg_kind::ack, 0, 1, h_count),
                  data.data(), len);
    EXPECT_EQ(v.poll(), hpam::status::ok);
  }
  this->refused_as_malformed_then_genuine_runs(2);
}

// An acknowledgement riding on a request (an ack_entry trailer) frees only the
// instance it names, and only for the sequence sent there: a stale one is
// dropped and counted (the request itself still runs), one naming no
// instance makes the whole packet malformed (its sequence not consumed).
TYPED_TEST(hostile, a_riding_ack_frees_only_the_request_it_names) {
  auto& v = this->x_.victim();
  const uint64_t w[4] = {};
  ASSERT_EQ(v.request_4(1, h_count, w, false), hpam::status::ok);
  am::am_header req;
  ASSERT_TRUE(this->x_.receive(req));
  const am::control_word mine = am::read_control(req);
  auto h = hostile_peer<TypeParam>::header(msg_class::request, msg_kind::short4, 0, 1, h_count);
  h.refusal = am::carries_ack;
  const am::ack_entry stale{mine.sequence + 1, mine.instance};
  this->x_.send(h, &stale, sizeof stale);
  EXPECT_EQ(v.poll(), hpam::status::ok);
  EXPECT_EQ(this->s_.count_runs, 1);
  EXPECT_EQ(v.peer_counters(1).stale_replies, 1u);
  EXPECT_TRUE(v.request_outstanding(1));
  h = hostile_peer<TypeParam>::header(msg_class::request, msg_kind::short4, 0, 2, h_count);
  h.refusal = am::carries_ack;
  const am::ack_entry nowhere{mine.sequence, 4};  // D = 4
  this->x_.send(h, &nowhere, sizeof nowhere);
  EXPECT_EQ(v.poll(), hpam::status::ok);
  EXPECT_EQ(this->s_.count_runs, 1);
  EXPECT_EQ(v.peer_counters(1).malformed, 1u);
  EXPECT_TRUE(v.request_outstanding(1));
  const am::ack_entry right{mine.sequence, mine.instance};
  this->x_.send(h, &right, sizeof right);  // the same sequence 2: not consumed above
  EXPECT_EQ(v.poll(), hpam::status::ok);
  EXPECT_EQ(this->s_.count_runs, 2);
  EXPECT_FALSE(v.request_outstanding(1));
  EXPECT_EQ(v.peer_counters(1).replies_received, 1u);
}

// With deferred acks, a plain ack waits to ride; a refusal never waits: it
// leaves within the poll that made it, as a packet of its own. A peer that
// sends the next request on an instance before it has the answer to the
// last one there has that instance's waiting ack replaced by the new
// answer: a refusal now, so nothing rides (a rider would tell it the
// refused request was done) and nothing else is launched.
TYPED_TEST(hostile, a_refusal_leaves_at_once_and_replaces_the_ack_waiting_on_its_instance) {
  hostile_peer<TypeParam> x(4, 2, true, true);
  seen s;
  install(x.victim(), s);
  auto& v = x.victim();
  x.send(hostile_peer<TypeParam>::header(msg_class::request, msg_kind::short4, 0, 1, h_count));
  EXPECT_EQ(v.poll(), hpam::status::ok);
  EXPECT_EQ(s.count_runs, 1);
  am::am_header answer;
  EXPECT_FALSE(x.receive(answer)) << "a plain ack waits to ride";
  x.send(hostile_peer<TypeParam>::header(msg_class::request, msg_kind::short4, 0, 2, 9));
  EXPECT_EQ(v.poll(), hpam::status::ok);
  ASSERT_TRUE(x.receive(answer)) << "the refusal did not leave at once";
  am::control_word c = am::read_control(answer);
  EXPECT_EQ(c.kind, msg_kind::ack);
  EXPECT_EQ(c.instance, 0u);
  EXPECT_EQ(c.sequence, 2u);
  EXPECT_EQ(answer.refusal, static_cast<uint8_t>(am::refusal::no_handler));
  const uint64_t w[4] = {};
  ASSERT_EQ(v.request_4(1, h_count, w, false), hpam::status::ok);
  ASSERT_TRUE(x.receive(answer));
  c = am::read_control(answer);
  EXPECT_EQ(c.cls, msg_class::request);
  EXPECT_EQ(answer.refusal & am::carries_ack, 0) << "the replaced ack rode";
  for (int i = 0; i < 2 * static_cast<int>(am::ack_hold_polls); ++i)
    EXPECT_EQ(v.poll(), hpam::status::ok);
  EXPECT_FALSE(x.receive(answer)) << "the replaced ack was launched";
  EXPECT_EQ(v.peer_counters(1).acks_sent, 2u);
}

}  // namespace
}  // namespace hpam::test

namespace hpam::test {
namespace {

// The source of a packet is the card's, not the packet's: a peer that puts
// another process's number in its wire header is refused, and no handler
// runs in that process's name.
TYPED_TEST(hostile, a_forged_source_is_refused_not_believed) {
  hostile_peer<TypeParam> x(4, 3);
  seen s;
  install(x.victim(), s);
  const auto h =
      hostile_peer<TypeParam>::header(msg_class::request, msg_kind::short4, 0, 1, h_count);
  auto pkt = hostile_peer<TypeParam>::packet(nic::wire_header{0, 0, 2, 0, 0}, h);
  x.forge(pkt.data(), static_cast<uint32_t>(pkt.size()));
  EXPECT_EQ(x.victim().poll(), hpam::status::ok);
  EXPECT_EQ(s.count_runs, 0);
  EXPECT_EQ(x.victim().peer_counters(2).requests_received, 0u);
  EXPECT_EQ(x.victim().card().malformed(), 1u);
  EXPECT_EQ(x.victim().totals().crc_failures, 0u);
  // The same request under its true source runs, credited to process 1.
  pkt = hostile_peer<TypeParam>::packet(nic::wire_header{0, 0, 1, 0, 0}, h);
  x.forge(pkt.data(), static_cast<uint32_t>(pkt.size()), 6);
  EXPECT_EQ(x.victim().poll(), hpam::status::ok);
  EXPECT_EQ(s.count_runs, 1);
  EXPECT_EQ(x.victim().peer_counters(1).requests_received, 1u);
}

// A wire header the card refuses (its length disagrees with what was
// delivered) is counted once, as malformed, never as a CRC failure.
TYPED_TEST(hostile, a_refused_header_is_malformed_not_a_crc_failure) {
  seen s;
  install(this->x_.victim(), s);
  const auto h =
      hostile_peer<TypeParam>::header(msg_class::request, msg_kind::short4, 0, 1, h_count);
  const auto good = hostile_peer<TypeParam>::packet(nic::wire_header{0, 0, 1, 0, 0}, h);
  const auto pkt = hostile_peer<TypeParam>::packet(
      nic::wire_header{0, static_cast<uint32_t>(good.size() + 8), 1, 0, 0}, h);
  this->x_.forge(pkt.data(), static_cast<uint32_t>(pkt.size()));
  EXPECT_EQ(this->x_.victim().poll(), hpam::status::ok);
  EXPECT_EQ(s.count_runs, 0);
  EXPECT_EQ(this->x_.victim().totals().crc_failures, 0u);
  EXPECT_EQ(this->x_.victim().totals().malformed + this->x_.victim().card().malformed(), 1u);
}

// While a blocking send stalls for a free instance to process 1, process 2
// is given up on: the stall must leave that report for the caller's next
// poll. Process 1's answer is already waiting when the stall starts, so its
// first poll frees the instance and, checking every descriptor, gives up on
// process 2 (silent for 45 ms, give-up time 20 ms, while its card heartbeat
// shows it polling and process 0 has read its own queue since: a live peer
// that polls yet never answers is given up on, one that only computes would
// be waited for).
// The handler index is read once, with the rest of the header, when the
// packet is accepted: a sender that rewrites it in the shared block after
// that (here, while the victim connects to it on arrival) cannot choose
// another handler.
TYPED_TEST(hostile, the_handler_that_runs_is_the_one_accepted) {
  hostile_peer<rewriting_card<TypeParam>> x(4, 2, false);
  auto& v = x.victim();
  seen accepted, other;
  ASSERT_EQ(v.register_handler4(h_count, on_count, &accepted), hpam::status::ok);
  ASSERT_EQ(v.register_handler4(h_reply4, on_count, &other), hpam::status::ok);
  v.card().rewrite_handler_to(h_reply4);
  x.send(hostile_peer<rewriting_card<TypeParam>>::header(msg_class::request, msg_kind::short4, 0, 1,
                                                         h_count));
  EXPECT_EQ(v.poll(), hpam::status::ok);
  ASSERT_EQ(v.card().rewrites(), 1);
  EXPECT_EQ(v.card().handler_in_block(), h_reply4);  // the block did change before dispatch
  EXPECT_EQ(accepted.count_runs, 1);
  EXPECT_EQ(other.count_runs, 0);
}

TYPED_TEST(segment_rules, stall_keeps_another_peers_unreachable_for_the_next_poll) {
  job_options o;
  o.nprocs = 3;
  o.depth = 1;
  o.give_up_ns = 20'000'000;
  o.checks_per_poll = 2;
  local_job<TypeParam> j(o);
  seen s[3];
  for (int p = 0; p < 3; ++p) install(j[p], s[p]);
  const uint64_t w[4] = {};
  ASSERT_EQ(j[0].request_4(2, h_count, w, false), hpam::status::ok);  // 2 never answers
  j.time().advance(1'000'000);
  (void)j[0].poll();                                   // the request's first timeout
  for (int i = 0; i < 16; ++i) j[2].card().service();  // 2 polls its card, takes nothing
  j.time().advance(20'000'000);
  for (int i = 0; i < 16; ++i) ASSERT_EQ(j[0].poll(), hpam::status::ok);  // 0 reads its own queue
  j.time().advance(4'000'000);
  ASSERT_EQ(j[0].request_4(1, h_count, w, false), hpam::status::ok);  // 1's one instance busy
  ASSERT_EQ(j[1].poll(), hpam::status::ok);                           // its answer waits at 0
  j.time().advance(20'000'000);
  EXPECT_EQ(j[0].request_4(1, h_count, w, true), hpam::status::ok);  // stalls, then sends
  EXPECT_TRUE(j[0].peer_lost(2));
  EXPECT_EQ(j[0].poll(), hpam::status::peer_unreachable);
  EXPECT_EQ(j[0].unreachable_peer(), 2);
}

}  // namespace
}  // namespace hpam::test
