// libFuzzer harness: the Hamlyn receiving interface. Card 1 owns slots of
// every mode (normal, paranoid, paranoid one-shot, fast; card memory and
// private memory); card 0 is a sender that holds their keys and lies in its
// packets. Each step of an input is one of: a direct arrival (the sender's
// process doing the receiving interface's work: check_packet, deposit,
// counting, notification; or the lean fast-mode arrival, arrive_fast, from a
// ticket, or arrive_fast_routed on the ticket's route when it has one (the
// AM card's packets; at times with a headless word, so that what the entry
// carries goes compact), held by the sender's hold line, or by slot::users from card 2,
// which holds no lines; or a batch of up to four packets, arrive_batch, as
// the send terminus carries out its batched deposits), a packet through the owner's inbound FIFO
// (serve_packet), a read request (answered through the sender's FIFO), or
// the owner revoking, re-keying, re-arming a slot or changing a secondary
// range. The owner drains its notification queue after each step.
// Findings: a sanitizer report, or a guard byte around a slot's memory
// changed.
#include <unistd.h>

#include <memory>
#include <vector>

#include "fuzz_input.hpp"
#include "nic/hamlyn/hamlyn_card.hpp"

namespace hpam::fuzz {
namespace {

using namespace nic::hamlyn;

constexpr int slots = 5;  // normal, paranoid, one-shot, fast (card memory); normal (private)
// Inline delivery: the owner's entries are 512 bytes (as the AM card's by
// default); the fast slot carries fast-mode messages of up to 96 bytes (a
// 128-byte entry's room) in the notification entry, the private one up to
// all an entry holds (480).
constexpr uint32_t entry_bytes = nic::hamlyn::max_notification_entry_bytes;
constexpr uint32_t inline_limit[slots] = {0, 0, 0, nic::hamlyn::notification_inline_bytes,
                                          nic::hamlyn::notification_room(entry_bytes)};

struct world {
  std::unique_ptr<card> sender, owner, lineless;  // lineless: holds by slot::users
  uint32_t slot[slots] = {};
  uint64_t key[slots] = {};
  uint64_t area_offset = 0;  // the owner's card memory for slots 0-3, with guards
  static constexpr uint64_t area = 1024, guard = 256;
  guarded<1024> private_memory;  // slot 4
  uint64_t replies = 0;

  static card_config config(const std::string& job, int me) {
    card_config c;
    c.job = job;
    c.nprocs = 3;
    c.my_proc = me;
    c.direct_holds = me != 2;
    c.slot_count = 8;
    c.metadata_entries = 32;
    c.notify_capacity = 64;
    c.notify_entry_bytes = entry_bytes;
    c.packet_size = 512;
    c.rx_packets = 4;
    c.area_bytes = 1 << 16;
    c.cross_memory = false;
    return c;
  }

  world() {
    const std::string job = "fuzz-hamlyn-" + std::to_string(getpid());
    sender = std::make_unique<card>(config(job, 0));
    owner = std::make_unique<card>(config(job, 1));
    lineless = std::make_unique<card>(config(job, 2));
    sender->attach_all();
    owner->attach_all();
    lineless->attach_all();
    if (!is_ok(owner->slots().allocate_area(4 * (area + guard) + guard, area_offset))) violated();
    std::memset(owner->slots().area_address(area_offset), guarded<1>::pattern,
                4 * (area + guard) + guard);
    const slot_mode modes[4] = {slot_mode::normal, slot_mode::paranoid,
                                slot_mode::paranoid_one_shot, slot_mode::fast};
    for (int s = 0; s < slots; ++s) {
      slot_spec spec;
      spec.memory = s < 4 ? area_memory::card : area_memory::process;
      spec.base = s < 4 ? area_offset + guard + s * (area + guard)
                        : reinterpret_cast<uint64_t>(private_memory.data());
      spec.bound = area;
      spec.mode = s < 4 ? modes[s] : slot_mode::normal;
      spec.metadata_count = spec.mode == slot_mode::fast ? 0 : 4;
      spec.inline_limit = inline_limit[s];
      if (!is_ok(owner->slots().create_slot(spec, slot[s]))) violated();
      key[s] = owner->slots().slot_at(slot[s]).protection_key.load();
    }
    for (uint32_t e = 0; e < 4; ++e) {
      (void)owner->slots().set_paranoid(slot[1], e, 0x9A9A + e, 128, 768);
      (void)owner->slots().set_paranoid(slot[2], e, 0x05E5 + e, 0, area);
    }
    sender->receiver().set_handler(packet_kind::reply, &world::on_reply, this);
  }

