// The HPAM D-way request-reply protocol between endpoints of one job in one
// process, over every card type: replies and acknowledgements, bulk store,
// get and medium, hint pointer, non-blocking busy, duplicate reflection,
// keys, the request-reply rules, timeouts with an injected clock.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "am/endpoint_impl.hpp"
#include "protocol_fixture.hpp"

namespace hpam::test {
namespace {

enum : unsigned {
  h_add = 1,
  h_result = 2,
  h_silent = 3,
  h_bulk = 4,
  h_bad_request = 5,
  h_bad_reply = 6
};

// What handlers saw, per endpoint.
struct observed {
  uint64_t counter = 0;           // fetch-and-add target
  std::vector<uint64_t> results;  // values replies brought back
  int silent_runs = 0;
  std::vector<uint8_t> bulk_seen;
  uint64_t bulk_arg = 0;
  void* bulk_where = nullptr;
  int bulk_runs = 0;
  hpam::status rule_status = hpam::status::ok;
  void* endpoint = nullptr;
};

template <class Card>
struct handlers {
  using ep = am::endpoint<Card>;
  static void add(hpam_token* t, void* ctx, uint64_t a0, uint64_t, uint64_t, uint64_t) {
    auto* o = static_cast<observed*>(ctx);
    const uint64_t old = o->counter;
    o->counter += a0;
    const uint64_t w[4] = {old, a0, 0, 0};
    (void)static_cast<ep*>(t->endpoint)->reply_4(*t, h_result, w);
  }
  static void result(hpam_token*, void* ctx, uint64_t a0, uint64_t, uint64_t, uint64_t) {
    static_cast<observed*>(ctx)->results.push_back(a0);
  }
  static void silent(hpam_token*, void* ctx, uint64_t, uint64_t, uint64_t, uint64_t) {
    static_cast<observed*>(ctx)->silent_runs++;
  }
  static void bulk(hpam_token*, void* ctx, void* data, size_t len, uint64_t arg) {
    auto* o = static_cast<observed*>(ctx);
    auto* p = static_cast<uint8_t*>(data);
    o->bulk_seen.assign(p, p + len);
    o->bulk_arg = arg;
    o->bulk_where = data;
    o->bulk_runs++;
  }
  // Breaks the rules: a request handler that sends a request, replies twice.
  static void bad_request(hpam_token* t, void* ctx, uint64_t mode, uint64_t, uint64_t, uint64_t) {
    auto* o = static_cast<observed*>(ctx);
    auto& e = *static_cast<ep*>(t->endpoint);
    const uint64_t w[4] = {};
    if (mode == 0) o->rule_status = e.request_4(t->src, h_silent, w, false);
    if (mode == 1) {
      (void)e.reply_4(*t, h_bad_reply, w);
      o->rule_status = e.reply_4(*t, h_bad_reply, w);
    }
    if (mode == 2) o->rule_status = e.poll();
    if (mode == 3) (void)e.reply_4(*t, h_bad_reply, w);
  }
  static void bad_reply(hpam_token* t, void* ctx, uint64_t, uint64_t, uint64_t, uint64_t) {
    auto* o = static_cast<observed*>(ctx);
    auto& e = *static_cast<ep*>(t->endpoint);
    const uint64_t w[4] = {};
    o->rule_status = e.request_4(t->src, h_silent, w, false);
    if (o->rule_status == hpam::status::rule_violation) o->rule_status = e.reply_4(*t, h_silent, w);
  }
  static void install(ep& e, observed& o) {
    o.endpoint = &e;
    ASSERT_EQ(e.register_handler4(h_add, add, &o), hpam::status::ok);
    ASSERT_EQ(e.register_handler4(h_result, result, &o), hpam::status::ok);
    ASSERT_EQ(e.register_handler4(h_silent, silent, &o), hpam::status::ok);
    ASSERT_EQ(e.register_handler_bulk(h_bulk, bulk, &o), hpam::status::ok);
    ASSERT_EQ(e.register_handler4(h_bad_request, bad_request, &o), hpam::status::ok);
    ASSERT_EQ(e.register_handler4(h_bad_reply, bad_reply, &o), hpam::status::ok);
  }
};

template <class Card>
class protocol : public ::testing::Test {
 protected:
  using ep = am::endpoint<Card>;
  void start(const job_options& o) {
    job_ = std::make_unique<local_job<Card>>(o);
    seen_.assign(o.nprocs, observed{});
    for (int p = 0; p < o.nprocs; ++p) handlers<Card>::install((*job_)[p], seen_[p]);
  }
  // Pumps until no request is outstanding anywhere; time moves 100 us per
  // round so that lost packets are retransmitted.
  bool settle(int rounds = 100000) {
    for (int r = 0; r < rounds; ++r) {
      bool idle = true;
      for (int p = 0; p < job_->size(); ++p)
        for (int q = 0; q < job_->size(); ++q)
          if (p != q && (*job_)[p].request_outstanding(q)) idle = false;
      if (idle) return true;
      job_->time().advance(100'000);
      job_->pump();
    }
    return false;
  }
  std::unique_ptr<local_job<Card>> job_;
  std::vector<observed> seen_;
};
TYPED_TEST_SUITE(protocol, card_types);

TYPED_TEST(protocol, short_request_gets_its_reply) {
  this->start({});
  auto& j = *this->job_;
  const uint64_t w[4] = {5, 0, 0, 0};
  ASSERT_EQ(j[0].request_4(1, h_add, w, false), hpam::status::ok);
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].counter, 5u);
  ASSERT_EQ(this->seen_[0].results.size(), 1u);
  EXPECT_EQ(this->seen_[0].results[0], 0u);
  EXPECT_EQ(j[1].peer_counters(0).replies_sent, 1u);
  EXPECT_EQ(j[1].peer_counters(0).acks_sent, 0u);
  EXPECT_EQ(j[0].peer_counters(1).replies_received, 1u);
}

TYPED_TEST(protocol, handler_without_reply_gets_empty_ack) {
  this->start({});
  auto& j = *this->job_;
  const uint64_t w[4] = {};
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  EXPECT_TRUE(j[0].request_outstanding(1));
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].silent_runs, 1);
  EXPECT_EQ(j[1].peer_counters(0).acks_sent, 1u);
  EXPECT_FALSE(j[0].request_outstanding(1));
}

