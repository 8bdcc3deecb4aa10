#include "src/core/comm_context.h"

#include "src/core/protocol.h"
#include "src/core/requests.h"
#include "src/core/settings.h"
#include "src/platform/log.h"

namespace mpizip::core {

CommContext::~CommContext() {
  // Bytes the transports still move for sends complete for the application (an IPC sender's copy
  // its receiver has not taken yet) go on in the background: the communicator may be freed before
  // its receivers take them, as MPI allows, and the duplicates below are freed with the sends
  // still pending, which MPI allows too.
  for (transport::Transport* t : {p2p_transport.get(), coll_transport.get()}) {
    if (t == nullptr) continue;
    if (std::unique_ptr<platform::Operation> op = t->take_unsent()) background_adopt(std::move(op));
  }
  // The hierarchy's and the pairwise collectives' communicators (each with its own context), then
  // the transports and the
  // group: they may still use their communicators while closing.
  hierarchy.reset();
  if (pairwise_comm != MPI_COMM_NULL) {
    protocol_detach(pairwise_comm);
    PMPI_Comm_free(&pairwise_comm);
  }
  tma_group.reset();
  coll_transport.reset();
  p2p_transport.reset();
  if (coll_comm != MPI_COMM_NULL) PMPI_Comm_free(&coll_comm);
  if (p2p_comm != MPI_COMM_NULL) PMPI_Comm_free(&p2p_comm);
}

Hierarchy::~Hierarchy() {
  for (MPI_Comm* sub : {&cross_comm, &node_comm}) {
    if (*sub == MPI_COMM_NULL) continue;
    protocol_detach(*sub);
    PMPI_Comm_free(sub);
  }
}

namespace {

// MPIZIP_PRETEND_NODE_RANKS=G: ranks of one machine whose ranks in MPI_COMM_WORLD differ in their
// quotient by G are on different nodes (collective over `comm`; one gather). Only `same_host`
// changes: `ipc` still says which ranks can map each other's device memory, which the emulated
// link uses between pretend nodes, as under MPIZIP_FORCE_INTERNODE.
Status apply_pretend_nodes(MPI_Comm comm, transport::NodeMap* nodes) {
  const int64_t g = settings().pretend_node_ranks;
  if (g <= 0) return Status::kOk;
  int world = 0;
  MPIZIP_CHECK(Status::mpi(PMPI_Comm_rank(MPI_COMM_WORLD, &world)));
  const int mine = static_cast<int>(world / g);
  std::vector<int> all(static_cast<size_t>(nodes->size));
  MPIZIP_CHECK(Status::mpi(PMPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm)));
  for (int p = 0; p < nodes->size; ++p) {
    nodes->same_host[p] = nodes->same_host[p] && all[p] == mine;
  }
  return Status::kOk;
}

}  // namespace

Status comm_context_create(MPI_Comm comm, const transport::Options& options, bool collectives,
                           std::shared_ptr<CommContext>* out) {
  auto c = std::make_shared<CommContext>();
  if (PMPI_Comm_dup(comm, &c->p2p_comm) != MPI_SUCCESS) return Status::kMpiError;
  PMPI_Comm_set_name(c->p2p_comm, "MPIZip shadow");
  PMPI_Comm_set_errhandler(c->p2p_comm, MPI_ERRORS_RETURN);
  Status s = transport::find_node_map(c->p2p_comm, &c->nodes);
  if (ok(s)) s = apply_pretend_nodes(c->p2p_comm, &c->nodes);
  if (ok(s)) s = transport::create(c->p2p_comm, options, c->nodes, &c->p2p_transport);
  if (!ok(s)) {
    MPIZIP_WARN("no transport for a communicator (%s); its messages pass through",
                status_string(s));
    return s;
  }
  MPIZIP_INFO("point-to-point payloads of a communicator of %d ranks over transport %s",
              c->nodes.size, c->p2p_transport->name());
  if (collectives && comm_context_add_collectives(comm, options, c.get()) == Status::kMpiError)
    return Status::kMpiError;
  *out = std::move(c);
  return Status::kOk;
}

Status comm_context_add_collectives(MPI_Comm comm, const transport::Options& options,
                                    CommContext* c) {
  if (PMPI_Comm_dup(comm, &c->coll_comm) != MPI_SUCCESS) return Status::kMpiError;
  PMPI_Comm_set_name(c->coll_comm, "MPIZip collectives");
  const Status s = transport::create(c->coll_comm, options, c->nodes, &c->coll_transport);
  if (!ok(s)) {
    MPIZIP_WARN("cannot create the collectives' transport (%s); they go to the MPI library",
                status_string(s));
    c->coll_transport.reset();
    PMPI_Comm_free(&c->coll_comm);
  }
  return s;
}

}  // namespace mpizip::core
