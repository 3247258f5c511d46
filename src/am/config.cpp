#include "am/config.hpp"

#include "am/packet.hpp"

namespace hpam::am {
namespace {

std::string range_error(const char* name, const std::string& value, const char* range) {
  return std::string("invalid ") + name + " = " + value + ": valid range is " + range;
}

bool probability_ok(double p) { return p >= 0.0 && p <= 1.0; }

std::string validate_faults(const nic::fault_config& f) {
  const struct { const char* name; double value; } probs[] = {
      {"fault_drop", f.drop},       {"fault_duplicate", f.duplicate}, {"fault_corrupt", f.corrupt},
      {"fault_reorder", f.reorder}, {"fault_delay", f.delay}};
  for (const auto& p : probs)
    if (!probability_ok(p.value)) return range_error(p.name, std::to_string(p.value), "[0, 1]");
  if (f.delay_ns > 10'000'000'000ull)
    return range_error("fault_delay_ns", std::to_string(f.delay_ns), "[0, 10 s]");
  return {};
}

}  // namespace

std::string validate(const endpoint_config& cfg) {
  const auto& c = cfg.card;
  if (c.job.empty()) return "invalid job: the job id must not be empty";
  if (c.nprocs < 1 || c.nprocs > 65535)
    return range_error("nprocs", std::to_string(c.nprocs), "[1, 65535]");
  if (c.my_proc < 0 || c.my_proc >= c.nprocs)
    return range_error("my_proc", std::to_string(c.my_proc), "[0, nprocs-1]");
  if (c.block_size < 256 || c.block_size > 65536 || (c.block_size & (c.block_size - 1)))
    return range_error("block_size", std::to_string(c.block_size), "a power of two in [256, 65536]");
  if (cfg.depth < 1 || cfg.depth > 64)
    return range_error("depth", std::to_string(cfg.depth), "[1, 64]");
  if (cfg.rx_blocks > (1u << 20))
    return range_error("rx_blocks", std::to_string(cfg.rx_blocks), "[0 (worst case 2*(P-1)*D), 1048576]");
  if (cfg.give_up_ns < 1'000'000ull || cfg.give_up_ns > 3'600'000'000'000ull)
    return range_error("give_up_ns", std::to_string(cfg.give_up_ns), "[1 ms, 1 h]");
  if (cfg.timeout_ns < 1'000 || cfg.timeout_ns > cfg.give_up_ns)
    return range_error("timeout_ns", std::to_string(cfg.timeout_ns), "[1 us, give_up_ns]");
  if (cfg.backoff_limit > 30)
    return range_error("backoff_limit", std::to_string(cfg.backoff_limit), "[0, 30]");
  if (cfg.checks_per_poll < 1 || cfg.checks_per_poll > 65536)
    return range_error("checks_per_poll", std::to_string(cfg.checks_per_poll), "[1, 65536]");
  if (cfg.receive_budget < 1 || cfg.receive_budget > 65536)
    return range_error("receive_budget", std::to_string(cfg.receive_budget), "[1, 65536]");
  if (c.attach_timeout_ms < 1 || c.attach_timeout_ms > 3'600'000)
    return range_error("attach_timeout_ms", std::to_string(c.attach_timeout_ms), "[1, 3600000]");
  if (std::string e = validate_faults(c.faults); !e.empty()) return e;
  if (!c.crc && c.faults.corrupt > 0)
    return "invalid fault_corrupt = " + std::to_string(c.faults.corrupt) +
           " with crc_check = 0: corrupted packets would be delivered unchecked (one flipped "
           "address bit is a wild write); turn crc_check on or set fault_corrupt = 0";
  return {};
}

}  // namespace hpam::am