// Deferred: the ack waits for the receiver's next send (it goes out behind
// the request) or its next poll; nothing else changes.
TYPED_TEST(protocol, deferred_ack_goes_out_after_next_send_or_poll) {
  job_options o;
  o.defer_acks = true;
  this->start(o);
  auto& j = *this->job_;
  const uint64_t w[4] = {};
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  (void)j[1].poll();  // runs the handler; the ack is pending
  EXPECT_EQ(this->seen_[1].silent_runs, 1);
  (void)j[0].poll();
  EXPECT_TRUE(j[0].request_outstanding(1));
  ASSERT_EQ(j[1].request_4(0, h_silent, w, false), hpam::status::ok);  // ack follows this request
  (void)j[0].poll();
  EXPECT_FALSE(j[0].request_outstanding(1));
  EXPECT_EQ(this->seen_[0].silent_runs, 1);
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  (void)j[1].poll();  // handler; ack pending
  (void)j[1].poll();  // next poll launches it
  (void)j[0].poll();
  EXPECT_FALSE(j[0].request_outstanding(1));
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(j[1].peer_counters(0).acks_sent, 2u);
}

// piggyback_acks: the deferred ack rides on the receiver's next request to
// the requester (one packet arrives, not two) and frees the instance just
// as its own packet would; switched off (and without multi_ack, which
// keeps acks for the next poll), the ack is a packet of its own launched
// right behind that request.
TYPED_TEST(protocol, deferred_ack_rides_on_the_next_request_to_its_peer) {
  for (bool ride : {true, false}) {
    job_options o;
    o.defer_acks = true;
    o.piggyback_acks = ride;
    o.multi_ack = ride;
    this->start(o);
    auto& j = *this->job_;
    const uint64_t w[4] = {};
    for (int i = 0; i < 3; ++i) {
      int handled = 0;
      ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);  // + j[0]'s waiting ack
      (void)j[1].poll(&handled);  // runs the handler; its ack waits
      EXPECT_EQ(handled, i == 0 || ride ? 1 : 2) << ride;
      EXPECT_FALSE(j[1].request_outstanding(0)) << ride;
      ASSERT_EQ(j[1].request_4(0, h_silent, w, false), hpam::status::ok);  // + j[1]'s waiting ack
      (void)j[0].poll(&handled);
      if (!ride) {  // the ack's packet behind the request: a poll after a quiet one took one
        int more = 0;
        (void)j[0].poll(&more);
        handled += more;
      }
      EXPECT_EQ(handled, ride ? 1 : 2) << ride;
      EXPECT_FALSE(j[0].request_outstanding(1)) << ride;
    }
    ASSERT_TRUE(this->settle());
    EXPECT_EQ(j[1].peer_counters(0).acks_sent, 3u);
    EXPECT_EQ(j[1].peer_counters(0).acks_piggybacked, ride ? 3u : 0u);
    EXPECT_EQ(j[0].peer_counters(1).acks_piggybacked, ride ? 2u : 0u);  // the last went alone
    EXPECT_EQ(j[0].peer_counters(1).replies_received, 3u);
    EXPECT_EQ(j[1].peer_counters(0).replies_received, 3u);
    EXPECT_EQ(j[0].peer_counters(1).stale_replies, 0u);
    EXPECT_EQ(this->seen_[0].silent_runs, 3);
    EXPECT_EQ(this->seen_[1].silent_runs, 3);
  }
}

