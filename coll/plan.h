// Where the elements of a two-shot allreduce go: the shard each rank owns (reduces and then
// broadcasts) and the pieces that shards are cut into, so that compression, transfer and reduction
// of successive pieces overlap. A pure function of (count, element size, ranks, piece size), so
// every rank computes the same plan from the arguments it shares with the others.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mpizip::coll {

// Elements [begin, end) of the application's buffer.
struct Range {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
  bool empty() const { return end == begin; }
};

// The piece size, in bytes, of a collective over a buffer of `buffer_bytes` that keeps
// `pieces_in_flight` pieces in memory at once, when the settings leave it open: every call of the
// codec and the reduce costs tens of microseconds whatever its size, and the GPU codec runs at a
// third of its speed on 4 MiB (kernels/NOTES-codec-gpu.md), so pieces are as large as
// kAutoMaxPiece while those in flight fit in the larger of `memory_bytes` (the memory bound) and the
// buffer itself, and never smaller than kAutoMinPiece. Like the plan, a function of what every
// rank shares.
inline constexpr uint64_t kAutoMinPiece = uint64_t{4} << 20;
inline constexpr uint64_t kAutoMaxPiece = uint64_t{16} << 20;
uint64_t auto_piece_bytes(uint64_t buffer_bytes, uint64_t pieces_in_flight, uint64_t memory_bytes);

class Plan {
 public:
  // `count` elements of `elem_bytes` bytes each (1..16), `nranks` >= 1 owners, pieces of at most
  // `piece_elems` elements (rounded down to the alignment unit; at least one unit).
  //
  // Shards: the buffer is cut into units of 16 bytes (16 / elem_bytes elements; the last unit may
  // be short) and the units are dealt out in rank order, the first count_units % nranks owners
  // taking one more; so every shard starts 16-byte aligned relative to the buffer, shards differ by
  // at most one unit, and when there are fewer units than ranks the last owners get nothing.
  // Pieces: shard r's piece j is [begin_r + j * piece, min(end_r, begin_r + (j + 1) * piece)),
  // empty beyond the shard's end; shard 0 is the largest, so pieces() is its piece count.
  Plan(uint64_t count, size_t elem_bytes, int nranks, uint64_t piece_elems);

  uint64_t count() const { return count_; }
  int nranks() const { return nranks_; }
  uint64_t piece_elems() const { return piece_elems_; }
  // Elements per 16-byte unit.
  uint64_t unit() const { return unit_; }

  Range shard(int owner) const;
  // Number of pieces of the largest shard: every piece index below it is valid for every owner.
  uint64_t pieces() const { return pieces_; }
  Range piece(int owner, uint64_t j) const;

 private:
  uint64_t count_;
  int nranks_;
  uint64_t unit_;
  uint64_t piece_elems_;
  uint64_t units_;
  uint64_t pieces_;
};

}  // namespace mpizip::coll
