// The AVX2 paths of the rANS block coder: 8 lanes per vector, 4 vectors per group of 32 lanes,
// table entries gathered per lane, and the renormalisation words moved with one permutation per
// vector (the ballot of the GPU decoder, as a movemask and a lookup table).
#pragma once

#include <cstdint>

namespace mpizip::kernels::cpu::ans::simd {

// The packed table entry (symbol, freq - 1, slot - cum in 8 + 12 + 12 bits) limits prob_bits.
inline constexpr int kMaxProbBits = 12;

// Whether this CPU runs the AVX2 path.
bool available();

// Decodes full groups of 32 symbols from group 0 while at least 32 words remain to be read
// (words[*pos, avail)), up to `groups` groups. x: the 32 lane states, updated. Returns the number
// of groups decoded; the caller finishes the rest with bounds-checked code.
uint32_t decode_groups(uint32_t* x, const uint32_t* packed, int prob_bits, const uint8_t* words,
                       uint64_t avail, uint64_t* pos, uint8_t* out, uint32_t groups);

// Encoder table entry of one symbol.
struct alignas(16) EncEntry {
  double inv;   // 1 / f rounded up
  uint32_t fc;  // f << 16 | c
  uint32_t pad;
};

// Encodes groups [0, groups) of 32 symbols each, from the last group to the first, into the words
// just below *p (moving *p down; up to 7 words below the final *p are scratch). Every f must be
// below 1 << prob_bits.
void encode_groups(uint32_t* x, const EncEntry* table, int prob_bits, const uint8_t* sym, uint32_t groups,
                   uint16_t** p);

}  // namespace mpizip::kernels::cpu::ans::simd
