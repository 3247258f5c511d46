// Hybrid deposit operations (hybrid deposit model, section 3): a message's
// action is a function of an operation named by the sender, the sender's
// operands, and destination state held in per-connection address registers.
//
// Address generation: direct (effaddr = operand), indirect (effaddr =
// <addreg_i>), indexed (effaddr = <addreg_i> + operand). Register
// operations: addreg_i <- op(<addreg_i>, operand or <addreg_j>) for set,
// add, and, or, xor. Compound operations: store-indirect with
// post-increment (append to a remote queue in one message), fetch-and-add,
// swap and compare-and-swap on 32/64-bit memory, register read, and a
// conditional notification evaluated at the end. Each address register
// carries sender read/write permission bits (section 3.5).
//
// The connection table lives in the destination's card memory so that the
// operation can be executed by whoever holds a mapping of it: the sender's
// process on the destination's behalf, or the destination itself for
// operations that arrive as packets (memory in its private address space).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "nic/hamlyn/layout.hpp"
#include "nic/hamlyn/ticket.hpp"
#include "sys/status.hpp"

namespace hpam::deposit {

constexpr uint32_t address_registers = 8;  // per connection

enum class addressing : uint8_t { direct = 0, indirect = 1, indexed = 2 };
enum class hybrid_code : uint8_t {
  write = 0,                 // store the message data at effaddr
  read = 1,                  // return the bytes at effaddr
  register_op = 2,           // addreg_i <- fn(<addreg_i>, operand or <addreg_j>); returns the old
                             // value if the sender may read addreg_i, else 0
  store_post_increment = 3,  // store at <addreg_i>, then addreg_i += increment (0: data length);
                             // returns where it stored if the sender may read addreg_i, else 0
  fetch_add = 4,             // memory at effaddr += value; returns the old value
  swap = 5,                  // memory at effaddr = value; returns the old value
  compare_swap = 6,          // if memory == compare: memory = value; returns the old value
  fetch_and = 7,             // memory &= value; returns the old value
  fetch_or = 8,              // memory |= value; returns the old value
  fetch_xor = 9,             // memory ^= value; returns the old value
  read_register = 10,        // returns <addreg_i> (needs read permission)
  none = 11,                 // nothing but the condition (a pure conditional notification)
};
constexpr uint8_t hybrid_code_count = 12;
enum class register_fn : uint8_t { set = 0, add = 1, bit_and = 2, bit_or = 3, bit_xor = 4 };
enum class compare_fn : uint8_t { none = 0, eq = 1, ne = 2, lt = 3, le = 4, gt = 5, ge = 6 };
constexpr uint8_t use_operand = 0xFF;  // reg_j value meaning "the operand, not a register"

// One operation as it travels (sender operands and register names).
struct hybrid_op {
  hybrid_code code;      // what to do
  addressing mode;       // how effaddr is formed
  uint8_t reg_i;         // address register for indirect/indexed/post-increment/register ops
  uint8_t reg_j;         // second register for register ops, or use_operand
  register_fn fn;        // register operation
  uint8_t width;         // 4 or 8: memory operand size of atomics
  compare_fn condition;  // conditional notification test, none = never
  uint8_t cond_reg;      // register compared with `compare` (use_operand: the fetched value)
  uint64_t
      operand;     // direct: offset; indexed: index; register ops: value; post-increment: increment
  uint64_t value;  // atomics: the operand (add/and/or/xor/swap value, CAS new value)
  uint64_t compare;  // compare-and-swap: expected value; else the condition's operand
};
static_assert(std::is_standard_layout_v<hybrid_op> && std::is_trivially_copyable_v<hybrid_op>);
static_assert(sizeof(hybrid_op) == 32);

// The destination end of a connection, in the destination's card memory.
struct connection_record {
  std::atomic<uint64_t> connection_key;  // 0 = closed; senders present it
  uint32_t source;                       // the one process allowed to use it, or any_source
  uint32_t endpoint_slot;                // the destination endpoint (a slot)
  uint64_t endpoint_key;                 // that slot's protection key
  uint32_t readable;                     // bit i: the sender may read register i
  uint32_t writable;                     // bit i: the sender may write register i
  uint32_t generation;                   // bumped at each open
  uint32_t notification_queue;           // queue for conditional notifications
  uint64_t notifications;                // conditional notifications raised
  std::atomic<uint64_t> address_register[address_registers];  // destination state
  uint64_t reserved[2];                                       // zero
};
static_assert(std::is_standard_layout_v<connection_record>);
static_assert(sizeof(connection_record) == 128);
static_assert(offsetof(connection_record, address_register) == 48);

constexpr uint32_t any_source = 0xFFFFFFFFu;  // a connection every process of the job may use

// A process's connection table, in its deposit card's message-area memory:
// this header (named by the card header's client_offset), then the records.
constexpr uint64_t connection_table_magic = 0x4e4e4f43504548ull;  // "HEPCONN"
constexpr uint32_t connection_table_version = 1;
struct connection_table_header {
  nic::hamlyn::client_prefix prefix;  // connection_table_magic, _version, sizeof this header
  uint32_t count;                     // connection_record entries
  uint32_t record_size;               // sizeof(connection_record)
  uint64_t records_offset;            // area offset of connection_record[count]
  uint64_t reserved[4];               // zero
};
static_assert(std::is_standard_layout_v<connection_table_header> &&
              std::is_trivially_copyable_v<connection_table_header>);
static_assert(sizeof(connection_table_header) == 64);

// What the destination gives a sender: plain data, can travel in messages.
struct connection_ticket {
  nic::hamlyn::ticket endpoint;  // the destination endpoint (node, slot, key, range)
  uint32_t connection;           // index in the destination's connection table
  uint32_t generation;           // connection_record::generation when issued
  uint64_t connection_key;       // must match connection_record::connection_key
};
static_assert(std::is_standard_layout_v<connection_ticket> &&
              std::is_trivially_copyable_v<connection_ticket>);
static_assert(sizeof(connection_ticket) == 64);

// The metadata index of a notification raised by a conditional operation;
// its `length` field carries the connection index and `metadata` the value
// that satisfied the condition.
constexpr uint32_t hybrid_notification_index = 0xFFFFFFFEu;

// Memory the operation may touch: the whole endpoint area, mapped here.
struct target_memory {
  std::byte* base = nullptr;  // first byte of the endpoint's message area
  uint64_t bound = 0;         // its size
};

// The outcome of one execution.
struct hybrid_result {
  uint64_t fetched = 0;      // old value (atomics, register ops) or register read
  bool notify = false;       // the condition held: raise a notification
  uint64_t notify_word = 0;  // the value compared
};

// Executes `op` against connection `c` (null: plain ticket operation,
// direct addressing only, no condition) and memory `m`, with `data` for
// writes and `out` (capacity `out_len`) for reads. Checks register numbers,
// permissions (read once), bounds and alignment first; nothing is changed
// when a check fails. A register's value is returned to the sender only
// when the connection lets it read that register.
status execute(connection_record* c, const target_memory& m, const hybrid_op& op,
               const std::byte* data, uint32_t len, std::byte* out, uint32_t out_len,
               hybrid_result& r) noexcept;

// Whether op needs the data payload, and how many bytes it returns.
constexpr bool carries_data(hybrid_code c) {
  return c == hybrid_code::write || c == hybrid_code::store_post_increment;
}
constexpr bool is_memory_atomic(hybrid_code c) {
  return c == hybrid_code::fetch_add || c == hybrid_code::swap || c == hybrid_code::compare_swap ||
         c == hybrid_code::fetch_and || c == hybrid_code::fetch_or || c == hybrid_code::fetch_xor;
}

// One memory atomic (is_memory_atomic(code)) on the word at p, sequentially
// consistent as a CPU's own: the old value. compare_swap swaps only when
// the word equals cmp (the old value then equals cmp). Used by execute and
// by the deposit layer's atomic_now, which has checked p (held, key,
// bounds, alignment) before.
template <class T>
[[gnu::always_inline]] inline T memory_atomic(hybrid_code code, T* p, T v, T cmp) {
  switch (code) {
    case hybrid_code::fetch_add:
      return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    case hybrid_code::fetch_and:
      return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
    case hybrid_code::fetch_or:
      return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
    case hybrid_code::fetch_xor:
      return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
    case hybrid_code::swap:
      return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
    case hybrid_code::compare_swap: {
      T expected = cmp;
      __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      return expected;  // the old value: equal to cmp exactly when the swap happened
    }
    default:
      return 0;
  }
}

// Pure helpers, tested from tables.
constexpr uint64_t apply_register_fn(register_fn fn, uint64_t a, uint64_t b) {
  switch (fn) {
    case register_fn::set:
      return b;
    case register_fn::add:
      return a + b;
    case register_fn::bit_and:
      return a & b;
    case register_fn::bit_or:
      return a | b;
    case register_fn::bit_xor:
      return a ^ b;
  }
  return a;
}
constexpr bool holds(compare_fn fn, uint64_t a, uint64_t b) {
  switch (fn) {
    case compare_fn::none:
      return false;
    case compare_fn::eq:
      return a == b;
    case compare_fn::ne:
      return a != b;
    case compare_fn::lt:
      return a < b;
    case compare_fn::le:
      return a <= b;
    case compare_fn::gt:
      return a > b;
    case compare_fn::ge:
      return a >= b;
  }
  return false;
}

}  // namespace hpam::deposit