  static bool on_reply(void* ctx, card&, const packet_header& h, const std::byte* payload) {
    volatile uint8_t sum = 0;  // touch every byte: ASan checks the range
    for (uint32_t i = 0; i < h.length; ++i) sum = sum + static_cast<uint8_t>(payload[i]);
    static_cast<world*>(ctx)->replies++;
    return true;
  }

  bool intact() {
    const std::byte* a = owner->slots().area_address(area_offset);
    for (int s = 0; s <= 4; ++s)
      for (uint64_t i = 0; i < guard; ++i)
        if (a[s * (area + guard) + i] != std::byte{guarded<1>::pattern}) return false;
    return private_memory.intact();
  }

  // A header from the input: mostly naming real slots, keys and entries.
  packet_header header_from(input& in, uint8_t choose) {
    packet_header h = in.take<packet_header>();
    h.destination = 1;
    const int s = in.take<uint8_t>() % slots;
    if (choose & 1) h.slot = slot[s];
    if (choose & 2)
      h.protection_key = s == 1   ? 0x9A9A + (h.metadata_index & 3)
                         : s == 2 ? 0x05E5 + (h.metadata_index & 3)
                                  : key[s];
    if (choose & 4) h.metadata_index = s == 3 ? fast_index : h.metadata_index & 3;
    if (choose & 8) h.offset %= area + 64;
    if (choose & 16) h.length %= 600;
    if (choose & 32) h.metadata_length %= 64;
    if (choose & 64) h.source = h.source & 1;
    // A headless fast-mode word (layout.hpp): a carried message goes compact.
    if ((choose & 0x30) == 0x30) h.fast_word = headless_word | (h.fast_word & 0xFFFF);
    return h;
  }

  // A batch of n packets (arrive_batch): each checked, the accepted ones
  // written together (card memory by copy, private memory by one
  // cross-memory call), the refused ones writing nothing.
  void batch(input& in, uint8_t choose, int n) {
    packet_header h[4];
    iovec d[4];
    status outcome[4];
    for (int i = 0; i < n; ++i) {
      h[i] = header_from(in, static_cast<uint8_t>(choose ^ (i * 37)));
      h[i].flags = (h[i].flags & 0xFF00) | static_cast<uint32_t>(packet_kind::data);
      if (choose & 128) h[i].flags |= flag_single;
      size_t got = 0;
      const uint8_t* bytes = in.rest(got, in.take<uint16_t>() % 200);
      if (h[i].length > got) h[i].length = static_cast<uint32_t>(got);
      d[i] = iovec{const_cast<uint8_t*>(bytes), (choose & 64) ? got : h[i].length};
    }
    (void)sender->receiver().arrive_batch(sender->view(1), h, d, static_cast<uint32_t>(n), outcome);
  }

