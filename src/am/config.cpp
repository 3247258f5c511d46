#include "am/config.hpp"

#include "am/packet.hpp"

namespace hpam::am {
std::string setup_problem(const endpoint_config& cfg) {
  const auto& c = cfg.card;
  if (c.job.empty()) return "invalid job: the job id must not be empty";
  if (c.nprocs < 1 || c.nprocs > 65535)
    return "invalid nprocs = " + std::to_string(c.nprocs) + ": valid range is [1, 65535]";
  if (c.my_proc < 0 || c.my_proc >= c.nprocs)
    return "invalid my_proc = " + std::to_string(c.my_proc) + ": valid range is [0, nprocs-1]";
  if (cfg.depth < 1 || cfg.depth > max_depth)
    return "invalid depth = " + std::to_string(cfg.depth) + ": the instance field holds [1, " +
           std::to_string(max_depth) + "]";
  if (cfg.timeout_ns == 0 || cfg.give_up_ns == 0 || cfg.checks_per_poll == 0 ||
      cfg.receive_budget == 0)
    return "invalid configuration: timeout_ns, give_up_ns, checks_per_poll and receive_budget "
           "must be non-zero";
  if (cfg.timeout_min_ns == 0) return "invalid timeout_min_ns = 0: it must be non-zero";
  return {};
}

}  // namespace hpam::am
