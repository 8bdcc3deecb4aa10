// The one status type of MPIZip. Every layer returns it; src/core converts it to an MPI error code
// and raises it on the communicator at the boundary (src/core/errors.h). Foreign codes (CUDA, UCX,
// MPI) are converted where they first appear, by the layer that calls the foreign API. (p2p/ and
// coll/ still return MPI error codes from their operations, which src/core raises the same way.)
#pragma once

#include <cstdint>

namespace mpizip {

enum class Status : int32_t {
  kOk = 0,
  kInvalidArgument,   // programmer error: bad pointer, size, type or option
  kUnsupported,       // valid request that this build or device cannot serve (caller falls back)
  kNoDevice,          // no GPU, no driver, or the GPU runtime failed to start
  kOutOfMemory,       // device, pinned or pool memory exhausted (caller falls back)
  kCorruptStream,     // compressed data failed a bounds, table, end-state or checksum check
  kTruncated,         // destination smaller than the data (maps to MPI_ERR_TRUNCATE)
  kTypeMismatch,      // receive datatype does not match what the sender sent (MPI_ERR_TYPE)
  kDeviceError,       // a GPU runtime call failed
  kTransportError,    // a byte mover (UCX, PMPI, IPC) failed
  kMpiError,          // the underlying MPI returned an error
  kInternal,          // a broken invariant inside MPIZip
};

const char* status_string(Status s);

inline bool ok(Status s) { return s == Status::kOk; }

}  // namespace mpizip

// Early return on error. MPIZIP_CHECK(expr) returns the status from the enclosing function.
#define MPIZIP_CHECK(expr)                               \
  do {                                                   \
    ::mpizip::Status mpizip_check_s_ = (expr);           \
    if (mpizip_check_s_ != ::mpizip::Status::kOk) {      \
      return mpizip_check_s_;                            \
    }                                                    \
  } while (0)
