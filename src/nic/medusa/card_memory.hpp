// The layout of one emulated Medusa card's memory (HPAM 5.1, Figure 2) in a
// shared segment: a card_header, the four FIFOs of <block, length> entries
// (TX_READY, TX_FREE, RX_FREE, RX_READY), then the VRAM, an array of
// fixed-size blocks each holding one packet.
//
//   VRAM blocks [0, tx_blocks)                     outbound, processor-owned
//   VRAM blocks [tx_blocks, tx_blocks + rx_blocks) inbound, start on RX_FREE
//
// RX_READY's cells are wider than its entries (card_header::rx_ready_cell,
// default 128 bytes): the card writes a packet that fits beside the entry
// into the cell itself, so the processor finds a small packet in the cache
// lines it polls (one line transfer per small message, not entry then
// block). Such a packet takes no block: its entry's block field is
// entry_in_cell, and the cell is its receive buffer, claimed checked (the
// cell's lap stamp says whether the processor has given it back). A longer
// packet claims its cell first, then pops a block from RX_FREE; when
// RX_FREE is empty (or hands out a block that is not an inbound one) the
// cell still has to be published, and carries a void entry (block field
// entry_in_cell, length 0) that the processor releases as a refused packet.
// So RX_READY's capacity bounds the packets in flight to a card, and
// rx_blocks the ones of them in blocks; either running out drops the packet
// (card_header::overflow_drops).
//
// Delivered by reference (card_setup::deliver_by_reference, a wire that
// cannot touch packets): a longer packet sent the first time stays in the
// sender's outbound block, and its entry names that block (a block number
// below the sender's tx_blocks, the entry's source saying whose): the
// processor reads the packet there, as it would have read the copy the
// card's DMA made, and gives back only the cell. No RX_FREE block is used.
//
// Everything in it is offsets and block numbers, never pointers, so every
// process can map it at its own address.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "sys/align.hpp"
#include "sys/cell_fifo.hpp"
#include "sys/ring.hpp"

