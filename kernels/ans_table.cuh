// A block's frequency table, held by a 32-lane group: lane l owns symbols l + 32 j (j = 0..7).
// Built from counts (encoder) or read from a block header (decoder); both then derive the
// cumulative frequencies, the presence bitmap and each present symbol's rank in the header's
// ascending list.
#pragma once

#include <cstdint>

#include "kernels/lanes.cuh"

namespace mpizip::kernels::ans {

inline constexpr int kSymsPerLane = 256 / lanes::kLanes;

struct Table {
  uint32_t f[kSymsPerLane];   // frequency of symbol lane + 32 j, 0 when absent
  uint32_t c[kSymsPerLane];   // cumulative frequency of the present symbols below it
  uint32_t bm[kSymsPerLane];  // bitmap word j: bit l set when symbol l + 32 j is present (uniform)
  int nsym;                   // present symbols (uniform)

  // Position of symbol lane + 32 j in the ascending list of present symbols.
  __device__ int rank(int j) const {
    int r = 0;
#pragma unroll
    for (int i = 0; i < kSymsPerLane; ++i) r += i < j ? lanes::popc(bm[i]) : 0;
    return r + lanes::popc(bm[j] & lanes::mask_lt());
  }

  // Fills c, bm and nsym from f.
  __device__ void cumulate() {
    uint32_t run = 0;
    nsym = 0;
#pragma unroll
    for (int j = 0; j < kSymsPerLane; ++j) {
      const uint32_t inc = lanes::scan(f[j]);
      c[j] = run + inc - f[j];
      run += lanes::shfl(inc, lanes::kLanes - 1);
      bm[j] = lanes::ballot(f[j] != 0);
      nsym += lanes::popc(bm[j]);
    }
  }
};

// Scales sampled counts to frequencies summing to exactly M = 1 << pb, every present symbol at
// least 1 (present may exceed what the sample saw). The largest frequency absorbs what rounding
// leaves (after one more scaling where rounding missed by much): the cheapest place for it, since
// its code length changes least.
__device__ __forceinline__ void normalize(const uint32_t (&cnt)[kSymsPerLane], const bool (&present)[kSymsPerLane], int pb,
                                 Table& t) {
  const uint32_t m = 1u << pb;
  uint32_t n = 0;
#pragma unroll
  for (int j = 0; j < kSymsPerLane; ++j) n += cnt[j];
  n = lanes::sum(n);
  // Any scaling will do (the decoder reads the table); float keeps it to one multiply a symbol.
  float scale = n ? static_cast<float>(m) / static_cast<float>(n) : 0.f;
  const auto quantize = [&] {
    uint32_t total = 0;
#pragma unroll
    for (int j = 0; j < kSymsPerLane; ++j) {
      uint32_t f = 0;
      if (present[j]) {
        f = static_cast<uint32_t>(cnt[j] * scale + 0.5f);
        f = f ? f : 1;
      }
      t.f[j] = f;
      total += f;
    }
    return lanes::sum(total);
  };
  uint32_t total = quantize();
  // Rare symbols raised to 1 can overshoot M by many units (a plane of fp16 U[-1,1], in a numpy
  // model: 121 symbols present, 57 units over 1024), and one frequency absorbing them all (below)
  // would cost its symbol dearly. Where the sum misses M by more than kSlack, the symbols above 1
  // are scaled once more by (M - ones) / (sum - ones): in the same model (fp16 and bf16, blocks of
  // 4096 symbols to planes of 2^19), that one step lands where the optimal integer frequencies
  // cost within 0.01%, and it saves 0.09 bits a symbol on a plane of fp16.
  constexpr uint32_t kSlack = 8;
  if (total > m + kSlack || total + kSlack < m) {
    uint32_t ones = 0;
#pragma unroll
    for (int j = 0; j < kSymsPerLane; ++j) ones += t.f[j] == 1;
    ones = lanes::sum(ones);
    if (total > ones && m > ones) {
      scale *= static_cast<float>(m - ones) / static_cast<float>(total - ones);
      total = quantize();
    }
  }
  // Every frequency is at least 1 and at most 256 symbols exist, so with m >= 512 a surplus can
  // always be taken from frequencies above 1: the loop ends after at most 256 rounds, usually 1.
  while (total != m) {
    uint32_t best = 0;
#pragma unroll
    for (int j = 0; j < kSymsPerLane; ++j) {
      const uint32_t key = (t.f[j] << 8) | (lanes::lane() + 32 * j);
      best = key > best ? key : best;
    }
    best = lanes::max(best);
    const uint32_t fb = best >> 8, sb = best & 0xFF;
    const int64_t want = static_cast<int64_t>(fb) + static_cast<int64_t>(m) - static_cast<int64_t>(total);
    const uint32_t nf = want < 1 ? 1u : static_cast<uint32_t>(want);
    if (lanes::lane() == static_cast<int>(sb % 32)) {
#pragma unroll
      for (int j = 0; j < kSymsPerLane; ++j)
        if (j == static_cast<int>(sb / 32)) t.f[j] = nf;
    }
    total = total - fb + nf;
  }
}

}  // namespace mpizip::kernels::ans
