// Hybrid deposit operations executed against one connection record and one
// endpoint area in this process: addressing, register operations with
// permissions, post-increment append, conditions, memory atomics.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "deposit/hybrid_op.hpp"

namespace hpam::deposit {
namespace {

struct bench {
  alignas(64) connection_record c{};
  alignas(64) std::byte memory[1024 + 128];
  target_memory m{memory + 64, 1024};
  bench() {
    std::memset(memory, 0x5A, sizeof memory);
    c.readable = c.writable = 0xFF;
  }
  bool guards_intact() const {
    for (int i = 0; i < 64; ++i)
      if (memory[i] != std::byte{0x5A} || memory[64 + 1024 + i] != std::byte{0x5A}) return false;
    return true;
  }
  status run(const hybrid_op& op, const void* data = nullptr, uint32_t len = 0, void* out = nullptr,
             uint32_t out_len = 0) {
    return execute(&c, m, op, static_cast<const std::byte*>(data), len,
                   static_cast<std::byte*>(out), out_len, r);
  }
  hybrid_result r;
};

hybrid_op op_of(hybrid_code code, addressing mode = addressing::direct) {
  hybrid_op o{};
  o.code = code;
  o.mode = mode;
  o.reg_j = use_operand;
  o.cond_reg = use_operand;
  o.width = 8;
  return o;
}

TEST(hybrid_op, register_functions_and_comparisons_from_tables) {
  struct fn_row {
    register_fn fn;
    uint64_t a, b, out;
  };
  const fn_row fns[] = {{register_fn::set, 5, 9, 9},
                        {register_fn::add, ~0ull, 2, 1},
                        {register_fn::bit_and, 0xF0, 0x3C, 0x30},
                        {register_fn::bit_or, 0xF0, 0x0F, 0xFF},
                        {register_fn::bit_xor, 0xFF, 0x0F, 0xF0}};
  for (const auto& r : fns) EXPECT_EQ(apply_register_fn(r.fn, r.a, r.b), r.out);
  struct cmp_row {
    compare_fn fn;
    uint64_t a, b;
    bool out;
  };
  const cmp_row cmps[] = {{compare_fn::none, 1, 1, false}, {compare_fn::eq, 3, 3, true},
                          {compare_fn::ne, 3, 3, false},   {compare_fn::lt, 2, 3, true},
                          {compare_fn::le, 3, 3, true},    {compare_fn::gt, 3, 3, false},
                          {compare_fn::ge, 4, 3, true},    {compare_fn::lt, ~0ull, 0, false}};
  for (const auto& r : cmps) EXPECT_EQ(holds(r.fn, r.a, r.b), r.out);
}

TEST(hybrid_op, direct_indirect_and_indexed_writes_land_where_named) {
  bench b;
  const char msg[] = "hello";
  hybrid_op w = op_of(hybrid_code::write);
  w.operand = 10;
  ASSERT_EQ(b.run(w, msg, 5), status::ok);
  EXPECT_EQ(std::memcmp(b.m.base + 10, msg, 5), 0);
  b.c.address_register[2] = 100;
  w = op_of(hybrid_code::write, addressing::indirect);
  w.reg_i = 2;
  ASSERT_EQ(b.run(w, msg, 5), status::ok);
  EXPECT_EQ(std::memcmp(b.m.base + 100, msg, 5), 0);
  w = op_of(hybrid_code::write, addressing::indexed);
  w.reg_i = 2;
  w.operand = 50;
  ASSERT_EQ(b.run(w, msg, 5), status::ok);
  EXPECT_EQ(std::memcmp(b.m.base + 150, msg, 5), 0);
  char back[5];
  hybrid_op rd = op_of(hybrid_code::read, addressing::indexed);
  rd.reg_i = 2;
  rd.operand = 50;
  ASSERT_EQ(b.run(rd, nullptr, 0, back, 5), status::ok);
  EXPECT_EQ(std::memcmp(back, msg, 5), 0);
  // Out of the endpoint: refused, nothing written.
  b.c.address_register[2] = 1020;
  w = op_of(hybrid_code::write, addressing::indirect);
  w.reg_i = 2;
  EXPECT_EQ(b.run(w, msg, 5), status::rejected);
  b.c.address_register[2] = ~0ull - 2;
  w.mode = addressing::indexed;
  w.operand = 8;  // wraps around to a small address: still refused
  EXPECT_EQ(b.run(w, msg, 5), status::rejected);
  w.reg_i = 9;
  EXPECT_EQ(b.run(w, msg, 5), status::invalid_argument);
  EXPECT_TRUE(b.guards_intact());
}

TEST(hybrid_op, register_operations_obey_permissions) {
  bench b;
  b.c.writable = 1u << 1;
  b.c.readable = 1u << 3;
  hybrid_op set = op_of(hybrid_code::register_op);
  set.reg_i = 1;
  set.fn = register_fn::set;
  set.operand = 0xF0F0;
  ASSERT_EQ(b.run(set), status::ok);
  set.fn = register_fn::bit_xor;
  set.operand = 0x00FF;
  ASSERT_EQ(b.run(set), status::ok);
  EXPECT_EQ(b.r.fetched, 0u);  // the old value stays hidden: register 1 is write-only
  EXPECT_EQ(b.c.address_register[1].load(), 0xF00Fu);
  b.c.address_register[3] = 0x10;
  set.fn = register_fn::add;
  set.reg_j = 3;  // readable: allowed
  ASSERT_EQ(b.run(set), status::ok);
  EXPECT_EQ(b.c.address_register[1].load(), 0xF01Fu);
  set.reg_j = 4;  // not readable
  EXPECT_EQ(b.run(set), status::rejected);
  set.reg_j = use_operand;
  set.reg_i = 2;  // not writable
  EXPECT_EQ(b.run(set), status::rejected);
  EXPECT_EQ(b.c.address_register[2].load(), 0u);
  hybrid_op rd = op_of(hybrid_code::read_register);
  rd.reg_i = 3;
  ASSERT_EQ(b.run(rd), status::ok);
  EXPECT_EQ(b.r.fetched, 0x10u);
  rd.reg_i = 1;  // writable but not readable
  EXPECT_EQ(b.run(rd), status::rejected);
  // Without a connection there are no registers.
  hybrid_result r;
  EXPECT_EQ(execute(nullptr, b.m, set, nullptr, 0, nullptr, 0, r), status::rejected);
}

// Section 3.5: a sender may be allowed to write a register it may not read
// (a queue pointer). An update or an append then returns nothing of it.
TEST(hybrid_op, a_register_value_goes_back_only_when_it_is_readable) {
  bench b;
  b.c.writable = 1u << 2;
  b.c.readable = 0;
  b.c.address_register[2] = 0x5EC2E7;
  hybrid_op add = op_of(hybrid_code::register_op);
  add.reg_i = 2;
  add.fn = register_fn::add;
  add.operand = 0;  // adding 0 would read the register out
  ASSERT_EQ(b.run(add), status::ok);
  EXPECT_EQ(b.r.fetched, 0u);
  b.c.address_register[3] = 512;  // a queue tail: append-only for the sender
  hybrid_op app = op_of(hybrid_code::store_post_increment);
  app.reg_i = 3;
  uint64_t rec = 1;
  ASSERT_EQ(b.run(app, &rec, 8), status::ok);
  EXPECT_EQ(b.r.fetched, 0u);
  EXPECT_EQ(b.c.address_register[3].load(), 520u);
  b.c.readable = (1u << 2) | (1u << 3);  // now readable: the values come back
  ASSERT_EQ(b.run(add), status::ok);
  EXPECT_EQ(b.r.fetched, 0x5EC2E7u);
  ASSERT_EQ(b.run(app, &rec, 8), status::ok);
  EXPECT_EQ(b.r.fetched, 520u);
}

// A conditional notification needs a connection (it names the queue and the
// endpoint): without one the operation is refused, whatever it compares.
TEST(hybrid_op, a_condition_without_a_connection_is_refused) {
  bench b;
  for (hybrid_code code : {hybrid_code::fetch_add, hybrid_code::none, hybrid_code::swap}) {
    hybrid_op op = op_of(code);
    op.condition = compare_fn::ge;
    op.cond_reg = use_operand;
    op.compare = 0;  // would always hold
    hybrid_result r;
    EXPECT_EQ(execute(nullptr, b.m, op, nullptr, 0, nullptr, 0, r), status::rejected);
    EXPECT_FALSE(r.notify);
  }
  EXPECT_TRUE(b.guards_intact());
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(b.m.base[i], std::byte{0x5A});
}

TEST(hybrid_op, store_post_increment_appends_until_the_queue_is_full) {
  bench b;
  b.c.writable = 0;  // appending by the data length needs no write permission
  hybrid_op app = op_of(hybrid_code::store_post_increment);
  app.reg_i = 0;
  b.c.address_register[0] = 1000;
  uint64_t rec = 7;
  for (int i = 0; i < 3; ++i) {
    rec = 100 + i;
    ASSERT_EQ(b.run(app, &rec, 8), status::ok);
    EXPECT_EQ(b.r.fetched, 1000u + 8 * i);
  }
  EXPECT_EQ(b.run(app, &rec, 8), status::rejected);  // 1024 reached
  EXPECT_EQ(b.c.address_register[0].load(), 1024u);
  uint64_t got[3];
  std::memcpy(got, b.m.base + 1000, sizeof got);
  EXPECT_EQ(got[0], 100u);
  EXPECT_EQ(got[2], 102u);
  app.operand = 64;  // an explicit stride needs write permission
  b.c.address_register[0] = 0;
  EXPECT_EQ(b.run(app, &rec, 8), status::rejected);
  b.c.writable = 1;
  ASSERT_EQ(b.run(app, &rec, 8), status::ok);
  EXPECT_EQ(b.c.address_register[0].load(), 64u);
  EXPECT_TRUE(b.guards_intact());
}

TEST(hybrid_op, conditional_notification_is_decided_at_the_end) {
  bench b;
  hybrid_op inc = op_of(hybrid_code::register_op);
  inc.reg_i = 5;
  inc.fn = register_fn::add;
  inc.operand = 1;
  inc.condition = compare_fn::eq;
  inc.cond_reg = 5;
  inc.compare = 3;
  int notified = 0;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(b.run(inc), status::ok);
    notified += b.r.notify;
    if (b.r.notify) {
      EXPECT_EQ(b.r.notify_word, 3u);
    }
  }
  EXPECT_EQ(notified, 1);
  hybrid_op cas = op_of(hybrid_code::compare_swap);
  cas.condition = compare_fn::eq;
  EXPECT_EQ(b.run(cas), status::invalid_argument);  // compare already names CAS's expected value
}

TEST(hybrid_op, memory_atomics_32_and_64_bit) {
  bench b;
  uint32_t* w32 = reinterpret_cast<uint32_t*>(b.m.base + 16);
  uint64_t* w64 = reinterpret_cast<uint64_t*>(b.m.base + 32);
  *w32 = 10;
  *w64 = 1000;
  struct row {
    hybrid_code code;
    uint8_t width;
    uint64_t value, compare, old, after;
  };
  const row rows[] = {{hybrid_code::fetch_add, 4, 5, 0, 10, 15},
                      {hybrid_code::fetch_add, 4, 0xFFFFFFFF, 0, 15, 14},
                      {hybrid_code::swap, 4, 77, 0, 14, 77},
                      {hybrid_code::compare_swap, 4, 1, 76, 77, 77},
                      {hybrid_code::compare_swap, 4, 1, 77, 77, 1},
                      {hybrid_code::fetch_or, 4, 6, 0, 1, 7},
                      {hybrid_code::fetch_and, 4, 3, 0, 7, 3},
                      {hybrid_code::fetch_xor, 4, 1, 0, 3, 2},
                      {hybrid_code::fetch_add, 8, 24, 0, 1000, 1024},
                      {hybrid_code::swap, 8, 1ull << 40, 0, 1024, 1ull << 40},
                      {hybrid_code::compare_swap, 8, 9, 1ull << 40, 1ull << 40, 9}};
  for (const row& r : rows) {
    hybrid_op o = op_of(r.code);
    o.width = r.width;
    o.operand = r.width == 4 ? 16 : 32;
    o.value = r.value;
    o.compare = r.compare;
    ASSERT_EQ(b.run(o), status::ok);
    EXPECT_EQ(b.r.fetched, r.old);
    EXPECT_EQ(r.width == 4 ? uint64_t{*w32} : *w64, r.after);
  }
  EXPECT_EQ(*reinterpret_cast<uint32_t*>(b.m.base + 20),
            0x5A5A5A5Au);  // the neighbour is untouched
  hybrid_op bad = op_of(hybrid_code::fetch_add);
  bad.operand = 17;  // misaligned
  EXPECT_EQ(b.run(bad), status::invalid_argument);
  bad.operand = 1020;  // crosses the end
  EXPECT_EQ(b.run(bad), status::rejected);
  bad.operand = 16;
  bad.width = 2;
  EXPECT_EQ(b.run(bad), status::invalid_argument);
}

}  // namespace
}  // namespace hpam::deposit
