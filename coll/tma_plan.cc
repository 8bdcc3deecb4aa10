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

namespace {

uint64_t sum(const uint64_t* v, int n) {
  uint64_t s = 0;
  for (int i = 0; i < n; ++i) s += v[i];
  return s;
}

bool valid_call(const Call& c, int nranks) {
  if (c.elem != 1 && c.elem != 2 && c.elem != 4 && c.elem != 8 && c.elem != 16) return false;
  if (c.root < 0 || c.root >= nranks) return false;
  if (c.kind == Kind::kReduceScatter || c.kind == Kind::kAllgatherv) {
    if (c.counts == nullptr) return false;
    if (c.kind == Kind::kAllgatherv && c.displs == nullptr) return false;
  }
  return c.kind <= Kind::kAllgatherv;
}

const char* at(const void* p, uint64_t bytes) { return static_cast<const char*>(p) + bytes; }
char* at(void* p, uint64_t bytes) { return static_cast<char*>(p) + bytes; }

}  // namespace

Kind tuned_kind(Kind kind) {
  switch (kind) {
    case Kind::kAllreduce: case Kind::kReduce:
      return Kind::kAllreduce;
    case Kind::kReduceScatterBlock: case Kind::kReduceScatter: case Kind::kScan: case Kind::kExscan:
      return Kind::kReduceScatterBlock;
    default:
      return Kind::kAllgather;
  }
}

bool runtime_copies(const kernels::tma::Launch& l, uint64_t bytes, uint64_t threshold) {
  if (l.nseg <= 0 || bytes < threshold) return false;
  for (int i = 0; i < l.nseg; ++i)
    if (l.seg[i].nsrc != 1 || l.seg[i].ndst != 1) return false;
  return true;
}

uint64_t collective_bytes(const Call& c, int nranks) {
  const uint64_t b = c.count * c.elem, P = static_cast<uint64_t>(nranks);
  switch (c.kind) {
    case Kind::kAllreduce: case Kind::kReduce: case Kind::kScan: case Kind::kExscan:
    case Kind::kBcast:
      return b;
    case Kind::kReduceScatterBlock: case Kind::kAllgather: case Kind::kGather: case Kind::kScatter:
    case Kind::kAlltoall:
      return b * P;
    case Kind::kReduceScatter: case Kind::kAllgatherv:
      return c.counts != nullptr ? sum(c.counts, nranks) * c.elem : 0;
  }
  return 0;
}

uint64_t collective_bytes(Kind kind, int nranks, uint64_t count, uint32_t elem) {
  Call c;
  c.kind = kind;
  c.count = count;
  c.elem = elem;
  return collective_bytes(c, nranks);
}

Extents extents(const Call& c, int nranks, int rank, bool in_place) {
  Extents e;
  const uint64_t B = c.count * c.elem, P = static_cast<uint64_t>(nranks);
  const bool root = rank == c.root;
  switch (c.kind) {
    case Kind::kAllreduce:
      e = {B, B, true, true, in_place, 0, false};
      break;
    case Kind::kReduce:
      e = {B, root ? B : 0, true, root, in_place && root, 0, false};
      break;
    case Kind::kReduceScatterBlock:
      e = {P * B, B, true, false, false, 0, in_place};
      break;
    case Kind::kReduceScatter: {
      const uint64_t mine = c.counts != nullptr ? c.counts[rank] * c.elem : 0;
      e = {sum(c.counts, nranks) * c.elem, mine, true, false, false, 0, in_place};
      break;
    }
    case Kind::kScan:
      e = {B, B, true, false, false, 0, in_place};
      break;
    case Kind::kExscan:
      e = {B, rank == 0 ? 0 : B, true, false, false, 0, in_place};
      break;
    case Kind::kAllgather:
      e = {B, P * B, false, true, in_place, static_cast<uint64_t>(rank) * B, false};
      break;
    case Kind::kAllgatherv: {
      uint64_t span = 0;
      for (int q = 0; q < nranks; ++q)
        if (c.counts[q] > 0 && c.displs[q] + c.counts[q] > span) span = c.displs[q] + c.counts[q];
      e = {c.counts[rank] * c.elem, span * c.elem, false, true, in_place,
           c.displs[rank] * c.elem, false};
      break;
    }
    case Kind::kBcast:
      e = root ? Extents{B, 0, true, false, false, 0, false} : Extents{0, B, false, true, false, 0, false};
      break;
    case Kind::kGather:
      e = {B, root ? P * B : 0, false, root, in_place && root, static_cast<uint64_t>(rank) * B,
           false};
      break;
    case Kind::kScatter:
      e = {root ? P * B : 0, (root && in_place) ? 0 : B, root, false, false, 0, false};
      break;
    case Kind::kAlltoall:
      e = {P * B, P * B, false, true, false, 0, in_place};
      break;
  }
  if (e.in_bytes == 0) e.share_in = false;
  if (e.out_bytes == 0) e.share_out = false;
  return e;
}

