// make_device_backend (coll/backend.h) for builds without the GPU codec.
#include "coll/backend.h"

namespace mpizip::coll {

Status make_device_backend(std::unique_ptr<Backend>*) { return Status::kUnsupported; }

}  // namespace mpizip::coll