// A poll that finds nothing while an ack waits (every idle poll of a
// collective loop) decides as a poll that took nothing: it launches the
// ack at once, or, with acks_wait_when_idle, keeps it for a request to
// ride on until the hold ends (more than ack_hold_polls / 2 and at most
// ack_hold_polls polls); either way it leaves without a request.
TYPED_TEST(protocol, an_idle_poll_launches_a_waiting_ack_unless_acks_wait_when_idle) {
  for (bool wait : {false, true}) {
    job_options o;
    o.defer_acks = true;
    o.acks_wait_when_idle = wait;
    this->start(o);
    auto& j = *this->job_;
    const uint64_t w[4] = {};
    int handled = 0;
    ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
    (void)j[1].poll(&handled);  // runs the handler; its ack waits
    ASSERT_EQ(handled, 1) << wait;
    uint32_t idle_polls = 0;
    while (j[0].request_outstanding(1) && idle_polls < 4 * am::ack_hold_polls) {
      (void)j[1].poll(&handled);
      EXPECT_EQ(handled, 0) << wait;
      ++idle_polls;
      (void)j[0].poll();
    }
    EXPECT_FALSE(j[0].request_outstanding(1)) << wait;
    if (wait) {
      EXPECT_GT(idle_polls, am::ack_hold_polls / 2);
      EXPECT_LE(idle_polls, am::ack_hold_polls);
    } else {
      EXPECT_EQ(idle_polls, 1u);
    }
    EXPECT_EQ(j[1].peer_counters(0).acks_sent, 1u) << wait;
    EXPECT_EQ(j[1].peer_counters(0).acks_piggybacked, 0u) << wait;
    EXPECT_EQ(j[0].peer_counters(1).replies_received, 1u) << wait;
    ASSERT_TRUE(this->settle());
  }
}

// A waiting ack rides wherever the packet has room for its entry: always
// behind a medium message (its header leaves an entry's room below
// packet_header_size, so even max_bulk bytes fit), never behind a store of
// max_bulk bytes (the block is full); that ack leaves with the next poll.
TYPED_TEST(protocol, a_full_medium_carries_a_rider_a_full_store_does_not) {
  job_options o;
  o.defer_acks = true;
  o.piggyback_acks = true;
  this->start(o);
  auto& j = *this->job_;
  const uint64_t w[4] = {};
  std::vector<uint8_t> src(j[1].max_bulk(), 0x5A), dst(src.size(), 0);
  ASSERT_EQ(j[0].set_segment(dst.data(), dst.size()), hpam::status::ok);
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  (void)j[1].poll();  // runs the handler; its ack waits
  ASSERT_EQ(j[1].try_medium_now(0, h_bulk, src.data(), src.size(), nullptr, 0, 7),
            hpam::status::ok);
  EXPECT_EQ(j[1].peer_counters(0).acks_piggybacked, 1u);
  int handled = 0;
  (void)j[0].poll(&handled);
  EXPECT_EQ(handled, 1);
  EXPECT_FALSE(j[0].request_outstanding(1));  // answered by the rider
  ASSERT_TRUE(this->settle());
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  (void)j[1].poll();
  ASSERT_EQ(j[1].request_store(0, h_bulk, src.data(), src.size(),
                               reinterpret_cast<uint64_t>(dst.data()), 8, false),
            hpam::status::ok);
  EXPECT_EQ(j[1].peer_counters(0).acks_piggybacked, 1u);  // no room: it did not ride
  ASSERT_TRUE(this->settle());
  EXPECT_FALSE(j[0].request_outstanding(1));  // answered by the ack's own packet
  EXPECT_EQ(dst, src);
  EXPECT_EQ(this->seen_[0].bulk_runs, 2);
  EXPECT_EQ(j[0].peer_counters(1).malformed, 0u);
}

