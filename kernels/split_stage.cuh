// The split stage of split-send: the stream's header and raw section (or the whole STORED stream),
// written by a grid-stride pass over 16-byte chunks, so the sender can put them on the wire while
// the encode stage (kernels/ans_encode.cuh, not fused) codes the symbols.
#pragma once

#include <cstdint>

#include "kernels/ans_encode.cuh"
#include "kernels/bytes.cuh"
#include "kernels/format.h"
#include "kernels/lanes.cuh"
#include "kernels/split.cuh"

namespace mpizip::kernels::split {

struct StageParams {
  const uint8_t* src;
  uint64_t count;
  uint8_t* dst;
  uint64_t cap;
  bool stored;
  int log2_block, prob_bits;
  bool checksum;
  bool shared;  // the stream gets one table per plane (SHARED_TABLE)
};

template <format::DType T, bool kAligned>
__device__ void run_stage(const StageParams& p) {
  using C = Chunk<T>;
  const uint64_t nbytes = p.count * format::elem_bytes(T);
  const uint64_t lane_id = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t lanes_all = uint64_t{gridDim.x} * blockDim.x;
  if (p.stored) {
    if (format::kHeaderBytes + nbytes > p.cap) return;  // the encode stage reports it
    if (lane_id < lanes::kLanes)
      encode::write_header(p.dst, T, p.count, format::kFlagStored, p.log2_block, p.prob_bits, 0);
    for (uint64_t b = lane_id; b < nbytes; b += lanes_all) p.dst[format::kHeaderBytes + b] = p.src[b];
    return;
  }
  if (format::coded_offset(T, p.count) > p.cap) return;
  if (lane_id < lanes::kLanes) {
    encode::write_header(p.dst, T, p.count, encode::coded_flags(p.checksum, p.shared), p.log2_block, p.prob_bits,
                         format::raw_bytes(T, p.count));
    zero_raw_padding<T>(p.dst, p.count, static_cast<int>(lane_id));
  }
  const uint64_t nch = (nbytes + 15) / 16;
  for (uint64_t c = lane_id; c < nch; c += lanes_all) {
    uint32_t in[4], sym[2][4], raw[2][2];
    load_input<kAligned>(p.src, nbytes, c, in);
    C::split(in, sym, raw);
    store_raw<T, kAligned>(p.dst, p.count, c, raw);
  }
}

}  // namespace mpizip::kernels::split
