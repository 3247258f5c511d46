// A bounded multi-producer, single-consumer FIFO of fixed-size cells in
// shared memory. Each cell is a lap-stamped sequence word, a 64-bit entry,
// and cell_bytes - 16 bytes beside them for data that travels inline. It is
// the Medusa card's RX_READY (nic/medusa/card_memory.hpp): the <block,
// source, length> entry and, when the packet fits, the packet itself, so a
// small packet reaches its receiver in the cache lines the receiver polls.
//
// Producers take positions in order from the shared enqueue counter, by
// compare-and-swap once the position's cell is free (a cell is free for
// position p when its sequence is p: Vyukov's bounded queue), fill the
// cell, and publish it by storing p + 1 (release). The one consumer keeps
// its cursor in its own memory: the cell for position c is ready when its
// sequence is c + 1. It gives the cell to the next lap by storing
// c + capacity once it is done with the cell's bytes; with claim(), cells
// may be given back in any order (a producer that finds its position's cell
// still held reports the FIFO full, it never skips a cell); claim_free()
// relies on the caller's rule that they are not.
//
// Nothing in the shared part is trusted for addressing: capacity and cell
// size come from the caller's own copy (its configuration, or a peer's
// header checked when it attached), so a scribbled counter or sequence can
// make a producer find the FIFO full, or the consumer see nothing, but
// never make either touch memory outside the FIFO.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "sys/prefetch.hpp"
#include "sys/ring.hpp"

namespace hpam::sys {

// The shared part ahead of the cells: the geometry as the owner made it
// (for peers to check, never to address by) and the producers' counter.
struct cell_fifo_header {
  uint64_t capacity;                          // cells: a power of two >= 2
  uint32_t cell_bytes;                        // bytes per cell: a power of two in [16, 4096]
  uint32_t reserved;                          // zero
  uint64_t pad0[6];                           // zero
  alignas(64) std::atomic<uint64_t> enqueue;  // next position a producer takes
  uint64_t pad1[7];                           // zero
};
static_assert(std::is_standard_layout_v<cell_fifo_header>);
static_assert(sizeof(cell_fifo_header) == 128);
static_assert(offsetof(cell_fifo_header, enqueue) == 64);

// The first 16 bytes of every cell.
struct cell_head {
  std::atomic<uint64_t> sequence;  // free for position p: p; published for p: p + 1
  uint64_t entry;                  // the producer's entry, valid once published
};
static_assert(std::is_standard_layout_v<cell_head> && sizeof(cell_head) == 16);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// One process's handle on a cell FIFO: where it is and the geometry it
// trusts. Cheap to copy; holds no shared state of its own (so its members
// are const, like a const pointer's: they change the FIFO, not the handle).
class cell_fifo {
 public:
  static constexpr uint32_t head_bytes = sizeof(cell_head);
  static constexpr uint32_t min_cell_bytes = head_bytes;
  static constexpr uint32_t max_cell_bytes = 4096;

  static constexpr bool valid_geometry(uint64_t capacity, uint32_t cell_bytes) {
    return ring_math::is_power_of_two(capacity) && capacity >= 2 &&
           ring_math::is_power_of_two(cell_bytes) && cell_bytes >= min_cell_bytes &&
           cell_bytes <= max_cell_bytes;
  }
  // Bytes of a FIFO of this geometry: the header, then the cells.
  static constexpr uint64_t bytes_for(uint64_t capacity, uint32_t cell_bytes) {
    return sizeof(cell_fifo_header) + capacity * cell_bytes;
  }

  cell_fifo() = default;
  // A FIFO at `at` (64-byte aligned) of the given geometry (valid_geometry).
  cell_fifo(std::byte* at, uint64_t capacity, uint32_t cell_bytes) noexcept
      : header_(reinterpret_cast<cell_fifo_header*>(at)),
        cells_(at + sizeof(cell_fifo_header)),
        mask_(capacity - 1),
        cell_bytes_(cell_bytes),
        cell_shift_(static_cast<uint32_t>(__builtin_ctz(cell_bytes))) {}

  // The owner lays the FIFO out in zeroed memory: every cell free for lap 0.
  void init() const noexcept {
    header_->capacity = capacity();
    header_->cell_bytes = cell_bytes_;
    for (uint64_t i = 0; i <= mask_; ++i) head(i).sequence.store(i, std::memory_order_relaxed);
    header_->enqueue.store(0, std::memory_order_relaxed);
  }

  uint64_t capacity() const noexcept { return mask_ + 1; }
  uint32_t cell_bytes() const noexcept { return cell_bytes_; }
  // Bytes a cell carries beside its entry.
  uint32_t inline_bytes() const noexcept { return cell_bytes_ - head_bytes; }
  const cell_fifo_header& header() const noexcept { return *header_; }

