// libFuzzer harness: decoding and executing one hybrid deposit operation
// (deposit::execute) against a connection record whose registers and
// permission bits come from the input, or against no connection. Findings:
// a sanitizer report; a guard byte around the endpoint memory or the read
// buffer changed; an operation that was refused yet changed memory or a
// register; a register value returned without read permission.
#include <cstring>

#include "deposit/hybrid_op.hpp"
#include "fuzz_input.hpp"

namespace hpam::fuzz {
namespace {

using namespace deposit;

struct world {
  connection_record c{};
  guarded<1024> memory;
  guarded<256> out;
};

}  // namespace
}  // namespace hpam::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hpam::fuzz;
  static world w;
  input in(data, size);
  const uint8_t flags = in.take<uint8_t>();
  w.c.readable = in.take<uint32_t>();
  w.c.writable = in.take<uint32_t>();
  for (auto& r : w.c.address_register)
    r.store(in.take<uint16_t>() % 1100, std::memory_order_relaxed);
  hybrid_op op = in.take<hybrid_op>();
  const uint32_t out_len = in.take<uint16_t>() % 257;
  size_t n = 0;
  const uint8_t* bytes = in.rest(n, 1100);
  uint8_t before[1024];
  uint64_t regs_before[address_registers];
  std::memcpy(before, w.memory.data(), sizeof before);
  for (uint32_t i = 0; i < address_registers; ++i) regs_before[i] = w.c.address_register[i].load();
  connection_record* c = (flags & 1) ? &w.c : nullptr;
  const target_memory m{reinterpret_cast<std::byte*>(w.memory.data()), w.memory.size()};
  hybrid_result r;
  const hpam::status st =
      execute(c, m, op, reinterpret_cast<const std::byte*>(bytes), static_cast<uint32_t>(n),
              reinterpret_cast<std::byte*>(w.out.data()), out_len, r);
  if (!w.memory.intact() || !w.out.intact()) violated();
  if (!hpam::is_ok(st)) {
    if (std::memcmp(before, w.memory.data(), sizeof before) != 0) violated();
    for (uint32_t i = 0; i < address_registers; ++i)
      if (w.c.address_register[i].load() != regs_before[i]) violated();
    if (r.notify) violated();
  } else {
    const bool returns_register =
        op.code == hybrid_code::register_op || op.code == hybrid_code::store_post_increment;
    if (returns_register && !((w.c.readable >> op.reg_i) & 1) && r.fetched != 0) violated();
    if (r.notify && !c) violated();
  }
  return 0;
}
