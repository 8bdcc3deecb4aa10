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
// The same for the counts of a whole symbol plane (a SHARED_TABLE stream's plane table), which may
// pass 32 bits.
void normalize(const uint64_t* counts, uint64_t n, int prob_bits, uint32_t* freqs);

// Counts of each byte value in sym[0, n).
void histogram(const uint8_t* sym, uint32_t n, uint32_t* counts);

// External tables (the `freqs` argument of encode and decode): 256 frequencies indexed by symbol,
// 0 for an absent symbol, the present ones summing to 1 << prob_bits: a SHARED_TABLE stream's plane
// table. The block is then coded without a head of its own (it starts with the lane states). A
// coder keeps the tables it built from the last external table and reuses them while the next
// block comes with the same frequencies and precision: a worker with one coder per plane builds
// them once per plane.

class BlockEncoder {
 public:
  // Serves blocks of up to 1 << log2_block symbols. use_simd: take the AVX2 path when the CPU has
  // it (tests turn it off to check that both paths write the same bytes).
  explicit BlockEncoder(int log2_block, bool use_simd = true);
  BlockEncoder(BlockEncoder&&) noexcept;
  ~BlockEncoder();
  // Codes n symbols (1..block size) into out (cap bytes). Returns the block's size in bytes (a
  // multiple of 16), or 0 when it does not fit in cap. freqs null: the block gets its own table,
  // from its histogram, written in its head; otherwise the block is coded with the external table
  // freqs[256], in which every symbol of sym[0, n) must be present.
  uint64_t encode(const uint8_t* sym, uint32_t n, int prob_bits, uint8_t* out, uint64_t cap,
                  const uint32_t* freqs = nullptr);

 private:
  struct Tables;  // the coding tables of one set of frequencies (ans_cpu.cc)

  bool simd_;
  std::unique_ptr<uint16_t[]> words_;  // kWordSlack + block size: stores run ahead of the words
  std::unique_ptr<Tables> tab_;
};

class BlockDecoder {
 public:
  // use_simd: take the AVX2 path when the CPU has it and prob_bits allows (tests turn it off to
  // check the portable path).
  explicit BlockDecoder(bool use_simd = true);
  // Decodes the n symbols of the block at blk (bytes long, exactly the block) into out[0, n).
  // freqs null: the block starts with its own table; otherwise it is coded with the external table
  // freqs[256] and starts with the lane states. kCorruptStream when any check fails (an external
  // table included); reads only blk[0, bytes), writes only out[0, n).
  Status decode(const uint8_t* blk, uint64_t bytes, int prob_bits, uint32_t n, uint8_t* out,
                const uint32_t* freqs = nullptr);

 private:
  bool build_tables(const uint8_t* bitmap, const uint8_t* freqs, int nsym, int prob_bits);
  bool build_external(const uint32_t* freqs, int prob_bits);

  bool simd_;
  int table_bits_ = 0;                  // the tables below hold 1 << table_bits_ slots
  std::unique_ptr<uint32_t[]> dec_;     // per slot: freq << 16 | (slot - cum)
  std::unique_ptr<uint8_t[]> sym_;      // per slot: the symbol
  std::unique_ptr<uint32_t[]> packed_;  // prob_bits <= 12: sym << 24 | (freq - 1) << 12 | (slot - cum)
  // The external table the tables above were built from; ext_pb_ 0 when they were not.
  uint32_t ext_freqs_[256];
  int ext_pb_ = 0;
};

}  // namespace mpizip::kernels::cpu::ans
