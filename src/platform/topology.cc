#include "src/platform/topology.h"

#include "config.h"

#if defined(MPIZIP_HAVE_HWLOC)
#include <hwloc.h>
#endif

namespace mpizip::platform {

Topology topology() {
  Topology t;
#if defined(MPIZIP_HAVE_HWLOC)
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    t.why_not = "hwloc could not load the topology";
    return t;
  }
  t.available = true;
  t.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  t.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  t.hw_threads = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  hwloc_topology_destroy(topo);
#else
  t.why_not = "built without hwloc";
#endif
  return t;
}

}  // namespace mpizip::platform
