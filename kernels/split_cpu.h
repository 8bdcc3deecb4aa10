// Splitting elements into raw bits and symbol planes, and merging them back (docs/FORMAT.md,
// "Splitting an element into raw bits and symbols"), for the CPU codec. The element type is
// dispatched to per-type templates here, in one place.
#pragma once

#include <cstdint>

#include "kernels/format.h"

namespace mpizip::kernels::cpu {

// Where one chunk of elements lives. A chunk is the elements whose symbols form block j of every
// plane: elements [first, first + n). `raw[i]` points at raw sub-plane i of the whole stream (indexed
// by element inside the split functions); `sym[p]` at the chunk's own symbols of plane p.
struct Chunk {
  uint64_t first;  // elements; a multiple of 8 (every block holds a multiple of 8 elements)
  uint64_t n;      // elements
};

// Writes the raw bits of the chunk into raw[0..1] and its symbols into sym[0..1].
void split_chunk(format::DType t, const uint8_t* src, Chunk c, uint8_t* const raw[2],
                 uint8_t* const sym[2]);

// Rebuilds the chunk's elements into dst (the whole output buffer) from raw[0..1] and sym[0..1].
void merge_chunk(format::DType t, const uint8_t* const raw[2], const uint8_t* const sym[2], Chunk c,
                 uint8_t* dst);

// Elements per block of symbols: two for e4m3 (one symbol per pair), one otherwise.
constexpr uint64_t elements_per_symbol(format::DType t) { return t == format::DType::kE4m3 ? 2 : 1; }

// Bits of each element that go to symbols (the rest is raw).
constexpr int symbol_bits_per_element(format::DType t) {
  switch (t) {
    case format::DType::kFp64: return 16;
    case format::DType::kE4m3: return 4;
    case format::DType::kE5m2: return 5;
    default: return 8;
  }
}

}  // namespace mpizip::kernels::cpu
