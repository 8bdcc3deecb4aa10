// An asynchronous operation that MPIZip runs behind an application's MPI_Request: a compressed send
// or receive, later a collective. The request engine (src/core/requests.h) owns operations and
// advances them from the application's wait and test calls. No MPI types here: the engine turns an
// OpStatus into an MPI_Status (and its error into an MPI error code, src/core/errors.h).
#pragma once

#include <cstdint>

#include "src/platform/status.h"

namespace mpizip::platform {

struct OpStatus {
  int source = -1;         // rank in the operation's communicator (receives)
  int tag = -1;            // the application's tag (receives)
  Status error;            // kOk, or why the operation failed (kTruncated: the message was
                           // longer than the receive buffer)
  uint64_t bytes = 0;      // bytes delivered to (receive) or taken from (send) the application
  uint64_t message_bytes = 0;  // receives: the whole message's bytes (more than `bytes` when it
                               // was truncated)
  bool cancelled = false;
};

class Operation {
 public:
  virtual ~Operation() = default;
  // Advances as far as possible without blocking. Returns true once the operation is complete;
  // status() is final from then on.
  virtual bool progress() = 0;
  // Tries to cancel. True when the operation is now cancelled (and complete); false when it has
  // progressed too far to be cancelled, and it then completes normally.
  virtual bool cancel() { return false; }
  // True when, although not complete, the operation no longer needs the application: its buffer
  // is free again and whatever MPI promises at completion holds (a send whose bytes are all in
  // MPIZip's memory and posted, its match message gone or, for a synchronous send, matched). The
  // request engine then completes the application's request and runs the rest in the background,
  // as an MPI library completes a buffered eager send.
  virtual bool detachable() const { return false; }
  // True while the operation has work that only its own side's MPIZip calls can do (posting to
  // MPI, waiting for the GPU codec before posting): a non-blocking send does that work before it
  // returns, so that a peer never waits for it while this side sits in an MPI call MPIZip does not
  // intercept (docs/DESIGN.md, "Progress").
  virtual bool awaits_own_calls() const { return false; }
  const OpStatus& status() const { return status_; }

 protected:
  OpStatus status_;
};

}  // namespace mpizip::platform
