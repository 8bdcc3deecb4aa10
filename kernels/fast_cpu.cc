// The CPU codec's fast streams (docs/FORMAT.md, "Fast streams"): every chunk of 4096 symbols coded
// with a fixed-length code of 2, 4 or 8 bits, the symbols outside its short codes escaped verbatim.
// compress_fast() and decompress_fast() are reached through compress() (EncodeOptions::mode) and
// decompress() (the header's FAST flag). They write and read byte for byte what the GPU codec's
// fast mode does (kernels/fast_gpu.cuh): the same choice of width and the same code order.
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "kernels/codec_cpu.h"
#include "kernels/stream_cpu.h"

namespace mpizip::kernels::cpu {

using format::DType;

namespace fast {

// Codes the n symbols at `sym` into `out` (room for fast_chunk_bytes(n, 4, n) bytes); returns the
// chunk's size.
uint64_t encode_chunk(const uint8_t* sym, uint32_t n, uint8_t* out) {
  uint32_t count[256] = {};
  for (uint32_t i = 0; i < n; ++i) ++count[sym[i]];
  // The 15 most frequent symbols, by count descending then symbol ascending (the GPU's order).
  uint8_t order[256];
  int present = 0;
  for (int s = 0; s < 256; ++s)
    if (count[s]) order[present++] = static_cast<uint8_t>(s);
  std::stable_sort(order, order + present, [&](uint8_t a, uint8_t b) { return count[a] > count[b]; });
  uint32_t top3 = 0, top15 = 0;
  for (int r = 0; r < present && r < 15; ++r) {
    top15 += count[order[r]];
    if (r < 3) top3 += count[order[r]];
  }
  const int w = format::fast_choose_width(n, top3, top15);
  const uint32_t esc = format::fast_escape(w);
  uint16_t code[256];
  for (int s = 0; s < 256; ++s) code[s] = static_cast<uint16_t>(w == 8 ? s : esc);
  std::memset(out, 0, format::kFastHeadBytes);
  out[0] = static_cast<uint8_t>(w);
  if (w < 8) {
    for (int r = 0; r < present && r < static_cast<int>(esc); ++r) {
      out[1 + r] = order[r];
      code[order[r]] = static_cast<uint16_t>(r);
    }
  }
  const uint64_t cb = format::fast_codes_bytes(n, w);
  uint8_t* codes = out + format::kFastHeadBytes;
  uint8_t* escapes = codes + cb;
  std::memset(codes, 0, cb);
  uint32_t nesc = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t c = code[sym[i]];
    if (w == 8) {
      codes[i] = static_cast<uint8_t>(c);
      continue;
    }
    codes[(uint64_t{i} * w) / 8] |= static_cast<uint8_t>(c << ((i * w) % 8));
    if (c == esc) escapes[nesc++] = sym[i];
  }
  const uint64_t size = format::fast_chunk_bytes(n, w, nesc);
  const uint64_t used = format::kFastHeadBytes + cb + nesc;
  std::memset(out + used, 0, size - used);
  return size;
}

// Decodes a chunk of n symbols from `size` bytes at p into sym; false when the chunk is not one
// (width, sizes, escapes all checked; nothing outside [p, p + size) is read).
bool decode_chunk(const uint8_t* p, uint64_t size, uint32_t n, uint8_t* sym) {
  if (size < format::kFastHeadBytes) return false;
  const int w = p[0];
  if (w != 2 && w != 4 && w != 8) return false;
  const uint64_t cb = format::fast_codes_bytes(n, w);
  if (size < format::kFastHeadBytes + cb) return false;
  const uint8_t* codes = p + format::kFastHeadBytes;
  if (w == 8) {
    std::memcpy(sym, codes, n);
    return size == format::fast_chunk_bytes(n, 8, 0);
  }
  const uint8_t* escapes = codes + cb;
  const uint64_t room = size - format::kFastHeadBytes - cb;
  const uint32_t esc = format::fast_escape(w);
  uint32_t nesc = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t c = (codes[(uint64_t{i} * w) / 8] >> ((i * w) % 8)) & esc;
    if (c == esc) {
      if (nesc >= room) return false;
      sym[i] = escapes[nesc++];
    } else {
      sym[i] = p[1 + c];
    }
  }
  return size == format::fast_chunk_bytes(n, w, nesc);
}

}  // namespace fast

namespace {

void write_fast_header(uint8_t* dst, DType t, uint64_t count, bool checksum) {
  format::Header h{};
  std::memcpy(h.magic, format::kMagic, 4);
  h.version = format::kVersionFast;
  h.dtype = static_cast<uint8_t>(t);
  h.flags = static_cast<uint8_t>(format::kFlagFast | (checksum ? format::kFlagChecksum : 0));
  h.log2_block = format::kFastLog2Chunk;
  h.count = count;
  h.raw_bytes = format::raw_bytes(t, count);
  h.prob_bits = 0;
  h.planes = static_cast<uint8_t>(format::planes(t));
  std::memcpy(dst, &h, sizeof h);
}

}  // namespace

