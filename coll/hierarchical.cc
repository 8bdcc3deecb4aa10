// The hierarchical collectives' composition (coll/hierarchical.h).
#include "coll/hierarchical.h"

#include <cstring>

#include "coll/plan.h"
#include "src/platform/buffers.h"
#include "src/platform/device.h"

namespace mpizip::coll::hier {
namespace {

// Copies `bytes` between any two buffers, host or device.
Status copy_any(void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0 || dst == src) return Status::kOk;
  const bool dd = platform::is_device_pointer(dst), sd = platform::is_device_pointer(src);
  if (dd && sd) return platform::copy_device_to_device(dst, src, bytes);
  if (dd) return platform::copy_to_device(dst, src, bytes);
  if (sd) return platform::copy_to_host(dst, src, bytes);
  std::memmove(dst, src, bytes);
  return Status::kOk;
}

using platform::Scratch;

// Runs one stage and has every rank agree on its outcome.
#define MPIZIP_STAGE(s, expr) MPIZIP_CHECK((s).agree(expr))

}  // namespace

void shard_of(uint64_t count, uint32_t elem, int nranks, int owner, uint64_t* begin,
              uint64_t* size) {
  // The piece size does not move the shards.
  const Range r = Plan(count, elem, nranks, count > 0 ? count : 1).shard(owner);
  *begin = r.begin;
  *size = r.size();
}

Status allreduce(Stages& s, const Layout& l, const void* in, void* out, uint64_t count,
                 uint32_t elem) {
  uint64_t begin = 0, size = 0;
  shard_of(count, elem, l.per_node, l.local, &begin, &size);
  MPIZIP_STAGE(s, s.node_reduce_scatter(in, out, count));
  // Every rank of a cross communicator has the same local rank, so the same shard size: all of
  // them skip an empty one (and every rank still takes part in the agreement).
  MPIZIP_STAGE(s, size > 0 ? s.cross_allreduce(static_cast<uint8_t*>(out) + begin * elem, size)
                           : Status::kOk);
  return s.agree(s.node_allgather(out, count));
}

Status reduce_scatter_block(Stages& s, const Layout& l, const void* in, void* out, uint64_t count,
                            uint32_t elem, bool device) {
  const int P = l.ranks(), N = l.nodes;
  const uint64_t block = count * elem, total = count * static_cast<uint64_t>(P);
  // Blocks by (local rank, node): the blocks of the ranks of local rank q are contiguous, and with
  // blocks of a multiple of 16 bytes they are exactly the two-shot's shard q of G, each block
  // exactly shard k of N within it.
  Scratch a, b;
  Status got = a.take(total * elem, device);
  if (ok(got)) got = b.take(total * elem, device);
  for (int r = 0; r < P && ok(got); ++r) {
    const uint64_t at = static_cast<uint64_t>(l.local_of[r]) * N + l.node_of[r];
    got = copy_any(a.data + at * block, static_cast<const uint8_t*>(in) + r * block, block);
  }
  MPIZIP_CHECK(s.agree(got));
  MPIZIP_STAGE(s, s.node_reduce_scatter(a.data, b.data, total));
  uint8_t* group = b.data + static_cast<uint64_t>(l.local) * N * block;
  MPIZIP_STAGE(s, s.cross_reduce_scatter(group, count * static_cast<uint64_t>(N)));
  return copy_any(out, group + static_cast<uint64_t>(l.node) * block, block);
}

Status allgather(Stages& s, const Layout& l, const void* in, void* out, uint64_t count,
                 uint32_t elem, bool device) {
  const int P = l.ranks(), N = l.nodes;
  const uint64_t block = count * elem, total = count * static_cast<uint64_t>(P);
  int me = 0;
  for (int r = 0; r < P; ++r) {
    if (l.node_of[r] == l.node && l.local_of[r] == l.local) me = r;
  }
  Scratch a;
  Status got = a.take(total * elem, device);
  uint8_t* group = a.data + static_cast<uint64_t>(l.local) * N * block;
  if (ok(got)) {
    const void* mine = in != nullptr ? in : static_cast<uint8_t*>(out) + me * block;
    got = copy_any(group + static_cast<uint64_t>(l.node) * block, mine, block);
  }
  MPIZIP_CHECK(s.agree(got));
  MPIZIP_STAGE(s, s.cross_allgather(group, count * static_cast<uint64_t>(N)));
  MPIZIP_STAGE(s, s.node_allgather(a.data, total));
  Status put = Status::kOk;
  for (int r = 0; r < P && ok(put); ++r) {
    const uint64_t at = static_cast<uint64_t>(l.local_of[r]) * N + l.node_of[r];
    put = copy_any(static_cast<uint8_t*>(out) + r * block, a.data + at * block, block);
  }
  return put;
}

Status bcast(Stages& s, const Layout& l, void* buf, uint64_t count, uint32_t elem, int root) {
  const int root_node = l.node_of[root];
  uint64_t begin = 0, size = 0;
  shard_of(count, elem, l.per_node, l.local, &begin, &size);
  MPIZIP_STAGE(s, l.node == root_node ? s.node_bcast(buf, count, l.local_of[root]) : Status::kOk);
  MPIZIP_STAGE(s, size > 0 ? s.cross_bcast(static_cast<uint8_t*>(buf) + begin * elem, size,
                                            root_node)
                           : Status::kOk);
  return s.agree(l.node != root_node ? s.node_allgather(buf, count) : Status::kOk);
}

}  // namespace mpizip::coll::hier
