#include "coll/tma_plan.h"

namespace mpizip::coll::tma {

using kernels::tma::Segment;

void shard(uint64_t count, uint32_t elem, int nranks, int r, uint64_t* first, uint64_t* n) {
  const uint64_t per_unit = elem >= 16 ? 1 : 16 / elem;  // elements per 16-byte unit
  const uint64_t units = (count + per_unit - 1) / per_unit;
  const uint64_t u0 = units * static_cast<uint64_t>(r) / static_cast<uint64_t>(nranks);
  const uint64_t u1 = units * static_cast<uint64_t>(r + 1) / static_cast<uint64_t>(nranks);
  const uint64_t e0 = u0 * per_unit < count ? u0 * per_unit : count;
  const uint64_t e1 = u1 * per_unit < count ? u1 * per_unit : count;
  *first = e0;
  *n = e1 - e0;
}

uint64_t collective_bytes(Kind kind, int nranks, uint64_t count, uint32_t elem) {
  switch (kind) {
    case Kind::kAllreduce:
      return count * elem;
    case Kind::kReduceScatterBlock:
    case Kind::kAllgather:
      return count * elem * static_cast<uint64_t>(nranks);
  }
  return 0;
}

namespace {

const char* at(const void* p, uint64_t bytes) { return static_cast<const char*>(p) + bytes; }
char* at(void* p, uint64_t bytes) { return static_cast<char*>(p) + bytes; }

}  // namespace

Status plan(Kind kind, int nranks, int rank, uint64_t count, uint32_t elem, const Buffers& b,
            kernels::tma::Launch* out) {
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks || out == nullptr ||
      (elem != 1 && elem != 2 && elem != 4 && elem != 8))
    return Status::kInvalidArgument;
  out->nseg = 0;
  Segment s;
  switch (kind) {
    case Kind::kAllreduce:
    case Kind::kReduceScatterBlock: {
      uint64_t first = 0, n = 0;
      if (kind == Kind::kAllreduce) {
        shard(count, elem, nranks, rank, &first, &n);
      } else {
        first = static_cast<uint64_t>(rank) * count;
        n = count;
      }
      if (n == 0) return Status::kOk;
      s.nsrc = static_cast<uint32_t>(nranks);
      for (int q = 0; q < nranks; ++q) {
        if (b.in[q] == nullptr) return Status::kInvalidArgument;
        s.src[q] = at(b.in[q], first * elem);
      }
      if (kind == Kind::kAllreduce) {
        s.ndst = static_cast<uint32_t>(nranks);
        for (int q = 0; q < nranks; ++q) {
          if (b.out[q] == nullptr) return Status::kInvalidArgument;
          s.dst[q] = at(b.out[q], first * elem);
        }
      } else {
        if (b.out[rank] == nullptr) return Status::kInvalidArgument;
        s.ndst = 1;
        s.dst[0] = b.out[rank];
      }
      s.bytes = n * elem;
      break;
    }
    case Kind::kAllgather: {
      const uint64_t bytes = count * elem;
      if (bytes == 0) return Status::kOk;
      if (b.in[rank] == nullptr) return Status::kInvalidArgument;
      s.nsrc = 1;
      s.src[0] = b.in[rank];
      const uint64_t off = static_cast<uint64_t>(rank) * bytes;
      for (int q = 0; q < nranks; ++q) {
        if (b.out[q] == nullptr) return Status::kInvalidArgument;
        char* d = at(b.out[q], off);
        if (q == rank && d == b.in[rank]) continue;  // in place: already there
        s.dst[s.ndst++] = d;
      }
      if (s.ndst == 0) return Status::kOk;
      s.bytes = bytes;
      break;
    }
    default:
      return Status::kInvalidArgument;
  }
  out->seg[0] = s;
  out->nseg = 1;
  return Status::kOk;
}

}  // namespace mpizip::coll::tma
