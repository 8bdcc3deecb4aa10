// The send entry points: every mode, blocking, non-blocking and persistent (p2p_route.h).
#include "src/core/p2p_route.h"

#include <memory>
#include <vector>

#include "p2p/staged.h"
#include "src/core/bsend_buffer.h"
#include "src/core/errors.h"
#include "src/core/mpi_beneath.h"
#include "src/core/p2p_way.h"
#include "src/core/runtime.h"

namespace mpizip::core {
namespace {

// A device buffer of another datatype in a buffered send: MPI copies the bytes into the attached
// buffer inside the call, so a host copy that lives for the call suffices.
int bsend_staged(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 MPI_Request* request) {
  p2p::HostCopy copy;
  Status s = copy.prepare(const_cast<void*>(buf), count, type);
  if (ok(s)) s = copy.load();
  int rc = report(s, "buffered send of a device buffer");
  if (rc == MPI_SUCCESS) {
    rc = request != nullptr ? PMPI_Ibsend(copy.base(), count, type, dest, tag, comm, request)
                            : PMPI_Bsend(copy.base(), count, type, dest, tag, comm);
  }
  return raise(comm, rc);
}

// The MPI library's own send or receive of the application's arguments: every message that does
// not take the protocol (bare ones, p2p/wire.h, and plain ones), with a device buffer staged through
// host memory where the MPI library cannot read it.
[[gnu::always_inline]] inline
int send_mpi(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
             p2p::SendMode mode) {
  const bool synchronous = mode == p2p::SendMode::kSynchronous;
  if (staged(buf, count, dest)) [[unlikely]] {
    if (mode == p2p::SendMode::kBuffered) {
      return bsend_staged(buf, count, type, dest, tag, comm, nullptr);
    }
    std::unique_ptr<platform::Operation> op;
    Status s = p2p::start_staged_send(buf, count, type, dest, tag, comm, synchronous, &op);
    if (ok(s)) s = drive(*op);
    return raise(comm, s, "send of a device buffer");
  }
  if (mode == p2p::SendMode::kBuffered) return PMPI_Bsend(buf, count, type, dest, tag, comm);
  return synchronous ? PMPI_Ssend(buf, count, type, dest, tag, comm)
                     : PMPI_Send(buf, count, type, dest, tag, comm);
}

[[gnu::always_inline]] inline
int isend_mpi(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request, p2p::SendMode mode) {
  const bool synchronous = mode == p2p::SendMode::kSynchronous;
  if (staged(buf, count, dest)) [[unlikely]] {
    if (mode == p2p::SendMode::kBuffered) {
      return bsend_staged(buf, count, type, dest, tag, comm, request);
    }
    std::unique_ptr<platform::Operation> op;
    int rc = report(p2p::start_staged_send(buf, count, type, dest, tag, comm, synchronous, &op),
                    "send of a device buffer");
    if (rc == MPI_SUCCESS) rc = request_start(std::move(op), comm, request);
    return raise(comm, rc);
  }
  if (mode == p2p::SendMode::kBuffered) {
    return PMPI_Ibsend(buf, count, type, dest, tag, comm, request);
  }
  return synchronous ? PMPI_Issend(buf, count, type, dest, tag, comm, request)
                     : PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

// A message that own_bare() found of at most the bare size: counted, then the MPI library's own.
[[gnu::always_inline]] inline
int send_bare(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              p2p::SendMode mode) {
  if (stats_on()) [[unlikely]] count_own_bare(comm, true);
  return send_mpi(buf, count, type, dest, tag, comm, mode);
}

[[gnu::always_inline]] inline
int isend_bare(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request, p2p::SendMode mode) {
  if (stats_on()) [[unlikely]] count_own_bare(comm, true);
  return isend_mpi(buf, count, type, dest, tag, comm, request, mode);
}

// Posts the protocol's send of a routed buffer: packed first when its elements are not back to
// back (the packed copy lives as long as the send).
Status post_routed_send(const Route& r, int dest, int tag, p2p::SendMode mode,
                        std::unique_ptr<platform::Operation>* op) {
  if (!r.packed) {
    return p2p::start_send(r.channel(), r.buffer, dest, tag, mode, op, sent_counter(r));
  }
  platform::HostBuffer packed;
  MPIZIP_CHECK(p2p::pack(r.layout, &packed));
  p2p::UserBuffer b = r.buffer;
  b.ptr = packed.data();
  b.device = false;
  std::unique_ptr<platform::Operation> inner;
  MPIZIP_CHECK(p2p::start_send(r.channel(), b, dest, tag, mode, &inner, sent_counter(r)));
  *op = p2p::keep_packed(std::move(inner), std::move(packed));
  return Status::kOk;
}

}  // namespace

// Starts the protocol's send of a routed buffer. A buffered one first reserves what MPI would
// take from the attached buffer, held until the send is done (bsend_buffer.h).
Status start_routed_send(const Route& r, int dest, int tag, p2p::SendMode mode,
                         std::unique_ptr<platform::Operation>* op) {
  if (mode != p2p::SendMode::kBuffered) return post_routed_send(r, dest, tag, mode, op);
  std::shared_ptr<const void> reserved;
  const int rc = bsend_reserve(r.buffer.count * format::elem_bytes(r.buffer.dtype), &reserved);
  if (rc != MPI_SUCCESS) return Status::mpi(rc);
  std::unique_ptr<platform::Operation> inner;
  MPIZIP_CHECK(post_routed_send(r, dest, tag, mode, &inner));
  *op = hold_while_running(std::move(inner), std::move(reserved));
  return Status::kOk;
}

namespace {

[[gnu::noinline]] int send_mode(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                                MPI_Comm comm, p2p::SendMode mode) {
  const Small small = small_message(buf, count, type, dest, comm, true);
  count_bare(small, true);
  std::optional<Route> r = route_of(small, buf, count, type, comm);
  if (!r) return send_mpi(buf, count, type, dest, tag, comm, mode);
  std::unique_ptr<platform::Operation> op;
  Status s = start_routed_send(*r, dest, tag, mode, &op);
  if (ok(s)) s = drive_detachable(std::move(op));
  return raise(comm, s, "send");
}

[[gnu::noinline]] int isend_mode(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                                 MPI_Comm comm, MPI_Request* request, p2p::SendMode mode) {
  // A plain message (p2p/wire.h) is the MPI library's own: its request is MPI's, with nothing of
  // MPIZip's to advance or complete.
  const Small small = small_message(buf, count, type, dest, comm, true);
  count_bare(small, true);
  auto r = route_of(small, buf, count, type, comm);
  if (!r) return isend_mpi(buf, count, type, dest, tag, comm, request, mode);
  std::unique_ptr<platform::Operation> op;
  Status s = start_routed_send(*r, dest, tag, mode, &op);
  // The work only this rank can do (encoding, posting to MPI) is done before the call returns:
  // a receiver must not wait for it while this rank sits in a call MPIZip does not intercept.
  while (ok(s) && op->awaits_own_calls() && !op->progress()) progress();
  int rc = report(s, "send");
  if (rc == MPI_SUCCESS) rc = request_start(std::move(op), comm, request);
  return raise(comm, rc);
}

// A persistent send of any mode: each MPI_Start runs a fresh send (device buffers of other
// datatypes staged; a buffered one of those as a standard send, which MPI's rules allow only
// where the attached buffer would not run out: MPIZip does not count it against that buffer).
int send_init_mode(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request, p2p::SendMode mode) {
  auto r = route(buf, count, type, dest, comm);
  const bool synchronous = mode == p2p::SendMode::kSynchronous;
  if (r || staged(buf, count, dest)) {
    // MPI's own argument checks (rank, tag, count, datatype), which the MPI library makes at this
    // call and MPIZip's persistent request would otherwise put off to MPI_Start: the same call to
    // the library, its inactive request freed unused. An error went through the communicator's
    // error handler there.
    MPI_Request checked = MPI_REQUEST_NULL;
    const int rc = synchronous ? PMPI_Ssend_init(buf, count, type, dest, tag, comm, &checked)
                   : mode == p2p::SendMode::kBuffered
                       ? PMPI_Bsend_init(buf, count, type, dest, tag, comm, &checked)
                       : PMPI_Send_init(buf, count, type, dest, tag, comm, &checked);
    if (rc != MPI_SUCCESS) return rc;
    PMPI_Request_free(&checked);
  }
  if (!r && staged(buf, count, dest)) {
    return raise(comm, request_persistent(
        [buf, count, type = p2p::HeldType(type), dest, tag, comm,
         synchronous](std::unique_ptr<platform::Operation>* op) {
          return p2p::start_staged_send(buf, count, type, dest, tag, comm, synchronous, op);
        },
        comm, request));
  }
  if (!r) {
    switch (mode) {
      case p2p::SendMode::kSynchronous:
        return PMPI_Ssend_init(buf, count, type, dest, tag, comm, request);
      case p2p::SendMode::kBuffered:
        return PMPI_Bsend_init(buf, count, type, dest, tag, comm, request);
      case p2p::SendMode::kStandard:
        break;
    }
    return PMPI_Send_init(buf, count, type, dest, tag, comm, request);
  }
  Route route_copy = *r;
  return raise(comm, request_persistent(
      [route_copy, dest, tag, mode](std::unique_ptr<platform::Operation>* op) {
        return start_routed_send(route_copy, dest, tag, mode, op);
      },
      comm, request));
}

}  // namespace

int send_any(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (own_bare(count, type, dest)) [[likely]] {
    return send_bare(buf, count, type, dest, tag, comm, p2p::SendMode::kStandard);
  }
  return send_mode(buf, count, type, dest, tag, comm, p2p::SendMode::kStandard);
}

int ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (own_bare(count, type, dest)) [[likely]] {
    return send_bare(buf, count, type, dest, tag, comm, p2p::SendMode::kSynchronous);
  }
  return send_mode(buf, count, type, dest, tag, comm, p2p::SendMode::kSynchronous);
}

int bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (own_bare(count, type, dest)) [[likely]] {
    return send_bare(buf, count, type, dest, tag, comm, p2p::SendMode::kBuffered);
  }
  return send_mode(buf, count, type, dest, tag, comm, p2p::SendMode::kBuffered);
}

