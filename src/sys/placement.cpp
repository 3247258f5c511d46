#include "sys/placement.hpp"

#include <hwloc.h>

namespace hpam::sys {

placement_result place_near_this_process(void* addr, size_t len) noexcept {
  placement_result r;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return r;
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return r;
  }
  r.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  if (r.numa_nodes > 1) {
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_PROCESS) == 0) {
      hwloc_cpuset_to_nodeset(topo, cpus, nodes);
      if (hwloc_bitmap_weight(nodes) == 1 &&
          hwloc_set_area_membind(topo, addr, len, nodes, HWLOC_MEMBIND_BIND,
                                 HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_MIGRATE) == 0)
        r.bound_node = hwloc_bitmap_first(nodes);
    }
    hwloc_bitmap_free(nodes);
    hwloc_bitmap_free(cpus);
  }
  hwloc_topology_destroy(topo);
  return r;
}

}  // namespace hpam::sys
