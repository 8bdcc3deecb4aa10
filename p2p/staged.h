// Device buffers of datatypes outside the protocol (MPI_INT, derived types, ...) under an MPI that
// cannot read GPU memory: each side stages through host memory on its own (no protocol needed, the
// message is the application's). The staged region is the datatype's span, from its true lower
// bound to the end of the last element, so derived datatypes keep their layout; a receive of a
// non-contiguous datatype copies the span in first so that its gaps keep the device's contents,
// and a contiguous one copies back only the bytes that arrived (one copy each side: the small
// device messages' latency).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "src/platform/buffers.h"
#include "src/platform/operation.h"
#include "src/platform/status.h"

namespace mpizip::p2p {

// A host copy of the span that `count` elements of `type` occupy in a device buffer, standing in
// for it in an MPI call: [true_lb, true_lb + span) from the buffer's address. (The collectives
// stage with src/core/coll_staging.h, which also covers the v- and w-variants' displacements.)
class HostCopy {
 public:
  // Sizes the copy for (count, type) at `device` (kOutOfMemory when host memory ran out).
  Status prepare(void* device, int count, MPI_Datatype type);
  // Device -> host (a receive of a non-contiguous datatype loads first too, so that its gaps keep
  // the device's contents when the span is stored back); host -> device, of the first `bytes` of
  // the span where the datatype is contiguous (what arrived), of all of it where it is not (and
  // by default).
  Status load() const;
  Status store(uint64_t bytes = UINT64_MAX) const;
  // Whether the span holds the elements back to back, no gaps.
  bool contiguous() const { return contiguous_; }
  // The host address standing for the device buffer's address.
  void* base() const { return host_.data() - lb_; }
  void release() { host_.clear(); }

 private:
  void* device_ = nullptr;
  MPI_Aint lb_ = 0;
  uint64_t bytes_ = 0;
  bool contiguous_ = false;
  platform::HostBuffer host_;  // pooled, pinned where possible
};

// Posts a staged send (MPI_Isend or MPI_Issend of a host copy).
Status start_staged_send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm comm, bool synchronous, std::unique_ptr<platform::Operation>* op);
// Posts a staged receive; the data reaches the device buffer when the operation completes.
Status start_staged_recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      std::unique_ptr<platform::Operation>* op);

}  // namespace mpizip::p2p