Status plan(const Call& c, int nranks, int rank, const Buffers& b, kernels::tma::Launch* out) {
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks || out == nullptr ||
      !valid_call(c, nranks))
    return Status::kInvalidArgument;
  out->nseg = 0;
  const uint32_t E = c.elem;
  const uint64_t B = c.count * E;
  auto need = [](const void* p) { return p != nullptr; };
  auto push = [&](const Segment& s) {
    if (s.bytes == 0 || s.ndst == 0) return;
    out->seg[out->nseg++] = s;
  };
  Segment s;
  switch (c.kind) {
    case Kind::kAllreduce:
    case Kind::kReduce:
    case Kind::kReduceScatterBlock:
    case Kind::kReduceScatter: {
      uint64_t first = 0, n = 0;
      if (c.kind == Kind::kReduceScatterBlock) {
        first = static_cast<uint64_t>(rank) * c.count;
        n = c.count;
      } else if (c.kind == Kind::kReduceScatter) {
        first = sum(c.counts, rank);
        n = c.counts[rank];
      } else {
        shard(c.count, E, nranks, rank, &first, &n);
      }
      if (n == 0) return Status::kOk;
      s.nsrc = static_cast<uint32_t>(nranks);
      for (int q = 0; q < nranks; ++q) {
        if (!need(b.in[q])) return Status::kInvalidArgument;
        s.src[q] = at(b.in[q], first * E);
      }
      if (c.kind == Kind::kAllreduce) {
        for (int q = 0; q < nranks; ++q) {
          if (!need(b.out[q])) return Status::kInvalidArgument;
          s.dst[s.ndst++] = at(b.out[q], first * E);
        }
      } else if (c.kind == Kind::kReduce) {
        if (!need(b.out[c.root])) return Status::kInvalidArgument;
        s.dst[s.ndst++] = at(b.out[c.root], first * E);
      } else {
        if (!need(b.out[rank])) return Status::kInvalidArgument;
        s.dst[s.ndst++] = b.out[rank];
      }
      s.bytes = n * E;
      push(s);
      break;
    }
    case Kind::kScan:
    case Kind::kExscan: {
      const int n = c.kind == Kind::kScan ? rank + 1 : rank;
      if (n == 0 || B == 0) return Status::kOk;
      s.nsrc = static_cast<uint32_t>(n);
      for (int q = 0; q < n; ++q) {
        if (!need(b.in[q])) return Status::kInvalidArgument;
        s.src[q] = b.in[q];
      }
      if (!need(b.out[rank])) return Status::kInvalidArgument;
      s.dst[s.ndst++] = b.out[rank];
      s.bytes = B;
      push(s);
      break;
    }
    case Kind::kAllgather:
    case Kind::kAllgatherv: {
      const uint64_t bytes = c.kind == Kind::kAllgather ? B : c.counts[rank] * E;
      const uint64_t off = c.kind == Kind::kAllgather ? static_cast<uint64_t>(rank) * B
                                                      : c.displs[rank] * E;
      if (bytes == 0) return Status::kOk;
      if (!need(b.in[rank])) return Status::kInvalidArgument;
      s.nsrc = 1;
      s.src[0] = b.in[rank];
      for (int q = 0; q < nranks; ++q) {
        if (!need(b.out[q])) return Status::kInvalidArgument;
        char* d = at(b.out[q], off);
        if (q == rank && d == b.in[rank]) continue;  // in place: already there
        s.dst[s.ndst++] = d;
      }
      s.bytes = bytes;
      push(s);
      break;
    }
    case Kind::kBcast: {
      uint64_t first = 0, n = 0;
      shard(c.count, E, nranks, rank, &first, &n);
      if (n == 0 || nranks < 2) return Status::kOk;
      if (!need(b.in[c.root])) return Status::kInvalidArgument;
      s.nsrc = 1;
      s.src[0] = at(b.in[c.root], first * E);
      for (int q = 0; q < nranks; ++q) {
        if (q == c.root) continue;
        if (!need(b.out[q])) return Status::kInvalidArgument;
        s.dst[s.ndst++] = at(b.out[q], first * E);
      }
      s.bytes = n * E;
      push(s);
      break;
    }
    case Kind::kGather: {
      if (B == 0) return Status::kOk;
      if (!need(b.in[rank]) || !need(b.out[c.root])) return Status::kInvalidArgument;
      char* d = at(b.out[c.root], static_cast<uint64_t>(rank) * B);
      if (d == b.in[rank]) return Status::kOk;  // the root's block, in place
      s.nsrc = 1;
      s.src[0] = b.in[rank];
      s.dst[s.ndst++] = d;
      s.bytes = B;
      push(s);
      break;
    }
    case Kind::kScatter: {
      if (B == 0 || b.out[rank] == nullptr) return Status::kOk;  // the root in place
      if (!need(b.in[c.root])) return Status::kInvalidArgument;
      s.nsrc = 1;
      s.src[0] = at(b.in[c.root], static_cast<uint64_t>(rank) * B);
      s.dst[s.ndst++] = b.out[rank];
      s.bytes = B;
      push(s);
      break;
    }
    case Kind::kAlltoall: {
      if (B == 0) return Status::kOk;
      if (!need(b.in[rank])) return Status::kInvalidArgument;
      for (int q = 0; q < nranks; ++q) {
        if (!need(b.out[q])) return Status::kInvalidArgument;
        Segment t;
        t.nsrc = 1;
        t.src[0] = at(b.in[rank], static_cast<uint64_t>(q) * B);
        t.dst[t.ndst++] = at(b.out[q], static_cast<uint64_t>(rank) * B);
        t.bytes = B;
        push(t);
      }
      break;
    }
  }
  return Status::kOk;
}

Status plan(Kind kind, int nranks, int rank, uint64_t count, uint32_t elem, const Buffers& b,
            kernels::tma::Launch* out) {
  if (kind != Kind::kAllreduce && kind != Kind::kReduceScatterBlock && kind != Kind::kAllgather)
    return Status::kInvalidArgument;
  Call c;
  c.kind = kind;
  c.count = count;
  c.elem = elem;
  return plan(c, nranks, rank, b, out);
}

}  // namespace mpizip::coll::tma
