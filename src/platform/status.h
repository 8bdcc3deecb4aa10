// The one status type of MPIZip. Every layer returns it (kernels, transports, p2p/, coll/);
// src/core turns it into an MPI error code and raises it on the communicator at the boundary
// (src/core/errors.h), with one log line naming the cause. Foreign codes (CUDA, UCX) are converted
// where they first appear, by the layer that calls the foreign API; an error code of the MPI
// library is kept inside the Status (Status::mpi), so that the application sees the library's own
// code, class and message for a failure MPIZip only passed on.
#pragma once

#include <cstdint>

namespace mpizip {

class Status {
 public:
  enum Code : int32_t {
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
    kMpiError,          // an MPI error code (mpi_code()): returned by the MPI library, or the
                        // class MPI defines for the failure (MPI_ERR_OP, MPI_ERR_COUNT, ...)
    kInternal,          // a broken invariant inside MPIZip
    kPeerFailed,        // a peer rank reported that its part of the operation failed
    kTimedOut,          // a peer did not answer within the bound the settings give
  };

  constexpr Status(Code c = kOk) : code_(c) {}  // NOLINT: a Code is a Status

  // What an MPI library call returned: kOk for MPI_SUCCESS (0, in every MPI), else kMpiError
  // carrying the code.
  static constexpr Status mpi(int rc) { return rc == 0 ? Status() : Status(kMpiError, rc); }
  // A Code stored as an integer (a GPU kernel's result word); out-of-range values are kInternal.
  static constexpr Status from_int(int32_t v) {
    return v >= kOk && v <= kTimedOut ? Status(static_cast<Code>(v)) : Status(kInternal);
  }

  constexpr Code code() const { return code_; }
  // The MPI library's error code of a kMpiError (0 otherwise).
  constexpr int mpi_code() const { return mpi_; }

  friend constexpr bool operator==(Status a, Status b) { return a.code_ == b.code_; }
  friend constexpr bool operator!=(Status a, Status b) { return a.code_ != b.code_; }

 private:
  constexpr Status(Code c, int mpi) : code_(c), mpi_(mpi) {}
  Code code_;
  int mpi_ = 0;
};

const char* status_string(Status s);

constexpr bool ok(Status s) { return s.code() == Status::kOk; }

}  // namespace mpizip

// Early return on error. MPIZIP_CHECK(expr) returns the status from the enclosing function.
#define MPIZIP_CHECK(expr)                               \
  do {                                                   \
    ::mpizip::Status mpizip_check_s_ = (expr);           \
    if (mpizip_check_s_ != ::mpizip::Status::kOk) {      \
      return mpizip_check_s_;                            \
    }                                                    \
  } while (0)
