#include "sys/membarrier.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace hpam::sys {
namespace {

long membarrier(int cmd) {
  return syscall(__NR_membarrier, cmd, 0, 0);
}

// The commands the kernel offers (MEMBARRIER_CMD_QUERY), 0 when refused.
long offered() {
  static const long mask = [] {
    const long m = membarrier(MEMBARRIER_CMD_QUERY);
    return m < 0 ? 0 : m;
  }();
  return mask;
}

}  // namespace

bool global_barriers_available() {
  return (offered() & MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0 &&
         (offered() & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) != 0;
}

bool join_global_barriers() {
  static const bool joined =
      global_barriers_available() && membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
  return joined;
}

bool barrier_all() {
  return global_barriers_available() && membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0;
}

}  // namespace hpam::sys