  // Producer: the cell for the next position, claimed, and the position; null
  // when that cell is still held (full). Fill its inline bytes, then publish.
  std::byte* claim(uint64_t& pos) const noexcept {
    pos = header_->enqueue.load(std::memory_order_relaxed);
    // Each retry follows another producer's success (or a scribbled
    // counter): bounded, so a scribbler cannot hold a producer here.
    for (uint64_t tries = 0; tries <= 4 * mask_ + 64; ++tries) {
      cell_head& c = head(pos);
      const uint64_t seq = c.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<int64_t>(seq - pos);
      if (diff == 0) {
        if (header_->enqueue.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed))
          return reinterpret_cast<std::byte*>(&c);
      } else if (diff < 0) {
        return nullptr;  // the cell of the previous lap is not given back yet
      } else {
        pos = header_->enqueue.load(std::memory_order_relaxed);
      }
    }
    return nullptr;
  }
  // Producer, when every cell stands for one of at most capacity() tokens
  // that only the consumer hands back, after it has given the cell back
  // (the Hamlyn AM card's inbound FIFO: a packet enters only with a buffer
  // from its RX_FREE, and the owner frees a cell before it pushes the
  // buffer back): the cell of the next position is then free without
  // looking, so the claim skips reading its sequence (a cache miss on the
  // producer's path). Medusa's RX_READY claims its cells checked (claim):
  // a packet carried in its cell takes no block that could stand for it.
  std::byte* claim_free(uint64_t& pos) const noexcept {
    pos = header_->enqueue.fetch_add(1, std::memory_order_relaxed);
    return reinterpret_cast<std::byte*>(&head(pos));
  }
  // Producer: the entry of a claimed cell, and the cell published. Its inline
  // bytes (written before) are visible to the consumer that sees the entry.
  // The cell of the next position is asked for, for ownership: the next
  // claim reads its sequence word and fills it, lines the consumer wrote
  // last (it frees each cell it takes); fetched now, they come while the
  // producer does other work (prefetch_cell).
  void publish(std::byte* cell, uint64_t pos, uint64_t entry) const noexcept {
    auto& c = *reinterpret_cast<cell_head*>(cell);
    c.entry = entry;
    c.sequence.store(pos + 1, std::memory_order_release);
    prefetch_cell<true>(pos + 1);
  }

  // Consumer: the cell of position pos once published (its entry copied once
  // into `entry`), else null. The cell stays the consumer's until release(pos).
  const std::byte* ready(uint64_t pos, uint64_t& entry) const noexcept {
    const cell_head& c = head(pos);
    if (c.sequence.load(std::memory_order_acquire) != pos + 1) return nullptr;
    entry = c.entry;
    return reinterpret_cast<const std::byte*>(&c);
  }
  // Consumer: done with the cell of position pos; free for the next lap.
  void release(uint64_t pos) const noexcept {
    head(pos).sequence.store(pos + capacity(), std::memory_order_release);
  }
  // Asks for the lines of position pos's cell (up to two) ahead of their
  // use (sys/prefetch.hpp): `Write` for ownership.
  template <bool Write>
  [[gnu::always_inline]] void prefetch_cell(uint64_t pos) const noexcept {
    prefetch_lines<Write>(&head(pos), cell_bytes_ > 64);
  }
  // Consumer, while it polls position pos: starts fetching the cell's second
  // cache line, so that when the cell is published the line arrives with
  // the sequence word's instead of after it (a small packet spans both).
  void prefetch_second_line(uint64_t pos) const noexcept {
    if (cell_bytes_ > 64)
      __builtin_prefetch(reinterpret_cast<const std::byte*>(&head(pos)) + 64, 0);
  }

 private:
  cell_head& head(uint64_t pos) const noexcept {
    return *reinterpret_cast<cell_head*>(cells_ + ((pos & mask_) << cell_shift_));
  }

  cell_fifo_header* header_ = nullptr;
  std::byte* cells_ = nullptr;
  uint64_t mask_ = 0;
  uint32_t cell_bytes_ = 0;
  uint32_t cell_shift_ = 0;
};

static_assert(cell_fifo::valid_geometry(2, 16) && cell_fifo::valid_geometry(1024, 128));
static_assert(!cell_fifo::valid_geometry(1, 128) && !cell_fifo::valid_geometry(8, 96) &&
              !cell_fifo::valid_geometry(8, 8) && !cell_fifo::valid_geometry(8, 8192));
static_assert(cell_fifo::bytes_for(4, 128) == 128 + 512);

}  // namespace hpam::sys
