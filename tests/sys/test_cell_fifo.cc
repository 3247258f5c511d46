// The cell FIFO (Medusa's RX_READY): claim/publish/ready/release over many
// laps, full detection, release in any order, a scribbled counter that only
// makes the FIFO look full, and a multi-process stress in which every
// cell's inline bytes must arrive exactly as written, each exactly once.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../common/test_util.hpp"
#include "sys/cell_fifo.hpp"
#include "sys/clock.hpp"
#include "sys/shared_segment.hpp"

namespace hpam::sys {
namespace {

// A FIFO in 64-byte aligned private memory.
struct fifo_in_memory {
  fifo_in_memory(uint64_t capacity, uint32_t cell_bytes)
      : bytes(cell_fifo::bytes_for(capacity, cell_bytes) + 64),
        memory(new std::byte[bytes]()),
        fifo(aligned(), capacity, cell_bytes) {
    fifo.init();
  }
  std::byte* aligned() {
    const auto at = reinterpret_cast<uintptr_t>(memory.get());
    return memory.get() + ((64 - at % 64) % 64);
  }
  size_t bytes;
  std::unique_ptr<std::byte[]> memory;
  cell_fifo fifo;
};

// The cell's inline bytes for value v (as many as fit).
void fill(std::byte* cell, uint32_t inline_bytes, uint64_t v) {
  for (uint32_t i = 0; i < inline_bytes; ++i)
    cell[cell_fifo::head_bytes + i] = static_cast<std::byte>((v * 31 + i) & 0xff);
}
bool filled(const std::byte* cell, uint32_t inline_bytes, uint64_t v) {
  for (uint32_t i = 0; i < inline_bytes; ++i)
    if (cell[cell_fifo::head_bytes + i] != static_cast<std::byte>((v * 31 + i) & 0xff))
      return false;
  return true;
}

bool push(cell_fifo& f, uint64_t v) {
  uint64_t pos;
  std::byte* cell = f.claim(pos);
  if (!cell) return false;
  fill(cell, f.inline_bytes(), v);
  f.publish(cell, pos, v);
  return true;
}

TEST(cell_fifo, geometry_and_header) {
  fifo_in_memory m(8, 128);
  EXPECT_EQ(m.fifo.capacity(), 8u);
  EXPECT_EQ(m.fifo.cell_bytes(), 128u);
  EXPECT_EQ(m.fifo.inline_bytes(), 112u);
  EXPECT_EQ(m.fifo.header().capacity, 8u);
  EXPECT_EQ(m.fifo.header().cell_bytes, 128u);
  for (uint32_t bad : {0u, 8u, 24u, 96u, 8192u}) EXPECT_FALSE(cell_fifo::valid_geometry(8, bad));
  EXPECT_FALSE(cell_fifo::valid_geometry(0, 64));
  EXPECT_FALSE(cell_fifo::valid_geometry(6, 64));
}

// Fill to full, empty, over many laps, for every cell size: entries and
// inline bytes come out as they went in, in order.
TEST(cell_fifo, fill_empty_many_laps) {
  for (uint32_t cell : {16u, 32u, 64u, 128u, 256u}) {
    SCOPED_TRACE("cell " + std::to_string(cell));
    fifo_in_memory m(4, cell);
    cell_fifo& f = m.fifo;
    uint64_t next_in = 0, next_out = 0;
    for (int lap = 0; lap < 50; ++lap) {
      while (push(f, next_in)) ++next_in;
      EXPECT_EQ(next_in - next_out, f.capacity());  // full at exactly capacity
      uint64_t e;
      for (const std::byte* c; (c = f.ready(next_out, e)) != nullptr; ++next_out) {
        ASSERT_EQ(e, next_out);
        ASSERT_TRUE(filled(c, f.inline_bytes(), next_out));
        f.release(next_out);
      }
      EXPECT_EQ(next_out, next_in);
    }
  }
}

// Nothing is ready before it is published; a claimed cell is not ready.
TEST(cell_fifo, claimed_is_not_ready_until_published) {
  fifo_in_memory m(4, 64);
  uint64_t pos, e;
  std::byte* cell = m.fifo.claim(pos);
  ASSERT_NE(cell, nullptr);
  EXPECT_EQ(pos, 0u);
  EXPECT_EQ(m.fifo.ready(0, e), nullptr);
  m.fifo.publish(cell, pos, 77);
  ASSERT_NE(m.fifo.ready(0, e), nullptr);
  EXPECT_EQ(e, 77u);
  EXPECT_EQ(m.fifo.ready(1, e), nullptr);
}

// A cell held by the consumer keeps its position's next-lap producer out
// (full), even when every later cell has been given back; the producer never
// skips it.
TEST(cell_fifo, release_in_any_order_never_skips_a_held_cell) {
  fifo_in_memory m(4, 64);
  cell_fifo& f = m.fifo;
  for (uint64_t v = 0; v < 4; ++v) ASSERT_TRUE(push(f, v));
  uint64_t e;
  for (uint64_t p = 0; p < 4; ++p) ASSERT_NE(f.ready(p, e), nullptr);
  f.release(3);
  f.release(1);
  f.release(2);
  EXPECT_FALSE(push(f, 4));  // position 4 is cell 0, still held
  f.release(0);
  for (uint64_t v = 4; v < 8; ++v) ASSERT_TRUE(push(f, v));
  for (uint64_t p = 4; p < 8; ++p) {
    const std::byte* c = f.ready(p, e);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(e, p);
    EXPECT_TRUE(filled(c, f.inline_bytes(), p));
  }
}

// claim_free takes the next position without looking, for callers whose
// tokens guarantee room; the FIFO stays in order with claim.
TEST(cell_fifo, claim_free_takes_positions_in_order) {
  fifo_in_memory m(4, 32);
  cell_fifo& f = m.fifo;
  for (uint64_t v = 0; v < 40; ++v) {
    uint64_t pos;
    std::byte* cell = f.claim_free(pos);
    ASSERT_EQ(pos, v);
    fill(cell, f.inline_bytes(), v);
    f.publish(cell, pos, v + 1000);
    uint64_t e;
    const std::byte* c = f.ready(v, e);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(e, v + 1000);
    EXPECT_TRUE(filled(c, f.inline_bytes(), v));
    f.release(v);
  }
}

// A scribbled enqueue counter (any process mapping the FIFO can write it)
// makes producers find it full or misplaced, never write outside the cells:
// the consumer, whose cursor is its own, sees nothing it did not expect.
TEST(cell_fifo, scribbled_counter_only_looks_full) {
  for (uint64_t scribble : {uint64_t{3}, uint64_t{1} << 40, ~uint64_t{0}, uint64_t{1000}}) {
    SCOPED_TRACE(scribble);
    fifo_in_memory m(8, 64);
    cell_fifo& f = m.fifo;
    ASSERT_TRUE(push(f, 0));
    const_cast<cell_fifo_header&>(f.header()).enqueue.store(scribble);
    for (int i = 0; i < 20; ++i) (void)push(f, 100 + static_cast<uint64_t>(i));
    uint64_t e;
    ASSERT_NE(f.ready(0, e), nullptr);
    EXPECT_EQ(e, 0u);
    // Every byte after the FIFO is untouched (the guard past its end).
    const std::byte* end = m.aligned() + cell_fifo::bytes_for(8, 64);
    for (const std::byte* b = end; b < m.memory.get() + m.bytes; ++b) EXPECT_EQ(*b, std::byte{0});
  }
}

// Several processes push values with inline bytes; one consumes: every
// value arrives exactly once, each producer's in order, bytes intact.
constexpr int producers = 3;
constexpr uint64_t per_producer = 20000;
constexpr uint64_t stress_capacity = 16;
constexpr uint32_t stress_cell = 128;

struct stress_area {
  uint64_t errors;                         // out of order, unknown or damaged
  uint8_t seen[producers * per_producer];  // times each value was taken
};

std::byte* stress_fifo_at(std::byte* payload) {
  return payload + (sizeof(stress_area) + 63) / 64 * 64;
}

int produce(std::byte* payload, int id) {
  cell_fifo f(stress_fifo_at(payload), stress_capacity, stress_cell);
  for (uint64_t i = 0; i < per_producer; ++i)
    while (!push(f, (static_cast<uint64_t>(id) << 32) | i)) sched_yield();
  return 0;
}

int consume(std::byte* payload) {
  auto* area = reinterpret_cast<stress_area*>(payload);
  cell_fifo f(stress_fifo_at(payload), stress_capacity, stress_cell);
  uint64_t next[producers] = {};
  for (uint64_t pos = 0; pos < producers * per_producer;) {
    uint64_t e;
    const std::byte* c = f.ready(pos, e);
    if (!c) {
      sched_yield();
      continue;
    }
    const uint64_t id = e >> 32, i = e & 0xffffffffu;
    if (id >= producers || i >= per_producer || i < next[id] || !filled(c, f.inline_bytes(), e)) {
      ++area->errors;
    } else {
      next[id] = i + 1;
      ++area->seen[id * per_producer + i];
    }
    f.release(pos++);
  }
  return 0;
}

TEST(cell_fifo, multi_process_every_value_exactly_once_with_its_bytes) {
  const std::string name = segment_name("cellstress" + std::to_string(getpid()), "cell", 0);
  shared_segment seg =
      shared_segment::create(name, (sizeof(stress_area) + 63) / 64 * 64 +
                                       cell_fifo::bytes_for(stress_capacity, stress_cell));
  seg.unlink();
  std::byte* payload = seg.payload();
  cell_fifo(stress_fifo_at(payload), stress_capacity, stress_cell).init();
  std::vector<pid_t> kids;
  for (int id = 0; id < producers + 1; ++id) {  // each child dies after 60 s (fork_child)
    const pid_t pid = test::fork_child(
        [payload, id] { return id < producers ? produce(payload, id) : consume(payload); });
    ASSERT_GE(pid, 0);
    kids.push_back(pid);
  }
  bool all_ok = true;
  for (pid_t k : kids) {
    int st = 0;
    ASSERT_EQ(waitpid(k, &st, 0), k);
    all_ok = all_ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  ASSERT_TRUE(all_ok) << "a child failed or timed out";
  const auto* area = reinterpret_cast<const stress_area*>(payload);
  EXPECT_EQ(area->errors, 0u);
  for (uint64_t v = 0; v < producers * per_producer; ++v) ASSERT_EQ(area->seen[v], 1) << v;
}

}  // namespace
}  // namespace hpam::sys
