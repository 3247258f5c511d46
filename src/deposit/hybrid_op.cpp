#include "deposit/hybrid_op.hpp"

#include <cstring>

namespace hpam::deposit {
namespace {

bool inside(uint64_t offset, uint64_t length, uint64_t bound) {
  return offset <= bound && length <= bound - offset;
}

bool bit(uint32_t mask, uint8_t r) {
  return (mask >> r) & 1u;
}

// A connection's permission bits, read once per operation.
struct permissions {
  uint32_t readable = 0;
  uint32_t writable = 0;
};

// Register numbers, permissions and combinations, before anything changes.
status check(const connection_record* c, const permissions& p, const hybrid_op& op, uint32_t len) {
  if (static_cast<uint8_t>(op.code) >= hybrid_code_count || static_cast<uint8_t>(op.mode) > 2 ||
      static_cast<uint8_t>(op.fn) > 4 || static_cast<uint8_t>(op.condition) > 6)
    return status::invalid_argument;
  const hybrid_code k = op.code;
  const bool uses_i = op.mode != addressing::direct || k == hybrid_code::register_op ||
                      k == hybrid_code::store_post_increment || k == hybrid_code::read_register;
  const bool uses_j = k == hybrid_code::register_op && op.reg_j != use_operand;
  const bool uses_cond = op.condition != compare_fn::none && op.cond_reg != use_operand;
  // No registers, and nowhere to notify, without a connection.
  if (!c && (uses_i || uses_j || op.condition != compare_fn::none)) return status::rejected;
  if ((uses_i && op.reg_i >= address_registers) || (uses_j && op.reg_j >= address_registers) ||
      (uses_cond && op.cond_reg >= address_registers))
    return status::invalid_argument;
  if (k == hybrid_code::compare_swap && op.condition != compare_fn::none)
    return status::invalid_argument;
  if (is_memory_atomic(k) && op.width != 4 && op.width != 8) return status::invalid_argument;
  if (!carries_data(k) && len != 0) return status::invalid_argument;
  if (!c) return status::ok;
  if (k == hybrid_code::register_op && !bit(p.writable, op.reg_i)) return status::rejected;
  if (uses_j && !bit(p.readable, op.reg_j)) return status::rejected;
  if (k == hybrid_code::read_register && !bit(p.readable, op.reg_i)) return status::rejected;
  if (k == hybrid_code::store_post_increment && op.operand != 0 && !bit(p.writable, op.reg_i))
    return status::rejected;  // only the data length may be added without write permission
  return status::ok;
}

uint64_t effective_address(const connection_record* c, const hybrid_op& op) {
  switch (op.mode) {
    case addressing::direct:
      return op.operand;
    case addressing::indirect:
      return c->address_register[op.reg_i].load(std::memory_order_acquire);
    case addressing::indexed: {
      uint64_t ea;
      if (__builtin_add_overflow(c->address_register[op.reg_i].load(std::memory_order_acquire),
                                 op.operand, &ea))
        return ~0ull;  // wrapped around: outside any endpoint
      return ea;
    }
  }
  return ~0ull;
}

// Reserves [<addreg_i>, +len) and advances the register, atomically against
// every other sender appending to the same queue.
status post_increment(connection_record* c, const target_memory& m, const hybrid_op& op,
                      const std::byte* data, uint32_t len, hybrid_result& r) {
  std::atomic<uint64_t>& reg = c->address_register[op.reg_i];
  const uint64_t inc = op.operand ? op.operand : len;
  uint64_t at = reg.load(std::memory_order_acquire);
  do {
    if (!inside(at, len, m.bound)) return status::rejected;  // the queue is full
  } while (!reg.compare_exchange_weak(at, at + inc, std::memory_order_acq_rel,
                                      std::memory_order_acquire));
  if (len) std::memcpy(m.base + at, data, len);
  r.fetched = at;
  return status::ok;
}

status memory_op(const connection_record* c, const target_memory& m, const hybrid_op& op,
                 const std::byte* data, uint32_t len, std::byte* out, uint32_t out_len,
                 hybrid_result& r) {
  const uint64_t ea = effective_address(c, op);
  if (op.code == hybrid_code::write || op.code == hybrid_code::read) {
    const uint64_t n = op.code == hybrid_code::write ? len : out_len;
    if (!inside(ea, n, m.bound)) return status::rejected;
    if (op.code == hybrid_code::write && n) std::memcpy(m.base + ea, data, n);
    if (op.code == hybrid_code::read && n) std::memcpy(out, m.base + ea, n);
    return status::ok;
  }
  if (!inside(ea, op.width, m.bound)) return status::rejected;
  std::byte* p = m.base + ea;
  if (reinterpret_cast<uintptr_t>(p) % op.width) return status::invalid_argument;
  if (op.width == 4)
    r.fetched =
        memory_atomic<uint32_t>(op.code, reinterpret_cast<uint32_t*>(p),
                                static_cast<uint32_t>(op.value), static_cast<uint32_t>(op.compare));
  else
    r.fetched =
        memory_atomic<uint64_t>(op.code, reinterpret_cast<uint64_t*>(p), op.value, op.compare);
  return status::ok;
}

uint64_t register_update(connection_record* c, const hybrid_op& op) {
  std::atomic<uint64_t>& reg = c->address_register[op.reg_i];
  const uint64_t b = op.reg_j == use_operand
                         ? op.operand
                         : c->address_register[op.reg_j].load(std::memory_order_acquire);
  uint64_t old = reg.load(std::memory_order_acquire);
  while (!reg.compare_exchange_weak(old, apply_register_fn(op.fn, old, b),
                                    std::memory_order_acq_rel, std::memory_order_acquire)) {
  }
  return old;
}

}  // namespace

status execute(connection_record* c, const target_memory& m, const hybrid_op& op,
               const std::byte* data, uint32_t len, std::byte* out, uint32_t out_len,
               hybrid_result& r) noexcept {
  r = hybrid_result{};
  const permissions p = c ? permissions{c->readable, c->writable} : permissions{};
  const status ok = check(c, p, op, len);
  if (!is_ok(ok)) return ok;
  status st = status::ok;
  switch (op.code) {
    case hybrid_code::store_post_increment:
      st = post_increment(c, m, op, data, len, r);
      break;
    case hybrid_code::register_op:
      r.fetched = register_update(c, op);
      break;
    case hybrid_code::read_register:
      r.fetched = c->address_register[op.reg_i].load(std::memory_order_acquire);
      break;
    case hybrid_code::none:
      break;
    default:
      st = memory_op(c, m, op, data, len, out, out_len, r);
      break;
  }
  if (!is_ok(st)) return st;
  if (op.condition != compare_fn::none) {
    // The conditional notification is decided at the end of the compound
    // operation (it goes to the destination, which may see every register).
    const uint64_t v = op.cond_reg == use_operand
                           ? r.fetched
                           : c->address_register[op.cond_reg].load(std::memory_order_acquire);
    r.notify = holds(op.condition, v, op.compare);
    r.notify_word = v;
  }
  // A register's value goes back to the sender only if it may read it
  // (section 3.5): a register update or an append returns 0 otherwise.
  const bool returns_register =
      op.code == hybrid_code::register_op || op.code == hybrid_code::store_post_increment;
  if (returns_register && !bit(p.readable, op.reg_i)) r.fetched = 0;
  return status::ok;
}

}  // namespace hpam::deposit
