// Placement near a PCI device (src/platform/topology.h), on whatever PCI devices this machine has:
// an unknown bus id is reported, not guessed; a known one gives its cores, binds a thread to them
// and runs an allocation under a NUMA policy without changing its result.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "config.h"
#include "src/platform/topology.h"

#if defined(MPIZIP_HAVE_HWLOC)
#include <hwloc.h>
#endif

namespace mpizip::platform {
namespace {

TEST(Topology, UnknownDeviceIsReported) {
  Placement p = gpu_placement("ffff:ff:1f.7");
  EXPECT_FALSE(p.known);
  EXPECT_FALSE(p.why_not.empty());
  EXPECT_FALSE(bind_thread_near("ffff:ff:1f.7"));
  int x = 0;
  EXPECT_EQ(allocate_near("ffff:ff:1f.7", [&x]() -> void* { return &x; }), &x);
}

#if defined(MPIZIP_HAVE_HWLOC)
// The bus id of the first PCI device hwloc reports, if any.
std::string some_pci_device() {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0) return "";
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  std::string id;
  if (hwloc_topology_load(t) == 0) {
    hwloc_obj_t d = hwloc_get_next_pcidev(t, nullptr);
    if (d != nullptr) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", d->attr->pcidev.domain,
                    d->attr->pcidev.bus, d->attr->pcidev.dev, d->attr->pcidev.func);
      id = buf;
    }
  }
  hwloc_topology_destroy(t);
  return id;
}

TEST(Topology, PlacementNearAKnownDevice) {
  const std::string id = some_pci_device();
  if (id.empty()) GTEST_SKIP() << "hwloc reports no PCI device here";
  Placement p = gpu_placement(id);
  ASSERT_TRUE(p.known) << p.why_not;
  EXPECT_FALSE(p.cpus.empty());
  std::string nics;
  for (const auto& n : p.nics) nics += " " + n;
  std::printf("near %s: cores %s, NUMA %s, network devices:%s\n", id.c_str(), p.cpus.c_str(),
              p.numa_nodes.c_str(), nics.empty() ? " none" : nics.c_str());
  EXPECT_TRUE(bind_thread_near(id));
  int x = 0;
  EXPECT_EQ(allocate_near(id, [&x]() -> void* { return &x; }), &x);
}
#endif

}  // namespace
}  // namespace mpizip::platform
