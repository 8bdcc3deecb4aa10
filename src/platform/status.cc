#include "src/platform/status.h"

namespace mpizip {

const char* status_string(Status s) {
  switch (s.code()) {
    case Status::kOk: return "ok";
    case Status::kInvalidArgument: return "invalid argument";
    case Status::kUnsupported: return "unsupported";
    case Status::kNoDevice: return "no GPU device";
    case Status::kOutOfMemory: return "out of memory";
    case Status::kCorruptStream: return "corrupt compressed stream";
    case Status::kTruncated: return "message truncated";
    case Status::kTypeMismatch: return "datatype mismatch";
    case Status::kDeviceError: return "GPU runtime error";
    case Status::kTransportError: return "transport error";
    case Status::kMpiError: return "MPI error";
    case Status::kInternal: return "internal error";
    case Status::kPeerFailed: return "a peer's part failed";
    case Status::kTimedOut: return "a peer did not answer in time";
  }
  return "unknown status";
}

}  // namespace mpizip
