// One block of the coded section (docs/FORMAT.md, "One block"): histogram, frequency table and
// 32-lane interleaved rANS, on the CPU. Each worker thread owns one BlockEncoder / BlockDecoder and
// reuses it for every block it codes.
#pragma once

#include <cstdint>
#include <memory>

#include "src/platform/status.h"

namespace mpizip::kernels::cpu::ans {

// Scales the symbol counts of a block (`counts[256]`, summing to n > 0) to frequencies summing to
// exactly 1 << prob_bits, each present symbol getting at least 1, such that the coded size
// sum(counts[s] * -log2(freqs[s] / M)) is minimal. Absent symbols get 0.
void normalize(const uint32_t* counts, uint32_t n, int prob_bits, uint32_t* freqs);

// Counts of each byte value in sym[0, n).
void histogram(const uint8_t* sym, uint32_t n, uint32_t* counts);

class BlockEncoder {
 public:
  // Serves blocks of up to 1 << log2_block symbols. use_simd: take the AVX2 path when the CPU has
  // it (tests turn it off to check that both paths write the same bytes).
  explicit BlockEncoder(int log2_block, bool use_simd = true);
  // Codes n symbols (1..block size) into out (cap bytes). Returns the block's size in bytes (a
  // multiple of 16), or 0 when it does not fit in cap.
  uint64_t encode(const uint8_t* sym, uint32_t n, int prob_bits, uint8_t* out, uint64_t cap);

 private:
  bool simd_;
  std::unique_ptr<uint16_t[]> words_;  // kWordSlack + block size: stores run ahead of the words
};

class BlockDecoder {
 public:
  // use_simd: take the AVX2 path when the CPU has it and prob_bits allows (tests turn it off to
  // check the portable path).
  explicit BlockDecoder(bool use_simd = true);
  // Decodes the n symbols of the block at blk (bytes long, exactly the block) into out[0, n).
  // kCorruptStream when any check fails; reads only blk[0, bytes), writes only out[0, n).
  Status decode(const uint8_t* blk, uint64_t bytes, int prob_bits, uint32_t n, uint8_t* out);

 private:
  bool build_tables(const uint8_t* bitmap, const uint8_t* freqs, int nsym, int prob_bits);

  bool simd_;
  int table_bits_ = 0;                  // the tables below hold 1 << table_bits_ slots
  std::unique_ptr<uint32_t[]> dec_;     // per slot: freq << 16 | (slot - cum)
  std::unique_ptr<uint8_t[]> sym_;      // per slot: the symbol
  std::unique_ptr<uint32_t[]> packed_;  // prob_bits <= 12: sym << 24 | (freq - 1) << 12 | (slot - cum)
};

}  // namespace mpizip::kernels::cpu::ans
