#include "osu-bench/common/collective.h"

#include "osu-bench/common/validate.h"

namespace osub {

CollectiveBuffers::CollectiveBuffers(const Context& ctx, size_t max_send_bytes,
                                     size_t max_recv_bytes)
    : ctx_(ctx),
      send_(ctx.data_buffer(max_send_bytes / ctx.elem_size)),
      recv_(ctx.buffer(max_recv_bytes)) {
  if (!ctx.opts.validate) return;
  for (int r = 0; r < ctx.nranks; ++r)
    inputs_.push_back(ctx.data_of(r, max_send_bytes / ctx.elem_size));
}

void CollectiveBuffers::poison(size_t bytes) { osub::poison(ctx_, *recv_, bytes); }

std::vector<std::byte> CollectiveBuffers::result(size_t bytes) const {
  std::vector<std::byte> out(bytes);
  recv_->download(out.data(), bytes);
  return out;
}

}  // namespace osub
