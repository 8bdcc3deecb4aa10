// compress(): split every chunk of elements into raw bits (written in place) and symbols, code the
// symbols block by block, lay the blocks out, and fall back to STORED when that is not smaller.
#include <memory>

#include "kernels/ans_cpu.h"
#include "kernels/codec_cpu.h"
#include "kernels/stream_cpu.h"

namespace mpizip::kernels::cpu {
namespace {

using format::DType;

// Where a worker's coded blocks of one plane go: straight into the stream for the first worker's
// plane 0 (its blocks come first), into a buffer of the worker otherwise, moved into place later.
struct Sink {
  std::unique_ptr<uint8_t[]> own;
  uint8_t* base = nullptr;
  uint64_t cap = 0;
  uint64_t used = 0;
};

struct Worker {
  Sink sink[2];
  uint64_t checksum = 0;
  bool overflow = false;
};

void write_header(uint8_t* dst, DType t, uint64_t count, uint8_t flags, int log2_block, int prob_bits,
                  uint64_t raw_bytes) {
  format::Header h{};
  std::memcpy(h.magic, format::kMagic, 4);
  h.version = format::kVersion;
  h.dtype = static_cast<uint8_t>(t);
  h.flags = flags;
  h.log2_block = static_cast<uint8_t>(log2_block);
  h.count = count;
  h.raw_bytes = raw_bytes;
  h.prob_bits = static_cast<uint8_t>(prob_bits);
  h.planes = static_cast<uint8_t>(format::planes(t));
  std::memcpy(dst, &h, sizeof h);
}

Status write_stored(DType t, const uint8_t* src, uint64_t count, uint8_t* dst, uint64_t cap,
                    uint64_t* written, int log2_block, int prob_bits) {
  uint64_t n = count * format::elem_bytes(t);
  if (cap < format::kHeaderBytes + n) return Status::kTruncated;
  write_header(dst, t, count, format::kFlagStored, log2_block, prob_bits, 0);
  if (n) std::memmove(dst + format::kHeaderBytes, src, n);
  *written = format::kHeaderBytes + n;
  return Status::kOk;
}

// Zero padding after each raw sub-plane, so that the stream's bytes are fully defined.
void zero_raw_padding(const Layout& lay, uint8_t* dst) {
  for (int i = 0; i < format::raw_subplanes(lay.t); ++i) {
    uint64_t end = lay.raw_off(i) + format::raw_subplane_bytes(lay.t, lay.count, i);
    std::memset(dst + end, 0, format::align_up(end) - end);
  }
}

// Codes chunks [begin, end) into the worker's sinks; records each block's size.
void encode_range(const Layout& lay, const uint8_t* src, uint8_t* dst, bool checksum, Worker& w,
                  uint64_t begin, uint64_t end, uint64_t* sizes) {
  ans::BlockEncoder enc(lay.log2_block);
  std::unique_ptr<uint8_t[]> symbuf(new uint8_t[2 * lay.block_symbols()]);
  uint8_t* sym[2] = {symbuf.get(), symbuf.get() + lay.block_symbols()};
  uint8_t* raw[2] = {dst + lay.raw_off(0), dst + lay.raw_off(1)};
  const uint64_t eb = format::elem_bytes(lay.t);
  for (uint64_t j = begin; j < end && !w.overflow; ++j) {
    Chunk c = lay.chunk(j);
    split_chunk(lay.t, src, c, raw, sym);
    if (checksum) w.checksum += checksum_part(src + c.first * eb, c.first * eb, c.n * eb);
    for (int p = 0; p < lay.planes; ++p) {
      Sink& s = w.sink[p];
      uint64_t size = enc.encode(sym[p], lay.symbols_in(j), lay.prob_bits, s.base + s.used, s.cap - s.used);
      if (size == 0) {
        w.overflow = true;
        break;
      }
      s.used += size;
      sizes[p * lay.blocks_per_plane + j] = size;
    }
  }
}

Status check_options(DType t, const void* src, uint64_t count, const void* dst, uint64_t* written,
                     const EncodeOptions& opt) {
  if (!format::dtype_valid(static_cast<uint8_t>(t)) || !written || !dst || (count && !src) ||
      count > (uint64_t{1} << 58) || opt.threads < 0 ||
      (opt.log2_block && (opt.log2_block < format::kMinLog2Block || opt.log2_block > format::kMaxLog2Block)) ||
      (opt.prob_bits && (opt.prob_bits < format::kMinProbBits || opt.prob_bits > format::kMaxProbBits)))
    return Status::kInvalidArgument;
  return Status::kOk;
}

}  // namespace

Status compress(DType t, const void* src_v, uint64_t count, void* dst_v, uint64_t cap,
                uint64_t* written, const EncodeOptions& opt) {
  MPIZIP_CHECK(check_options(t, src_v, count, dst_v, written, opt));
  const auto* src = static_cast<const uint8_t*>(src_v);
  auto* dst = static_cast<uint8_t*>(dst_v);
  const int lb = opt.log2_block ? opt.log2_block : default_log2_block(t, count);
  const int pb = opt.prob_bits ? opt.prob_bits : default_prob_bits(t);
  const uint64_t stored_bytes = format::kHeaderBytes + count * format::elem_bytes(t);
  const Layout lay(t, count, lb, pb);
  if (count == 0 || lay.data_off >= stored_bytes || cap < lay.data_off)
    return write_stored(t, src, count, dst, cap, written, lb, pb);

  const int threads = resolve_threads(opt.threads, stored_bytes, lay.blocks_per_plane);
  std::vector<Worker> workers(threads);
  for (int w = 0; w < threads; ++w) {
    uint64_t b = lay.blocks_per_plane * w / threads, e = lay.blocks_per_plane * (w + 1) / threads;
    uint64_t worst = (e - b) * format::max_block_bytes(lay.block_symbols());
    for (int p = 0; p < lay.planes; ++p) {
      Sink& s = workers[w].sink[p];
      if (w == 0 && p == 0) {
        s.base = dst + lay.data_off;
        s.cap = cap - lay.data_off;
      } else {
        s.own.reset(new uint8_t[worst]);
        s.base = s.own.get();
        s.cap = worst;
      }
    }
  }
  std::vector<uint64_t> sizes(lay.nblocks);
  run_workers(threads, lay.blocks_per_plane, [&](int w, uint64_t b, uint64_t e) {
    encode_range(lay, src, dst, opt.checksum, workers[w], b, e, sizes.data());
  });

  uint64_t total = lay.data_off, checksum = 0;
  bool overflow = false;
  for (const Worker& w : workers) {
    overflow |= w.overflow;
    checksum += w.checksum;
    for (int p = 0; p < lay.planes; ++p) total += w.sink[p].used;
  }
  if (overflow || total >= stored_bytes || total > cap)
    return (overflow || total >= stored_bytes) ? write_stored(t, src, count, dst, cap, written, lb, pb)
                                               : Status::kTruncated;

  // Move the blocks held by workers into place; worker 0's plane-0 blocks are already there.
  uint64_t at = lay.data_off;
  for (int p = 0; p < lay.planes; ++p) {
    for (const Worker& w : workers) {
      const Sink& s = w.sink[p];
      if (s.own) std::memcpy(dst + at, s.base, s.used);
      at += s.used;
    }
  }
  uint8_t* coded = dst + lay.coded_off;
  uint64_t coded_bytes = total - lay.coded_off;
  uint64_t end = 0;
  std::memcpy(coded, &coded_bytes, 8);
  std::memcpy(coded + 8, &checksum, 8);
  for (uint64_t k = 0; k < lay.nblocks; ++k) {
    end += sizes[k];
    std::memcpy(coded + format::kCodedHeaderBytes + 8 * k, &end, 8);
  }
  uint64_t table_end = format::kCodedHeaderBytes + 8 * lay.nblocks;
  std::memset(coded + table_end, 0, format::align_up(table_end) - table_end);
  zero_raw_padding(lay, dst);
  write_header(dst, t, count, opt.checksum ? format::kFlagChecksum : 0, lb, pb, format::raw_bytes(t, count));
  *written = total;
  return Status::kOk;
}

}  // namespace mpizip::kernels::cpu
