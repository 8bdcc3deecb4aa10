// Non-blocking collectives within one node whose way depends on where every rank's buffers are
// (docs/DESIGN.md, "Non-blocking collectives within one node").
//
// Within one node MPIZip's own algorithms move device buffers GPU to GPU (the two-shot's engine
// over CUDA IPC, pairwise messages over CUDA IPC), where the MPI library would have them staged
// through host memory three copies deep; on host buffers the MPI library's shared-memory
// algorithms are the faster. No rank knows where its peers' buffers are, and a non-blocking call
// may not wait for its peers to find out (a peer may reach its own call only after a message this
// rank sends later). So the call is deferred: it posts a non-blocking agreement (each rank says
// whether its buffers suit MPIZip's way: one MPI_Iallreduce of one int on the communicator's
// private point-to-point duplicate) and returns; the collective itself starts once the answer is
// in, from whichever MPIZip call advances it (the application's wait or test, or any other
// request's): MPIZip's way where every rank said yes, else the MPI library's non-blocking call
// (device buffers staged) on a private duplicate of the communicator of its own. The deferred
// calls of one communicator start in the order they were made, on every rank, so the MPI library
// matches them, and the two-shot's sequence number is taken when the call is made; a blocking
// call that posts where a deferred one might (the pairwise duplicate) first starts every earlier
// deferred call, and so does MPI_Comm_free: both are collective, so every rank has made the
// earlier calls and their agreements complete.
//
// A deferred call keeps its arguments (buffers, counts, root) until it starts, as MPI requires the
// application to leave them alone until the call completes; datatypes other than the predefined
// ones are duplicated at the call, since MPI lets the application free a datatype a pending call
// uses.
#pragma once

#include <mpi.h>

#include <functional>
#include <initializer_list>
#include <memory>

#include "src/core/comm_context.h"
#include "src/platform/operation.h"
#include "src/platform/status.h"

namespace mpizip::core {

struct CommState;

// How a deferred call starts once its agreement is in: `all` true where every rank said yes;
// `library` the communicator the MPI library's form runs on (the call's own duplicate of the
// application's, ranked alike); `seq` the two-shot's sequence number reserved at the call. Stores
// the operation in *op, or returns the failure (the call then completes with it).
struct DeferredStart {
  bool all = false;
  MPI_Comm library = MPI_COMM_NULL;
  uint64_t seq = 0;
};
using DeferredStarter =
    std::function<Status(const DeferredStart& how, std::unique_ptr<platform::Operation>* op)>;

// The context whose non-blocking calls defer: `comm`'s where MPIZip's protocol runs on it and its
// ranks share one node (not MPIZIP_FORCE_INTERNODE): the same on every rank. Null otherwise.
CommContext* deferring_context(MPI_Comm comm);

// Whether this rank's buffers of a call suit MPIZip's way within one node: each one the call uses
// (null or MPI_IN_PLACE where it uses none) in device memory, which moves over CUDA IPC, or host
// compression on for `comm`, under which host buffers take MPIZip's algorithms as device ones do
// (how `make check` runs these ways on a machine without a GPU).
bool buffers_suit_node(MPI_Comm comm, std::initializer_list<const void*> buffers);

// Makes the call: posts the agreement (this rank says `mine`), reserves the two-shot's sequence
// number where `twoshot`, and returns the application's request, which completes once the
// collective `start` starts has. An MPI error code, raised on `comm`.
int defer(MPI_Comm comm, CommContext& c, bool mine, bool twoshot, DeferredStarter start,
          const char* what, MPI_Request* request);

// Starts every deferred call of `c`, waiting for their agreements. For blocking collective calls
// (and MPI_Comm_free) only.
Status deferred_drain(CommContext& c);

// A datatype the deferred call may keep: `type` itself where it is predefined (or null), else a
// duplicate that the returned holder frees.
class KeptType {
 public:
  KeptType() = default;
  explicit KeptType(MPI_Datatype type);
  KeptType(const KeptType&) = delete;
  KeptType& operator=(const KeptType&) = delete;
  KeptType(KeptType&& o) noexcept : type_(o.type_), owned_(o.owned_) { o.owned_ = false; }
  ~KeptType();
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  bool owned_ = false;
};

}  // namespace mpizip::core
