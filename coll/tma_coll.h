// TMA intra-node collectives: MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter(_block), MPI_Scan,
// MPI_Exscan, MPI_Bcast, MPI_Gather, MPI_Scatter, MPI_Allgather(v) and MPI_Alltoall on a
// communicator whose ranks all share one node, run by the TMA engine (kernels/tma_engine.h) over
// CUDA IPC mappings of the ranks' buffers, with the planner's tasks (coll/tma_plan.h) and a CTA
// count from the tuning table (coll/tma_tuning.h).
//
// Group. A communicator's first call sets up its group, collectively (make_group): every rank must be
// on one node (the caller's node map says so), have a GPU and CUDA IPC; each allocates a signal area
// (kernels::tma::kSignalBytes), exports it, and maps every peer's. The caller keeps the group for
// the communicator (src/core/comm_context.h). If any rank cannot take part, the group is off for
// good on every rank, with one log line, and the calls pass to the MPI library.
//
// A call. Each rank describes its input and output device buffers (transport/ipc.h); a host buffer,
// or device memory that CUDA IPC cannot share, is staged into the group's own device memory first,
// and an in-place reduce-scatter-block's input too (its owner overwrites the input's first block
// while rank 0 still reads it). One small MPI_Allreduce then says whether every rank is ready and
// whether any rank's buffers changed since the last call; only then are the descriptors gathered
// and mapped (cached by allocation). It also is the entry barrier: every rank's buffers are ready.
// The kernel ends at the engine's end barrier (flags in peer memory), or, with host_sync, the
// call synchronises its stream and the ranks agree in a small MPI_Allreduce that every rank's part
// succeeded. Staged outputs are copied back.
//
// Failures after the entry. A rank whose part fails (its launch, its kernel, its plan) tells its
// peers through its fault word in their signal areas (kernels/tma_engine.h); their kernels stop
// waiting for it, and a kernel that waits longer than Options::timeout_ms stops too and tells the
// others. Every rank that did not pass the barrier returns an error (kPeerFailed or kTimedOut,
// which src/core reports in one log line as MPI_ERR_OTHER); a rank whose kernel passed it has its complete result (every peer finished its part). The
// group stays on: the sequence numbers stay in step, so the next call starts clean.
//
// The choice between this path and the MPI library is the caller's and depends only on arguments
// every rank shares; these functions then agree collectively before touching any buffer, so when
// *handled comes back false every rank passes the call on, with nothing written.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "coll/tma_plan.h"
#include "kernels/format.h"
#include "kernels/reduce.h"
#include "src/platform/status.h"

namespace mpizip::coll::tma {

struct Options {
  int max_ctas = 8;            // the CTA budget (MPIZIP_TMA_MAX_CTAS), 1..kMaxCtas
  int ctas = 0;                // forced CTA count (MPIZIP_TMA_CTAS); 0: the tuning table
  uint32_t chunk_bytes = 32768;  // ring stage size
  // From this many collective bytes (collective_bytes()) on, a plan of copies alone runs on the GPU
  // runtime's device-to-device copies, the kernel only ending it at its barrier; 0: every size,
  // UINT64_MAX: never. This rank's choice alone: the bytes it writes are the same either way.
  uint64_t copy_engine_bytes = uint64_t{4} << 20;
  int stages = 6;              // ring depth
  bool sm_path = false;        // threads' loads and stores instead of bulk copies
  bool host_sync = false;      // end barrier on the host instead of flags in peer memory
  // Whether kernels of ranks that share a GPU run side by side (MPIZIP_GPU_SHARING): 0 this
  // rank's platform::gpu_processes_concurrent(), 1 yes, 2 no. Where ranks share a GPU and any of
  // them says no, the engine (whose kernels wait on each other's) is off for the communicator.
  int sharing = 0;
  uint64_t timeout_ms = 10000;  // longest wait at the end barrier (MPIZIP_TMA_TIMEOUT_MS)
  // Test hook (MPIZIP_FAULT=tma-fail, tma-silent): 0 none; 1 this rank's part fails as a failed launch does (its
  // peers are told); 2 this rank skips its kernel without telling its peers.
  int fault = 0;
};

// A communicator's group (signal areas, peers' mappings, staging memory); defined in tma_coll.cc.
struct Group;

// Collective over `comm`: its group, off where any rank cannot take part. `one_node`: every rank of
// `comm` shares this machine.
std::shared_ptr<Group> make_group(MPI_Comm comm, bool one_node, const Options& o);

// One collective on `comm` with its group `g` (coll/tma_plan.h, Call): `in` and `out` are the
// application's input and output buffers (`in_place`: the input is MPI_IN_PLACE and lives in `out`
// as MPI says; a broadcast's root passes its buffer as `in`, the other ranks as `out`), `type` and
// `op` the reduction's (kernels/reduce.h; ignored by the copies), `can` this rank's own facts (its
// datatypes contiguous, say): where any rank says no, every rank passes the call on. The call's
// outcome when *handled is true (kPeerFailed: a peer's part failed; kTimedOut: a peer did not reach
// the end barrier within Options::timeout_ms); an error with *handled false only where the MPI
// library failed the group's own agreement.
struct Args {
  Call call;
  bool in_place = false;
  const void* in = nullptr;
  void* out = nullptr;
  kernels::reduce::Type type = kernels::reduce::Type::kU8;
  kernels::reduce::Op op = kernels::reduce::Op::kSum;
  bool can = true;
};
// How this rank's part of a handled call ran (for the statistics and the tests of forced paths).
struct Outcome {
  bool runtime_copies = false;  // its copies ran on the GPU runtime's copies, not the engine's CTAs
  bool staged = false;          // its input or output went through the group's own memory
};
Status collective(Group* g, const Args& a, MPI_Comm comm, const Options& o, bool* handled,
                  Outcome* outcome = nullptr);

}  // namespace mpizip::coll::tma