// The receive budget: on a clean wire a poll that follows one that took
// nothing takes one packet (a lone message is answered at once), and while
// packets keep coming a poll takes up to the budget; a wire that can lose
// takes up to the budget at every poll (a packet left in the card defers
// the timeouts' resends: answer_may_wait).
TYPED_TEST(protocol, a_poll_after_a_quiet_one_takes_one_packet_unless_the_wire_can_lose) {
  for (bool lossy : {false, true}) {
    job_options o;
    o.depth = 8;
    if (lossy) o.rx_blocks = hpam::am::default_rx_blocks(2, o.depth) - 1;  // drops none here
    this->start(o);
    auto& j = *this->job_;
    const uint64_t w[4] = {};
    int handled = -1;
    (void)j[1].poll(&handled);
    EXPECT_EQ(handled, 0);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
    (void)j[1].poll(&handled);
    EXPECT_EQ(handled, lossy ? 3 : 1) << lossy;
    (void)j[1].poll(&handled);  // a stream: the rest
    EXPECT_EQ(handled, lossy ? 0 : 2) << lossy;
    (void)j[1].poll(&handled);  // quiet
    EXPECT_EQ(handled, 0);
    ASSERT_TRUE(this->settle());
    for (int i = 0; i < 2; ++i) ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
    (void)j[1].poll(&handled);
    EXPECT_EQ(handled, lossy ? 2 : 1) << lossy;
    ASSERT_TRUE(this->settle());
    EXPECT_EQ(this->seen_[1].silent_runs, 5) << lossy;
    EXPECT_EQ(j[0].peer_counters(1).replies_received, 5u) << lossy;
  }
}

TYPED_TEST(protocol, deferred_acks_survive_faults) {
  job_options o;
  o.defer_acks = true;
  o.faults.drop = 0.1;
  o.faults.duplicate = 0.1;
  o.timeout_ns = 50'000;
  this->start(o);
  auto& j = *this->job_;
  for (int i = 0; i < 300; ++i) {
    const uint64_t w[4] = {1, 0, 0, 0};
    while (j[0].request_4(1, h_add, w, false) == hpam::status::busy) {
      j.time().advance(10'000);
      j.pump();
    }
    const uint64_t s[4] = {};
    while (j[1].request_4(0, h_silent, s, false) == hpam::status::busy) {
      j.time().advance(10'000);
      j.pump();
    }
  }
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].counter, 300u);
  EXPECT_EQ(this->seen_[0].silent_runs, 300);
  EXPECT_EQ(this->seen_[0].results.size(), 300u);
  // acks rode on requests, and some of those requests were lost or doubled
  EXPECT_GT(j[0].peer_counters(1).acks_piggybacked, 0u);
  EXPECT_GT(j[0].card().wire_stats().dropped, 0u);
}

TYPED_TEST(protocol, store_copies_bytes_then_runs_handler) {
  this->start({});
  auto& j = *this->job_;
  std::vector<uint8_t> src(j[0].max_bulk()), dst(src.size() + 64, 0xEE);
  std::iota(src.begin(), src.end(), uint8_t{7});
  ASSERT_EQ(j[1].set_segment(dst.data(), dst.size()), hpam::status::ok);
  ASSERT_EQ(j[0].request_store(1, h_bulk, src.data(), src.size(),
                               reinterpret_cast<uint64_t>(dst.data() + 32), 99, false),
            hpam::status::ok);
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].bulk_runs, 1);
  EXPECT_EQ(this->seen_[1].bulk_arg, 99u);
  EXPECT_EQ(this->seen_[1].bulk_where, dst.data() + 32);
  EXPECT_EQ(0, std::memcmp(dst.data() + 32, src.data(), src.size()));
  EXPECT_EQ(dst[31], 0xEE);  // guard bytes untouched
  EXPECT_EQ(dst[32 + src.size()], 0xEE);
}

TYPED_TEST(protocol, store_larger_than_a_packet_is_refused) {
  this->start({});
  std::vector<uint8_t> src((*this->job_)[0].max_bulk() + 1);
  EXPECT_EQ((*this->job_)[0].request_store(1, h_bulk, src.data(), src.size(), 0, 0, false),
            hpam::status::invalid_argument);
}