int isend_any(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  if (own_bare(count, type, dest)) [[likely]] {
    return isend_bare(buf, count, type, dest, tag, comm, request, p2p::SendMode::kStandard);
  }
  return isend_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kStandard);
}

int issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request) {
  if (own_bare(count, type, dest)) [[likely]] {
    return isend_bare(buf, count, type, dest, tag, comm, request, p2p::SendMode::kSynchronous);
  }
  return isend_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kSynchronous);
}

int ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request) {
  if (own_bare(count, type, dest)) [[likely]] {
    return isend_bare(buf, count, type, dest, tag, comm, request, p2p::SendMode::kBuffered);
  }
  return isend_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kBuffered);
}

int send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return send_init_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kStandard);
}

int ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return send_init_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kSynchronous);
}

int bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return send_init_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kBuffered);
}

Status start_send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  std::unique_ptr<platform::Operation>* op, MPI_Request* plain) {
  *plain = MPI_REQUEST_NULL;
  const Small small = small_message(buf, count, type, dest, comm, true);
  count_bare(small, true);
  auto r = route_of(small, buf, count, type, comm);
  if (!r) {
    if (staged(buf, count, dest))
      return p2p::start_staged_send(buf, count, type, dest, tag, comm, false, op);
    return Status::mpi(PMPI_Isend(buf, count, type, dest, tag, comm, plain));
  }
  Status s = start_routed_send(*r, dest, tag, p2p::SendMode::kStandard, op);
  while (ok(s) && (*op)->awaits_own_calls() && !(*op)->progress()) progress();
  return s;
}

}  // namespace mpizip::core
