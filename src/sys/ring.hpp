// Fixed-capacity FIFOs of 64-bit entries that live in shared memory: the
// Medusa card's four FIFOs are built from them (HPAM 5.1, Figure 2).
//
// Counters are monotonic 64-bit values; the slot is counter & mask (a queue
// that needs a lap flag derives it from the counter too: Hamlyn's
// notification queue keeps the whole counter in each entry's wrap flag). The
// index arithmetic is
// a set of pure functions (ring_math) tested from a table including
// wrap-around.
//
// spsc_fifo: one producer, one consumer (TX_READY, TX_FREE: both ends are the
//   owning process, the processor and the emulated card engine).
// mpmc_fifo: bounded multi-producer multi-consumer queue with a sequence word
//   per cell (RX_FREE: popped by every sender's card engine; RX_READY: pushed
//   by every sender's card engine). Lock-free; one CAS per operation.
//   Its capacity must be a power of two >= 2 (with a single cell a full
//   cell's sequence equals the next lap's position and push would overwrite).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace hpam::sys {

namespace ring_math {
constexpr bool is_power_of_two(uint64_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}
// Entries present between consumer counter `head` and producer counter `tail`.
constexpr uint64_t used(uint64_t head, uint64_t tail) {
  return tail - head;
}
// Free entries for the producer.
constexpr uint64_t room(uint64_t head, uint64_t tail, uint64_t capacity) {
  return capacity - used(head, tail);
}
constexpr bool has_data(uint64_t head, uint64_t tail) {
  return tail != head;
}
constexpr bool is_full(uint64_t head, uint64_t tail, uint64_t capacity) {
  return used(head, tail) >= capacity;
}
constexpr uint64_t slot(uint64_t counter, uint64_t capacity) {
  return counter & (capacity - 1);
}
}  // namespace ring_math

// Layout: header (two cache lines, one per writing side) then `capacity` cells.
class spsc_fifo {
 public:
  static constexpr size_t bytes_for(uint64_t capacity) {
    return sizeof(spsc_fifo) + capacity * sizeof(uint64_t);
  }
  // Initialise in place in zeroed shared memory; capacity must be a power of two.
  void init(uint64_t capacity) noexcept {
    capacity_ = capacity;
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    cached_head_ = 0;
    cached_tail_ = 0;
  }
  uint64_t capacity() const noexcept { return capacity_; }

  bool push(uint64_t entry) noexcept {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (ring_math::is_full(cached_head_, tail, capacity_)) {
      cached_head_ = head_.load(std::memory_order_acquire);
      if (ring_math::is_full(cached_head_, tail, capacity_)) return false;
    }
    cells()[ring_math::slot(tail, capacity_)] = entry;
    // Publish: the entry is visible before the consumer sees the new tail.
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  bool pop(uint64_t& entry) noexcept {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (!ring_math::has_data(head, cached_tail_)) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (!ring_math::has_data(head, cached_tail_)) return false;
    }
    entry = cells()[ring_math::slot(head, capacity_)];
    // Release the cell: the producer may overwrite it after seeing this.
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  uint64_t size() const noexcept {
    return ring_math::used(head_.load(std::memory_order_acquire),
                           tail_.load(std::memory_order_acquire));
  }
  // Nothing to pop (exact when producer and consumer are the same thread).
  bool empty() const noexcept {
    return !ring_math::has_data(head_.load(std::memory_order_relaxed),
                                tail_.load(std::memory_order_relaxed));
  }

 private:
  uint64_t* cells() noexcept { return reinterpret_cast<uint64_t*>(this + 1); }

  uint64_t capacity_;  // power of two, set at init
  uint64_t pad0_[7];
  alignas(64) std::atomic<uint64_t> tail_;  // written by the producer
  uint64_t cached_head_;                    // producer's copy of head_
  uint64_t pad1_[6];
  alignas(64) std::atomic<uint64_t> head_;  // written by the consumer
  uint64_t cached_tail_;                    // consumer's copy of tail_
  uint64_t pad2_[6];
};
static_assert(std::is_standard_layout_v<spsc_fifo>);
static_assert(sizeof(spsc_fifo) == 192);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

class mpmc_fifo {
 public:
  static constexpr size_t bytes_for(uint64_t capacity) {
    return sizeof(mpmc_fifo) + capacity * sizeof(cell);
  }
  void init(uint64_t capacity) noexcept {
    capacity_ = capacity;
    for (uint64_t i = 0; i < capacity; ++i) cells()[i].sequence.store(i, std::memory_order_relaxed);
    enqueue_.store(0, std::memory_order_relaxed);
    dequeue_.store(0, std::memory_order_relaxed);
  }
  uint64_t capacity() const noexcept { return capacity_; }

  bool push(uint64_t entry) noexcept {
    uint64_t pos = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      cell& c = cells()[ring_math::slot(pos, capacity_)];
      const uint64_t seq = c.sequence.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq - pos);
      if (diff == 0) {
        if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          c.value = entry;
          // Publish: the value is visible to the consumer that sees this sequence.
          c.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
  }

