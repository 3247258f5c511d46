// libFuzzer harness: the HPAM endpoint's acceptance and dispatch of a packet
// arriving on its Medusa card. Process 0 is an endpoint with handlers, a
// segment and requests of its own outstanding; process 1 is a bare card
// holding the job's key, which sends whatever the input says: wire header,
// protocol header (often with the right key, often aimed at one of process
// 0's outstanding requests), payload (for an ack, often further acks of
// outstanding requests: multi_ack), and either launches it or writes an
// RX_READY entry for it on process 0's card itself (as any process of the
// job can, mapping that card): the entry a card makes for a packet in its
// cell, a void entry, a forged block field (an inbound block of process
// 0's holding the packet, an outbound block of process 1's as a packet
// delivered by reference names it, or any number), a forged length or
// source, or the headless entry (a packet in its cell without its wire
// header). A packet longer than a cell that process 1 launches is itself
// delivered by reference (the AM endpoint's card setup).
// Two builds: this one on a wire whose packets carry a CRC (as under a
// corrupting fault), fuzz_am_medusa_clean.cc on a clean wire without one,
// where process 1's card leaves the wire header of a packet in its cell out
// (card_setup::headless_cells), as every MPI run without faults does.
// Findings: a sanitizer report, or a guard byte around process 0's segment
// or get buffer changed.
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "am/endpoint_impl.hpp"
#include "fuzz_input.hpp"
#include "nic/medusa/medusa_card.hpp"

#ifndef HPAM_FUZZ_CLEAN_WIRE
#define HPAM_FUZZ_CLEAN_WIRE 0
#endif

namespace hpam::fuzz {
namespace {

constexpr bool clean_wire = HPAM_FUZZ_CLEAN_WIRE;
constexpr uint64_t job_key = 0x7a7a6b6579000001ull;
enum : unsigned { h_reply = 1, h_bulk = 2, h_reply_store = 3 };

struct asked {  // a request of process 0 that process 1 has seen
  uint32_t instance, sequence;
};
void on_reply(hpam_token* t, void*, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  if (!t->is_request || (a0 & 1)) return;  // sometimes no reply: the layer acks
  const uint64_t w[4] = {a0, a1, a2, a3};
  (void)static_cast<am::endpoint<nic::medusa_card>*>(t->endpoint)->reply_4(*t, h_reply, w);
}
void on_bulk(hpam_token*, void* ctx, void* data, size_t len, uint64_t) {
  volatile uint8_t sum = 0;  // touch every byte handed over: ASan checks the range
  for (size_t i = 0; i < len; ++i) sum = sum + static_cast<uint8_t*>(data)[i];
  (void)ctx;
}
void on_reply_store(hpam_token* t, void*, uint64_t target, uint64_t len, uint64_t, uint64_t) {
  static const uint8_t bytes[64] = {};
  if (t->is_request)
    (void)static_cast<am::endpoint<nic::medusa_card>*>(t->endpoint)
        ->reply_store(*t, h_bulk, bytes, len % 65, target, 0);
}

struct world {
  sys::manual_time time;
  sys::clock clk;
  std::unique_ptr<am::endpoint<nic::medusa_card>> victim;
  std::unique_ptr<nic::medusa_card> peer;
  uint32_t block = 0;
  guarded<4096> segment;
  guarded<4096> get_buffer;
  std::vector<asked> outstanding;
  uint32_t expected[4] = {1, 1, 1,
                          1};  // next sequence process 0 takes per instance (from its acks)

  world() {
    const std::string job = "fuzz-am-" + std::to_string(getpid());
    am::endpoint_config c;
    c.card.job = job;
    c.card.nprocs = 2;
    c.card.block_size = 2048;
    c.card.crc = !clean_wire;
    c.key = job_key;
    c.manual_time = &time;  // time stands still: no timeouts, no give-up
    c.defer_acks = false;
    c.receive_budget = 8;
    victim = std::make_unique<am::endpoint<nic::medusa_card>>(c);
    c.card.my_proc = 1;
    peer = std::make_unique<nic::medusa_card>(am::detail::card_setup_for(c, &clk));
    victim->connect_all();
    peer->attach_peer(0);
    if (!peer->claim_tx_block(block)) violated();
    (void)victim->set_segment(segment.data(), segment.size());
    (void)victim->register_handler4(h_reply, on_reply, nullptr);
    (void)victim->register_handler_bulk(h_bulk, on_bulk, nullptr);
    (void)victim->register_handler4(h_reply_store, on_reply_store, nullptr);
  }

