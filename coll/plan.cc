#include "coll/plan.h"

#include <algorithm>

namespace mpizip::coll {

Plan::Plan(uint64_t count, size_t elem_bytes, int nranks, uint64_t piece_elems)
    : count_(count), nranks_(std::max(nranks, 1)) {
  unit_ = elem_bytes >= 16 || elem_bytes == 0 ? 1 : 16 / elem_bytes;
  piece_elems_ = std::max(unit_, piece_elems / unit_ * unit_);
  units_ = (count_ + unit_ - 1) / unit_;
  const uint64_t largest = shard(0).size();
  pieces_ = (largest + piece_elems_ - 1) / piece_elems_;
}

Range Plan::shard(int owner) const {
  const uint64_t p = static_cast<uint64_t>(nranks_), r = static_cast<uint64_t>(owner);
  const uint64_t base = units_ / p, extra = units_ % p;
  const uint64_t first_unit = r * base + std::min(r, extra);
  const uint64_t units = base + (r < extra ? 1 : 0);
  Range s;
  s.begin = std::min(count_, first_unit * unit_);
  s.end = std::min(count_, (first_unit + units) * unit_);
  return s;
}

Range Plan::piece(int owner, uint64_t j) const {
  const Range s = shard(owner);
  Range p;
  p.begin = std::min(s.end, s.begin + j * piece_elems_);
  p.end = std::min(s.end, p.begin + piece_elems_);
  return p;
}

uint64_t auto_piece_bytes(uint64_t buffer_bytes, uint64_t pieces_in_flight, uint64_t memory_bytes) {
  const uint64_t fit = std::max(memory_bytes, buffer_bytes) / std::max<uint64_t>(1, pieces_in_flight);
  return std::clamp(fit, kAutoMinPiece, kAutoMaxPiece);
}

}  // namespace mpizip::coll
