// libFuzzer harness: the notification queue's consumer. Process 0 is an
// HPAM endpoint over the Hamlyn AM card, which learns of every arrival from
// its notification queue (notification_take with its own cursor, then
// hamlyn_am_card::receive's checks, then the protocol's acceptance and
// dispatch). Process 1 writes
// into that queue what the input says: notifications with any fields,
// carrying a packet of any bytes in the entry (inline delivery) or not,
// deposits into its own region (any bytes, wire header included; short ones
// travel in the entry, as the region's slot asks; or headless, as the card
// sends on a clean wire: the fast-mode word saying so, or with any bits
// beyond the block's; carried headless packets go in compact entries),
// references to a packet in its outbound blocks (an
// am_reference of any block and length, or any message with the reference
// bit, as the card sends a packet by reference), raw wrap flags (compact
// ones among them), the NQCB
// cursor and entry fields (a carried length and flags of any value, any
// bytes in the entry's room), as a hostile writer sharing the card could.
// The card's entries are the AM card's default, 512 bytes (a room of 480).
// Findings: a sanitizer report, or a guard byte around process 0's segment
// changed. Built as fuzz_notification_queue_clean (HPAM_FUZZ_CLEAN_WIRE),
// neither card checks CRCs, the configuration of every run without faults,
// so process 0 takes headless packets and references besides refusing
// every forged form.
#include <unistd.h>

#include <memory>

#include "am/endpoint_impl.hpp"
#include "fuzz_input.hpp"
#include "nic/hamlyn/am_inbound.hpp"
#include "nic/hamlyn/hamlyn_am_card.hpp"

namespace hpam::fuzz {
namespace {

using card_t = nic::hamlyn_am_card;
constexpr uint64_t job_key = 0x7a7a6b6579000002ull;
#ifdef HPAM_FUZZ_CLEAN_WIRE
constexpr bool clean_wire = true;  // neither card checks CRCs
#else
constexpr bool clean_wire = false;
#endif

void on_any4(hpam_token* t, void*, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  if (t->is_request && (a0 & 1)) {
    const uint64_t w[4] = {a0, 0, 0, 0};
    (void)static_cast<am::endpoint<card_t>*>(t->endpoint)->reply_4(*t, 1, w);
  }
}
void on_bulk(hpam_token*, void*, void* data, size_t len, uint64_t) {
  volatile uint8_t sum = 0;
  for (size_t i = 0; i < len; ++i) sum = sum + static_cast<uint8_t*>(data)[i];
}

struct world {
  sys::manual_time time;
  sys::clock clk;
  std::unique_ptr<am::endpoint<card_t>> victim;
  std::unique_ptr<card_t> peer;
  guarded<2048> segment;
  nic::hamlyn::am_sender_entry mine{};  // process 1's region at process 0: slot and key
  uint32_t expected[4] = {1, 1, 1, 1};  // next sequence process 0 takes per instance

  // Process 1 takes what process 0 sent; its answers say which sequence
  // numbers it has taken.
  void drain_peer() {
    nic::rx_packet p;
    peer->service();
    while (peer->receive(p)) {
      if (p.crc_ok) {
        am::am_header h;
        std::memcpy(&h, p.data + nic::wire_header_size, sizeof h);
        const am::control_word c = am::decode_control(h.control, h.sequence_high);
        if (c.cls == am::msg_class::reply && c.instance < 4)
          expected[c.instance] = am::next_sequence(c.sequence);
      }
      peer->release(p);
    }
  }

  world() {
    am::endpoint_config c;
    c.card.job = "fuzz-nq-" + std::to_string(getpid());
    c.card.nprocs = 2;
    c.card.block_size = 1024;
    c.card.crc = !clean_wire;
    c.key = job_key;
    c.manual_time = &time;
    c.defer_acks = false;
    c.receive_budget = 16;
    victim = std::make_unique<am::endpoint<card_t>>(c);
    c.card.my_proc = 1;
    peer = std::make_unique<card_t>(am::detail::card_setup_for(c, &clk));
    victim->connect_all();
    peer->attach_peer(0);
    (void)victim->set_segment(segment.data(), segment.size());
    (void)victim->register_handler4(1, on_any4, nullptr);
    (void)victim->register_handler_bulk(2, on_bulk, nullptr);
    const nic::hamlyn::card_view& v = peer->hamlyn().view(0);
    nic::hamlyn::am_inbound_header in{};
    uint64_t at = 0;
    if (nic::hamlyn::find_client(v, nic::hamlyn::am_inbound_magic, nic::hamlyn::am_inbound_version,
                                 in, at) != nic::hamlyn::client_lookup::found)
      violated();
    std::memcpy(&mine, v.area + in.senders_offset + sizeof mine, sizeof mine);
  }

