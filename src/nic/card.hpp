// The card interface: the only view the protocol (src/am) has of a NIC.
// A card type C provides:
//
//   explicit     C::C(const card_setup&);           // creates my card (throws on setup error)
//   void         C::attach_peer(int proc);          // maps proc's card (waits up to
//                                                   // attach_timeout_ms; throws on timeout)
//   int          C::my_proc() const; int C::nprocs() const;
//   uint32_t     C::block_size() const;            // bytes per VRAM block (max packet)
//   std::byte*   C::tx_block(uint32_t b);           // one of my outbound blocks
//   bool         C::claim_tx_block(uint32_t& b);    // setup: take a block from TX_FREE for
//                                                   // a descriptor to own for the run
//   void         C::launch(int dest, uint32_t b, uint32_t len);
//                                                   // push <b,len> on TX_READY; the card
//                                                   // sends it (wire header added by card)
//   void         C::launch_built(int dest, uint32_t b, std::byte* pkt, uint32_t len);
//                                                   // launch without the card's checks of
//                                                   // its arguments: the caller vouches for
//                                                   // b (its own), pkt = tx_block(b), len
//                                                   // (a header to a block) and dest (< nprocs)
//   void         C::relaunch(int dest, uint32_t b, uint32_t len);
//                                                   // a copy sent again (retransmission,
//                                                   // reflected reply): sent now or dropped,
//                                                   // never held back for room at dest
//   bool         C::receive(rx_packet& p);          // pop RX_READY (CRC verified here)
//   bool         C::arrival_pending();              // receive() has something to do (cheap;
//                                                   // may answer true when it cannot tell)
//   void         C::release(const rx_packet& p);    // push the block back on RX_FREE
//   void         C::service();                      // my processor polls: the heartbeat
//                                                   // moves, then send_due()
//   void         C::send_due();                     // card housekeeping without a poll: TX_FREE
//                                                   // status, delayed/reordered packets on the
//                                                   // wire whose time has come
//   uint64_t     C::published_key(int proc);        // the job key proc's card publishes in its
//                                                   // setup region (attaches proc first); 0: none
//   void         C::announce_done();                // finalize: my processor has finished
//   bool         C::peer_done(int proc) const;      // proc announced it has finished
//   bool         C::peer_alive(int proc) const;     // proc's process still exists
//   sys::process_state C::peer_process(int proc) const; // running / stopped / gone (kernel's
//                                                   // view; system calls: cold path only)
//   uint32_t     C::peer_heartbeat(int proc) const; // advances each time proc polls (mod 2^32)
//                                                   // (its service()); read, never trusted
//                                                   // beyond "has it moved"
//
// The packet's first wire_header_size bytes belong to the card: the protocol
// builds its header and payload after them. The backend is a template
// parameter of the protocol: no per-packet virtual call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "nic/hamlyn/layout.hpp"
#include "sys/clock.hpp"
#include "sys/crc32c.hpp"