namespace hpam::nic::medusa {

constexpr uint64_t card_magic = 0x4153554445444d48ull;  // "HMDEDUSA"
constexpr uint32_t card_version = 7;    // 2: RX_READY entries carry the source; 3: RX_READY cells
                                        // carry small packets inline; 4: the VRAM starts on a page;
                                        // 5: a packet in its cell takes no block (entry_in_cell);
                                        // 6: an entry may name the sender's outbound block;
                                        // 7: a packet in its cell may leave out its wire header
                                        // (entry_headless)
constexpr uint32_t card_flag_crc = 1u;  // packets carry a CRC32C (both ends must agree)

// Block sizes accepted at setup (power of two).
constexpr uint32_t min_block_size = 64;
constexpr uint32_t max_block_size = 1u << 20;
// RX_READY cell sizes accepted at setup (power of two; 16: the entry alone,
// every packet in its block, as on the real card).
constexpr uint32_t min_rx_ready_cell = sys::cell_fifo::min_cell_bytes;
constexpr uint32_t max_rx_ready_cell = sys::cell_fifo::max_cell_bytes;
// Blocks per card, both kinds together (bounds the segment size).
constexpr uint64_t max_blocks = 1u << 20;
static_assert(max_blocks <= (1u << 24) && max_block_size < (1u << 24));  // fit the entry fields

// ---- FIFO entries: <block, source, length> in one 64-bit word ----------
// block number (24 bits) | source process (16 bits) | length (24 bits).
// Blocks (< max_blocks) and lengths (<= max_block_size) fit with room to
// spare. TX entries and RX_FREE entries carry source 0; an RX_READY entry
// carries the process whose card engine delivered the packet, stamped by
// that engine: the receiver takes the packet's source from it, never from
// the packet.

constexpr uint32_t entry_field_mask = 0xFFFFFFu;  // block and length fields
constexpr uint32_t entry_source_mask = 0xFFFFu;

constexpr uint64_t encode_entry(uint32_t block, uint32_t length, uint32_t source = 0) noexcept {
  return (static_cast<uint64_t>(block & entry_field_mask) << 40) |
         (static_cast<uint64_t>(source & entry_source_mask) << 24) | (length & entry_field_mask);
}
constexpr uint32_t entry_block(uint64_t entry) noexcept {
  return static_cast<uint32_t>(entry >> 40) & entry_field_mask;
}
constexpr uint32_t entry_source(uint64_t entry) noexcept {
  return static_cast<uint32_t>(entry >> 24) & entry_source_mask;
}
constexpr uint32_t entry_length(uint64_t entry) noexcept {
  return static_cast<uint32_t>(entry) & entry_field_mask;
}

// The block field of an RX_READY entry whose packet lies in its cell (no
// block: never a block number, max_blocks being smaller), and the void
// entry's: a cell published with no packet (length 0), the packet dropped
// because RX_FREE had no block for it (counted by the sender).
constexpr uint32_t entry_in_cell = entry_field_mask;
static_assert(max_blocks <= entry_in_cell);
constexpr bool is_void_entry(uint64_t entry) noexcept {
  return entry_block(entry) == entry_in_cell && entry_length(entry) == 0;
}
static_assert(is_void_entry(encode_entry(entry_in_cell, 0, 3)));

// The block field of an RX_READY entry whose packet lies in its cell
// without its wire header (card_setup::headless_cells, a wire that can
// neither corrupt nor hold a packet): the packet's bytes from
// wire_header_size on lie at the same place in the cell as in the full
// form, and the cell's head (sequence and entry, 16 bytes, the size of a
// wire header) stands where the wire header was. The entry gives what the
// wire header would: the length (counting the header left out) and the
// source; the destination is the FIFO's owner. An 8-byte MPI message
// without a riding ack, a zero-byte one with it, and a 4-word active
// message (64 bytes with their wire header) then fill exactly the cell's
// first cache line.
constexpr uint32_t entry_headless = entry_field_mask - 1;
static_assert(max_blocks < entry_headless);
static_assert(!is_void_entry(encode_entry(entry_in_cell, 72, 3)) &&
              !is_void_entry(encode_entry(0, 0, 3)));

static_assert(entry_block(encode_entry(0xfffffeu, 8192, 7)) == 0xfffffeu);
static_assert(entry_length(encode_entry(0xfffffeu, 8192, 7)) == 8192);
static_assert(entry_source(encode_entry(0xfffffeu, 8192, 65534)) == 65534);
static_assert(entry_block(encode_entry(0xffffffffu, 0, 0)) ==
              entry_field_mask);  // forged: out of range

// The lengths [lo, hi] an entry may give, checked with one compare (an
// empty range, hi < lo, holds none).
struct length_range {
  uint32_t lo;
  uint32_t count;  // hi - lo + 1, or 0
  constexpr bool holds(uint32_t length) const noexcept { return length - lo < count; }
};
constexpr length_range lengths_between(uint32_t lo, uint32_t hi) noexcept {
  return {lo, hi >= lo ? hi - lo + 1 : 0};
}
static_assert(lengths_between(16, 112).holds(16) && lengths_between(16, 112).holds(112) &&
              !lengths_between(16, 112).holds(15) && !lengths_between(16, 112).holds(113) &&
              !lengths_between(16, 112).holds(0));
static_assert(!lengths_between(16, 0).holds(16) && !lengths_between(16, 0).holds(0) &&
              !lengths_between(113, 64).holds(64));

// ---- The card header: first bytes of the card memory -------------------

struct card_header {
  uint64_t magic;             // card_magic once the card is initialised
  uint32_t version;           // card_version of the creator's layout
  uint32_t header_size;       // sizeof(card_header)
  uint64_t size;              // bytes from this header to the end of the VRAM
  uint32_t block_size;        // bytes per VRAM block (largest packet)
  uint32_t tx_blocks;         // outbound blocks, numbered [0, tx_blocks)
  uint32_t rx_blocks;         // inbound blocks, numbered [tx_blocks, tx_blocks + rx_blocks)
  uint32_t tx_fifo_capacity;  // entries in TX_READY and TX_FREE (power of two >= tx_blocks, >= 2)
  uint32_t rx_fifo_capacity;  // entries in RX_FREE and RX_READY (power of two >= rx_blocks, >= 2)
  int32_t owner_proc;         // the process whose card this is
  int32_t nprocs;             // processes in the job
  uint32_t flags;             // card_flag_*
  uint64_t tx_ready_offset;   // spsc_fifo TX_READY, bytes from this header
  uint64_t tx_free_offset;    // spsc_fifo TX_FREE
  uint64_t rx_free_offset;    // mpmc_fifo RX_FREE
  uint64_t rx_ready_offset;   // cell_fifo RX_READY
  uint64_t vram_offset;       // block 0 of the VRAM (page-aligned)
  // Written by the owner each time it polls (peers read it only when it has
  // been silent for their give-up time: is it polling, or busy elsewhere?).
  std::atomic<uint64_t> heartbeat;
  // Written by other processes' card engines (senders), on its own line.
  alignas(64) std::atomic<uint64_t> overflow_drops;  // packets dropped here: no free RX_READY
                                                     // cell, or no block on RX_FREE for one
                                                     // that needs a block (a void entry)
  std::atomic<uint64_t> bad_rx_free;                 // RX_FREE entries senders found out of range
  std::atomic<uint64_t> processor_done;              // owner finished (finalize): 1, else 0
  uint64_t job_key;                                  // the job key the owner publishes (0: none)
  uint32_t rx_ready_cell;  // bytes per RX_READY cell (entry + inline packet)
  uint32_t reserved32;     // zero
  uint64_t reserved[3];    // zero
};
static_assert(std::is_standard_layout_v<card_header>);
static_assert(sizeof(card_header) == 192);
static_assert(offsetof(card_header, block_size) == 24);
static_assert(offsetof(card_header, tx_ready_offset) == 56);
static_assert(offsetof(card_header, vram_offset) == 88);
static_assert(offsetof(card_header, heartbeat) == 96);
static_assert(offsetof(card_header, overflow_drops) == 128);
static_assert(offsetof(card_header, job_key) == 152);
static_assert(offsetof(card_header, rx_ready_cell) == 160);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// ---- Where each region lives, computed from the counts ------------------

struct card_layout {
  uint64_t tx_fifo_capacity;
  uint64_t rx_fifo_capacity;
  uint64_t tx_ready_offset;
  uint64_t tx_free_offset;
  uint64_t rx_free_offset;
  uint64_t rx_ready_offset;
  uint64_t vram_offset;
  uint64_t size;  // total bytes of card memory
};

// Power of two >= blocks, and >= 2 (mpmc_fifo needs two cells at least).
constexpr uint64_t fifo_capacity_for(uint64_t blocks) noexcept {
  uint64_t c = 2;
  while (c < blocks) c <<= 1;
  return c;
}

constexpr card_layout compute_layout(uint32_t block_size, uint32_t tx_blocks, uint32_t rx_blocks,
                                     uint32_t rx_ready_cell) noexcept {
  card_layout l{};
  l.tx_fifo_capacity = fifo_capacity_for(tx_blocks);
  l.rx_fifo_capacity = fifo_capacity_for(rx_blocks);
  l.tx_ready_offset = sys::align_up(sizeof(card_header), 64);
  l.tx_free_offset =
      sys::align_up(l.tx_ready_offset + sys::spsc_fifo::bytes_for(l.tx_fifo_capacity), 64);
  l.rx_free_offset =
      sys::align_up(l.tx_free_offset + sys::spsc_fifo::bytes_for(l.tx_fifo_capacity), 64);
  l.rx_ready_offset =
      sys::align_up(l.rx_free_offset + sys::mpmc_fifo::bytes_for(l.rx_fifo_capacity), 64);
  // Blocks start on a page. Their offset within a page would otherwise move
  // with D and the cell size, and copies between a block and a user buffer
  // run slower at some offsets than at others: 4 KiB MPI messages at D = 32
  // (the default from 8 ranks) took 2.5 us one way, 1.16 us page-aligned.
  l.vram_offset = sys::align_up(
      l.rx_ready_offset + sys::cell_fifo::bytes_for(l.rx_fifo_capacity, rx_ready_cell), 4096);
  l.size = l.vram_offset + (static_cast<uint64_t>(tx_blocks) + rx_blocks) * block_size;
  return l;
}

static_assert(compute_layout(8192, 4, 4, max_rx_ready_cell).vram_offset % 4096 == 0);
static_assert(compute_layout(8192, 3, 5, min_rx_ready_cell).rx_fifo_capacity == 8);
static_assert(compute_layout(8192, 0, 0, min_rx_ready_cell).tx_fifo_capacity == 2);
static_assert(compute_layout(8192, 1, 1, min_rx_ready_cell).rx_fifo_capacity == 2);
static_assert(compute_layout(64, 1, 1, min_rx_ready_cell).size ==
              compute_layout(64, 1, 1, min_rx_ready_cell).vram_offset + 128);

}  // namespace hpam::nic::medusa
