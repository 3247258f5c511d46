// The C API (include/hpam_am.h) as a program would use it: two forked
// processes, request/reply, store, get, medium, counters, destroy; and the
// errors a bad configuration gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "../common/test_util.hpp"
#include "capi/hpam_frontend.h"
#include "hpam_am.h"

namespace hpam::test {
namespace {

enum : unsigned { h_echo = 1, h_done = 2, h_bulk = 3 };
struct ctx_t {
  int done = 0;
  uint64_t sum = 0;
  std::vector<char> bulk;
};

void echo(hpam_token_t* t, void*, uint64_t a0, uint64_t a1, uint64_t, uint64_t) {
  (void)hpam_reply_4(t, h_done, a0 + a1, 0, 0, 0);
}
void done(hpam_token_t*, void* c, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  auto* x = static_cast<ctx_t*>(c);
  x->done++;
  x->sum += a0;
}
void bulk(hpam_token_t*, void* c, void* data, size_t len, uint64_t) {
  auto* x = static_cast<ctx_t*>(c);
  x->bulk.assign(static_cast<char*>(data), static_cast<char*>(data) + len);
  x->done++;
}

int run_proc(const std::string& job, int me, std::vector<char>& area) {
  hpam_config_t cfg;
  hpam_config_init(&cfg);
  cfg.job = job.c_str();
  cfg.nprocs = 2;
  cfg.my_proc = me;
  hpam_ep_t* ep = nullptr;
  if (hpam_ep_create(&cfg, &ep) != HPAM_OK) return 10;
  if (hpam_connect_all(ep) != HPAM_OK) return 11;
  if (hpam_set_segment(ep, area.data(), area.size()) != HPAM_OK) return 20;
  ctx_t c;
  hpam_register_handler4(ep, h_echo, echo, &c);
  hpam_register_handler4(ep, h_done, done, &c);
  hpam_register_handler_bulk(ep, h_bulk, bulk, &c);
  const int peer = 1 - me;
  for (int i = 0; i < 100; ++i)
    if (hpam_request_4(ep, peer, h_echo, i, 1, 0, 0) != HPAM_OK) return 12;
  if (!spin_until([&] {
        hpam_poll(ep);
        return c.done == 100;
      }))
    return 13;
  if (c.sum != 100u * 99 / 2 + 100) return 14;
  // get the peer's area (same address in both: allocated before fork)
  std::vector<char> got(area.size());
  if (hpam_get(ep, peer, h_bulk, reinterpret_cast<uint64_t>(area.data()), got.data(), got.size(),
               0) != HPAM_OK)
    return 15;
  if (!spin_until([&] {
        hpam_poll(ep);
        return c.done == 101;
      }))
    return 16;
  if (got != area) return 17;
  // Just past the peer's segment: refused, reported by hpam_poll, counted.
  char past[8] = {};
  if (hpam_get(ep, peer, h_bulk, reinterpret_cast<uint64_t>(area.data() + area.size()), past, 8,
               0) != HPAM_OK)
    return 21;
  if (!spin_until([&] { return hpam_poll(ep) == HPAM_ERR_REJECTED; })) return 22;
  if (std::string(hpam_last_error()).find("segment") == std::string::npos) return 23;
  hpam_counters_t k;
  if (hpam_get_counters(ep, &k) != HPAM_OK || k.requests_sent != 102 || k.replies_received != 102 ||
      k.refusals_received != 1)
    return 18;
  // The peer refused mine as I refused its: wait until it has seen that.
  if (!spin_until([&] {
        hpam_poll(ep);
        return hpam_get_counters(ep, &k) == HPAM_OK && k.segment_rejections == 1;
      }))
    return 24;
  if (hpam_ep_destroy(ep) != HPAM_OK) return 19;
  return 0;
}

TEST(c_api, two_processes_request_reply_get_destroy) {
  const std::string job = unique_job("capi");
  std::vector<char> area(4000);
  for (size_t i = 0; i < area.size(); ++i) area[i] = static_cast<char>(i * 7);
  pid_t a = fork_child([&] { return run_proc(job, 0, area); });
  pid_t b = fork_child([&] { return run_proc(job, 1, area); });
  EXPECT_EQ(reap(a), 0);
  EXPECT_EQ(reap(b), 0);
}

TEST(c_api, bad_configuration_is_a_clear_error) {
  hpam_config_t cfg;
  hpam_config_init(&cfg);
  cfg.job = "bad-config";
  cfg.nprocs = 2;
  hpam_ep_t* ep = reinterpret_cast<hpam_ep_t*>(1);
  cfg.nic = "ethernet";
  EXPECT_EQ(hpam_ep_create(&cfg, &ep), HPAM_ERR_INVALID);
  EXPECT_EQ(ep, nullptr);
  EXPECT_NE(std::string(hpam_last_error()).find("nic"), std::string::npos) << hpam_last_error();
  cfg.nic = "medusa";
  cfg.depth = 0;
  EXPECT_EQ(hpam_ep_create(&cfg, &ep), HPAM_ERR_INVALID);
  EXPECT_NE(std::string(hpam_last_error()).find("depth"), std::string::npos) << hpam_last_error();
  cfg.depth = 4;
  cfg.fault_drop = 2;
  EXPECT_EQ(hpam_ep_create(&cfg, &ep), HPAM_ERR_INVALID);
  EXPECT_NE(std::string(hpam_last_error()).find("fault_drop"), std::string::npos);
  cfg.fault_drop = 0;
  cfg.crc_check = 0;
  cfg.fault_corrupt = 0.001;  // a flipped bit would go unnoticed: refused
  EXPECT_EQ(hpam_ep_create(&cfg, &ep), HPAM_ERR_INVALID);
  EXPECT_NE(std::string(hpam_last_error()).find("fault_corrupt"), std::string::npos)
      << hpam_last_error();
  EXPECT_EQ(hpam_ep_create(nullptr, &ep), HPAM_ERR_INVALID);
  EXPECT_EQ(hpam_set_segment(nullptr, nullptr, 0), HPAM_ERR_INVALID);
}

// A configuration of process p of an nprocs-process job, the rest the defaults.
hpam_config_t config_of(const std::string& job, int nprocs, int p) {
  hpam_config_t cfg;
  hpam_config_init(&cfg);
  cfg.job = job.c_str();
  cfg.nprocs = nprocs;
  cfg.my_proc = p;
  return cfg;
}

// Two peers finish and stop answering: hpam_unreachable_peer names only the first one
// given up on, hpam_peer_lost tells about each (the UCX transport fails the
// endpoints of every lost peer, not only the first).
TEST(c_api, peer_lost_names_every_lost_peer) {
  const std::string job = unique_job("capi-lost");
  hpam_ep_t* ep[3] = {};
  for (int p = 0; p < 3; ++p) {
    hpam_config_t cfg = config_of(job, 3, p);
    cfg.timeout_ns = 1'000'000;
    cfg.give_up_ns = 50'000'000;
    cfg.poll_on_send = 0;
    ASSERT_EQ(hpam_ep_create(&cfg, &ep[p]), HPAM_OK) << hpam_last_error();
  }
  hpam_register_handler4(ep[1], h_echo, echo, nullptr);
  hpam_register_handler4(ep[2], h_echo, echo, nullptr);
  ASSERT_EQ(hpam_connect_all(ep[0]), HPAM_OK);
  ASSERT_EQ(hpam_try_request_4(ep[0], 1, h_echo, 0, 0, 0, 0), HPAM_OK);
  ASSERT_EQ(hpam_try_request_4(ep[0], 2, h_echo, 0, 0, 0, 0), HPAM_OK);
  EXPECT_EQ(hpam_peer_lost(ep[0], 1), 0);
  // Processes 1 and 2 finish without ever polling: both are given up on
  // (a peer that only does not poll is busy, and waited for).
  ASSERT_EQ(hpam_ep_destroy(ep[1]), HPAM_OK);
  ASSERT_EQ(hpam_ep_destroy(ep[2]), HPAM_OK);
  ep[1] = ep[2] = nullptr;
  ASSERT_TRUE(spin_until([&] {
    (void)hpam_poll(ep[0]);
    return hpam_peer_lost(ep[0], 1) && hpam_peer_lost(ep[0], 2);
  }));
  const int first = hpam_unreachable_peer(ep[0]);
  EXPECT_TRUE(first == 1 || first == 2) << first;
  EXPECT_EQ(hpam_peer_lost(ep[0], 0), 0);
  EXPECT_EQ(hpam_peer_lost(ep[0], 3), 0);  // out of range: not a peer
  EXPECT_EQ(hpam_peer_lost(ep[0], -1), 0);
  EXPECT_EQ(hpam_peer_lost(nullptr, 1), 0);
  for (auto* e : ep) hpam_ep_destroy(e);
}

TEST(c_api, strerror_names_every_code) {
  for (int e = 0; e >= HPAM_ERR_NOT_SUPPORTED; --e)
    EXPECT_STRNE(hpam_strerror(e), "unknown error") << e;
}

// hpam_send_medium_now: head and body arrive as one payload; busy (never
// queued) when the peer's D instances are in use and from a handler (not a
// rule violation); too long is invalid; to oneself it runs the handler.
struct medium_now_ctx {
  hpam_ep_t* ep = nullptr;
  std::vector<std::string> got;
  int from_handler = 1;  // hpam_send_medium_now's result inside the handler
};
void medium_now_bulk(hpam_token_t*, void* c, void* data, size_t len, uint64_t arg) {
  auto* x = static_cast<medium_now_ctx*>(c);
  x->got.push_back(std::string(static_cast<char*>(data), len) + "#" + std::to_string(arg));
  x->from_handler = hpam_send_medium_now(x->ep, 0, h_bulk, "r", 1, nullptr, 0, 0);
}

// Two connected endpoints of `depth` instances with medium_now_bulk as
// handler h_bulk (destroy one after the other: a short give-up time).
void open_medium_pair(const std::string& job, uint32_t depth, hpam_ep_t* (&ep)[2],
                      medium_now_ctx (&c)[2]) {
  for (int p = 0; p < 2; ++p) {
    hpam_config_t cfg = config_of(job, 2, p);
    cfg.depth = depth;
    cfg.give_up_ns = 50'000'000;
    ASSERT_EQ(hpam_ep_create(&cfg, &ep[p]), HPAM_OK) << hpam_last_error();
    c[p].ep = ep[p];
    hpam_register_handler_bulk(ep[p], h_bulk, medium_now_bulk, &c[p]);
  }
  ASSERT_EQ(hpam_connect_all(ep[0]), HPAM_OK);
  ASSERT_EQ(hpam_connect_all(ep[1]), HPAM_OK);
}

TEST(c_api, send_medium_now_sends_two_pieces_or_refuses) {
  const std::string job = unique_job("capi-now");
  hpam_ep_t* ep[2] = {};
  medium_now_ctx c[2];
  ASSERT_NO_FATAL_FAILURE(open_medium_pair(job, 2, ep, c));
  const std::string body(200, 'b');
  EXPECT_EQ(hpam_send_medium_now(ep[0], 1, h_bulk, "head", 4, body.data(), body.size(), 7),
            HPAM_OK);
  EXPECT_EQ(hpam_send_medium_now(ep[0], 1, h_bulk, nullptr, 0, "x", 1, 8), HPAM_OK);
  EXPECT_EQ(hpam_send_medium_now(ep[0], 1, h_bulk, "y", 1, nullptr, 0, 9), HPAM_ERR_BUSY);
  const size_t max = hpam_max_bulk(ep[0]);
  EXPECT_EQ(hpam_send_medium_now(ep[0], 1, h_bulk, body.data(), max, "z", 1, 0), HPAM_ERR_INVALID);
  EXPECT_EQ(hpam_send_medium_now(ep[0], 1, h_bulk, nullptr, 1, nullptr, 0, 0), HPAM_ERR_INVALID);
  ASSERT_TRUE(spin_until([&] {
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
    return c[1].got.size() == 2;
  }));
  EXPECT_EQ(c[1].got[0], "head" + body + "#7");
  EXPECT_EQ(c[1].got[1], "x#8");
  EXPECT_EQ(c[1].from_handler, HPAM_ERR_BUSY);
  EXPECT_EQ(hpam_send_medium_now(ep[0], 0, h_bulk, "se", 2, "lf", 2, 3), HPAM_OK);
  ASSERT_EQ(c[0].got.size(), 1u);
  EXPECT_EQ(c[0].got[0], "self#3");
  hpam_counters_t k;
  ASSERT_TRUE(spin_until([&] {  // both answered
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
    return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == 2;
  }));
  ASSERT_EQ(hpam_get_counters(ep[1], &k), HPAM_OK);
  EXPECT_EQ(k.rule_violations, 0u);
  EXPECT_EQ(k.requests_received, 2u);
  ASSERT_EQ(hpam_get_counters(ep[0], &k), HPAM_OK);
  EXPECT_EQ(k.requests_sent, 2u);
  EXPECT_EQ(k.busy_returns, 1u);
  for (auto* e : ep) hpam_ep_destroy(e);
}

// hpam_send_medium_packed: the payload packed straight into the outbound
// block, only once an instance is free; otherwise as hpam_send_medium_now.
struct pack_source {
  std::string bytes;
  int calls = 0;
};
size_t pack_bytes(void* dest, void* arg) {
  auto* p = static_cast<pack_source*>(arg);
  p->calls++;
  std::memcpy(dest, p->bytes.data(), p->bytes.size());
  return p->bytes.size();
}

TEST(c_api, send_medium_packed_packs_only_when_it_sends) {
  const std::string job = unique_job("capi-packed");
  hpam_ep_t* ep[2] = {};
  medium_now_ctx c[2];
  ASSERT_NO_FATAL_FAILURE(open_medium_pair(job, 1, ep, c));
  pack_source big{std::string(hpam_max_bulk(ep[0]), 'p')};  // the most a message holds
  EXPECT_EQ(hpam_send_medium_packed(ep[0], 1, h_bulk, pack_bytes, &big, 5), HPAM_OK);
  pack_source small{"s"};
  EXPECT_EQ(hpam_send_medium_packed(ep[0], 1, h_bulk, pack_bytes, &small, 6), HPAM_ERR_BUSY);
  EXPECT_EQ(small.calls, 0) << "not packed: no instance was free (D = 1)";
  EXPECT_EQ(hpam_send_medium_packed(ep[0], 1, h_bulk, nullptr, &small, 6), HPAM_ERR_INVALID);
  ASSERT_TRUE(spin_until([&] {
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
    return c[1].got.size() == 1;
  }));
  EXPECT_EQ(c[1].got[0], big.bytes + "#5");
  EXPECT_EQ(c[1].from_handler, HPAM_ERR_BUSY);  // the handler's own send_medium_now
  hpam_counters_t k;
  ASSERT_TRUE(spin_until([&] {  // answered: the instance is free again
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
    return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == 1;
  }));
  pack_source none{""};
  EXPECT_EQ(hpam_send_medium_packed(ep[0], 1, h_bulk, pack_bytes, &none, 7), HPAM_OK);
  EXPECT_EQ(hpam_send_medium_packed(ep[0], 0, h_bulk, pack_bytes, &small, 8), HPAM_OK);  // myself
  ASSERT_EQ(c[0].got.size(), 1u);
  EXPECT_EQ(c[0].got[0], "s#8");
  ASSERT_TRUE(spin_until([&] {
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
    return c[1].got.size() == 2 && hpam_get_counters(ep[0], &k) == HPAM_OK &&
           k.replies_received == 2;
  }));
  EXPECT_EQ(c[1].got[1], "#7");
  for (auto* e : ep) hpam_ep_destroy(e);
}

// hpam_send_now: hpam_send_medium_now through a binding the front end made
// once (the BTL's send path): the same sends and the same refusals.
TEST(c_api, send_now_binding_sends_as_send_medium_now) {
  const std::string job = unique_job("capi-bound");
  hpam_ep_t* ep[2] = {};
  medium_now_ctx c[2];
  ASSERT_NO_FATAL_FAILURE(open_medium_pair(job, 1, ep, c));
  hpam_send_now_t s{};
  EXPECT_EQ(hpam_send_now_bind(nullptr, &s), HPAM_ERR_INVALID);
  EXPECT_EQ(hpam_send_now_bind(ep[0], nullptr), HPAM_ERR_INVALID);
  ASSERT_EQ(hpam_send_now_bind(ep[0], &s), HPAM_OK);
  EXPECT_EQ(hpam_send_now(ep[0], &s, 1, h_bulk, "bo", 2, "und", 3, 5), HPAM_OK);
  EXPECT_EQ(hpam_send_now(ep[0], &s, 1, h_bulk, "z", 1, nullptr, 0, 6), HPAM_ERR_BUSY);  // D = 1
  const std::string body(hpam_max_bulk(ep[0]), 'b');  // with a head: one byte too long
  EXPECT_EQ(hpam_send_now(ep[0], &s, 1, h_bulk, "z", 1, body.data(), body.size(), 6),
            HPAM_ERR_INVALID);
  ASSERT_TRUE(spin_until([&] {
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
    return c[1].got.size() == 1;
  }));
  EXPECT_EQ(c[1].got[0], "bound#5");
  hpam_counters_t k;
  ASSERT_TRUE(spin_until([&] {  // answered: nothing left for destroy to wait for
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
    return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == 1;
  }));
  EXPECT_EQ(k.requests_sent, 1u);
  EXPECT_EQ(k.busy_returns, 1u);
  for (auto* e : ep) hpam_ep_destroy(e);
}

// hpam_poll_now: hpam_poll through a binding the front end made once (the
// BTL's progress): the packets it handled, and a broken rule reported with
// its text kept, as hpam_poll reports them.
struct poll_in_handler_ctx {
  hpam_ep_t* ep = nullptr;
  hpam_poll_now_t* bound = nullptr;
  int from_handler = 1;  // hpam_poll_now's result inside the handler
};
void poll_in_handler(hpam_token_t*, void* c, void*, size_t, uint64_t) {
  auto* x = static_cast<poll_in_handler_ctx*>(c);
  x->from_handler = hpam_poll_now(x->ep, x->bound);
}
TEST(c_api, poll_now_binding_polls_as_poll) {
  const std::string job = unique_job("capi-bound-poll");
  hpam_ep_t* ep[2] = {};
  medium_now_ctx c[2];
  ASSERT_NO_FATAL_FAILURE(open_medium_pair(job, 2, ep, c));
  hpam_poll_now_t p[2]{};
  EXPECT_EQ(hpam_poll_now_bind(nullptr, &p[0]), HPAM_ERR_INVALID);
  EXPECT_EQ(hpam_poll_now_bind(ep[0], nullptr), HPAM_ERR_INVALID);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(hpam_poll_now_bind(ep[i], &p[i]), HPAM_OK);
  EXPECT_EQ(hpam_poll_now(ep[1], &p[1]), 0);  // nothing sent yet
  ASSERT_EQ(hpam_send_medium_now(ep[0], 1, h_bulk, "po", 2, "ll", 2, 3), HPAM_OK);
  int handled = 0;
  ASSERT_TRUE(spin_until([&] {
    handled += hpam_poll_now(ep[1], &p[1]);
    return c[1].got.size() == 1;
  }));
  EXPECT_EQ(handled, 1);  // the one request, in the poll that ran its handler
  EXPECT_EQ(c[1].got[0], "poll#3");
  hpam_counters_t k;
  ASSERT_TRUE(spin_until([&] {  // the handler's reply answers the request
    (void)hpam_poll_now(ep[1], &p[1]);
    (void)hpam_poll_now(ep[0], &p[0]);
    return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == 1;
  }));
  poll_in_handler_ctx in{ep[1], &p[1]};
  ASSERT_EQ(hpam_register_handler_bulk(ep[1], h_bulk, poll_in_handler, &in), HPAM_OK);
  ASSERT_EQ(hpam_send_medium_now(ep[0], 1, h_bulk, "x", 1, nullptr, 0, 4), HPAM_OK);
  ASSERT_TRUE(spin_until([&] {
    (void)hpam_poll_now(ep[1], &p[1]);
    return in.from_handler != 1;
  }));
  EXPECT_EQ(in.from_handler, HPAM_ERR_RULE);  // polling from a handler breaks the rules
  EXPECT_NE(std::string(hpam_last_error()).find("poll called from a handler"), std::string::npos)
      << hpam_last_error();
  ASSERT_TRUE(spin_until([&] {
    (void)hpam_poll_now(ep[1], &p[1]);
    (void)hpam_poll_now(ep[0], &p[0]);
    return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == 2;
  }));
  for (auto* e : ep) hpam_ep_destroy(e);
}

// A sender that makes no call after its sends (it computes, or spins on
// memory another process writes): requests the wire dropped reach the
// receiver only if something resends them without the sender's poll. With
// background_resend auto (on, since this wire drops) a thread does; off,
// what was lost stays lost while the sender is silent.
void collect(hpam_token_t*, void* c, void* data, size_t len, uint64_t arg) {
  auto* got = static_cast<std::vector<uint64_t>*>(c);
  uint64_t v = ~uint64_t{0};
  if (len == sizeof v) std::memcpy(&v, data, sizeof v);
  got->push_back(v == arg ? v : ~uint64_t{0});
}

class background_resend : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(background_resend, silent_senders_loss_arrives_only_with_the_thread) {
  const auto [nic, mode] = GetParam();
  const bool on = std::string(mode) == "auto";
  const std::string job = unique_job("capi-silent");
  constexpr uint32_t depth = 8;
  hpam_ep_t* ep[2] = {};
  std::vector<uint64_t> got;
  for (int p = 0; p < 2; ++p) {
    hpam_config_t cfg = config_of(job, 2, p);
    cfg.nic = nic;
    cfg.depth = depth;
    cfg.timeout_ns = 200'000;
    cfg.give_up_ns = 50'000'000;  // destroy one after the other: not a long wait for the other
    cfg.poll_on_send = 0;
    if (p == 0) {  // only the sender's wire drops (half its packets, from a fixed seed)
      cfg.fault_drop = 0.5;
      cfg.fault_seed = 11;
      cfg.background_resend = mode;
    }
    ASSERT_EQ(hpam_ep_create(&cfg, &ep[p]), HPAM_OK) << hpam_last_error();
  }
  hpam_register_handler_bulk(ep[1], h_bulk, collect, &got);
  ASSERT_EQ(hpam_connect_all(ep[0]), HPAM_OK);
  ASSERT_EQ(hpam_connect_all(ep[1]), HPAM_OK);
  for (uint64_t i = 0; i < depth; ++i)
    ASSERT_EQ(hpam_send_medium_now(ep[0], 1, h_bulk, &i, sizeof i, nullptr, 0, i), HPAM_OK);
  // From here the sender gets no call: only its background thread may resend.
  const bool all = spin_until(
      [&] {
        (void)hpam_poll(ep[1]);
        return got.size() == depth;
      },
      on ? 20'000 : 300);
  hpam_counters_t k;
  ASSERT_EQ(hpam_get_counters(ep[0], &k), HPAM_OK);
  ASSERT_GT(k.wire_dropped, 0u) << "the seed must make the wire drop one of the first sends";
  if (on) {
    EXPECT_TRUE(all) << got.size() << " of " << depth << " arrived";
    EXPECT_GT(k.background_resends, 0u);
    EXPECT_LE(k.background_resends, k.retransmissions);
    std::vector<uint64_t> sorted = got;
    std::sort(sorted.begin(), sorted.end());
    for (uint64_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);  // each once, intact
  } else {
    EXPECT_FALSE(all);
    EXPECT_EQ(got.size(), depth - k.wire_dropped);
    EXPECT_EQ(k.retransmissions, 0u);
    EXPECT_EQ(k.background_resends, 0u);
  }
  // Both serve until every request is answered; then both close.
  ASSERT_TRUE(spin_until([&] {
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
    return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == depth;
  }));
  EXPECT_EQ(got.size(), depth);
  for (auto* e : ep) hpam_ep_destroy(e);
}

// The answer hook (hpam_set_answer_hook): each request of mine to another
// process is reported answered exactly once, with its handler index and
// argument word, whatever answered it (a reply, the layer's empty ack, a
// refusal) and whatever the wire did (drops, duplicates, reordering:
// resent copies and reflected answers are not reported again); requests to
// myself and a cleared hook report nothing.
struct answers_seen {
  std::vector<std::tuple<int, unsigned, uint64_t>> got;
};
void note_answer(void* c, int peer, unsigned handler, uint64_t arg) {
  static_cast<answers_seen*>(c)->got.emplace_back(peer, handler, arg);
}
void reply_some(hpam_token_t* t, void*, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  if (a0 % 2) (void)hpam_reply_4(t, h_done, a0, 0, 0, 0);  // the others: the layer's ack
}
void ignore_bulk(hpam_token_t*, void*, void*, size_t, uint64_t) {}

class answer_hook : public ::testing::TestWithParam<const char*> {};

TEST_P(answer_hook, reports_each_request_once_with_its_argument_word) {
  const std::string job = unique_job("capi-answer");
  hpam_ep_t* ep[2] = {};
  ctx_t c[2];
  std::vector<char> area(64);
  for (int p = 0; p < 2; ++p) {
    hpam_config_t cfg = config_of(job, 2, p);
    cfg.nic = GetParam();
    cfg.depth = 4;
    cfg.timeout_ns = 200'000;
    cfg.give_up_ns = 2'000'000'000;
    cfg.fault_drop = 0.1;
    cfg.fault_duplicate = 0.1;
    cfg.fault_reorder = 0.1;
    cfg.fault_seed = 5;
    ASSERT_EQ(hpam_ep_create(&cfg, &ep[p]), HPAM_OK) << hpam_last_error();
    hpam_register_handler4(ep[p], h_echo, reply_some, &c[p]);
    hpam_register_handler4(ep[p], h_done, done, &c[p]);
    hpam_register_handler_bulk(ep[p], h_bulk, ignore_bulk, &c[p]);
    ASSERT_EQ(hpam_set_segment(ep[p], area.data(), area.size()), HPAM_OK);
  }
  ASSERT_EQ(hpam_connect_all(ep[0]), HPAM_OK);
  ASSERT_EQ(hpam_connect_all(ep[1]), HPAM_OK);
  answers_seen seen;
  hpam_set_answer_hook(ep[0], note_answer, &seen);
  std::vector<std::tuple<int, unsigned, uint64_t>> sent;
  uint64_t word = 0;
  char buf[16] = {};
  const auto serve = [&] {
    (void)hpam_poll(ep[1]);
    (void)hpam_poll(ep[0]);
  };
  hpam_counters_t k;
  for (int round = 0; round < 50; ++round) {
    ++word;  // a short request, answered by a reply (odd) or the layer's ack (even)
    ASSERT_EQ(hpam_request_4(ep[0], 1, h_echo, word, 0, 0, 0), HPAM_OK);
    sent.emplace_back(1, h_echo, word);
    ++word;  // a medium message
    const iovec iov{buf, sizeof buf};
    ASSERT_EQ(hpam_request_medium(ep[0], 1, h_bulk, &iov, 1, word), HPAM_OK);
    sent.emplace_back(1, h_bulk, word);
    ++word;  // a store, and a get just past the segment (refused)
    ASSERT_EQ(hpam_store(ep[0], 1, h_bulk, buf, 8, reinterpret_cast<uint64_t>(area.data()), word),
              HPAM_OK);
    sent.emplace_back(1, h_bulk, word);
    ++word;
    ASSERT_EQ(hpam_get(ep[0], 1, h_bulk, reinterpret_cast<uint64_t>(area.data() + area.size()), buf,
                       8, word),
              HPAM_OK);
    sent.emplace_back(1, h_bulk, word);
    // One process serves both: all answered before the next round, whose
    // four requests then never wait for an instance (D = 4).
    ASSERT_TRUE(spin_until([&] {
      serve();
      return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == sent.size();
    }));
  }
  ASSERT_EQ(hpam_request_4(ep[0], 0, h_echo, 999, 0, 0, 0), HPAM_OK);  // to myself: not reported
  ASSERT_TRUE(spin_until([&] {
    serve();
    return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == sent.size();
  }));
  ASSERT_GT(k.wire_dropped + k.wire_duplicated, 0u) << "the seed must make the wire misbehave";
  std::sort(seen.got.begin(), seen.got.end());
  std::sort(sent.begin(), sent.end());
  EXPECT_EQ(seen.got, sent);
  EXPECT_EQ(k.refusals_received, 50u);
  hpam_set_answer_hook(ep[0], nullptr, nullptr);  // cleared: no more reports
  ASSERT_EQ(hpam_request_4(ep[0], 1, h_echo, 1, 0, 0, 0), HPAM_OK);
  ASSERT_TRUE(spin_until([&] {
    serve();
    return hpam_get_counters(ep[0], &k) == HPAM_OK && k.replies_received == sent.size() + 1;
  }));
  EXPECT_EQ(seen.got.size(), sent.size());
  for (auto* e : ep) hpam_ep_destroy(e);
}

INSTANTIATE_TEST_SUITE_P(cards, answer_hook, ::testing::Values("medusa", "hamlyn"));

INSTANTIATE_TEST_SUITE_P(cards, background_resend,
                         ::testing::Combine(::testing::Values("medusa", "hamlyn"),
                                            ::testing::Values("auto", "off")));

}  // namespace
}  // namespace hpam::test