namespace hpam::nic {

// How long attaching a peer's card waits for it to appear, by default: the
// one default of every card (card_setup, hamlyn::card_config) and of the
// deposit layer (deposit::setup).
constexpr uint64_t default_attach_timeout_ms = 60'000;

// The card's header at the start of every packet (the FDDI header + trailer
// of the real Medusa, reduced to what the emulation needs).
struct wire_header {
  uint32_t crc;     // CRC32C of bytes [offsetof(length), length) of the packet; 0 when CRC is off
  uint32_t length;  // packet bytes including this header
  uint16_t src;     // sending process (card address)
  uint16_t dst;     // destination process
  uint32_t pad;     // zero
};
static_assert(std::is_standard_layout_v<wire_header> && std::is_trivially_copyable_v<wire_header>);
static_assert(sizeof(wire_header) == 16);
constexpr uint32_t wire_header_size = sizeof(wire_header);

// The header's length, src and dst fields, contiguous, as one 64-bit word
// (little-endian): a receiver checks all three with one compare.
static_assert(offsetof(wire_header, src) == offsetof(wire_header, length) + 4 &&
              offsetof(wire_header, dst) == offsetof(wire_header, src) + 2);
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
constexpr uint64_t wire_address(uint32_t length, uint32_t src, uint32_t dst) {
  return uint64_t{length} | (uint64_t{src & 0xFFFFu} << 32) | (uint64_t{dst & 0xFFFFu} << 48);
}
inline uint64_t read_wire_address(const std::byte* packet) {
  uint64_t w;
  std::memcpy(&w, packet + offsetof(wire_header, length), sizeof w);
  return w;
}

// The wire CRC: CRC32C of the packet from the length field on (the CRC
// field itself is not covered).
inline uint32_t wire_crc(const std::byte* packet, uint32_t length) {
  constexpr uint32_t from = offsetof(wire_header, length);
  return sys::crc32c_short(packet + from, length - from);
}

// Writes the wire header of a packet of `length` bytes from src to dst at
// the start of `packet`, with its CRC (or 0 when the CRC is off).
inline void stamp_wire_header(std::byte* packet, uint32_t length, int src, int dst, bool crc) {
  const wire_header h{0, length, static_cast<uint16_t>(src), static_cast<uint16_t>(dst), 0};
  std::memcpy(packet, &h, sizeof h);
  if (!crc) return;
  const uint32_t sum = wire_crc(packet, length);
  std::memcpy(packet + offsetof(wire_header, crc), &sum, sizeof sum);
}

// A received packet as the processor sees it after popping RX_READY. The
// card fills every field from what it knows itself, never from the packet:
// src is the process whose card delivered it (Medusa: stamped by the
// sending card engine in the RX_READY entry; Hamlyn: the sender region it
// was deposited in), and the card has checked that the packet's wire header
// agrees with it (length, src, dst). Only then is crc_ok true, and then
// length lies in [wire_header_size, block_size()] and src is a process of
// the job (below nprocs()): the protocol does not check these again. A
// card whose every path also excludes src == my_proc() (however an entry
// was forged) says so with `static constexpr bool may_deliver_mine =
// false` (true otherwise), and the protocol skips that test too.
struct rx_packet {
  uint64_t position;      // the card's own mark for release (Medusa: the RX_READY position)
  uint32_t block;         // VRAM block number in my card
  uint32_t length;        // packet bytes including the wire header
  const std::byte* data;  // start of the packet: its wire header, or where the wire header
                          // would be when the card left it out (Medusa's headless cells:
                          // the layers above never read those wire_header_size bytes)
  bool crc_ok;            // true: deliverable. false: do not process, only release
  bool rejected;          // the card refused the entry or header (counted in its
                          // malformed(), not as a CRC failure); crc_ok is false
  uint16_t src;           // the sending process, as the card knows it
};

// Probabilities are per packet, in [0, 1]; the generator is seeded so a run
// can be repeated exactly.
struct fault_config {
  double drop = 0;
  double duplicate = 0;
  double corrupt = 0;
  double reorder = 0;  // hold this packet back until after the next one
  double delay = 0;    // hold this packet for delay_ns
  uint64_t delay_ns = 100'000;
  uint64_t seed = 1;
  bool any() const { return drop > 0 || duplicate > 0 || corrupt > 0 || reorder > 0 || delay > 0; }
};

// What every card is built from. The protocol computes tx_blocks (its
// outbound descriptors need 2*(P-1)*D blocks) and rx_blocks (worst case
// 2*(P-1)*D, plus two a peer by default: am/config.hpp default_rx_blocks).
struct card_setup {
  std::string job;               // job id, same in every process
  int nprocs = 1;                // processes in the job
  int my_proc = 0;               // this process
  uint32_t block_size = 8192;    // bytes per block = largest packet (power of two)
  uint32_t tx_blocks = 0;        // outbound blocks (processor-owned, via TX_FREE)
  uint32_t rx_blocks = 0;        // inbound blocks (card-owned, via RX_FREE)
  bool crc = true;               // compute and verify CRC32C per packet
  bool direct_tx = true;         // Medusa: an idle engine sends a launched block at once,
                                 // without the TX_READY/TX_FREE round trip
  uint32_t rx_ready_cell = 512;  // Medusa: bytes per RX_READY cell; a packet of up to
                                 // rx_ready_cell - 16 bytes travels in it (16: none does),
                                 // headless up to rx_ready_cell; 512: an MPI message of
                                 // up to 440 bytes with its riding ack (decisions.md)
  // Medusa: a packet longer than a cell, on a wire that cannot touch it,
  // is delivered by reference: the destination reads it in the sender's
  // outbound block (the card's DMA, done at no cost to the sending host)
  // instead of a copy in one of its inbound blocks. Only for a sender that
  // rewrites a launched block after its destination has taken the packet
  // (the AM protocol: a block is written again only once its packet was
  // answered) and sends every further copy of a packet with relaunch.
  // Hamlyn: the same, for a packet longer than by_reference_above bytes on
  // a wire without faults or CRC (hamlyn_am_card.hpp): the destination
  // reads it in the sender's outbound block, in the sender's card memory.
  bool deliver_by_reference = false;
  uint32_t by_reference_above = 4096;  // Hamlyn: bytes (at least wire_header_size)
  // Medusa: a packet carried in its RX_READY cell, on a wire without
  // faults or CRC, leaves its wire header out of the cell
  // (medusa::entry_headless): 16 bytes fewer to move, and a 64-byte packet
  // (a 4-word message, an 8-byte MPI message without a riding ack) in one
  // cache line with the cell's head instead of two. Only for a receiver
  // that never reads a packet's wire header (the AM protocol: the entry
  // names source and length); set by the AM endpoint. Hamlyn: the AM
  // card's packets leave their wire header unwritten and unread (the
  // notification names source and length), under the same conditions
  // (hamlyn_am_card.hpp).
  bool headless_cells = false;
  // Hamlyn: a packet of up to this many bytes travels in its notification
  // entry instead of its block (inline delivery; at most the default, what
  // a 512-byte entry holds; 0: every packet in its block). The card's
  // entries are the shortest power of two from 128 bytes that holds it
  // (hamlyn::notification_entry_bytes_for): 128 up to 96 bytes, 512 for
  // the default, which carries an MPI message of up to 440 bytes with its
  // riding ack.
  uint32_t notify_inline = hamlyn::max_notification_inline_bytes;
  fault_config faults;  // the wire's fault model for packets this card sends
  uint64_t attach_timeout_ms = default_attach_timeout_ms;  // how long attach_peer waits for a
                                                           // peer's card
  uint64_t job_key = 0;               // published in my card's setup region for the job's other
                                      // processes to read (0: none; only a generated key is)
  const sys::clock* clock = nullptr;  // time source for delay faults; null = real clock
};

// Counts of what the wire did to packets this card sent (sender side) and
// what the card dropped on arrival (receiver side).
struct wire_counters {
  uint64_t sent = 0;
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t reordered = 0;
  uint64_t delayed = 0;
};

}  // namespace hpam::nic
