// The CPU codec's shared parts: defaults, sizes, header validation, checksum, entropy bound.
// compress() is in encode_cpu.cc, decompress() in decode_cpu.cc.
#include "kernels/codec_cpu.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "kernels/ans_cpu.h"
#include "kernels/stream_cpu.h"

namespace mpizip::kernels::cpu {

using format::DType;

// Both defaults come from the sweep in osu-bench/results/README.md ("CPU codec"). On uniform and
// normal data of every type, blocks of 2^16 symbols come closest to the entropy bound (0.1-0.4%
// above it; 2^14: 0.3-1.6%), and a 1 MiB input still has 8 blocks for the threads. Precision 12 is
// within 0.03 points of the best one for every type and is what the vector decoder serves.
int default_log2_block(DType, uint64_t) { return format::kMaxLog2Block; }

int default_prob_bits(DType) { return 12; }

uint64_t max_compressed_size(DType t, uint64_t count) {
  uint64_t m = 0;
  for (int lb = format::kMinLog2Block; lb <= format::kMaxLog2Block; ++lb)
    m = std::max(m, format::max_stream_bytes(t, count, lb));
  return m;
}

uint64_t checksum_part(const uint8_t* p, uint64_t at, uint64_t nbytes) {
  uint64_t h = 0;
  uint64_t i0 = at / 4, nw = nbytes / 4;
  for (uint64_t k = 0; k < nw; ++k) {
    uint32_t w;
    std::memcpy(&w, p + 4 * k, 4);
    h += format::mix64(((i0 + k) << 32) | w);
  }
  if (uint64_t rest = nbytes % 4) {
    uint32_t w = 0;
    std::memcpy(&w, p + 4 * nw, rest);
    h += format::mix64(((i0 + nw) << 32) | w);
  }
  return h;
}

int resolve_threads(int requested, uint64_t bytes, uint64_t items) {
  uint64_t t = requested > 0 ? static_cast<uint64_t>(requested)
               : bytes >= kParallelBytes ? std::max(1u, std::thread::hardware_concurrency())
                                         : 1;
  return static_cast<int>(std::max<uint64_t>(1, std::min(t, items)));
}

Status read_header(const void* src, uint64_t src_bytes, StreamInfo* info) {
  if (!src || !info) return Status::kInvalidArgument;
  if (src_bytes < format::kHeaderBytes) return Status::kCorruptStream;
  format::Header h;
  std::memcpy(&h, src, sizeof h);
  // A fast stream (version 3) has chunks of 2^12 symbols and no ANS precision.
  const bool fast = format::fast_version_flags_valid(h.version, h.flags);
  if (std::memcmp(h.magic, format::kMagic, 4) != 0 || !(fast || format::version_flags_valid(h.version, h.flags)) ||
      !format::dtype_valid(h.dtype) ||
      (fast ? h.log2_block != format::kFastLog2Chunk || h.prob_bits != 0
            : h.log2_block < format::kMinLog2Block || h.log2_block > format::kMaxLog2Block ||
                  h.prob_bits < format::kMinProbBits || h.prob_bits > format::kMaxProbBits))
    return Status::kCorruptStream;
  for (uint8_t r : h.reserved)
    if (r) return Status::kCorruptStream;
  const DType t = static_cast<DType>(h.dtype);
  // Keeps every size computed from the count inside 64 bits.
  if (h.count > (uint64_t{1} << 58) || h.planes != format::planes(t)) return Status::kCorruptStream;
  const bool stored = h.flags & format::kFlagStored;
  if (h.raw_bytes != (stored ? 0 : format::raw_bytes(t, h.count))) return Status::kCorruptStream;

  info->dtype = t;
  info->count = h.count;
  info->flags = h.flags;
  info->log2_block = h.log2_block;
  info->prob_bits = h.prob_bits;
  info->raw_bytes = h.raw_bytes;
  info->total_bytes_if_known = 0;
  if (stored) {
    info->total_bytes_if_known = format::kHeaderBytes + h.count * format::elem_bytes(t);
  } else if (uint64_t co = format::coded_offset(t, h.count); src_bytes >= co + 8) {
    uint64_t coded;
    std::memcpy(&coded, static_cast<const uint8_t*>(src) + co, 8);
    if (coded <= (uint64_t{1} << 62)) info->total_bytes_if_known = co + coded;
  }
  return Status::kOk;
}

double entropy_bound(DType t, const void* src, uint64_t count) {
  if (!src || count == 0 || !format::dtype_valid(static_cast<uint8_t>(t))) return 1.0;
  const Layout lay(t, count, format::kMaxLog2Block, format::kMaxProbBits);
  // Raw bits go to a scratch buffer as large as the whole raw section would be; only the symbol
  // histograms are kept.
  std::unique_ptr<uint8_t[]> raw(new uint8_t[format::raw_bytes(t, count) + 16]);
  std::unique_ptr<uint8_t[]> sym(new uint8_t[2 * lay.block_symbols()]);
  uint8_t* rawp[2] = {raw.get(), raw.get() + format::raw_subplane_offset(t, count, 1) - format::kHeaderBytes};
  uint8_t* symp[2] = {sym.get(), sym.get() + lay.block_symbols()};
  double counts[2][256] = {};
  for (uint64_t j = 0; j < lay.blocks_per_plane; ++j) {
    split_chunk(t, static_cast<const uint8_t*>(src), lay.chunk(j), rawp, symp);
    for (int p = 0; p < lay.planes; ++p) {
      uint32_t c[256];
      ans::histogram(symp[p], lay.symbols_in(j), c);
      for (int s = 0; s < 256; ++s) counts[p][s] += c[s];
    }
  }
  const double total_bits = 8.0 * static_cast<double>(count * format::elem_bytes(t));
  double bits = total_bits - static_cast<double>(symbol_bits_per_element(t)) * static_cast<double>(count);
  for (int p = 0; p < lay.planes; ++p) {
    const double n = static_cast<double>(lay.nsym);
    for (double c : counts[p])
      if (c > 0) bits -= c * std::log2(c / n);
  }
  return bits / total_bits;
}

}  // namespace mpizip::kernels::cpu