  bool intact() const { return segment.intact(); }

  // Raw writes to the queue's cursor and wrap flags (step 2) are meant to
  // be survived: the reader passes over what they damage. They may still
  // leave entries that later writers walk around; to keep each input
  // independent of the ones before it, the next input starts from an empty
  // queue at the reader's own cursor.
  bool scribbled = false;
  void begin() {
    if (!scribbled) return;
    scribbled = false;
    const nic::hamlyn::card_view& v = peer->hamlyn().view(0);
    const uint64_t cap = v.geo.notify_capacity;
    const uint64_t c = victim->card().hamlyn().receiver().reader(0).cursor;
    for (uint64_t p = c; p < c + cap; ++p)  // free for the reader's next lap
      v.ring(0).at(p).wrap_flag.store(
          nic::hamlyn::encode_wrap_flag(p, nic::hamlyn::entry_state::free));
    v.queue(0)->cursor.store(c);
  }

  // Any bytes, up to 1024, as a packet: with (op & 16) a wire header that
  // checks out, with (op & 32) the job key in the protocol header, with
  // (op & 64) a request for the sequence process 0 expects.
  std::vector<uint8_t> packet_from(input& in, uint8_t op) {
    size_t n = 0;
    const uint8_t* bytes = in.rest(n, in.take<uint16_t>() % 1025);
    std::vector<uint8_t> packet(bytes, bytes + n);
    if ((op & 16) && n >= nic::wire_header_size) {  // a wire header that checks out
      nic::wire_header w{0, static_cast<uint32_t>(n), 1, 0, 0};
      std::memcpy(packet.data(), &w, sizeof w);
      if (n >= am::min_packet_size && (op & 32)) {
        am::am_header h{};
        std::memcpy(&h, packet.data() + nic::wire_header_size,
                    std::min<size_t>(sizeof h, n - nic::wire_header_size));
        h.key = job_key;
        am::control_word c = am::decode_control(h.control, h.sequence_high);
        if (c.cls == am::msg_class::request && (op & 64)) {  // the sequence it expects
          c.instance %= 4;
          c.sequence = expected[c.instance];
          h.control = am::encode_control(c);
          h.sequence_high = am::encode_sequence_high(c);
        }
        std::memcpy(packet.data() + nic::wire_header_size, &h,
                    std::min<size_t>(sizeof h, n - nic::wire_header_size));
      }
      w.crc = nic::wire_crc(reinterpret_cast<const std::byte*>(packet.data()),
                            static_cast<uint32_t>(n));
      std::memcpy(packet.data(), &w, sizeof w);
    }
    return packet;
  }

  // Any bytes into block `blk` of my region, notified as the card would
  // (with any fast-mode word).
  void deposit(uint32_t blk, const uint8_t* bytes, size_t n, uint64_t word = ~0ull) {
    nic::hamlyn::ticket t{};
    t.node = 0;
    t.slot = mine.slot;
    t.metadata_index = nic::hamlyn::fast_index;
    t.protection_key = mine.key;
    t.offset = uint64_t{blk} * 1024;
    t.range = 1024;
    t.flags = nic::hamlyn::ticket_flags::notify;
    iovec piece{const_cast<uint8_t*>(bytes), n};
    nic::hamlyn::message m;
    m.gather = &piece;
    m.gather_count = 1;
    m.fast_word = word == ~0ull ? blk : word;
    nic::hamlyn::send_handle h;
    (void)peer->hamlyn().terminus().send(t, m, h);
  }

