#include "src/platform/topology.h"

#include <algorithm>
#include <utility>

#include "config.h"

#if defined(MPIZIP_HAVE_HWLOC)
#include <hwloc.h>
#endif

namespace mpizip::platform {

#if defined(MPIZIP_HAVE_HWLOC)
namespace {

// The process's topology with its I/O devices, loaded once (read-only afterwards, which hwloc
// allows from several threads).
hwloc_topology_t loaded() {
  static hwloc_topology_t topo = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0) return static_cast<hwloc_topology_t>(nullptr);
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t) != 0) {
      hwloc_topology_destroy(t);
      return static_cast<hwloc_topology_t>(nullptr);
    }
    return t;
  }();
  return topo;
}

std::string list_of(hwloc_const_bitmap_t set) {
  char* s = nullptr;
  if (hwloc_bitmap_list_asprintf(&s, set) < 0 || s == nullptr) return "";
  std::string out(s);
  free(s);
  return out;
}

// The GPU's PCI device and its nearest non-I/O ancestor (a NUMA node's or package's object).
bool locate(hwloc_topology_t topo, const std::string& bus_id, hwloc_obj_t* pci, hwloc_obj_t* near) {
  if (topo == nullptr || bus_id.empty()) return false;
  *pci = hwloc_get_pcidev_by_busidstring(topo, bus_id.c_str());
  if (*pci == nullptr) return false;
  *near = hwloc_get_non_io_ancestor_obj(topo, *pci);
  return *near != nullptr && (*near)->cpuset != nullptr;
}

}  // namespace
#endif

Topology topology() {
  Topology t;
#if defined(MPIZIP_HAVE_HWLOC)
  hwloc_topology_t topo = loaded();
  if (topo == nullptr) {
    t.why_not = "hwloc could not load the topology";
    return t;
  }
  t.available = true;
  t.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  t.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  t.hw_threads = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
#else
  t.why_not = "built without hwloc";
#endif
  return t;
}

Placement gpu_placement(const std::string& pci_bus_id) {
  Placement p;
#if defined(MPIZIP_HAVE_HWLOC)
  hwloc_topology_t topo = loaded();
  hwloc_obj_t pci = nullptr, near = nullptr;
  if (!locate(topo, pci_bus_id, &pci, &near)) {
    p.why_not = topo == nullptr ? "hwloc could not load the topology"
                                : "hwloc does not see the GPU's PCI device " + pci_bus_id;
    return p;
  }
  p.known = true;
  p.cpus = list_of(near->cpuset);
  if (near->nodeset != nullptr) p.numa_nodes = list_of(near->nodeset);
  // Network devices by how far up from the GPU the first object they share with it is: nearer
  // first (a PCIe switch beats the host bridge, which beats the package, then the machine). By
  // parent links: hwloc's common-ancestor helper does not take I/O objects.
  std::vector<hwloc_obj_t> up;  // the GPU's ancestors, nearest first
  for (hwloc_obj_t o = pci->parent; o != nullptr; o = o->parent) up.push_back(o);
  std::vector<std::pair<size_t, std::string>> nics;
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os != nullptr;
       os = hwloc_get_next_osdev(topo, os)) {
    if (os->attr == nullptr || (os->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK &&
                                os->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS)) {
      continue;
    }
    for (hwloc_obj_t o = os->parent; o != nullptr; o = o->parent) {
      auto it = std::find(up.begin(), up.end(), o);
      if (it == up.end()) continue;
      nics.emplace_back(static_cast<size_t>(it - up.begin()),
                        std::string(os->name != nullptr ? os->name : "?") + " (shares " +
                            hwloc_obj_type_string(o->type) + ")");
      break;
    }
  }
  std::stable_sort(nics.begin(), nics.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& n : nics) p.nics.push_back(std::move(n.second));
#else
  (void)pci_bus_id;
  p.why_not = "built without hwloc";
#endif
  return p;
}

std::string nearest_infiniband_device(const std::string& pci_bus_id) {
#if defined(MPIZIP_HAVE_HWLOC)
  hwloc_topology_t topo = loaded();
  hwloc_obj_t pci = nullptr, near = nullptr;
  if (!locate(topo, pci_bus_id, &pci, &near)) return "";
  std::vector<hwloc_obj_t> up;  // the GPU's ancestors, nearest first
  for (hwloc_obj_t o = pci->parent; o != nullptr; o = o->parent) up.push_back(o);
  std::string best;
  size_t best_steps = up.size() + 1;
  int devices = 0;
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os != nullptr;
       os = hwloc_get_next_osdev(topo, os)) {
    if (os->attr == nullptr || os->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS ||
        os->name == nullptr) {
      continue;
    }
    ++devices;
    for (hwloc_obj_t o = os->parent; o != nullptr; o = o->parent) {
      auto it = std::find(up.begin(), up.end(), o);
      if (it == up.end()) continue;
      const auto steps = static_cast<size_t>(it - up.begin());
      if (steps < best_steps) {
        best_steps = steps;
        best = os->name;
      }
      break;
    }
  }
  return devices > 1 ? best : "";
#else
  (void)pci_bus_id;
  return "";
#endif
}

bool bind_thread_near(const std::string& pci_bus_id) {
#if defined(MPIZIP_HAVE_HWLOC)
  hwloc_topology_t topo = loaded();
  hwloc_obj_t pci = nullptr, near = nullptr;
  if (!locate(topo, pci_bus_id, &pci, &near)) return false;
  return hwloc_set_cpubind(topo, near->cpuset, HWLOC_CPUBIND_THREAD) == 0;
#else
  (void)pci_bus_id;
  return false;
#endif
}

void* allocate_near(const std::string& pci_bus_id, const std::function<void*()>& alloc) {
#if defined(MPIZIP_HAVE_HWLOC)
  hwloc_topology_t topo = loaded();
  hwloc_obj_t pci = nullptr, near = nullptr;
  if (!locate(topo, pci_bus_id, &pci, &near) || near->nodeset == nullptr ||
      hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE) < 2) {
    return alloc();  // one NUMA node: nothing to choose
  }
  hwloc_bitmap_t old_set = hwloc_bitmap_alloc();
  hwloc_membind_policy_t old_policy = HWLOC_MEMBIND_DEFAULT;
  const bool saved = hwloc_get_membind(topo, old_set, &old_policy,
                                       HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) == 0;
  const bool bound = hwloc_set_membind(topo, near->nodeset, HWLOC_MEMBIND_BIND,
                                       HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) == 0;
  void* p = alloc();
  if (bound && saved) {
    hwloc_set_membind(topo, old_set, old_policy, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
  }
  hwloc_bitmap_free(old_set);
  return p;
#else
  (void)pci_bus_id;
  return alloc();
#endif
}

}  // namespace mpizip::platform
