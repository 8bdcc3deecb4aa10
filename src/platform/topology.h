// Machine topology through hwloc: what mpizip-info shows, and where MPIZip places the work it does
// for a GPU (its progress thread, its pinned staging memory) and which network devices are nearest.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace mpizip::platform {

struct Topology {
  bool available = false;  // hwloc in the build and the topology loaded
  std::string why_not;     // when not available
  int numa_nodes = 0;
  int cores = 0;
  int hw_threads = 0;
};

Topology topology();

// Where a GPU (by PCI bus id, "0000:19:00.0") sits: the cores and NUMA nodes nearest its PCI
// device, and the machine's network and InfiniBand devices, nearest first.
struct Placement {
  bool known = false;
  std::string why_not;             // when not known
  std::string cpus;                // hwloc's list syntax, e.g. "0-15"
  std::string numa_nodes;          // e.g. "0"
  std::vector<std::string> nics;   // "mlx5_0 (shares PCIBridge)", nearest first
};
Placement gpu_placement(const std::string& pci_bus_id);

// The InfiniBand device (e.g. "mlx5_2") nearest the GPU, when the machine has more than one;
// empty otherwise (one or none: nothing to choose) and where the GPU's place is not known.
std::string nearest_infiniband_device(const std::string& pci_bus_id);

// Binds the calling thread to the cores nearest the GPU. False (nothing changed) when the GPU's
// place is not known or binding fails.
bool bind_thread_near(const std::string& pci_bus_id);

// Runs `alloc` with the calling thread's memory policy bound to the NUMA nodes nearest the GPU, so
// that the pages it allocates and touches (pinned host memory) land there, then restores the
// thread's policy. Where the place is not known, just runs `alloc`.
void* allocate_near(const std::string& pci_bus_id, const std::function<void*()>& alloc);

}  // namespace mpizip::platform
