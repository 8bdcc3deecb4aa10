// The bytes of one transfer sent inline over MPI: ceil(bytes / kSegmentBytes) messages of MPI_BYTE
// ("segments"), all with the transfer's one MPI tag, matched in order by MPI's non-overtaking rule.
// Host memory goes on the wire directly. Device memory is staged piece by piece through two pinned
// pieces of the staging pool, so that the device-to-host copy of one segment overlaps the wire of
// the previous one (and on the receiving side, the wire overlaps the host-to-device copy); when the
// pool has no piece left, the whole buffer is staged through pageable memory instead.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "src/platform/device.h"
#include "src/platform/status.h"
#include "src/transport/emulated.h"
#include "src/transport/staging.h"

namespace mpizip::transport {

constexpr uint64_t kSegmentBytes = StagingPool::kPieceBytes;

// Where one transfer's segments go and what moves device memory.
struct SegmentRoute {
  MPI_Comm comm = MPI_COMM_NULL;
  int peer = 0;
  int mpi_tag = 0;                            // the tag of every segment of the transfer
  const platform::Stream* stream = nullptr;   // copies of device memory (device transfers only)
  StagingPool* pool = nullptr;                // pinned pieces (device transfers only)
};

// The segments of one transfer in flight, in either direction.
class Segments {
 public:
  virtual ~Segments() = default;
  // Advances without blocking. *done once every segment has left the buffer (send) or landed in
  // it (receive). kTruncated (with *done) when the sender sent more than the buffer holds.
  virtual Status advance(bool* done) = 0;
  // Sends: true until every segment is posted to MPI (Transfer::needs_sender()).
  virtual bool needs_sender() const { return false; }
  // After a failure: cancels the receives MPI has not matched and waits for everything else under
  // way (MPI requests, GPU copies), so that nothing touches the buffer afterwards.
  virtual void abandon() = 0;
};

// Sends `bytes` from `buf` (device memory when `device`): every segment goes to MPI as soon as it
// is in host memory, so that MPI moves it whatever this rank does next. On the emulated link the
// transfer's completion times keep its pace (the sender's and the receiver's Transfer wait for
// them), not the segments' posting: a sender that held segments back until their slot started
// would hold its receiver up while it sat in a call MPIZip passes through.
Status send_segments(const SegmentRoute& route, const void* buf, uint64_t bytes, bool device,
                     std::unique_ptr<Segments>* out);

// Receives the `sent` bytes that the sender announced into `buf` of `capacity` bytes (device
// memory when `device`). When sent > capacity the first `capacity` bytes land and the rest is
// received and dropped, so the sender completes.
Status recv_segments(const SegmentRoute& route, void* buf, uint64_t capacity, uint64_t sent,
                     bool device, std::unique_ptr<Segments>* out);

}  // namespace mpizip::transport
