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

size_t v_count(const Context& ctx, size_t bytes, int r) {
  if (!ctx.opts.uneven) return bytes / ctx.elem_size;
  if (ctx.nranks > 2 && r == 1) return 0;
  return bytes * size_t(r + 1) / size_t(ctx.nranks) / ctx.elem_size;
}

VLayout v_layout(const Context& ctx, size_t bytes, int shift) {
  const int n = ctx.nranks;
  VLayout layout{std::vector<int>(size_t(n)), std::vector<int>(size_t(n)), 0};
  for (int k = 0; k < n; ++k) layout.counts[size_t(k)] = int(v_count(ctx, bytes, (k + shift) % n));
  for (int i = 0; i < n; ++i) {
    const int k = ctx.opts.uneven ? n - 1 - i : i;
    if (ctx.opts.uneven) ++layout.extent;  // the gap before each block
    layout.displs[size_t(k)] = int(layout.extent);
    layout.extent += size_t(layout.counts[size_t(k)]);
  }
  return layout;
}

size_t v_buffer_bytes(const Context& ctx) {
  return v_layout(ctx, ctx.opts.largest_size()).extent * ctx.elem_size;
}

BenchSpec v_collective_spec(const char* title, BenchmarkFactory make) {
  BenchSpec spec = collective_spec(title, std::move(make));
  spec.traits.uneven_counts = true;
  return spec;
}

std::string v_layout_description(const Context& ctx) {
  if (!ctx.opts.uneven)
    return "Counts: every rank Size bytes, displacements their prefix sums (OSU's)";
  return std::string("Counts: --uneven, rank r Size*(r+1)/P bytes in whole elements") +
         (ctx.nranks > 2 ? ", rank 1 none" : "") +
         "; blocks in reverse rank order, one element apart";
}

}  // namespace osub