  void step(input& in) {
    const uint8_t op = in.take<uint8_t>();
    const uint8_t choose = in.take<uint8_t>();
    switch (op % 5) {
      case 0: {  // direct arrival, as the sender's process does it
        if (op & 0x80) {
          batch(in, choose, 1 + (op >> 5) % 4);
          break;
        }
        packet_header h = header_from(in, choose);
        h.flags = (h.flags & 0xFF00) | static_cast<uint32_t>(packet_kind::data);
        size_t n = 0;
        const uint8_t* bytes = in.rest(n, 600);
        if (h.length > n) h.length = static_cast<uint32_t>(n);
        std::byte meta[user_metadata_bytes] = {};
        iovec d{const_cast<uint8_t*>(bytes), h.length};
        const bool local = h.slot == slot[4];  // private memory: only its owner writes it directly
        if (choose & 128) {  // the lean fast-mode arrival: the same checks must hold
          ticket t{};
          t.node = (h.delta & 0x100) ? 5 : 1;  // the card's view names 1; 5 is outside the job
          t.slot = h.slot;
          t.metadata_index = h.metadata_index;
          t.protection_key = h.protection_key;
          t.delta = h.delta;
          card& from = (op & 0x40) ? *lineless : *sender;  // by slot::users, or by a line
          fast_route r;
          if ((op & 0x20) && from.terminus().fast_route_for(t, r))  // as the AM card's packets
            (void)from.receiver().arrive_fast_routed(*r.view, *r.at, r.line, t, h.offset,
                                                     reinterpret_cast<const std::byte*>(bytes),
                                                     h.length, h.fast_word, r.local);
          else
            (void)from.receiver().arrive_fast(from.view(1), t, h.offset,
                                              reinterpret_cast<const std::byte*>(bytes), h.length,
                                              h.fast_word, local);
        } else {
          (void)sender->receiver().arrive(sender->view(1), h, &d, 1, meta, local);
        }
        break;
      }
      case 1:
      case 2: {  // through the inbound FIFO: data, read request, or any kind
        packet_header h = header_from(in, choose);
        if (op % 5 == 2) h.flags = encode_flags(packet_kind::read_request, false);
        size_t n = 0;
        const uint8_t* bytes = in.rest(n, in.take<uint16_t>() % (512 - sizeof(packet_header) + 1));
        iovec piece{const_cast<uint8_t*>(bytes), n};
        (void)sender->push_packet(1, h, &piece, 1);
        (void)owner->receiver().poll_inbound();
        (void)sender->receiver().poll_inbound();
        break;
      }
      case 3: {  // the owner changes a slot
        const int s = choose % slots;
        const uint8_t what = in.take<uint8_t>();
        if (what % 4 == 0) (void)owner->slots().revoke(slot[s]);
        if (what % 4 == 1) (void)owner->slots().rekey(slot[s], key[s]);
        if (what % 4 == 2) (void)owner->slots().rearm(slot[s], in.take<uint8_t>() % 5);
        if (what % 4 == 3)
          (void)owner->slots().set_paranoid(slot[s], in.take<uint8_t>() % 5, in.take<uint64_t>(),
                                            in.take<uint16_t>(), in.take<uint16_t>());
        break;
      }
      default: {  // the sender sends a real message by ticket (segmented, counted)
        const int s = choose % slots;
        const uint32_t index = s == 3 ? fast_index : in.take<uint8_t>() % 4;
        ticket t = owner->slots().make_ticket(slot[s], index, 0, area, true);
        t.delta = in.take<uint32_t>();
        size_t n = 0;
        const uint8_t* bytes = in.rest(n, s == 3 ? 400 : 1000);
        iovec v{const_cast<uint8_t*>(bytes), n};
        message m;
        m.gather = &v;
        m.gather_count = 1;
        m.offset = in.take<uint16_t>() % (area + 1);
        send_handle sh;
        (void)sender->terminus().send(t, m, sh);
        sender->terminus().kick();
        (void)owner->receiver().poll_inbound();
        break;
      }
    }
    notification note;
    std::byte carried[notification_room(entry_bytes)];
    for (int i = 0; i < 64 && owner->receiver().receive(0, note, carried); ++i) {
      if (!note.carried) continue;
      if (note.length > sizeof carried) violated();  // never more than the room
      volatile uint8_t sum = 0;  // touch every carried byte: ASan checks the range
      for (uint64_t k = 0; k < note.length; ++k) sum = sum + static_cast<uint8_t>(carried[k]);
    }
  }
};

}  // namespace
}  // namespace hpam::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hpam::fuzz::run<hpam::fuzz::world, 8>(data, size);
}
