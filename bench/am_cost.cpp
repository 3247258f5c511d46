// Cost of one 4-word request/reply round trip, both endpoints in one
// process, so the figure is pure protocol + card work (no cross-core cache
// traffic, no scheduling): the basis of the cost-by-feature table (HPAM
// Table 2). Run it twice under `valgrind --tool=callgrind` with different
// --iters and divide the difference in instructions by the difference in
// round trips to get instructions per round trip, repeatably on a noisy
// machine.
//
// --raw measures the card alone: a 64-byte packet each way through two
// Medusa cards (launch, receive, release), no protocol: the "basic" row.
// With --nic hamlyn the protocol runs over the Hamlyn AM card, and --raw
// sends one 8-byte Hamlyn message each way through two Hamlyn cards (send
// terminus, arrival, notification queue), no protocol.
//
// --no-inline keeps every packet in its block, as on the papers' cards: no
// RX_READY cell carries a Medusa packet, no notification entry a Hamlyn one.
//
//   am_cost [--iters N] [--no-crc] [--no-key-check] [--no-inline] [--depth D]
//           [--raw] [--nic medusa|hamlyn]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "am/endpoint.hpp"
#include "nic/hamlyn/hamlyn_am_card.hpp"
#include "nic/hamlyn/hamlyn_card.hpp"
#include "nic/medusa/medusa_card.hpp"
#include "sys/clock.hpp"

namespace {

enum : unsigned { h_ping = 1, h_pong = 2 };
uint64_t pongs = 0;

template <class Card>
void on_ping(hpam_token* t, void*, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  const uint64_t w[4] = {a0, a1, a2, a3};
  (void)static_cast<hpam::am::endpoint<Card>*>(t->endpoint)->reply_4(*t, h_pong, w);
}
void on_pong(hpam_token*, void*, uint64_t, uint64_t, uint64_t, uint64_t) {
  ++pongs;
}

template <class Card>
int run(const hpam::am::endpoint_config& base, long iters) {
  using ep = hpam::am::endpoint<Card>;
  auto c0 = base, c1 = base;
  c1.card.my_proc = 1;
  ep e0(c0), e1(c1);
  e0.connect_all();
  e1.connect_all();
  for (ep* e : {&e0, &e1}) {
    (void)e->register_handler4(h_ping, on_ping<Card>, nullptr);
    (void)e->register_handler4(h_pong, on_pong, nullptr);
  }
  const uint64_t w[4] = {1, 2, 3, 4};
  hpam::sys::clock clk;
  const uint64_t t0 = clk.now_ns();
  for (long i = 0; i < iters; ++i) {
    if (e0.request_4(1, h_ping, w, false) != hpam::status::ok) return 1;
    (void)e1.poll();
    (void)e0.poll();
  }
  const uint64_t t1 = clk.now_ns();
  if (pongs != static_cast<uint64_t>(iters)) return 2;
  std::printf("%ld round trips, %.1f ns each (one core, both ends)\n", iters,
              static_cast<double>(t1 - t0) / static_cast<double>(iters));
  return 0;
}

int run_raw(const hpam::am::endpoint_config& base, long iters) {
  using hpam::nic::medusa_card;
  hpam::nic::card_setup s = base.card;
  s.tx_blocks = 1;
  s.rx_blocks = 2;
  auto s1 = s;
  s1.my_proc = 1;
  medusa_card c0(s), c1(s1);
  c0.attach_peer(1);
  c1.attach_peer(0);
  uint32_t b0, b1;
  if (!c0.claim_tx_block(b0) || !c1.claim_tx_block(b1)) return 3;
  std::memset(c0.tx_block(b0), 1, 64);
  std::memset(c1.tx_block(b1), 2, 64);
  hpam::nic::rx_packet p;
  hpam::sys::clock clk;
  const uint64_t t0 = clk.now_ns();
  for (long i = 0; i < iters; ++i) {
    c0.launch(1, b0, 64);
    if (!c1.receive(p) || !p.crc_ok) return 4;
    c1.release(p);
    c1.launch(0, b1, 64);
    if (!c0.receive(p) || !p.crc_ok) return 5;
    c0.release(p);
  }
  std::printf("%ld raw card round trips, %.1f ns each (one core, both ends)\n", iters,
              static_cast<double>(clk.now_ns() - t0) / static_cast<double>(iters));
  return 0;
}

// One 8-byte message each way between two Hamlyn cards (card memory,
// normal mode, one metadata entry, notify): send, then the receiver takes
// the notification.
int run_raw_hamlyn(const hpam::am::endpoint_config& base, long iters) {
  namespace hh = hpam::nic::hamlyn;
  hh::card_config cfg;
  cfg.job = base.card.job;
  cfg.nprocs = 2;
  cfg.slot_count = 4;
  cfg.metadata_entries = 4;
  cfg.area_bytes = 1 << 16;
  auto cfg1 = cfg;
  cfg1.my_proc = 1;
  hh::card c0(cfg), c1(cfg1);
  c0.attach_all();
  c1.attach_all();
  hh::ticket t[2];
  hh::card* cards[2] = {&c0, &c1};
  for (int i = 0; i < 2; ++i) {
    hh::slot_spec s;
    uint32_t slot = 0;
    if (!is_ok(cards[i]->slots().allocate_area(4096, s.base))) return 3;
    s.bound = 4096;
    s.metadata_count = 1;
    if (!is_ok(cards[i]->slots().create_slot(s, slot))) return 3;
    t[i] = cards[i]->slots().make_ticket(slot, 0, 0, 4096, true);
  }
  uint64_t word = 42;
  iovec v{&word, sizeof word};
  hh::message m;
  m.gather = &v;
  m.gather_count = 1;
  hh::send_handle h;
  hh::notification n;
  hpam::sys::clock clk;
  const uint64_t t0 = clk.now_ns();
  for (long i = 0; i < iters; ++i) {
    if (!is_ok(c0.terminus().send(t[1], m, h)) || !c1.receiver().receive(0, n)) return 4;
    if (!is_ok(c1.terminus().send(t[0], m, h)) || !c0.receiver().receive(0, n)) return 5;
  }
  std::printf("%ld raw Hamlyn round trips (8 bytes each way), %.1f ns each (one core, both ends)\n",
              iters, static_cast<double>(clk.now_ns() - t0) / static_cast<double>(iters));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  hpam::am::endpoint_config c;
  c.card.job = "cost-" + std::to_string(getpid());
  c.card.nprocs = 2;
  long iters = 1'000'000;
  bool raw = false, hamlyn = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc)
      iters = std::atol(argv[++i]);
    else if (a == "--no-crc")
      c.card.crc = false;
    else if (a == "--raw")
      raw = true;
    else if (a == "--no-key-check")
      c.key_check = false;
    else if (a == "--no-inline") {
      c.card.rx_ready_cell = 16;
      c.card.notify_inline = 0;
    } else if (a == "--depth" && i + 1 < argc)
      c.depth = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (a == "--nic" && i + 1 < argc && std::string(argv[i + 1]) == "medusa")
      ++i;
    else if (a == "--nic" && i + 1 < argc && std::string(argv[i + 1]) == "hamlyn") {
      hamlyn = true;
      ++i;
    } else {
      std::fprintf(stderr, "am_cost: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const int rc = raw ? (hamlyn ? run_raw_hamlyn(c, iters) : run_raw(c, iters))
                     : (hamlyn ? run<hpam::nic::hamlyn_am_card>(c, iters)
                               : run<hpam::nic::medusa_card>(c, iters));
  if (rc) std::fprintf(stderr, "am_cost: failed (%d)\n", rc);
  return rc;
}
