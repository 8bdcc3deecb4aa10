// The per-communicator context: what MPIZip owns for one communicator on which its protocol runs.
//
// Where the communicator's ranks live (its node map) is found once, when the context is created.
// Point-to-point bulk payloads and the two-shot collectives each travel on a private duplicate of
// the application's communicator, through a transport of their own (src/transport), both built
// from that map; the collectives also keep their pools and streams (coll/resources.h), and the
// intra-node collectives their group (coll/tma_coll.h: signal areas, mappings, staging memory),
// set up by their first call. All of it lives here, created collectively when the communicator is
// (protocol_attach) and held by shared ownership: the
// communicator's state (comm_state.h) holds one reference until the application frees the
// communicator, and every operation started on it holds another through its channel
// (p2p::Channel::owner, coll::Channel::owner). A communicator freed with operations pending keeps
// its context until the last of them ends, as MPI keeps a freed communicator for its pending
// operations; then the transports close and the duplicates are freed. MPI_Finalize releases the
// contexts still held, in creation order (comm_contexts_release). Statistics live apart, in the
// communicator's state, which outlives the communicator for the report.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "coll/resources.h"
#include "coll/tma_coll.h"
#include "src/platform/status.h"
#include "src/transport/transport.h"

namespace mpizip::core {

struct CommState;
struct DeferredQueue;  // coll_deferred.cc

// Where a communicator's ranks sit for the hierarchical collectives, and the two sub-communicators
// they run on: the ranks of this rank's node (`node_comm`, ranked by their rank in the
// communicator) and the ranks of equal rank in their node, one per node (`cross_comm`, ranked by
// node: nodes numbered by their lowest rank). Split from the collectives' private duplicate, with
// MPIZip's protocol set up on them (their own contexts), and freed with the communicator's
// context. `usable` is false, and both are null, where the communicator is not N >= 2 nodes of
// G >= 2 ranks each or a sub-communicator could not get MPIZip's collectives: the same on every
// rank.
struct Hierarchy {
  Hierarchy() = default;
  Hierarchy(const Hierarchy&) = delete;
  Hierarchy& operator=(const Hierarchy&) = delete;
  ~Hierarchy();
  bool usable = false;
  int nodes = 1;     // N
  int per_node = 1;  // G
  int node = 0;      // this rank's node (its rank in cross_comm)
  int local = 0;     // its rank in its node (in node_comm)
  std::vector<int> node_of, local_of;  // per rank of the communicator
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_Comm cross_comm = MPI_COMM_NULL;
};

struct CommContext {
  CommContext() = default;
  CommContext(const CommContext&) = delete;
  CommContext& operator=(const CommContext&) = delete;
  ~CommContext();

  // The communicator's state, which operations reach through their channel (its probed queue and
  // transfer tags, p2p::Channel): kept as long as the context. The state's own reference to the
  // context is dropped when the communicator is freed or MPI finalized, which ends the cycle.
  std::shared_ptr<CommState> state;

  transport::NodeMap nodes;  // found once, on p2p_comm (the same ranks as the communicator)

  // Point-to-point: bulk payloads.
  MPI_Comm p2p_comm = MPI_COMM_NULL;
  std::unique_ptr<transport::Transport> p2p_transport;

  // The two-shot collectives; null when MPIZIP_ALLREDUCE=off or their transport could not start
  // (the collectives then go to the MPI library).
  MPI_Comm coll_comm = MPI_COMM_NULL;
  std::unique_ptr<transport::Transport> coll_transport;
  coll::Resources coll_resources;
  uint64_t coll_seq = 0;  // collectives started, on every rank alike (MPI orders a communicator's
                          // collectives)

  // The intra-node collectives' group, set up by their first call on the communicator (collective,
  // as that call is); null until then.
  std::shared_ptr<coll::tma::Group> tma_group;

  // The hierarchical collectives' sub-communicators (coll/hierarchical.h), set up by the first
  // call that could take them (collective, as that call is); null until then.
  std::unique_ptr<Hierarchy> hierarchy;

  // The pairwise v-collectives' duplicate (src/core/coll_pairwise.h), with MPIZip's protocol, set
  // up by their first call (collective, as that call is; `pairwise_tried` from then on); null
  // where any rank could not set it up.
  MPI_Comm pairwise_comm = MPI_COMM_NULL;
  bool pairwise_tried = false;
  // Non-blocking collectives within one node waiting for their agreement (coll_deferred.h), set
  // up by the first of them; held by those calls too.
  std::shared_ptr<DeferredQueue> deferred;
};

// Collective over `comm`: its context, with the collectives' part when `collectives`. Every rank
// gets the same outcome (transport::create agrees on it). kOk or the transport's status, with one
// log line.
Status comm_context_create(MPI_Comm comm, const transport::Options& options, bool collectives,
                           std::shared_ptr<CommContext>* out);

// Collective over `comm`: adds the collectives' part to its context `c`, which has none (hints
// that turn the two-shot on for a communicator created without it, comm_hints.h). Every rank gets
// the same outcome; on failure the part stays absent, with one log line.
Status comm_context_add_collectives(MPI_Comm comm, const transport::Options& options,
                                    CommContext* c);

}  // namespace mpizip::core
