// The TMA engine in builds without a GPU backend (kernels/tma_engine.h): no device, so every call
// answers kNoDevice and the collectives pass to the MPI library.
#include "kernels/tma_engine.h"

namespace mpizip::kernels::tma {

bool tma_capable() { return false; }
Status run(const Launch&, void*) { return Status::kNoDevice; }
Status engine_stream(void** out) {
  *out = nullptr;
  return Status::kNoDevice;
}
Status sync(void*) { return Status::kNoDevice; }
Status copy_async(void*, const void*, uint64_t, void*) { return Status::kNoDevice; }
Status zero_async(void*, uint64_t, void*) { return Status::kNoDevice; }

}  // namespace mpizip::kernels::tma