  void step(input& in) {
    const nic::hamlyn::card_view& v = peer->hamlyn().view(0);
    nic::hamlyn::notification_queue_control& q = *v.queue(0);
    const uint8_t op = in.take<uint8_t>();
    switch (op % 4) {
      case 0: {  // a notification with any fields (often naming my real slot)
        nic::hamlyn::notification n{};
        n.slot = in.take<uint32_t>();
        n.metadata_index = in.take<uint32_t>();
        n.source = in.take<uint32_t>();
        n.metadata = in.take<uint64_t>();
        n.length = in.take<uint32_t>();
        if (op & 16) n.slot = mine.slot;
        if (op & 32) n.metadata_index = nic::hamlyn::fast_index;
        if (op & 64) n.source = 1;
        if (op & 128) n.metadata %= 16;
        if (op & 4) {  // carrying a packet in the entry, of the length it names
          const std::vector<uint8_t> packet = packet_from(in, op);
          if (op & 8) n.length = packet.size();
          std::vector<uint8_t> room(v.ring(0).room(), 0);
          if (!packet.empty())
            std::memcpy(room.data(), packet.data(), std::min(packet.size(), room.size()));
          (void)nic::hamlyn::notification_append(q, v.ring(0), n,
                                                 reinterpret_cast<const std::byte*>(room.data()));
        } else {
          (void)nic::hamlyn::notification_append(q, v.ring(0), n);
        }
        break;
      }
      case 1: {  // a deposit into my region: a packet of any bytes (short ones in the entry)
        const uint32_t blk = in.take<uint8_t>() % 8;
        const std::vector<uint8_t> packet = packet_from(in, op);
        if ((op & 4) && (op & 128)) {
          // By reference: the packet in one of my outbound blocks (any of
          // them, or one beyond), the message an am_reference naming it
          // (with op & 8: any bytes, and the word any bits besides).
          const uint32_t n = peer->tx_blocks();
          const uint32_t b = in.take<uint8_t>() % (n + 2);
          if (b < n && !packet.empty())
            std::memcpy(peer->tx_block(b), packet.data(), packet.size());
          nic::hamlyn::am_reference ref{b, static_cast<uint32_t>(packet.size())};
          if (op & 64) ref.length = in.take<uint32_t>();
          std::vector<uint8_t> msg(sizeof ref);
          std::memcpy(msg.data(), &ref, sizeof ref);
          uint64_t word = blk | nic::hamlyn::reference_word;
          if (op & 8) {
            size_t k = 0;
            const uint8_t* bytes = in.rest(k, in.take<uint8_t>() % 24);
            msg.assign(bytes, bytes + k);
            word |= uint64_t{in.take<uint8_t>()} << 32;
          } else if (op & 32) {
            word |= nic::hamlyn::headless_word;
          }
          deposit(blk, msg.data(), msg.size(), word);
        } else if (op & 4) {
          // Headless, as the card sends on a clean wire: the word says so
          // (or, with op & 8, has any bits beyond the block's).
          const uint64_t field =
              (op & 8) ? uint64_t{in.take<uint8_t>()} << 32 : nic::hamlyn::headless_word;
          deposit(blk, packet.data(), packet.size(), blk | field);
        } else {
          deposit(blk, packet.data(), packet.size());
        }
        break;
      }
      case 2: {  // raw writes to the queue, as any process mapping it could
        scribbled = true;
        const uint64_t cap = v.geo.notify_capacity;
        const uint64_t c = victim->card().hamlyn().receiver().reader(0).cursor;
        const uint64_t i = in.take<uint8_t>() % cap;
        // A flag for a cursor value near the reader's (stale, current or
        // ahead) in any state, or any 64 bits.
        const uint64_t near = c + in.take<uint8_t>() % (3 * cap) - cap;
        const uint64_t flag =
            (op & 64) ? in.take<uint64_t>()
                      : nic::hamlyn::encode_wrap_flag(
                            near, static_cast<nic::hamlyn::entry_state>(in.take<uint8_t>() % 4));
        nic::hamlyn::notification_entry& e = v.ring(0).at(i);
        e.wrap_flag.store(flag, std::memory_order_release);
        if (op & 16) q.cursor.store(q.cursor.load() + in.take<uint16_t>() % (4 * cap) - 2 * cap);
        if (op & 32) {  // fields of an entry (a compact entry's, state 3: slot and index)
          e.slot = in.take<uint32_t>();
          e.metadata_index = in.take<uint32_t>();
          e.metadata = in.take<uint64_t>();
        }
        if (op & 4) {  // what it says it carries: any flags and length, any bytes in its room
          e.flags = (op & 8) ? nic::hamlyn::entry_flag_carried : in.take<uint16_t>();
          // Any length, or one near the room (one byte past it: refused, counted).
          const uint32_t room = v.ring(0).room();
          e.length = (op & 128) ? room - 1 + in.take<uint8_t>() % 3 : in.take<uint32_t>();
          size_t n = 0;
          const uint8_t* bytes = in.rest(n, in.take<uint16_t>() % (room + 1));
          if (n) std::memcpy(nic::hamlyn::entry_message(e), bytes, n);
        }
        break;
      }
      default: {  // process 0 sends me something, so replies can match
        const uint64_t w[4] = {op, 0, 0, 0};
        (void)victim->request_4(1, 1, w, false);
        break;
      }
    }
    (void)victim->poll();
    drain_peer();
  }
};

}  // namespace
}  // namespace hpam::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hpam::fuzz::run<hpam::fuzz::world, 8>(data, size);
}