TYPED_TEST(protocol, get_fetches_remote_bytes) {
  this->start({});
  auto& j = *this->job_;
  std::vector<uint8_t> remote(3000), local(3000, 0);
  for (size_t i = 0; i < remote.size(); ++i) remote[i] = static_cast<uint8_t>(i * 31 + 1);
  ASSERT_EQ(j[1].set_segment(remote.data(), remote.size()), hpam::status::ok);
  ASSERT_EQ(j[0].request_get(1, h_bulk, reinterpret_cast<uint64_t>(remote.data()), local.data(),
                             local.size(), 5, false),
            hpam::status::ok);
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(local, remote);
  EXPECT_EQ(this->seen_[0].bulk_runs, 1);  // the requester's handler ran, as a reply handler
  EXPECT_EQ(this->seen_[0].bulk_arg, 5u);
}

TYPED_TEST(protocol, medium_gathers_and_delivers_in_place) {
  this->start({});
  auto& j = *this->job_;
  char a[] = "header:", b[] = "payload bytes";
  iovec iov[2] = {{a, 7}, {b, sizeof b}};
  ASSERT_EQ(j[0].request_medium(1, h_bulk, iov, 2, 42, false), hpam::status::ok);
  ASSERT_TRUE(this->settle());
  ASSERT_EQ(this->seen_[1].bulk_seen.size(), 7 + sizeof b);
  EXPECT_EQ(0, std::memcmp(this->seen_[1].bulk_seen.data(), "header:payload bytes", 7 + sizeof b));
  EXPECT_EQ(this->seen_[1].bulk_arg, 42u);
}

TYPED_TEST(protocol, all_instances_busy_returns_busy) {
  job_options o;
  o.depth = 3;
  this->start(o);
  auto& j = *this->job_;
  const uint64_t w[4] = {};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  EXPECT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::busy);
  EXPECT_EQ(j[0].peer_counters(1).busy_returns, 1u);
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].silent_runs, 4);
}

// Hint names a busy instance while another is free: the linear search finds it.
TYPED_TEST(protocol, hint_miss_falls_back_to_search) {
  job_options o;
  o.receive_budget = 1;
  this->start(o);
  auto& j = *this->job_;
  const uint64_t w[4] = {};
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);  // instance 0
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);  // instance 1
  EXPECT_EQ(j[0].peer_counters(1).hint_misses, 0u);
  (void)j[1].poll();  // handles only instance 0 (budget 1)
  (void)j[0].poll();  // its ack frees instance 0: the hint now names 0
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false),
            hpam::status::ok);  // instance 0, hint -> 1 (busy)
  EXPECT_EQ(j[0].peer_counters(1).hint_misses, 0u);
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);  // hint miss: finds 2
  EXPECT_EQ(j[0].peer_counters(1).hint_misses, 1u);
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].silent_runs, 4);
}

// Every request is delivered twice: the duplicate is answered from the
// stored reply and the fetch-and-add handler runs exactly once per request.
TYPED_TEST(protocol, duplicate_request_reflected_not_rerun) {
  job_options o;
  o.faults.duplicate = 1.0;
  this->start(o);
  auto& j = *this->job_;
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    const uint64_t w[4] = {1, 0, 0, 0};
    while (j[0].request_4(1, h_add, w, false) == hpam::status::busy) j.pump();
  }
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[1].counter, static_cast<uint64_t>(n));
  EXPECT_EQ(j[1].peer_counters(0).requests_received, static_cast<uint64_t>(n));
  EXPECT_GT(j[1].peer_counters(0).duplicates_reflected, 0u);
  EXPECT_GT(j[0].peer_counters(1).stale_replies, 0u);
  // Each fetch-and-add returned a distinct old value: 0..n-1.
  auto r = this->seen_[0].results;
  std::sort(r.begin(), r.end());
  ASSERT_EQ(r.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(r[i], static_cast<uint64_t>(i));
}

// Two endpoints of one job whose process 0 stamps key 0x1111 while process 1
// expects 0x2222 (or, with check_key false, accepts anything).
template <class Card>
struct mismatched_keys {
  sys::manual_time time;
  am::endpoint_config c0, c1;
  std::unique_ptr<am::endpoint<Card>> e0, e1;
  observed s0, s1;
  explicit mismatched_keys(bool check_key) {
    c0.card.job = c1.card.job = unique_job("key");
    c0.card.nprocs = c1.card.nprocs = 2;
    c1.card.my_proc = 1;
    c0.key = 0x1111;
    c1.key = 0x2222;
    c1.key_check = check_key;
    c0.manual_time = c1.manual_time = &time;
    c0.give_up_ns = c1.give_up_ns = 50'000'000;
    e0 = std::make_unique<am::endpoint<Card>>(c0);
    e1 = std::make_unique<am::endpoint<Card>>(c1);
    e0->connect_all();
    e1->connect_all();
    handlers<Card>::install(*e0, s0);
    handlers<Card>::install(*e1, s1);
  }
};

