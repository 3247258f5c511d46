// libFuzzer harness: deposit operations served by their owner
// (deposit::endpoint::serve_operation through the inbound FIFO), the read
// requests it answers, and the replies its requester takes (take_reply).
// Endpoint 1 owns private memory and card memory under tickets and two
// hybrid connections; endpoint 0 pushes operation, read-request and reply
// packets built from the input (often with the right slot, key and
// connection), and sometimes has real operations of its own outstanding or
// carries one out within the call into endpoint 1's card memory.
// Findings: a sanitizer report, or a guard byte around endpoint 1's memory
// changed.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "deposit/deposit.hpp"
#include "deposit/op_record.hpp"
#include "fuzz_input.hpp"

namespace hpam::fuzz {
namespace {

using nic::hamlyn::packet_header;
using nic::hamlyn::packet_kind;

struct world {
  std::unique_ptr<deposit::endpoint> e[2];
  guarded<1024> memory;              // endpoint 1's private memory
  void* card_memory = nullptr;       // endpoint 1's card memory (1024 bytes)
  std::vector<uint8_t> card_shadow;  // what was there before a refused operation
  deposit::ticket private_ticket{}, card_ticket{};
  deposit::connection_ticket conn[2];
  uint64_t fetched = 0;
  uint8_t out[256];

  world() {
    const std::string job = "fuzz-dep-" + std::to_string(getpid());
    for (int p = 0; p < 2; ++p) {
      deposit::setup s;
      s.job = job;
      s.nprocs = 2;
      s.my_proc = p;
      s.cross_memory = false;
      s.packet_size = 1024;
      s.card_memory = 1 << 16;
      s.max_operations = 64;
      e[p] = std::make_unique<deposit::endpoint>(s);
    }
    e[0]->attach_all();
    e[1]->attach_all();
    if (!is_ok(e[1]->register_memory(memory.data(), memory.size(), private_ticket))) violated();
    if (!is_ok(e[1]->allocate_memory(1024, card_memory, card_ticket))) violated();
    if (!is_ok(e[1]->open_connection(0, private_ticket, 0x0F, 0xF0, conn[0]))) violated();
    if (!is_ok(e[1]->open_connection(-1, card_ticket, 0xFF, 0x0F, conn[1]))) violated();
  }

  bool intact() const { return memory.intact(); }

  void progress() {
    for (int i = 0; i < 4; ++i) {
      e[1]->progress();
      e[0]->progress();
    }
    deposit::notification n;
    while (e[1]->next_notification(n)) {
    }
  }

  // A real operation of endpoint 0's own (no handle: its record is freed
  // when it finishes), so that forged replies can match it; or a put,
  // sometimes with a wrong key or a range wider than the slot: a lone one
  // meets the slot's checks within the call (endpoint::put_whole), which
  // refuse those, and a good one then travels as a packet (no cross-memory
  // attach in this world); a byte past endpoint 1's memory is a finding.
  void ask(uint8_t how, input& in) {
    if (how >= 224) {
      const uint8_t sel = in.take<uint8_t>();
      const uint64_t operand = in.take<uint64_t>();
      within_the_call(how, sel, operand, in.take<uint64_t>());
    } else if (how % 4 == 3) {
      deposit::ticket t = private_ticket;
      if (how & 16) t.range += 4096;
      if (how & 32) t.protection_key ^= 1;
      (void)e[0]->put(out, how % 64 + 1, t, (how & 8) ? 1000 : (how % 16) * 56, nullptr);
    } else if (how % 3 == 0)
      (void)e[0]->atomic(deposit::atomic_op::add, deposit::atomic_width::w64, private_ticket,
                         (how % 16) * 8, 1, 0, &fetched, nullptr);
    else if (how % 3 == 1)
      (void)e[0]->get(out, how % sizeof out, private_ticket, how % 512, nullptr);
    else {
      deposit::hybrid_op op{};
      op.code = deposit::hybrid_code::read_register;
      op.reg_i = how % 8;
      op.reg_j = deposit::use_operand;
      op.cond_reg = deposit::use_operand;
      (void)e[0]->hybrid(conn[0], op, nullptr, 0, nullptr, 0, &fetched, nullptr);
    }
  }

