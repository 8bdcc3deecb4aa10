// What every backend of coll/backend.h shares: the fold of decoded streams and raw inputs, written
// on the backend's own decompress and reduce.
#include "coll/backend.h"

#include <vector>

namespace mpizip::coll {

Status Backend::fold(format::DType t, kernels::reduce::Op op, const FoldInput* inputs, int n,
                     void* out, uint64_t count, Result* results) {
  if (inputs == nullptr || n < 1 || n > kernels::gpu::kMaxBatch) return Status::kInvalidArgument;
  std::vector<Job> jobs;
  std::vector<const void*> in(static_cast<size_t>(n));
  const uint64_t bytes = count * format::elem_bytes(t);
  for (int r = 0; r < n; ++r) {
    const FoldInput& x = inputs[r];
    in[r] = x.data;
    if (x.stream_bytes == 0) continue;
    if (x.temp == nullptr) return Status::kInvalidArgument;
    jobs.push_back(Job{x.data, x.stream_bytes, x.temp, bytes});
    in[r] = x.temp;
  }
  if (!jobs.empty())
    MPIZIP_CHECK(decompress(t, jobs.data(), static_cast<int>(jobs.size()), results));
  return reduce(t, op, in.data(), n, out, count);
}

}  // namespace mpizip::coll