TYPED_TEST(protocol, wrong_key_is_rejected_and_counted) {
  mismatched_keys<TypeParam> k(true);
  const uint64_t w[4] = {1, 0, 0, 0};
  ASSERT_EQ(k.e0->request_4(1, h_add, w, false), hpam::status::ok);
  (void)k.e1->poll();
  EXPECT_EQ(k.e1->peer_counters(0).key_rejections, 1u);
  EXPECT_EQ(k.s1.counter, 0u);
  // Never answered: retransmitted, each time rejected, finally given up on.
  hpam::status st = hpam::status::ok;
  for (int i = 0; i < 100 && st == hpam::status::ok; ++i) {
    k.time.advance(2'000'000);
    st = k.e0->poll();
    (void)k.e1->poll();
  }
  EXPECT_EQ(st, hpam::status::peer_unreachable);
  EXPECT_GT(k.e1->peer_counters(0).key_rejections, 1u);
  EXPECT_EQ(k.s1.counter, 0u);
}

TYPED_TEST(protocol, key_check_off_accepts_any_key) {
  mismatched_keys<TypeParam> k(false);
  const uint64_t w[4] = {3, 0, 0, 0};
  ASSERT_EQ(k.e0->request_4(1, h_add, w, false), hpam::status::ok);
  (void)k.e1->poll();
  EXPECT_EQ(k.s1.counter, 3u);
  EXPECT_EQ(k.e1->peer_counters(0).key_rejections, 0u);
}

// In a request handler: sending a request (mode 0), a second reply (mode 1)
// and polling (mode 2) are each refused and counted.
TYPED_TEST(protocol, request_handler_rules_are_enforced) {
  this->start({});
  auto& j = *this->job_;
  for (uint64_t mode = 0; mode < 3; ++mode) {
    this->seen_[1].rule_status = hpam::status::ok;
    const uint64_t w[4] = {mode, 0, 0, 0};
    ASSERT_EQ(j[0].request_4(1, h_bad_request, w, false), hpam::status::ok);
    ASSERT_TRUE(this->settle());
    EXPECT_EQ(this->seen_[1].rule_status, hpam::status::rule_violation) << "mode " << mode;
    EXPECT_EQ(j[1].totals().rule_violations, mode + 1);
  }
}

TYPED_TEST(protocol, reply_handler_may_not_send) {
  this->start({});
  auto& j = *this->job_;
  const uint64_t w[4] = {3, 0, 0, 0};
  ASSERT_EQ(j[0].request_4(1, h_bad_request, w, false), hpam::status::ok);
  ASSERT_TRUE(this->settle());
  EXPECT_EQ(this->seen_[0].rule_status, hpam::status::rule_violation);
  EXPECT_EQ(j[0].totals().rule_violations, 2u);  // the request and the reply attempt
}

TYPED_TEST(protocol, requests_to_self_run_directly) {
  this->start({});
  auto& j = *this->job_;
  const uint64_t w[4] = {9, 0, 0, 0};
  ASSERT_EQ(j[0].request_4(0, h_add, w, true), hpam::status::ok);
  EXPECT_EQ(this->seen_[0].counter, 9u);
  ASSERT_EQ(this->seen_[0].results.size(), 1u);
  std::vector<uint8_t> src(100, 3), dst(100, 0);
  ASSERT_EQ(j[0].set_segment(src.data(), src.size()), hpam::status::ok);
  ASSERT_EQ(
      j[0].request_get(0, h_bulk, reinterpret_cast<uint64_t>(src.data()), dst.data(), 100, 1, true),
      hpam::status::ok);
  EXPECT_EQ(src, dst);
}