  // A put, get or atomic carried out within the call into endpoint 1's
  // card memory (put_now, get_now, atomic_now: the receiving interface
  // keeps the slot it checked, receiving_interface::direct_window), now
  // and then with a wrong key, a range wider than the slot's, another
  // slot's index or an offset near its end (beyond it for 24 or 8 bytes):
  // a refused one changes no byte. An atomic (any of the six, 32 or 64
  // bits, `sel`; at times misaligned) that was carried out changed its word
  // alone, as a CPU atomic would, and fetched the old value.
  void within_the_call(uint8_t how, uint8_t sel, uint64_t operand, uint64_t compare) {
    deposit::ticket t = card_ticket;
    if (how & 1) t.protection_key ^= 1;
    if (how & 2) t.range += 4096;
    if (how & 4) t.slot ^= 1;
    const auto* area = static_cast<const uint8_t*>(card_memory);
    card_shadow.assign(area, area + 1024);
    const bool atomic = !(how & 16) && !(how & 2);
    const uint64_t width = (sel & 8) ? 4 : 8;
    const uint64_t misaligned = atomic && (sel & 16) ? (sel & 32 ? 2 : 4) : 0;
    const uint64_t offset = ((how & 8) ? 1020 : (how % 4) * 64) + misaligned;
    status st;
    uint64_t old = 0;
    const auto op = static_cast<deposit::atomic_op>(sel % 6);
    if (how & 16) {
      st = e[0]->put_now(out, 24, t, offset);
    } else if (how & 2) {
      st = e[0]->get_now(out, 24, t, offset);
    } else {
      std::memcpy(&old, card_shadow.data() + std::min<uint64_t>(offset, 1024 - width), width);
      if (sel & 64) compare = old;  // a compare-and-swap that swaps
      st =
          e[0]->atomic_now(op, width == 4 ? deposit::atomic_width::w32 : deposit::atomic_width::w64,
                           t, offset, operand, compare, &fetched);
    }
    // A wrong key, another slot, or 24 (8) bytes at 1020 of a 1024-byte slot
    // must be refused, and so must an atomic on a word not aligned to its
    // width (4 bytes at 1020, or at 4 past an aligned offset, is inside
    // and aligned for a 32-bit one).
    const bool beyond = offset + (atomic ? width : 24) > 1024;
    const bool unaligned = atomic && offset % width != 0;
    if (!is_ok(st)) {
      if (std::memcmp(card_shadow.data(), area, 1024) != 0) violated();
      return;
    }
    if ((how & 5) || beyond || unaligned) violated();
    if (!atomic) return;
    const uint64_t mask = width == 4 ? 0xFFFFFFFFull : ~0ull;
    uint64_t now = 0;
    std::memcpy(&now, area + offset, width);
    if (fetched != old) violated();
    if (now != expected(op, old, operand & mask, compare & mask, mask)) violated();
    std::memcpy(card_shadow.data() + offset, area + offset, width);  // the rest as it was
    if (std::memcmp(card_shadow.data(), area, 1024) != 0) violated();
  }

  // The word after op, as a CPU atomic leaves it.
  static uint64_t expected(deposit::atomic_op op, uint64_t old, uint64_t v, uint64_t cmp,
                           uint64_t mask) {
    switch (op) {
      case deposit::atomic_op::add:
        return (old + v) & mask;
      case deposit::atomic_op::bit_and:
        return old & v;
      case deposit::atomic_op::bit_or:
        return old | v;
      case deposit::atomic_op::bit_xor:
        return old ^ v;
      case deposit::atomic_op::swap:
        return v;
      case deposit::atomic_op::compare_swap:
        return old == cmp ? v : old;
    }
    return old;
  }

  void step(input& in) {
    const uint8_t flags = in.take<uint8_t>();
    if (flags & 128) ask(in.take<uint8_t>(), in);
    packet_header h = in.take<packet_header>();
    h.destination = (flags & 64) ? 0 : 1;
    const uint8_t pick = in.take<uint8_t>();
    const deposit::ticket& t = pick & 1 ? card_ticket : private_ticket;
    const deposit::connection_ticket& c = conn[(pick >> 1) & 1];
    if (flags & 1) h.slot = t.slot;
    if (flags & 2) h.protection_key = (flags & 4) ? c.connection_key : t.protection_key;
    if (flags & 8) h.metadata_index = (flags & 4) ? c.connection : deposit::no_connection;
    if (flags & 16) h.source = h.destination ^ 1;
    if (flags & 32) {
      h.metadata_length = sizeof(deposit::hybrid_op);
      h.flags = nic::hamlyn::encode_flags(packet_kind::operation, false);
    }
    size_t n = 0;
    const uint8_t* bytes = in.rest(n, in.take<uint16_t>() % (1024 - sizeof(packet_header) + 1));
    iovec piece{const_cast<uint8_t*>(bytes), n};
    const int to = static_cast<int>(h.destination);
    (void)e[to ^ 1]->card().push_packet(to, h, &piece, 1);
    progress();
  }
};

}  // namespace
}  // namespace hpam::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hpam::fuzz::run<hpam::fuzz::world, 6>(data, size);
}