  // Push by the FIFO's only producer (the owner giving back a token it
  // lent: Medusa's RX_FREE blocks, Hamlyn's inbound buffers), with no
  // compare-and-swap. false while the cell is not free: the FIFO is full,
  // or the consumer that took this cell's position a lap ago has moved the
  // counter but not yet freed the cell (descheduled between its two steps).
  // Writing the cell then would let that consumer's late free hide the
  // entry for good (token_return keeps it instead).
  bool try_push_sole_producer(uint64_t entry) noexcept {
    const uint64_t pos = enqueue_.load(std::memory_order_relaxed);
    cell& c = cells()[ring_math::slot(pos, capacity_)];
    if (c.sequence.load(std::memory_order_acquire) != pos) return false;
    c.value = entry;
    // Publish: the value is visible to the consumer that sees this sequence.
    c.sequence.store(pos + 1, std::memory_order_release);
    enqueue_.store(pos + 1, std::memory_order_relaxed);
    return true;
  }

  // Starts fetching the cell the next pop will read (a sender calls it on a
  // destination's RX_FREE after taking a block: its next send then finds
  // the next free block's cell in cache).
  void prefetch_pop() const noexcept {
    const uint64_t pos = dequeue_.load(std::memory_order_relaxed);
    __builtin_prefetch(&cells()[ring_math::slot(pos, capacity_)], 0);
  }

  // Starts fetching, for writing, the cell the next push will use (the
  // owner calls it while it handles a packet whose block it will push back).
  void prefetch_push() const noexcept {
    const uint64_t pos = enqueue_.load(std::memory_order_relaxed);
    __builtin_prefetch(&cells()[ring_math::slot(pos, capacity_)], 1);
  }

  bool pop(uint64_t& entry) noexcept {
    uint64_t pos = dequeue_.load(std::memory_order_relaxed);
    for (;;) {
      cell& c = cells()[ring_math::slot(pos, capacity_)];
      const uint64_t seq = c.sequence.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq - (pos + 1));
      if (diff == 0) {
        if (dequeue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          entry = c.value;
          // Free the cell for the producer one lap ahead.
          c.sequence.store(pos + capacity_, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // empty
      } else {
        // Another consumer took pos; a cell ahead of an unmoved counter can
        // only come from a producer that broke the capacity rule: report
        // empty rather than spin.
        const uint64_t now = dequeue_.load(std::memory_order_relaxed);
        if (now == pos) return false;
        pos = now;
      }
    }
  }

  // A snapshot for statistics and tests; exact only when quiescent.
  uint64_t size() const noexcept {
    return ring_math::used(dequeue_.load(std::memory_order_acquire),
                           enqueue_.load(std::memory_order_acquire));
  }

 private:
  struct cell {
    std::atomic<uint64_t> sequence;  // lap-stamped state of the cell
    uint64_t value;                  // the entry
  };
  cell* cells() noexcept { return reinterpret_cast<cell*>(this + 1); }
  const cell* cells() const noexcept { return reinterpret_cast<const cell*>(this + 1); }

  uint64_t capacity_;  // power of two, set at init
  uint64_t pad0_[7];
  alignas(64) std::atomic<uint64_t> enqueue_;  // producers' counter
  uint64_t pad1_[7];
  alignas(64) std::atomic<uint64_t> dequeue_;  // consumers' counter
  uint64_t pad2_[7];
};
static_assert(std::is_standard_layout_v<mpmc_fifo>);
static_assert(sizeof(mpmc_fifo) == 192);

// The owner's side of an mpmc_fifo of tokens it lends to senders in other
// processes and takes back (try_push_sole_producer). A token whose cell is
// still taken waits here, in order with any given back after it, and goes
// at the next give_back or retry (the owner retries at every poll): none is
// lost, or the senders would find the FIFO dry for good once the last one
// went (a stalled card, seen as a peer that polls but never answers).
class token_return {
 public:
  // Room for every token the owner lends.
  void init(uint32_t tokens) {
    waiting_.assign(tokens, 0);
    head_ = count_ = 0;
  }
  // false: every token already waits (the entry is not one the owner
  // lent, or is one given back twice): dropped.
  bool give_back(mpmc_fifo& fifo, uint64_t entry) noexcept {
    if (__builtin_expect(count_ == 0 && fifo.try_push_sole_producer(entry), 1)) return true;
    return wait(fifo, entry);
  }
  void retry(mpmc_fifo& fifo) noexcept {
    if (__builtin_expect(count_ != 0, 0)) push_waiting(fifo);
  }
  uint32_t waiting() const noexcept { return count_; }

 private:
  [[gnu::cold, gnu::noinline]] bool wait(mpmc_fifo& fifo, uint64_t entry) noexcept {
    if (count_ == waiting_.size()) return false;
    waiting_[(head_ + count_) % waiting_.size()] = entry;
    ++count_;
    push_waiting(fifo);
    return true;
  }
  [[gnu::cold, gnu::noinline]] void push_waiting(mpmc_fifo& fifo) noexcept {
    while (count_ != 0 && fifo.try_push_sole_producer(waiting_[head_])) {
      head_ = (head_ + 1) % static_cast<uint32_t>(waiting_.size());
      --count_;
    }
  }

  std::vector<uint64_t> waiting_;  // a ring: count_ entries from head_, oldest first
  uint32_t head_ = 0;
  uint32_t count_ = 0;
};

}  // namespace hpam::sys
