// The front ends' shared services (src/capi/hpam_frontend.h): in-order
// delivery with gaps and duplicates, the pending queues' order and
// back-pressure, and deposit operations tracked to completion, flush and
// orphaning, over two real deposit cards in this process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "capi/hpam_frontend.h"

namespace {

// ---- hpam_order ------------------------------------------------------------

struct order_fixture : ::testing::Test {
  hpam_order_t o{};
  std::vector<std::string> handed;  // payloads handed over, in order
  void SetUp() override { ASSERT_EQ(hpam_order_init(&o, 3, 4, 64), HPAM_OK); }
  void TearDown() override { hpam_order_fini(&o); }
  // What a front end's receive handler does; returns the verdict.
  int arrive(int peer, uint32_t seq, const std::string& text) {
    std::string copy = text;
    const int v = hpam_order_arrive(&o, peer, seq, uint64_t{seq} * 10, copy.data(), copy.size());
    if (v != HPAM_ORDER_DELIVER) return v;
    handed.push_back(copy);
    hpam_order_msg_t m;
    while (hpam_order_due(&o, peer) && hpam_order_take_due(&o, peer, &m)) {
      EXPECT_EQ(m.word % 10, 0u);
      handed.emplace_back(static_cast<char*>(m.data), m.len);
    }
    return v;
  }
};

TEST_F(order_fixture, in_order_messages_are_handed_over_at_once) {
  EXPECT_EQ(arrive(0, 0, "a"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(arrive(0, 1, "b"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(handed, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(hpam_order_next_deliver(&o, 0), 2u);
  EXPECT_EQ(o.held_total, 0u);
}

TEST_F(order_fixture, early_messages_wait_for_the_gap_and_keep_their_bytes) {
  EXPECT_EQ(arrive(1, 2, "c"), HPAM_ORDER_HELD);
  EXPECT_EQ(arrive(1, 3, "d"), HPAM_ORDER_HELD);
  EXPECT_EQ(arrive(1, 1, "b"), HPAM_ORDER_HELD);
  EXPECT_TRUE(handed.empty());
  EXPECT_EQ(arrive(1, 0, "a"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(handed, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(o.held_total, 3u);
  EXPECT_FALSE(hpam_order_due(&o, 1));
  EXPECT_EQ(arrive(1, 4, "e"), HPAM_ORDER_DELIVER);  // slots reused cleanly
  EXPECT_EQ(handed.back(), "e");
}

TEST_F(order_fixture, a_gap_stops_the_handing_over) {
  EXPECT_EQ(arrive(0, 2, "c"), HPAM_ORDER_HELD);
  EXPECT_EQ(arrive(0, 0, "a"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(handed, (std::vector<std::string>{"a"}));  // 1 still missing
  EXPECT_TRUE(hpam_order_due(&o, 0));
  EXPECT_EQ(arrive(0, 1, "b"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(handed, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(order_fixture, duplicates_and_out_of_window_messages_are_rejected_and_counted) {
  EXPECT_EQ(arrive(2, 0, "a"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(arrive(2, 0, "a"), HPAM_ORDER_REJECTED);  // already delivered
  EXPECT_EQ(arrive(2, 2, "c"), HPAM_ORDER_HELD);
  EXPECT_EQ(arrive(2, 2, "X"), HPAM_ORDER_REJECTED);  // already held
  EXPECT_EQ(arrive(2, 5, "f"), HPAM_ORDER_REJECTED);  // window 4: 1..4 only
  EXPECT_EQ(arrive(2, 0xffffffffu, "z"), HPAM_ORDER_REJECTED);
  EXPECT_EQ(o.rejected, 4u);
  EXPECT_EQ(arrive(2, 1, "b"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(handed, (std::vector<std::string>{"a", "b", "c"}));  // the held "c", not "X"
}

TEST_F(order_fixture, a_bad_peer_or_an_oversized_message_is_rejected) {
  std::string big(65, 'x');
  EXPECT_EQ(hpam_order_arrive(&o, 3, 0, 0, big.data(), 1), HPAM_ORDER_REJECTED);
  EXPECT_EQ(hpam_order_arrive(&o, -1, 0, 0, big.data(), 1), HPAM_ORDER_REJECTED);
  EXPECT_EQ(hpam_order_arrive(&o, 0, 0, 0, big.data(), big.size()), HPAM_ORDER_REJECTED);
  EXPECT_EQ(o.rejected, 3u);
  EXPECT_EQ(hpam_order_next_deliver(&o, 0), 0u);
}

// The common case alone (hpam_order_in_turn): a message in turn with
// nothing held is counted as handed over; anything else changes nothing and
// is left to hpam_order_arrive.
TEST_F(order_fixture, in_turn_is_only_the_next_message_with_none_held) {
  std::string big(65, 'x');
  EXPECT_EQ(hpam_order_in_turn(&o, 0, 0, 1), 1);
  EXPECT_EQ(hpam_order_next_deliver(&o, 0), 1u);
  EXPECT_EQ(hpam_order_in_turn(&o, 0, 0, 1), 0);  // already handed over
  EXPECT_EQ(hpam_order_in_turn(&o, 0, 2, 1), 0);  // early
  EXPECT_EQ(hpam_order_in_turn(&o, 3, 0, 1), 0);  // no such peer
  EXPECT_EQ(hpam_order_in_turn(&o, -1, 0, 1), 0);
  EXPECT_EQ(hpam_order_in_turn(&o, 1, 0, big.size()), 0);  // too long
  EXPECT_EQ(hpam_order_next_deliver(&o, 0), 1u);
  EXPECT_EQ(hpam_order_next_deliver(&o, 1), 0u);
  EXPECT_EQ(o.rejected, 0u);
  EXPECT_EQ(arrive(0, 2, "c"), HPAM_ORDER_HELD);
  EXPECT_EQ(hpam_order_in_turn(&o, 0, 1, 1), 0) << "in turn, but a message waits held";
  EXPECT_EQ(hpam_order_next_deliver(&o, 0), 1u);
  EXPECT_EQ(arrive(0, 1, "b"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(handed, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(hpam_order_in_turn(&o, 0, 3, 1), 1);
  EXPECT_EQ(hpam_order_next_deliver(&o, 0), 4u);
}

TEST_F(order_fixture, sequence_numbers_wrap_around) {
  o.peers[0].next_deliver = 0xfffffffeu;
  EXPECT_EQ(arrive(0, 0, "c"), HPAM_ORDER_HELD);
  EXPECT_EQ(arrive(0, 0xffffffffu, "b"), HPAM_ORDER_HELD);
  EXPECT_EQ(arrive(0, 0xfffffffeu, "a"), HPAM_ORDER_DELIVER);
  EXPECT_EQ(handed, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(hpam_order_next_deliver(&o, 0), 1u);
}

TEST_F(order_fixture, the_sender_numbers_each_peers_stream) {
  EXPECT_EQ(hpam_order_next_send(&o, 1), 0u);
  hpam_order_sent(&o, 1);
  hpam_order_sent(&o, 1);
  EXPECT_EQ(hpam_order_next_send(&o, 1), 2u);
  EXPECT_EQ(hpam_order_next_send(&o, 0), 0u);
}

TEST_F(order_fixture, a_message_to_oneself_waits_in_its_slot_gathered) {
  const char head[] = "he", body[] = "llo";
  const struct iovec iov[2] = {{const_cast<char*>(head), 2}, {const_cast<char*>(body), 3}};
  EXPECT_EQ(hpam_order_hold(&o, 0, 0, 7, iov, 2), HPAM_ORDER_HELD);
  hpam_order_msg_t m;
  ASSERT_EQ(hpam_order_take_due(&o, 0, &m), 1);
  EXPECT_EQ(std::string(static_cast<char*>(m.data), m.len), "hello");
  EXPECT_EQ(m.word, 7u);
  EXPECT_EQ(hpam_order_take_due(&o, 0, &m), 0);
}

TEST(order, bad_sizes_are_refused) {
  hpam_order_t o;
  EXPECT_EQ(hpam_order_init(&o, 0, 4, 64), HPAM_ERR_INVALID);
  EXPECT_EQ(hpam_order_init(&o, 2, 0, 64), HPAM_ERR_INVALID);
  EXPECT_EQ(hpam_order_init(&o, 2, 4096, 64), HPAM_ERR_INVALID);
  hpam_order_fini(&o);  // harmless after a refusal
}

// ---- hpam_pending ----------------------------------------------------------

struct send_req {
  hpam_pending_item_t item;  // not first: the service must not assume it is
  int endpoint;
  int id;
};
send_req* req_of(hpam_pending_item_t* i) {
  return reinterpret_cast<send_req*>(reinterpret_cast<char*>(i) - offsetof(send_req, item));
}

struct pending_fixture : ::testing::Test {
  hpam_pending_t p;
  hpam_pending_queue_t q[3];
  std::vector<send_req> reqs = std::vector<send_req>(16);
  std::vector<int> sent;    // ids in the order they went
  int room[3] = {0, 0, 0};  // sends each endpoint takes now (back-pressure)
  bool partly = false;      // the next refused send went partly
  void SetUp() override {
    hpam_pending_init(&p);
    for (auto& x : q) hpam_pending_queue_init(&x);
  }
  void push(int ep, int id) {
    reqs[id] = send_req{{nullptr}, ep, id};
    hpam_pending_push(&p, &q[ep], &reqs[id].item);
  }
  static int send(hpam_pending_item_t* item, void* ctx) {
    auto* f = static_cast<pending_fixture*>(ctx);
    send_req* r = req_of(item);
    EXPECT_TRUE(f->q[r->endpoint].draining);
    EXPECT_FALSE(hpam_pending_holds_back(&f->q[r->endpoint]));  // its own sends may go
    if (f->room[r->endpoint] == 0) {
      if (f->partly) {
        f->partly = false;
        return HPAM_PENDING_PARTLY;
      }
      return HPAM_PENDING_WAIT;
    }
    f->room[r->endpoint]--;
    f->sent.push_back(r->id);
    return HPAM_PENDING_SENT;
  }
  unsigned drain() { return hpam_pending_drain(&p, send, this); }
};

TEST_F(pending_fixture, queues_drain_in_order_endpoint_after_endpoint) {
  push(1, 0);
  push(0, 1);
  push(1, 2);
  push(0, 3);
  EXPECT_TRUE(hpam_pending_holds_back(&q[0]));
  EXPECT_FALSE(hpam_pending_holds_back(&q[2]));
  room[0] = room[1] = 10;
  EXPECT_EQ(drain(), 4u);
  EXPECT_EQ(sent, (std::vector<int>{0, 2, 1, 3}));  // endpoint 1 waited first
  EXPECT_TRUE(hpam_pending_empty(&q[0]) && hpam_pending_empty(&q[1]));
  EXPECT_EQ(p.first, nullptr);
  EXPECT_EQ(p.pushed, 4u);
  EXPECT_EQ(drain(), 0u);
}

TEST_F(pending_fixture, back_pressure_keeps_the_item_first_and_other_endpoints_go_on) {
  for (int i = 0; i < 4; ++i) push(0, i);
  push(1, 4);
  room[0] = 1;
  room[1] = 1;
  EXPECT_EQ(drain(), 2u);
  EXPECT_EQ(sent, (std::vector<int>{0, 4}));
  EXPECT_FALSE(hpam_pending_empty(&q[0]));
  EXPECT_TRUE(q[0].listed);
  EXPECT_FALSE(q[1].listed);
  push(0, 5);  // behind what waits
  room[0] = 2;
  EXPECT_EQ(drain(), 2u);
  room[0] = 10;
  EXPECT_EQ(drain(), 2u);
  EXPECT_EQ(sent, (std::vector<int>{0, 4, 1, 2, 3, 5}));
  EXPECT_EQ(p.first, nullptr);
}

TEST_F(pending_fixture, a_partly_sent_item_counts_and_stays_first) {
  push(0, 0);
  push(0, 1);
  partly = true;
  EXPECT_EQ(drain(), 1u);
  EXPECT_TRUE(sent.empty());
  room[0] = 2;
  EXPECT_EQ(drain(), 2u);
  EXPECT_EQ(sent, (std::vector<int>{0, 1}));
}

TEST_F(pending_fixture, purge_hands_over_every_item_in_order_and_unlists) {
  push(2, 0);
  push(2, 1);
  push(0, 2);
  std::vector<int> dropped;
  hpam_pending_purge(
      &p, &q[2],
      [](hpam_pending_item_t* i, void* ctx) {
        static_cast<std::vector<int>*>(ctx)->push_back(req_of(i)->id);
      },
      &dropped);
  EXPECT_EQ(dropped, (std::vector<int>{0, 1}));
  EXPECT_FALSE(q[2].listed);
  EXPECT_EQ(p.first, &q[0]);
  EXPECT_EQ(p.last, &q[0]);
  hpam_pending_purge(&p, &q[0], nullptr, nullptr);
  EXPECT_EQ(p.first, nullptr);
  room[0] = 1;
  EXPECT_EQ(drain(), 0u);
}

TEST_F(pending_fixture, a_send_may_queue_more_while_draining) {
  push(0, 0);
  room[0] = 10;
  auto requeue = [](hpam_pending_item_t* item, void* ctx) {
    auto* f = static_cast<pending_fixture*>(ctx);
    const int id = req_of(item)->id;
    f->sent.push_back(id);
    if (id < 3) f->push(0, id + 1);  // a completion that sends again
    return static_cast<int>(HPAM_PENDING_SENT);
  };
  EXPECT_EQ(hpam_pending_drain(&p, requeue, this), 4u);
  EXPECT_EQ(sent, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p.first, nullptr);
}

// ---- hpam_rdma_ops ---------------------------------------------------------

// Two deposit cards of one job in this process; without cross-memory attach
// a get travels as packets that the owner's card answers when it
// progresses: until then the operation is in flight.
struct rdma_fixture : ::testing::Test {
  hpam_dep_t* d[2] = {nullptr, nullptr};
  hpam_rdma_ops_t t{};
  hpam_ticket_t ticket;
  uint64_t target[8] = {};
  struct record {
    hpam_rdma_op_t head;
    int id;
  };
  std::vector<std::pair<int, int>> finished;  // (id, state)
  void SetUp() override {
    const std::string job = "frontend-rdma-" + std::to_string(getpid());
    for (int i = 0; i < 2; ++i) {
      hpam_dep_config_t c;
      hpam_dep_config_init(&c);
      c.job = job.c_str();
      c.nprocs = 2;
      c.my_proc = i;
      c.cross_memory = 0;
      ASSERT_EQ(hpam_dep_create(&c, &d[i]), HPAM_OK) << hpam_dep_last_error();
    }
    ASSERT_EQ(hpam_dep_attach(d[0], 1), HPAM_OK) << hpam_dep_last_error();
    ASSERT_EQ(hpam_dep_attach(d[1], 0), HPAM_OK) << hpam_dep_last_error();
    ASSERT_EQ(hpam_dep_register(d[1], target, sizeof target, &ticket), HPAM_OK);
    ASSERT_EQ(hpam_rdma_ops_init(&t, d[0], 4, sizeof(record)), HPAM_OK);
  }
  void TearDown() override {
    hpam_rdma_ops_fini(&t);
    for (auto* x : d) {
      if (x != nullptr) hpam_dep_destroy(x);
    }
  }
  static void finish(hpam_rdma_op_t* op, int state, void* ctx) {
    auto* f = static_cast<rdma_fixture*>(ctx);
    f->finished.emplace_back(reinterpret_cast<record*>(op)->id, state);
    hpam_rdma_op_give(&f->t, op);
  }
  uint64_t fetched[8] = {};
  // A get of the word at index i by owner; returns track's state.
  int get(void* owner, int id, int i) {
    auto* op = reinterpret_cast<record*>(hpam_rdma_op_take(&t, owner));
    if (op == nullptr) return -1000;
    op->id = id;
    EXPECT_EQ(hpam_dep_get(d[0], &fetched[i], 8, &ticket, 8 * i, &op->head.handle), HPAM_OK);
    const int state = hpam_rdma_op_track(&t, &op->head);
    if (state != 0) finish(&op->head, state, this);
    return state;
  }
  void serve_owner() { hpam_dep_progress(d[1]); }
};

TEST_F(rdma_fixture, operations_stay_in_flight_until_done_then_finish_once) {
  target[0] = 11;
  target[1] = 22;
  int a = 0, b = 0;
  ASSERT_EQ(get(&a, 1, 0), 0);
  ASSERT_EQ(get(&b, 2, 1), 0);
  EXPECT_EQ(hpam_rdma_ops_inflight(&t), 2u);
  EXPECT_EQ(hpam_rdma_ops_free(&t), 2u);
  EXPECT_EQ(hpam_rdma_ops_issued(&t), 2u);
  EXPECT_TRUE(hpam_rdma_ops_busy(&t, &a, UINT64_MAX));
  EXPECT_TRUE(hpam_rdma_ops_busy(&t, nullptr, UINT64_MAX));
  EXPECT_FALSE(hpam_rdma_ops_busy(&t, &a, 0));  // a flush before it waits for nothing
  EXPECT_FALSE(hpam_rdma_ops_busy(&t, &b, 1));  // b's op was the second
  for (int i = 0; i < 1000 && hpam_rdma_ops_inflight(&t) != 0; ++i) {
    serve_owner();
    hpam_dep_progress(d[0]);
    (void)hpam_rdma_ops_progress(&t, finish, this);
  }
  ASSERT_EQ(hpam_rdma_ops_inflight(&t), 0u);
  ASSERT_EQ(finished.size(), 2u);
  for (auto& f : finished) EXPECT_GT(f.second, 0);
  EXPECT_EQ(fetched[0], 11u);
  EXPECT_EQ(fetched[1], 22u);
  EXPECT_EQ(hpam_rdma_ops_free(&t), 4u);
  EXPECT_FALSE(hpam_rdma_ops_busy(&t, nullptr, UINT64_MAX));
}

// hpam_dep_quiet, as the BTL's progress asks it: the owner is quiet until
// a request waits in its FIFO, the requester until its get's answer does
// (or while the get itself is local work); progress called only when not
// quiet finishes the operation.
TEST_F(rdma_fixture, quiet_is_false_exactly_while_progress_has_work) {
  hpam_dep_quiet_t q[2];
  EXPECT_EQ(hpam_dep_quiet_bind(nullptr, &q[0]), HPAM_ERR_INVALID);
  EXPECT_EQ(hpam_dep_quiet_bind(d[0], nullptr), HPAM_ERR_INVALID);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(hpam_dep_quiet_bind(d[i], &q[i]), HPAM_OK);
  EXPECT_TRUE(hpam_dep_quiet(&q[0]));
  EXPECT_TRUE(hpam_dep_quiet(&q[1]));
  target[5] = 55;
  int a = 0;
  ASSERT_EQ(get(&a, 1, 5), 0);
  EXPECT_FALSE(hpam_dep_quiet(&q[0]));  // the get's run counts until a progress
  EXPECT_FALSE(hpam_dep_quiet(&q[1]));  // its request waits in the owner's FIFO
  serve_owner();
  EXPECT_TRUE(hpam_dep_quiet(&q[1]));
  for (int i = 0; i < 1000 && hpam_rdma_ops_inflight(&t) != 0; ++i) {
    if (!hpam_dep_quiet(&q[0])) hpam_dep_progress(d[0]);
    (void)hpam_rdma_ops_progress(&t, finish, this);
  }
  ASSERT_EQ(hpam_rdma_ops_inflight(&t), 0u);
  EXPECT_EQ(fetched[5], 55u);
  EXPECT_TRUE(hpam_dep_quiet(&q[0]));
  EXPECT_TRUE(hpam_dep_quiet(&q[1]));
}

TEST_F(rdma_fixture, the_table_is_bounded_and_records_come_back) {
  int a = 0;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(get(&a, i, i), 0);
  EXPECT_EQ(hpam_rdma_op_take(&t, &a), nullptr);  // back-pressure: all in use
  serve_owner();
  EXPECT_EQ(hpam_rdma_ops_settle(&t, 2000000000ull, finish, this), 0u);
  EXPECT_EQ(finished.size(), 4u);
  EXPECT_NE(hpam_rdma_op_take(&t, &a), nullptr);
}

TEST_F(rdma_fixture, an_orphaned_operation_finishes_unobserved) {
  target[2] = 9;
  int a = 0, b = 0;
  ASSERT_EQ(get(&a, 1, 2), 0);
  ASSERT_EQ(get(&b, 2, 3), 0);
  std::vector<int> orphaned;
  hpam_rdma_ops_orphan(
      &t, &a,
      [](hpam_rdma_op_t* op, void* ctx) {
        static_cast<std::vector<int>*>(ctx)->push_back(reinterpret_cast<record*>(op)->id);
      },
      &orphaned);
  EXPECT_EQ(orphaned, (std::vector<int>{1}));
  EXPECT_FALSE(hpam_rdma_ops_busy(&t, &a, UINT64_MAX));
  EXPECT_TRUE(hpam_rdma_ops_busy(&t, &b, UINT64_MAX));
  serve_owner();
  EXPECT_EQ(hpam_rdma_ops_settle(&t, 2000000000ull, finish, this), 0u);
  EXPECT_EQ(finished.size(), 2u);
  EXPECT_EQ(fetched[2], 9u);  // the get itself still happened
}

TEST_F(rdma_fixture, settle_gives_up_after_its_time) {
  int a = 0;
  ASSERT_EQ(get(&a, 1, 0), 0);
  // The owner never serves: the operation cannot finish.
  EXPECT_EQ(hpam_rdma_ops_settle(&t, 20000000ull, finish, this), 1u);
  EXPECT_TRUE(finished.empty());
  serve_owner();
  EXPECT_EQ(hpam_rdma_ops_settle(&t, 2000000000ull, finish, this), 0u);
}

TEST(rdma_ops, bad_sizes_are_refused) {
  hpam_rdma_ops_t t;
  EXPECT_EQ(hpam_rdma_ops_init(&t, nullptr, 0, 64), HPAM_ERR_INVALID);
  EXPECT_EQ(hpam_rdma_ops_init(&t, nullptr, 4, 4), HPAM_ERR_INVALID);
  hpam_rdma_ops_fini(&t);
}

}  // namespace