Status compress_fast(DType t, const uint8_t* src, uint64_t count, uint8_t* dst, uint64_t cap, uint64_t* written,
                     const EncodeOptions& opt) {
  const Layout lay(t, count, format::kFastLog2Chunk, 0);
  if (cap < lay.data_off) return Status::kTruncated;
  const int threads = resolve_threads(opt.threads, count * format::elem_bytes(t), lay.blocks_per_plane);
  // Each worker codes its chunks into a buffer of its own (raw bits straight into the stream), then
  // the chunks move into place.
  struct Worker {
    std::vector<uint8_t> out;
    uint64_t checksum = 0;
  };
  std::vector<Worker> workers(threads);
  std::vector<uint64_t> sizes(lay.nblocks);
  const uint64_t eb = format::elem_bytes(t);
  run_workers(threads, lay.blocks_per_plane, [&](int wi, uint64_t b, uint64_t e) {
    Worker& w = workers[wi];
    std::unique_ptr<uint8_t[]> symbuf(new uint8_t[2 * lay.block_symbols()]);
    uint8_t* sym[2] = {symbuf.get(), symbuf.get() + lay.block_symbols()};
    uint8_t* raw[2] = {dst + lay.raw_off(0), dst + lay.raw_off(1)};
    uint8_t chunk[format::kFastMaxChunkBytes];
    for (uint64_t j = b; j < e; ++j) {
      const Chunk c = lay.chunk(j);
      split_chunk(t, src, c, raw, sym);
      if (opt.checksum) w.checksum += checksum_part(src + c.first * eb, c.first * eb, c.n * eb);
      for (int p = 0; p < lay.planes; ++p) {
        const uint64_t size = fast::encode_chunk(sym[p], lay.symbols_in(j), chunk);
        w.out.insert(w.out.end(), chunk, chunk + size);
        sizes[j * lay.planes + p] = size;
      }
    }
  });
  uint64_t total = lay.data_off, checksum = 0;
  for (const Worker& w : workers) {
    total += w.out.size();
    checksum += w.checksum;
  }
  if (total > cap) return Status::kTruncated;
  uint64_t at = lay.data_off;
  for (const Worker& w : workers) {
    if (!w.out.empty()) std::memcpy(dst + at, w.out.data(), w.out.size());
    at += w.out.size();
  }
  uint8_t* coded = dst + lay.coded_off;
  const uint64_t coded_bytes = total - lay.coded_off;
  std::memcpy(coded, &coded_bytes, 8);
  std::memcpy(coded + 8, &checksum, 8);
  uint64_t end = 0;
  for (uint64_t k = 0; k < lay.nblocks; ++k) {
    end += sizes[k];
    std::memcpy(coded + format::kCodedHeaderBytes + 8 * k, &end, 8);
  }
  const uint64_t table_end = format::kCodedHeaderBytes + 8 * lay.nblocks;
  std::memset(coded + table_end, 0, format::align_up(table_end) - table_end);
  for (int i = 0; i < format::raw_subplanes(t); ++i) {
    const uint64_t e = lay.raw_off(i) + format::raw_subplane_bytes(t, count, i);
    std::memset(dst + e, 0, format::align_up(e) - e);
  }
  write_fast_header(dst, t, count, opt.checksum);
  *written = total;
  return Status::kOk;
}

Status decompress_fast(const StreamInfo& info, const uint8_t* src, uint64_t src_bytes, uint8_t* dst,
                       uint64_t* count_out, int threads) {
  const Layout lay(info.dtype, info.count, format::kFastLog2Chunk, 0);
  const bool has_checksum = info.flags & format::kFlagChecksum;
  std::vector<uint64_t> ends;
  uint64_t stored_sum = 0;
  MPIZIP_CHECK(read_block_table(lay, src, src_bytes, has_checksum, false, &ends, &stored_sum));
  const uint64_t eb = format::elem_bytes(lay.t);
  const int t = resolve_threads(threads, info.count * eb, lay.blocks_per_plane);
  std::vector<uint64_t> sums(t, 0);
  std::atomic<bool> failed{false};
  run_workers(t, lay.blocks_per_plane, [&](int w, uint64_t b, uint64_t e) {
    std::unique_ptr<uint8_t[]> symbuf(new uint8_t[2 * lay.block_symbols()]);
    uint8_t* sym[2] = {symbuf.get(), symbuf.get() + lay.block_symbols()};
    const uint8_t* raw[2] = {src + lay.raw_off(0), src + lay.raw_off(1)};
    for (uint64_t j = b; j < e && !failed.load(std::memory_order_relaxed); ++j) {
      for (int p = 0; p < lay.planes; ++p) {
        const uint64_t k = j * lay.planes + p;
        const uint64_t start = k ? ends[k - 1] : 0;
        if (!fast::decode_chunk(src + lay.data_off + start, ends[k] - start, lay.symbols_in(j), sym[p])) {
          failed.store(true, std::memory_order_relaxed);
          return;
        }
      }
      const Chunk c = lay.chunk(j);
      merge_chunk(lay.t, raw, sym, c, dst);
      if (has_checksum) sums[w] += checksum_part(dst + c.first * eb, c.first * eb, c.n * eb);
    }
  });
  if (failed.load()) return Status::kCorruptStream;
  uint64_t sum = 0;
  for (uint64_t s : sums) sum += s;
  if (has_checksum && sum != stored_sum) return Status::kCorruptStream;
  *count_out = info.count;
  return Status::kOk;
}

}  // namespace mpizip::kernels::cpu
