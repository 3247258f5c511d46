// hwloc-based placement: each process's card memory lives on the NUMA node
// of the CPUs the process is bound to (the card sits "near" its host). On a
// one-node machine, or when the process is not bound inside one node, memory
// stays where first touch puts it.
#pragma once

#include <cstddef>

namespace hpam::sys {

struct placement_result {
  int numa_nodes = 0;   // NUMA nodes hwloc sees on this machine
  int bound_node = -1;  // OS index of the node the area was bound to, -1 if none
};

// Binds [addr, addr+len) to the NUMA node local to this process. Never fails
// the caller: a machine or kernel that cannot bind leaves the area unbound.
placement_result place_near_this_process(void* addr, size_t len) noexcept;

}  // namespace hpam::sys