  // Process 1 takes what process 0 sent: requests are remembered.
  void drain_peer() {
    nic::rx_packet p;
    while (peer->receive(p)) {
      if (p.crc_ok) {
        am::am_header h;
        std::memcpy(&h, p.data + nic::wire_header_size, sizeof h);
        const am::control_word c = am::decode_control(h.control, h.sequence_high);
        if (c.cls == am::msg_class::request && outstanding.size() < 64)
          outstanding.push_back({c.instance, c.sequence});
        if (c.cls == am::msg_class::reply && c.instance < 4)  // process 0 took that one
          expected[c.instance] = am::next_sequence(c.sequence);
      }
      peer->release(p);
    }
  }

  bool intact() const { return segment.intact() && get_buffer.intact(); }
  void step(input& in);
  void forge_entry(input& in, const std::byte* pkt, uint32_t len);
  const uint8_t* multi_ack(input& in, am::am_header& h, am::ack_entry (&acks)[8], size_t& n);

  // Process 0 sends a request of the kind the input names.
  void victim_asks(uint8_t how) {
    const uint64_t w[4] = {how, 0, 0, 0};
    switch (how % 4) {
      case 0:
        (void)victim->request_4(1, h_reply, w, false);
        break;
      case 1:
        (void)victim->request_get(1, h_bulk, 0x1000, get_buffer.data(), how % 200, 7, false);
        break;
      case 2:
        (void)victim->request_store(1, h_bulk, segment.data(), how % 100, 0x2000, 0, false);
        break;
      default:
        (void)victim->request_4(1, h_reply_store, w, false);
        break;
    }
  }
};

// The payload of an ack packet carrying further acknowledgements
// (multi_ack): up to 7 ack_entry records, most naming one of process 0's
// outstanding requests; `pick` bits make one stale (0x80), name another
// instance (0x40), or the whole payload a refusal's (k & 0x40) or not whole
// entries (k & 0x80).
const uint8_t* world::multi_ack(input& in, am::am_header& h, am::ack_entry (&acks)[8], size_t& n) {
  const uint8_t k = in.take<uint8_t>();
  const uint32_t count = k % 8;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t pick = in.take<uint8_t>();
    acks[i] = outstanding.empty() ? am::ack_entry{pick, pick % 5u}
                                  : am::ack_entry{outstanding[pick % outstanding.size()].sequence,
                                                  outstanding[pick % outstanding.size()].instance};
    if (pick & 0x80) acks[i].sequence = am::next_sequence(acks[i].sequence);
    if (pick & 0x40) acks[i].instance = in.take<uint8_t>() % 6;
  }
  if (!(k & 0x40)) h.refusal = 0;
  n = count * sizeof(am::ack_entry) - ((k & 0x80) && count ? 3 : 0);
  return reinterpret_cast<const uint8_t*>(acks);
}

// Process 1 puts an entry on process 0's RX_READY itself, the packet's
// bytes in its cell as far as they fit; `form` % 4 names the entry: 0 the
// one a card makes for a packet in its cell (a lie when it does not fit),
// 1 void, 2 a block field of the input's (with `form` & 4 one of process
// 0's inbound blocks, the packet copied into it; with `form` & 16 one of
// process 1's outbound blocks or just past them, with `form` & 32 the one
// the packet is in, as delivered by reference; with `form` & 8 a length of
// the input's), 3 in the cell with a length and source of the input's. With
// `form` & 64, forms 0 and 3 are headless: the cell holds the packet from
// its wire_header_size-th byte on, in place (medusa::entry_headless).
void world::forge_entry(input& in, const std::byte* pkt, uint32_t len) {
  nic::medusa_card& card = victim->card();
  const uint8_t form = in.take<uint8_t>();
  uint32_t block = nic::medusa::entry_in_cell, length = len, source = 1;
  switch (form % 4) {
    case 1:
      length = 0;
      break;
    case 2:
      block = in.take<uint32_t>();
      if (form & 4) {
        block = card.tx_blocks() + block % card.rx_blocks();
        std::memcpy(card.tx_block(block), pkt, std::min(len, card.block_size()));
      } else if (form & 16) {
        block = (form & 32) ? this->block : block % (peer->tx_blocks() + 2);
      }
      if (form & 8) length = in.take<uint32_t>();
      break;
    case 3:
      length = in.take<uint32_t>();
      source = in.take<uint16_t>();
      break;
    default:
      break;
  }
  const bool headless = (form & 64) && (form % 4 == 0 || form % 4 == 3);
  if (headless) block = nic::medusa::entry_headless;
  uint64_t pos;
  std::byte* cell = card.rx_ready_fifo().claim(pos);
  if (!cell) return;  // every cell held: a card would drop the packet
  if (headless)
    std::memcpy(cell + nic::wire_header_size, pkt + nic::wire_header_size,
                std::min(len, card.inline_bytes() + nic::wire_header_size) - nic::wire_header_size);
  else
    std::memcpy(cell + sys::cell_fifo::head_bytes, pkt, std::min(len, card.inline_bytes()));
  card.rx_ready_fifo().publish(cell, pos, nic::medusa::encode_entry(block, length, source));
}

// One packet from process 1. `lie` bits: 1 the key, 2 the CRC, 4 the wire
// length, 8 the wire source and destination, 16 the sequence number, 32 a
// bulk address anywhere (else near the segment's edges). Clear bits make
// that part right, so most inputs reach the checks behind it. `how` bits: 1
// process 0 sends a request first, 2 answer one of its requests, 4 an ack
// carries further acks (multi_ack), 8 an entry written by hand instead of
// a launch (forge_entry).
void world::step(input& in) {
  world& w = *this;
  const uint8_t lie = in.take<uint8_t>();
  const uint8_t how = in.take<uint8_t>();
  if (how & 1) {
    w.victim_asks(in.take<uint8_t>());
    w.drain_peer();
  }
  nic::wire_header wh = in.take<nic::wire_header>();
  am::am_header h = in.take<am::am_header>();
  if (!(lie & 1)) h.key = job_key;
  am::control_word c = am::decode_control(h.control, h.sequence_high);
  c.instance %= (lie & 16) ? 4096 : 4;
  if ((how & 2) && !w.outstanding.empty()) {
    const asked a = w.outstanding[in.take<uint8_t>() % w.outstanding.size()];
    c.cls = am::msg_class::reply;
    c.instance = a.instance;
    c.sequence = a.sequence;
  } else if (!(lie & 16) && c.cls == am::msg_class::request) {
    c.sequence = w.expected[c.instance];
  }
  h.control = am::encode_control(c);
  h.sequence_high = am::encode_sequence_high(c);
  if (!(lie & 32)) {
    const uint64_t base = reinterpret_cast<uint64_t>(w.segment.data());
    h.word[am::bulk_word::target] =
        base - 64 + h.word[am::bulk_word::target] % (w.segment.size() + 128);
  }
  const uint32_t hdr = am::header_bytes(c.kind);
  std::byte* pkt = w.peer->tx_block(w.block);
  const uint32_t room = w.peer->block_size() - am::packet_header_size;
  size_t n = 0;
  am::ack_entry acks[8];
  const uint8_t* payload;
  if ((how & 4) && c.kind == am::msg_kind::ack)
    payload = w.multi_ack(in, h, acks, n);
  else
    payload = in.rest(n, in.take<uint16_t>() % (room + 1));
  if (!(lie & 32) && c.kind == am::msg_kind::store && (in.take<uint8_t>() & 1))
    h.word[am::bulk_word::length] = n;  // a consistent store
  std::memset(pkt, 0, am::packet_header_size);
  std::memcpy(pkt + nic::wire_header_size, &h, sizeof h);
  if (n) std::memcpy(pkt + hdr, payload, n);
  const uint32_t len = static_cast<uint32_t>(hdr + n);
  if (!(lie & 4)) wh.length = len;
  if (!(lie & 8)) {
    wh.src = 1;
    wh.dst = 0;
  }
  std::memcpy(pkt, &wh, sizeof wh);
  if (!(lie & 2)) {
    wh.crc = nic::wire_crc(pkt, len);
    std::memcpy(pkt, &wh, sizeof wh);
  }
  if (how & 8)
    w.forge_entry(in, pkt, len);
  else
    w.peer->transmit_block(w.block, len);
  (void)w.victim->poll();
  w.drain_peer();
  if (w.outstanding.size() > 32)
    w.outstanding.erase(w.outstanding.begin(), w.outstanding.begin() + 16);
}

}  // namespace
}  // namespace hpam::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hpam::fuzz::run<hpam::fuzz::world, 4>(data, size);
}
