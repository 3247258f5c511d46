// The shared-memory FIFOs: ring_math from a table including 64-bit wrap
// boundaries, spsc/mpmc fill-empty-wrap over many laps, and a multi-process
// mpmc stress where every value must be delivered exactly once.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sys/clock.hpp"
#include "sys/ring.hpp"
#include "sys/shared_segment.hpp"

namespace hpam::sys {
namespace {

namespace rm = ring_math;
constexpr uint64_t top = ~uint64_t{0};  // 2^64 - 1

struct math_row {
  uint64_t head, tail, capacity;
  uint64_t used, room;
  bool has_data, full;
  uint64_t tail_slot;
};

const math_row math_table[] = {
    // head      tail        cap  used room data   full   slot
    {0, 0, 8, 0, 8, false, false, 0},
    {0, 1, 8, 1, 7, true, false, 1},
    {0, 7, 8, 7, 1, true, false, 7},
    {0, 8, 8, 8, 0, true, true, 0},  // full; tail on its second lap
    {5, 13, 8, 8, 0, true, true, 5},
    {8, 8, 8, 0, 8, false, false, 0},
    {15, 16, 8, 1, 7, true, false, 0},  // third lap
    {1, 1, 1, 0, 1, false, false, 0},   // capacity 1
    {1, 2, 1, 1, 0, true, true, 0},
    {top, top, 8, 0, 8, false, false, 7},  // counters at 2^64 - 1
    {top - 3, top, 8, 3, 5, true, false, 7},
    {top, 0, 8, 1, 7, true, false, 0},  // tail wrapped past 2^64
    {top - 1, 2, 8, 4, 4, true, false, 2},
    {top - 5, 2, 8, 8, 0, true, true, 2},  // full across the 2^64 boundary
    {top - 1023, 0, 1024, 1024, 0, true, true, 0},
    {uint64_t{1} << 63, (uint64_t{1} << 63) + 4, 4, 4, 0, true, true, 0},
};

TEST(ring_math, table) {
  for (const auto& r : math_table) {
    SCOPED_TRACE("head " + std::to_string(r.head) + " tail " + std::to_string(r.tail) + " cap " +
                 std::to_string(r.capacity));
    EXPECT_EQ(rm::used(r.head, r.tail), r.used);
    EXPECT_EQ(rm::room(r.head, r.tail, r.capacity), r.room);
    EXPECT_EQ(rm::has_data(r.head, r.tail), r.has_data);
    EXPECT_EQ(rm::is_full(r.head, r.tail, r.capacity), r.full);
    EXPECT_EQ(rm::slot(r.tail, r.capacity), r.tail_slot);
  }
}

TEST(ring_math, power_of_two) {
  EXPECT_FALSE(rm::is_power_of_two(0));
  EXPECT_TRUE(rm::is_power_of_two(1));
  EXPECT_TRUE(rm::is_power_of_two(uint64_t{1} << 63));
  EXPECT_FALSE(rm::is_power_of_two(3));
  EXPECT_FALSE(rm::is_power_of_two(top));
}

// A FIFO of type F with `capacity` cells in 64-byte aligned zeroed memory.
template <class F>
struct fifo_buffer {
  explicit fifo_buffer(uint64_t capacity) {
    bytes = F::bytes_for(capacity);
    mem = static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    std::memset(mem, 0, bytes);
    fifo()->init(capacity);
  }
  ~fifo_buffer() { std::free(mem); }
  F* fifo() { return reinterpret_cast<F*>(mem); }
  std::byte* mem;
  size_t bytes;
};

template <class F>
void fill_empty_laps(uint64_t capacity) {
  fifo_buffer<F> buf(capacity);
  F& f = *buf.fifo();
  EXPECT_EQ(f.capacity(), capacity);
  uint64_t next_in = 0, next_out = 0, e = 0;
  EXPECT_FALSE(f.pop(e));
  for (uint64_t lap = 0; lap < 500; ++lap) {
    // Vary the fill level so the full and empty edges land on every slot.
    const uint64_t fill = lap % (capacity + 1);
    for (uint64_t i = 0; i < fill; ++i) ASSERT_TRUE(f.push(next_in++));
    if (fill == capacity) {
      EXPECT_FALSE(f.push(~uint64_t{0}));
    }
    EXPECT_EQ(f.size(), fill);
    for (uint64_t i = 0; i < fill; ++i) {
      ASSERT_TRUE(f.pop(e));
      ASSERT_EQ(e, next_out++);
    }
    EXPECT_FALSE(f.pop(e));
    EXPECT_EQ(f.size(), 0u);
  }
  EXPECT_GT(next_in, capacity * 100);
}

TEST(spsc_fifo, fill_empty_many_laps) {
  for (uint64_t c : {1u, 2u, 8u, 64u}) fill_empty_laps<spsc_fifo>(c);
}

// The sequence-per-cell algorithm needs two cells at least (with one, a full
// cell's sequence looks free to the next lap's producer).
TEST(mpmc_fifo, fill_empty_many_laps) {
  for (uint64_t c : {2u, 4u, 8u, 64u}) fill_empty_laps<mpmc_fifo>(c);
}

// A consumer in another process that has taken a position (moved the
// counter) and is descheduled before it frees the cell: the owner's give-back
// one lap later must neither write that cell (the consumer's late free would
// hide the entry: the issue-13 soak at 3 ranks ran Medusa's RX_FREE dry this
// way) nor lose the token. The stalled consumer is emulated through the
// FIFO's shared-memory layout: cells of {sequence, value} after the header.
struct raw_cell {
  std::atomic<uint64_t> sequence;
  uint64_t value;
};
raw_cell& cell_of(mpmc_fifo& f, uint64_t position) {
  return reinterpret_cast<raw_cell*>(&f + 1)[position % f.capacity()];
}

TEST(mpmc_fifo, give_back_waits_for_a_consumer_still_in_its_cell) {
  constexpr uint64_t capacity = 4;
  fifo_buffer<mpmc_fifo> buf(capacity);
  mpmc_fifo& f = *buf.fifo();
  token_return back;
  back.init(capacity);
  for (uint64_t t = 0; t < capacity; ++t) ASSERT_TRUE(f.push(t));
  uint64_t e;
  ASSERT_TRUE(f.pop(e));  // position 0: the stalled consumer's
  ASSERT_EQ(e, 0u);
  cell_of(f, 0).sequence.store(1);  // ...counter moved, cell not yet freed
  ASSERT_TRUE(f.pop(e));            // position 1, by another consumer
  ASSERT_EQ(e, 1u);
  EXPECT_FALSE(f.try_push_sole_producer(1));  // position 4 is cell 0: still taken
  EXPECT_TRUE(back.give_back(f, 1));
  EXPECT_EQ(back.waiting(), 1u);
  EXPECT_TRUE(back.give_back(f, 7));  // waits behind it, in order
  EXPECT_EQ(back.waiting(), 2u);
  back.retry(f);
  EXPECT_EQ(back.waiting(), 2u);
  cell_of(f, 0).sequence.store(capacity);  // the consumer's late free
  back.retry(f);
  EXPECT_EQ(back.waiting(), 0u);
  for (uint64_t want : {2u, 3u, 1u, 7u}) {
    ASSERT_TRUE(f.pop(e));
    EXPECT_EQ(e, want);
  }
  EXPECT_FALSE(f.pop(e));
}

// More give-backs than tokens (a forged or repeated entry) while the FIFO
// cannot take them: the extra one is refused, not queued without bound.
TEST(mpmc_fifo, give_back_refuses_more_than_every_token) {
  fifo_buffer<mpmc_fifo> buf(2);
  mpmc_fifo& f = *buf.fifo();
  token_return back;
  back.init(2);
  ASSERT_TRUE(f.push(0));
  ASSERT_TRUE(f.push(1));  // full: both tokens in the FIFO
  EXPECT_TRUE(back.give_back(f, 5));
  EXPECT_TRUE(back.give_back(f, 6));
  EXPECT_FALSE(back.give_back(f, 8));
  EXPECT_EQ(back.waiting(), 2u);
  uint64_t e;
  ASSERT_TRUE(f.pop(e));
  back.retry(f);
  EXPECT_EQ(back.waiting(), 1u);
}

TEST(spsc_fifo, interleaved_never_exceeds_capacity) {
  fifo_buffer<spsc_fifo> buf(4);
  spsc_fifo& f = *buf.fifo();
  uint64_t in = 0, out = 0, e;
  for (int i = 0; i < 10000; ++i) {
    const bool pushed = f.push(in);
    EXPECT_EQ(pushed, in - out < 4);
    if (pushed) ++in;
    if (i % 3 == 0 && f.pop(e)) {
      EXPECT_EQ(e, out++);
    }
  }
}

// Shared-memory mpmc stress: 3 producer processes and 1 consumer process.
constexpr int producers = 3;
constexpr uint64_t per_producer = 50'000;

struct stress_area {
  uint64_t consumer_errors;                // out-of-order or unknown values seen
  uint8_t seen[producers * per_producer];  // times each value was popped
  // the mpmc_fifo follows, 64-byte aligned
};

mpmc_fifo* stress_fifo(std::byte* payload) {
  return reinterpret_cast<mpmc_fifo*>(payload + (sizeof(stress_area) + 63) / 64 * 64);
}

int produce(std::byte* payload, int id) {
  alarm(60);
  mpmc_fifo* f = stress_fifo(payload);
  for (uint64_t i = 0; i < per_producer; ++i)
    while (!f->push((static_cast<uint64_t>(id) << 32) | i))
      sched_yield();  // full: let the consumer run
  return 0;
}

int consume(std::byte* payload) {
  alarm(60);
  auto* area = reinterpret_cast<stress_area*>(payload);
  mpmc_fifo* f = stress_fifo(payload);
  uint64_t next[producers] = {};
  for (uint64_t got = 0; got < producers * per_producer;) {
    uint64_t e;
    if (!f->pop(e)) {
      sched_yield();
      continue;
    }
    ++got;
    const uint64_t id = e >> 32, i = e & 0xffffffffu;
    if (id >= producers || i >= per_producer || i < next[id]) {
      ++area->consumer_errors;
      continue;
    }
    next[id] = i + 1;  // one producer's values stay in order
    ++area->seen[id * per_producer + i];
  }
  return 0;
}

TEST(mpmc_fifo, multi_process_every_value_exactly_once) {
  const std::string name = segment_name("ringstress" + std::to_string(getpid()), "mpmc", 0);
  const uint64_t capacity = 64;  // small, so producers see it full and wrap many laps
  shared_segment seg = shared_segment::create(
      name, (sizeof(stress_area) + 63) / 64 * 64 + mpmc_fifo::bytes_for(capacity));
  seg.unlink();  // children inherit the mapping; nothing left behind
  std::byte* payload = seg.payload();
  stress_fifo(payload)->init(capacity);
  std::vector<pid_t> kids;
  for (int id = 0; id < producers + 1; ++id) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(id < producers ? produce(payload, id) : consume(payload));
    kids.push_back(pid);
  }
  const uint64_t deadline = clock::monotonic_ns() + 90'000'000'000ull;
  size_t reaped = 0;
  bool all_ok = true;
  while (reaped < kids.size() && clock::monotonic_ns() < deadline) {
    int st = 0;
    const pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      ++reaped;
      all_ok = all_ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    } else {
      usleep(1000);
    }
  }
  if (reaped < kids.size()) {
    for (pid_t k : kids) kill(k, SIGKILL);
    for (pid_t k : kids) waitpid(k, nullptr, 0);  // already-reaped ones return at once
    FAIL() << "stress did not finish in time";
  }
  EXPECT_TRUE(all_ok);
  const auto* area = reinterpret_cast<const stress_area*>(payload);
  EXPECT_EQ(area->consumer_errors, 0u);
  uint64_t wrong = 0;
  for (uint64_t v = 0; v < producers * per_producer; ++v) wrong += area->seen[v] != 1;
  EXPECT_EQ(wrong, 0u);
  uint64_t e;
  EXPECT_FALSE(stress_fifo(payload)->pop(e));
}

}  // namespace
}  // namespace hpam::sys
