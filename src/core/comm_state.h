// Per-communicator state, kept as an MPI attribute on the communicator. The keyval's copy callback
// gives a duplicated communicator its own fresh state; its delete callback retires the state when
// the communicator is freed. States stay in a process-wide registry until MPI_Finalize so that
// statistics of freed communicators are still reported.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <memory>

#include "p2p/probed_queue.h"
#include "cost/model.h"
#include "p2p/stream_ratios.h"

namespace mpizip::core {

struct CommContext;
struct CommHints;

inline constexpr int kMaxCallSites = 128;

// One MPI entry point, as the interposer names it. `index` < kMaxCallSites.
struct CallSite {
  int index;
  const char* name;
};

struct CallCounters {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> bytes{0};
};

// Protocol traffic of one element type on one communicator.
struct TypeCounters {
  std::atomic<uint64_t> messages{0};
  std::atomic<uint64_t> compressed{0};   // messages sent compressed
  std::atomic<uint64_t> app_bytes{0};    // bytes of the application's data
  std::atomic<uint64_t> wire_bytes{0};   // payload bytes that travelled
};

// Shared ownership: the registry holds one reference while the state is reported, the
// communicator's context (comm_context.h) one while the communicator has the protocol, and
// operations still pending on it (their traffic counters) one each, so that an operation that
// completes after MPI_Comm_free writes into a state that still exists.
struct CommState : std::enable_shared_from_this<CommState> {
  CommState();
  ~CommState();
  uint64_t id = 0;            // creation order in this process; 0 is MPI_COMM_WORLD
  int size = 0;               // number of ranks
  std::string origin;         // "MPI_COMM_WORLD", "dup of comm 0", ...
  std::atomic<MPI_Comm> handle{MPI_COMM_NULL};  // known once looked up
  std::atomic<bool> freed{false};               // the communicator was freed
  std::array<CallCounters, kMaxCallSites> counters;
  std::array<std::atomic<const char*>, kMaxCallSites> names{};

  // The point-to-point protocol, set up collectively when the communicator is created
  // (src/core/protocol.h); off for communicators MPIZip did not see created.
  std::atomic<bool> protocol{false};
  // What MPIZip owns for the communicator (comm_context.h), while `protocol` is set; operations
  // started on it hold references of their own.
  std::shared_ptr<CommContext> context;
  // The settings in force where MPI_Info hints changed them (comm_hints.h); null: the process's.
  // Every value it has pointed to stays in `hints_held` as long as the state.
  std::atomic<const CommHints*> hints{nullptr};
  std::vector<std::shared_ptr<const CommHints>> hints_held;
  std::atomic<uint32_t> bulk_tags{0};   // next transfer tag
  p2p::ProbedQueue probed;
  p2p::StreamRatios ratios;  // what each stream's messages compress to (p2p/stream_ratios.h)
  // When compressing pays on this communicator (cost/model.h): made with its context, the
  // transport's own link figures in it; null without the protocol.
  std::unique_ptr<cost::Model> cost;
  std::array<TypeCounters, 8> sent;     // by format::DType value (1..6)
  std::array<TypeCounters, 8> received;
  // Messages of a protocol signature of at most the bare size (p2p/wire.h): the MPI library's own.
  std::atomic<uint64_t> bare_sent{0};
  std::atomic<uint64_t> bare_received{0};
  // Collectives the intra-node engine ran (coll/tma_coll.h).
  std::atomic<uint64_t> engine_collectives{0};
  std::atomic<uint64_t> engine_runtime_copies{0};  // of those, copies made by the GPU runtime's copies
  std::atomic<uint64_t> engine_staged{0};  // of those, buffers staged through the engine's own memory
  // Collectives run in stages across nodes (coll/hierarchical.h), counted on the communicator
  // the application called them on.
  std::atomic<uint64_t> hierarchical_collectives{0};
  // MPI_Alltoallv, MPI_Alltoallw, MPI_Gatherv and MPI_Scatterv run as point-to-point messages
  // (src/core/coll_pairwise.h), counted on the application's communicator.
  std::atomic<uint64_t> pairwise_collectives{0};
  // Non-blocking collectives that ran on MPIZip's engines (statistics on).
  std::atomic<uint64_t> nonblocking_collectives{0};
  // Non-blocking collectives within one node deferred until every rank said where its buffers are
  // (src/core/coll_deferred.h), and of those, the ones that took MPIZip's way.
  std::atomic<uint64_t> deferred_collectives{0};
  std::atomic<uint64_t> deferred_mpizip{0};
  std::atomic<uint64_t> codec_ns{0};
  std::atomic<uint64_t> staging_ns{0};
};

// Creates the keyval and the state of MPI_COMM_WORLD. Called once, right after MPI is initialised.
int comm_state_setup();
// Releases the contexts still held (comm_context.h), in creation order, then frees the keyval.
// Called in MPI_Finalize, once pending operations have ended.
void comm_state_teardown();

// The state of `comm`, created on first use; nullptr for MPI_COMM_NULL or before setup.
// Thread-safe.
CommState* comm_state(MPI_Comm comm);
// The state of `comm` if it has one; never creates.
CommState* comm_state_find(MPI_Comm comm);
// The state that collects calls with no communicator (waits, tests, matched receives).
CommState* process_state();

// Calls `fn` on every state kept (live communicators, freed ones that saw calls up to a bound, and
// the aggregate of the other freed ones), in creation order, under the registry lock.
void for_each_comm_state(const std::function<void(CommState&)>& fn);
// Number of states in the registry (for tests of its bound).
size_t comm_state_count();

}  // namespace mpizip::core