// Lost requests are resent after the timeout, which then doubles; after the
// give-up time the peer is reported unreachable, by name.
TYPED_TEST(protocol, timeout_retransmits_with_backoff_then_gives_up) {
  job_options o;
  o.faults.drop = 1.0;
  o.adaptive_timeout = false;  // the paper's timer
  o.timeout_ns = 1'000'000;
  o.give_up_ns = 100'000'000;
  this->start(o);
  auto& j = *this->job_;
  const uint64_t w[4] = {};
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  auto walk = [&] {  // enough polls for the timeout cursor to visit every descriptor
    hpam::status s = hpam::status::ok;
    for (int i = 0; i < 8; ++i)
      if (hpam::status r = j[0].poll(); r != hpam::status::ok) s = r;
    return s;
  };
  (void)walk();
  EXPECT_EQ(j[0].peer_counters(1).retransmissions, 0u);
  j.time().advance(1'000'000);
  (void)walk();
  EXPECT_EQ(j[0].peer_counters(1).retransmissions, 1u);
  j.time().advance(1'500'000);  // timeout is now 2 ms
  (void)walk();
  EXPECT_EQ(j[0].peer_counters(1).retransmissions, 1u);
  j.time().advance(500'000);
  (void)walk();
  EXPECT_EQ(j[0].peer_counters(1).retransmissions, 2u);
  // Process 1 polls (it lives) but every packet to it is lost: given up on,
  // once process 0 has itself polled enough to have read any answer.
  for (int i = 0; i < 16; ++i) (void)j[1].poll();
  j.time().advance(100'000'000);
  EXPECT_EQ(walk(), hpam::status::ok);  // 1 could have answered: is the answer in my queue?
  for (int i = 0; i < 2; ++i) EXPECT_EQ(walk(), hpam::status::ok);
  j.time().advance(100'000'000);
  EXPECT_EQ(walk(), hpam::status::peer_unreachable);
  EXPECT_EQ(j[0].unreachable_peer(), 1);
  EXPECT_NE(j[0].last_error().find("process 1"), std::string::npos) << j[0].last_error();
  EXPECT_NE(j[0].last_error().find("alive and polling"), std::string::npos) << j[0].last_error();
  EXPECT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::peer_unreachable);
  EXPECT_EQ(this->seen_[1].silent_runs, 0);
}

// On the real clock the send does not read the clock: the timeout walk's
// first look at the busy descriptor stamps it. A lost request is therefore
// never resent before its timeout has run from the send, and is resent soon
// after (within a walk round of polls).
TYPED_TEST(protocol, real_clock_timeout_runs_from_the_send_never_earlier) {
  job_options o;
  o.manual_clock = false;
  o.faults.drop = 1.0;
  o.adaptive_timeout = false;  // the paper's timer
  o.timeout_ns = 20'000'000;
  o.give_up_ns = 10'000'000'000;
  this->start(o);
  auto& j = *this->job_;
  const uint64_t w[4] = {};
  const uint64_t sent = sys::clock::monotonic_ns();
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);
  uint64_t resent = 0;
  while (resent == 0 && sys::clock::monotonic_ns() - sent < 2'000'000'000) {
    (void)j[0].poll();
    if (j[0].peer_counters(1).retransmissions != 0) resent = sys::clock::monotonic_ns();
  }
  ASSERT_NE(resent, 0u) << "never resent";
  EXPECT_GE(resent - sent, o.timeout_ns);
  EXPECT_EQ(j[0].peer_counters(1).retransmissions, 1u);
}

// resend_due is the sending half of a poll (for an owner busy elsewhere):
// it resends what timed out, but receives nothing and does not move the
// heartbeat (peers judge liveness by polls). While a packet waits in my
// card (the answer may be among them) a timeout first waits once more.
TYPED_TEST(protocol, resend_due_resends_without_receiving) {
  job_options o;
  o.timeout_ns = 1'000'000;
  o.adaptive_timeout = false;  // the paper's timer: resent although 1 has not polled
  this->start(o);
  auto& j = *this->job_;
  const uint64_t w[4] = {1, 0, 0, 0};
  ASSERT_EQ(j[0].request_4(1, h_silent, w, false), hpam::status::ok);  // 1 never polls: no answer
  ASSERT_EQ(j[1].request_4(0, h_add, w, false), hpam::status::ok);     // waits in 0's queue
  const uint32_t beat = j[1].card().peer_heartbeat(0);
  j.time().advance(1'000'000);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(j[0].resend_due(), hpam::status::ok);
  EXPECT_EQ(j[0].peer_counters(1).retransmissions, 0u);
  EXPECT_EQ(j[0].peer_counters(1).resends_deferred, 1u);  // a packet waits in my card
  j.time().advance(1'000'000);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(j[0].resend_due(), hpam::status::ok);
  EXPECT_EQ(j[0].peer_counters(1).retransmissions, 1u);
  EXPECT_EQ(this->seen_[0].counter, 0u);           // nothing received
  EXPECT_EQ(j[1].card().peer_heartbeat(0), beat);  // not a poll
  ASSERT_EQ(j[0].poll(), hpam::status::ok);
  EXPECT_EQ(this->seen_[0].counter, 1u);
  EXPECT_NE(j[1].card().peer_heartbeat(0), beat);
}

