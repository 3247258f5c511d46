// One acknowledgement packet covering several instances (multi_ack), over
// every card type: deferred plain acks to a peer are gathered while a stream
// arrives and go out as one ack packet per peer carrying ack_entry records;
// each entry frees exactly the request it names, a stale one is counted and
// dropped, a malformed packet frees nothing, a lone ack is not held back,
// and a duplicate request still gets exactly its own stored ack.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "am/endpoint_impl.hpp"
#include "hostile_peer.hpp"
#include "protocol_fixture.hpp"

namespace hpam::test {
namespace {

using am::msg_class;
using am::msg_kind;

enum : unsigned { h_count = 1 };

struct tally {
  uint64_t runs = 0;
  uint64_t sum = 0;
};

template <class Card>
class multi_ack : public ::testing::Test {
 protected:
  static void count(hpam_token*, void* ctx, uint64_t a0, uint64_t, uint64_t, uint64_t) {
    auto* t = static_cast<tally*>(ctx);
    t->runs++;
    t->sum += a0;
  }
  void start(job_options o) {
    o.defer_acks = true;
    job_ = std::make_unique<local_job<Card>>(o, "multiack");
    seen_.assign(static_cast<size_t>(o.nprocs), tally{});
    for (int p = 0; p < o.nprocs; ++p)
      ASSERT_EQ((*job_)[p].register_handler4(h_count, count, &seen_[p]), hpam::status::ok);
  }
  // Process `from` sends n requests (word 1) to process 1, each launched at once.
  void send_counts(int n, int from = 0) {
    const uint64_t w[4] = {1, 0, 0, 0};
    for (int i = 0; i < n; ++i)
      ASSERT_EQ((*job_)[from].request_4(1, h_count, w, false), hpam::status::ok);
  }
  // Process 0's n requests to process 1 are all answered, none by a stale reply.
  void expect_all_answered(uint64_t n) {
    auto& j = *job_;
    EXPECT_FALSE(j[0].request_outstanding(1));
    EXPECT_EQ(j[0].peer_counters(1).replies_received, n);
    EXPECT_EQ(j[0].peer_counters(1).stale_replies, 0u);
  }
  // Polls process p until a poll handles nothing; returns the packets handled.
  int drain(int p) {
    int handled = 0, packets = 0;
    do {
      (void)(*job_)[p].poll(&handled);
      packets += handled;
    } while (handled != 0);
    return packets;
  }
  bool settle(int rounds = 100000) {
    auto& j = *job_;
    for (int r = 0; r < rounds; ++r) {
      bool idle = true;
      for (int p = 0; p < j.size(); ++p)
        for (int q = 0; q < j.size(); ++q)
          if (p != q && j[p].request_outstanding(q)) idle = false;
      if (idle) return true;
      j.time().advance(100'000);
      j.pump();
    }
    return false;
  }
  std::unique_ptr<local_job<Card>> job_;
  std::vector<tally> seen_;
};
TYPED_TEST_SUITE(multi_ack, card_types);

// A stream of 16 requests (D = 16) read one packet per poll: the receiver
// gathers the acks and launches them whenever ack_threshold (4) wait, in
// four ack packets of 4 (the first answering its own instance, 3 entries);
// the sender takes the four packets and every request is answered exactly
// once, none stale.
TYPED_TEST(multi_ack, a_stream_is_answered_by_one_packet_per_threshold) {
  static_assert(am::ack_threshold(16) == 4 && am::ack_threshold(4) == 2 &&
                am::ack_threshold(64) == 16);
  job_options o;
  o.depth = 16;
  o.receive_budget = 1;
  this->start(o);
  auto& j = *this->job_;
  ASSERT_NO_FATAL_FAILURE(this->send_counts(16));
  for (int i = 0; i < 17; ++i) (void)j[1].poll();
  EXPECT_EQ(this->seen_[1].runs, 16u);
  EXPECT_EQ(j[1].peer_counters(0).acks_sent, 16u);
  EXPECT_EQ(j[1].peer_counters(0).acks_combined, 12u);  // 4 packets: 1 + 3 entries each
  EXPECT_EQ(this->drain(0), 4);
  this->expect_all_answered(16);
  EXPECT_EQ(j[0].peer_counters(1).malformed, 0u);
}

// Switched off, the same stream costs one ack packet per request.
TYPED_TEST(multi_ack, switched_off_every_ack_is_a_packet) {
  job_options o;
  o.depth = 8;
  o.receive_budget = 1;
  o.multi_ack = false;
  this->start(o);
  auto& j = *this->job_;
  ASSERT_NO_FATAL_FAILURE(this->send_counts(8));
  for (int i = 0; i < 9; ++i) (void)j[1].poll();
  EXPECT_EQ(this->drain(0), 8);
  EXPECT_EQ(j[1].peer_counters(0).acks_combined, 0u);
  EXPECT_FALSE(j[0].request_outstanding(1));
}

// A lone ack is not held for a stream that does not come: the poll after
// the one that ran its handler (finding nothing) launches it.
TYPED_TEST(multi_ack, a_lone_ack_leaves_at_the_next_poll) {
  for (uint32_t budget : {1u, 64u}) {
    job_options o;
    o.depth = 16;
    o.receive_budget = budget;
    this->start(o);
    auto& j = *this->job_;
    const uint64_t w[4] = {3, 0, 0, 0};
    ASSERT_EQ(j[0].request_4(1, h_count, w, false), hpam::status::ok);
    (void)j[1].poll();
    EXPECT_EQ(this->seen_[1].runs, 1u);
    (void)j[0].poll();
    EXPECT_TRUE(j[0].request_outstanding(1)) << budget;  // the ack waits to ride
    (void)j[1].poll();
    (void)j[0].poll();
    EXPECT_FALSE(j[0].request_outstanding(1)) << budget;
  }
}

// A peer waiting for one ack is not kept waiting by a stream from another
// peer that keeps the receiver's queue full: after ack_hold_polls polls the
// receiver launches every waiting ack.
TYPED_TEST(multi_ack, a_stream_from_one_peer_does_not_hold_back_anothers_ack) {
  job_options o;
  o.nprocs = 3;
  o.depth = 64;
  o.receive_budget = 1;
  o.timeout_ns = 5'000'000'000;  // settle() advances the clock: no retransmission meanwhile
  this->start(o);
  auto& j = *this->job_;
  ASSERT_NO_FATAL_FAILURE(this->send_counts(1, 2));
  ASSERT_NO_FATAL_FAILURE(this->send_counts(60));
  int polls = 0;
  while (j[2].request_outstanding(1) && polls < 40) {
    (void)j[1].poll();
    (void)j[2].poll();
    ++polls;
  }
  EXPECT_FALSE(j[2].request_outstanding(1));
  EXPECT_LE(polls, static_cast<int>(am::ack_hold_polls) + 2);
  EXPECT_LT(this->seen_[1].runs, 60u) << "the ack waited for the whole stream";
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].runs, 61u);
  EXPECT_EQ(j[0].peer_counters(1).replies_received, 60u);
  EXPECT_EQ(j[0].peer_counters(1).stale_replies, 0u);
}

// More acks than one small block holds (D = 64, 256-byte blocks: 28 entries
// fit behind the header) go in several packets; none lost, none doubled.
TYPED_TEST(multi_ack, acks_beyond_a_packets_room_take_several_packets) {
  job_options o;
  o.depth = 64;
  o.block_size = 256;
  o.receive_budget = 63;
  this->start(o);
  auto& j = *this->job_;
  ASSERT_NO_FATAL_FAILURE(this->send_counts(64));
  (void)j[1].poll();  // a poll after a quiet one takes one packet: a stream starts
  EXPECT_EQ(this->seen_[1].runs, 1u);
  (void)j[1].poll();  // the other 63 handlers in one poll, its budget used up: 64 acks due at
                      // its end go in 1 + 28, 1 + 28, 1 + 5
  EXPECT_EQ(this->seen_[1].runs, 64u);
  EXPECT_EQ(j[1].peer_counters(0).acks_combined, 61u);
  int handled = 0, more = 0;
  (void)j[0].poll(&handled);  // one ack packet, then (a stream) the other two
  (void)j[0].poll(&more);
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(more, 2);
  this->expect_all_answered(64);
}

// A stream both ways and one way, under every fault kind: each request's
// handler runs exactly once and every request is answered; gathered acks
// were lost, doubled and reordered on the way and still freed only what
// they named (a wrong free would leave a request unanswered: settle fails,
// or let a sequence run twice: the sums differ).
TYPED_TEST(multi_ack, streams_survive_faults_exactly_once) {
  job_options o;
  o.depth = 8;
  o.receive_budget = 2;
  o.timeout_ns = 50'000;
  o.faults.drop = 0.05;
  o.faults.duplicate = 0.05;
  o.faults.reorder = 0.05;
  o.faults.corrupt = 0.02;
  o.faults.delay = 0.02;
  o.faults.delay_ns = 30'000;
  this->start(o);
  auto& j = *this->job_;
  uint64_t sent0 = 0, sent1 = 0;
  for (uint64_t i = 1; i <= 600; ++i) {
    const uint64_t w[4] = {i, 0, 0, 0};
    while (j[0].request_4(1, h_count, w, false) == hpam::status::busy) {
      j.time().advance(5'000);
      j.pump();
    }
    sent0 += i;
    if (i % 3 == 0) {  // the other way, now and then: acks ride and gather
      while (j[1].request_4(0, h_count, w, false) == hpam::status::busy) {
        j.time().advance(5'000);
        j.pump();
      }
      sent1 += i;
    }
    if (i % 5 == 0) (void)j[1].poll();
  }
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].runs, 600u);
  EXPECT_EQ(this->seen_[1].sum, sent0);
  EXPECT_EQ(this->seen_[0].runs, 200u);
  EXPECT_EQ(this->seen_[0].sum, sent1);
  EXPECT_GT(j[1].peer_counters(0).acks_combined, 0u);
  EXPECT_GT(j[0].card().wire_stats().dropped + j[1].card().wire_stats().dropped, 0u);
  EXPECT_EQ(j[0].peer_counters(1).malformed + j[1].peer_counters(0).malformed, 0u);
}

// ---- against a hostile (or merely buggy) peer ------------------------------

template <class Card>
class multi_ack_hostile : public ::testing::Test {
 protected:
  static void count(hpam_token*, void* ctx, uint64_t, uint64_t, uint64_t, uint64_t) {
    static_cast<tally*>(ctx)->runs++;
  }
  using peer = hostile_peer<Card>;
  static am::am_header ack(uint32_t instance, uint32_t sequence, uint8_t why = 0) {
    am::am_header h = peer::header(msg_class::reply, msg_kind::ack, instance, sequence, 0);
    h.refusal = why;
    return h;
  }
  tally t_;
};
TYPED_TEST_SUITE(multi_ack_hostile, card_types);

// The victim's four requests (D = 4, sequence 1 on instances 0..3) are
// answered by forged ack packets: entries that are stale free nothing (and
// are counted), a packet with a repeated instance, an instance beyond D,
// more entries than D-1, a length that is not whole entries or a refusal
// with entries is malformed and frees nothing at all; the entries of a
// well-formed packet free exactly the requests they name.
TYPED_TEST(multi_ack_hostile, entries_free_exactly_what_they_name) {
  using peer = hostile_peer<TypeParam>;
  peer x;
  auto& v = x.victim();
  ASSERT_EQ(v.register_handler4(h_count, this->count, &this->t_), hpam::status::ok);
  const uint64_t w[4] = {};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(v.request_4(1, h_count, w, false), hpam::status::ok);
  std::set<uint32_t> asked;
  am::am_header req;
  while (x.receive(req)) {
    const am::control_word c = am::read_control(req);
    EXPECT_EQ(c.sequence, 1u);
    asked.insert(c.instance);
  }
  ASSERT_EQ(asked, (std::set<uint32_t>{0, 1, 2, 3}));
  auto malformed = [&] { return v.peer_counters(1).malformed; };
  auto answered = [&] { return v.peer_counters(1).replies_received; };

  const am::ack_entry repeated[2] = {{1, 3}, {1, 3}};
  x.send(this->ack(0, 1), repeated, sizeof repeated);
  const am::ack_entry beyond[1] = {{1, 4}};
  x.send(this->ack(0, 1), beyond, sizeof beyond);
  const am::ack_entry own[1] = {{1, 0}};  // names the packet's own instance again
  x.send(this->ack(0, 1), own, sizeof own);
  const am::ack_entry too_many[4] = {{1, 1}, {1, 2}, {1, 3}, {1, 3}};
  x.send(this->ack(0, 1), too_many, sizeof too_many);
  const am::ack_entry part[2] = {{1, 1}, {1, 2}};
  x.send(this->ack(0, 1), part, sizeof part - 3);
  x.send(this->ack(0, 1, 2), part, sizeof part);  // a refusal carries no entries
  for (int i = 0; i < 8; ++i) (void)v.poll(nullptr, false);
  EXPECT_EQ(malformed(), 6u);
  EXPECT_EQ(answered(), 0u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_TRUE(v.request_outstanding(1));

  // Instance 0 stale (sequence 2 was never sent), 1 right, 2 stale: only 1 freed.
  const am::ack_entry mixed[2] = {{1, 1}, {2, 2}};
  x.send(this->ack(0, 2), mixed, sizeof mixed);
  (void)v.poll(nullptr, false);
  EXPECT_EQ(answered(), 1u);
  EXPECT_EQ(v.peer_counters(1).stale_replies, 2u);
  // The rest, right: 0, 2, 3 freed; the instance already freed counts stale.
  const am::ack_entry rest[3] = {{1, 2}, {1, 3}, {1, 1}};
  x.send(this->ack(0, 1), rest, sizeof rest);
  (void)v.poll(nullptr, false);
  EXPECT_EQ(answered(), 4u);
  EXPECT_EQ(v.peer_counters(1).stale_replies, 3u);
  EXPECT_EQ(malformed(), 6u);
  EXPECT_FALSE(v.request_outstanding(1));
  // The same packet again (a duplicate on the wire) frees nothing new.
  x.send(this->ack(0, 1), rest, sizeof rest);
  (void)v.poll(nullptr, false);
  EXPECT_EQ(answered(), 4u);
  EXPECT_EQ(v.peer_counters(1).stale_replies, 7u);
}

// The victim as receiver with deferred acks: its acks of four requests come
// back gathered, every instance acknowledged once at the sequence it was
// sent; a duplicate of each request is then answered by that request's own
// stored ack alone (no entries), and no handler runs again.
TYPED_TEST(multi_ack_hostile, gathered_acks_leave_each_stored_ack_as_it_was) {
  using peer = hostile_peer<TypeParam>;
  peer x(4, 2, true, true);
  auto& v = x.victim();
  ASSERT_EQ(v.register_handler4(h_count, this->count, &this->t_), hpam::status::ok);
  for (uint32_t i = 0; i < 4; ++i)
    x.send(peer::header(msg_class::request, msg_kind::short4, i, 1, h_count));
  for (int i = 0; i < 6; ++i) (void)v.poll();
  EXPECT_EQ(this->t_.runs, 4u);
  std::map<uint32_t, int> acked;  // instance -> acknowledgements of sequence 1
  am::am_header h;
  std::vector<std::byte> payload;
  int packets = 0;
  while (payload.clear(), x.receive(h, &payload)) {
    ++packets;
    const am::control_word c = am::read_control(h);
    ASSERT_EQ(c.kind, msg_kind::ack);
    EXPECT_EQ(h.refusal, 0u);
    if (c.sequence == 1) acked[c.instance]++;
    ASSERT_EQ(payload.size() % sizeof(am::ack_entry), 0u);
    for (size_t at = 0; at < payload.size(); at += sizeof(am::ack_entry)) {
      am::ack_entry e;
      std::memcpy(&e, payload.data() + at, sizeof e);
      if (e.sequence == 1) acked[e.instance]++;
    }
  }
  EXPECT_LT(packets, 4);
  EXPECT_EQ(acked, (std::map<uint32_t, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
  EXPECT_EQ(v.peer_counters(1).acks_sent, 4u);
  EXPECT_EQ(v.peer_counters(1).acks_combined, static_cast<uint64_t>(4 - packets));

  // Duplicates: of a request whose ack led a gathered packet (its block holds
  // that packet's header, entries behind it) and of ones whose acks went only
  // as entries (their blocks were never written: stamped now).
  for (uint32_t i : {0u, 1u, 2u, 3u}) {
    x.send(peer::header(msg_class::request, msg_kind::short4, i, 1, h_count));
    (void)v.poll();
    payload.clear();
    ASSERT_TRUE(x.receive(h, &payload)) << i;
    const am::control_word c = am::read_control(h);
    EXPECT_EQ(c.cls, msg_class::reply) << i;
    EXPECT_EQ(c.kind, msg_kind::ack) << i;
    EXPECT_EQ(c.instance, i);
    EXPECT_EQ(c.sequence, 1u) << i;
    EXPECT_EQ(h.refusal, 0u) << i;
    EXPECT_TRUE(payload.empty()) << i << ": the stored ack grew the entries of a gathered packet";
    EXPECT_FALSE(x.receive(h)) << i << ": more than the stored ack went out";
  }
  EXPECT_EQ(this->t_.runs, 4u);
  EXPECT_EQ(v.peer_counters(1).duplicates_reflected, 4u);
  // The next request on instance 3 runs its handler and is acknowledged anew.
  x.send(peer::header(msg_class::request, msg_kind::short4, 3, 2, h_count));
  for (int k = 0; k < 3; ++k) (void)v.poll();
  EXPECT_EQ(this->t_.runs, 5u);
  ASSERT_TRUE(x.receive(h));
  EXPECT_EQ(am::read_control(h).instance, 3u);
  EXPECT_EQ(am::read_control(h).sequence, 2u);
}

}  // namespace
}  // namespace hpam::test