TYPED_TEST(protocol, small_inbound_pool_drops_then_recovers) {
  job_options o;
  o.rx_blocks = 1;
  o.depth = 4;
  o.timeout_ns = 1'000;
  this->start(o);
  auto& j = *this->job_;
  const uint64_t w[4] = {1, 0, 0, 0};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(j[0].request_4(1, h_add, w, false), hpam::status::ok);
  EXPECT_GT(j[1].card().overflow_drops(), 0u);
  for (int r = 0; r < 20000 && this->seen_[0].results.size() < 4; ++r) {
    j.time().advance(10'000);
    j.pump();
  }
  EXPECT_EQ(this->seen_[1].counter, 4u);
  EXPECT_EQ(this->seen_[0].results.size(), 4u);
  EXPECT_GT(j[0].peer_counters(1).retransmissions, 0u);
}

// User-facing ranges are the knob table's (tests/capi); the endpoint checks
// only what its own code relies on.
TEST(protocol_config, setup_problems_name_the_field) {
  am::endpoint_config c;
  c.card.job = "x";
  c.card.nprocs = 2;
  EXPECT_EQ(am::setup_problem(c), "");
  auto bad = [&](auto mutate, const char* name) {
    am::endpoint_config b = c;
    mutate(b);
    const std::string err = am::setup_problem(b);
    EXPECT_NE(err.find(name), std::string::npos) << err;
  };
  bad([](auto& b) { b.card.job.clear(); }, "job");
  bad([](auto& b) { b.card.my_proc = 2; }, "my_proc");
  bad([](auto& b) { b.card.nprocs = 0; }, "nprocs");
  bad([](auto& b) { b.depth = 0; }, "depth");
  bad([](auto& b) { b.depth = am::max_depth + 1; }, "depth");
  bad([](auto& b) { b.timeout_ns = 0; }, "timeout_ns");
  EXPECT_THROW(am::endpoint<nic::medusa_card>{[&] {
                 am::endpoint_config b = c;
                 b.depth = 0;
                 return b;
               }()},
               std::invalid_argument);
}

TEST(protocol_packet, control_word_round_trips) {
  for (uint32_t cls = 0; cls < 2; ++cls)
    for (uint32_t kind = 0; kind < am::msg_kind_count; ++kind)
      for (uint32_t inst : {0u, 1u, 63u, am::max_depth - 1})
        for (uint32_t seq :
             {0u, 1u, 0xFFFFu, 0x10000u, 0x3FFFFFu, 0x400000u, 0x2345678u, 0x3FFFFFFFu}) {
          const am::control_word c{static_cast<am::msg_class>(cls), static_cast<am::msg_kind>(kind),
                                   inst, seq};
          am::am_header h{};
          am::write_control(h, c);
          const am::control_word d = am::read_control(h);
          EXPECT_EQ(d.cls, c.cls);
          EXPECT_EQ(d.kind, c.kind);
          EXPECT_EQ(d.instance, c.instance);
          EXPECT_EQ(d.sequence, c.sequence);
        }
}

// The sequence counts modulo 2^30 and every header field stays its own.
TEST(protocol_packet, sequence_wraps_at_30_bits) {
  EXPECT_EQ(am::next_sequence(0x3FFFFFFFu), 0u);
  EXPECT_EQ(am::previous_sequence(0u), 0x3FFFFFFFu);
  EXPECT_EQ(am::next_sequence(0x3FFFFFu), 0x400000u);  // across the control word's id field
  am::am_header h{};
  h.refusal = 2;
  am::write_control(h, {am::msg_class::reply, am::msg_kind::ack, 5, 0x3FFFFFFFu});
  EXPECT_EQ(h.refusal, 2u);
  EXPECT_EQ(am::read_control(h).instance, 5u);
  EXPECT_EQ(am::read_control(h).sequence, 0x3FFFFFFFu);
}

}  // namespace
}  // namespace hpam::test
