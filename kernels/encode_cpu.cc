// compress(): split every chunk of elements into raw bits (written in place) and symbols, code the
// symbols block by block, lay the blocks out, and fall back to STORED when that is not smaller.
// A SHARED_TABLE stream first counts every plane's symbols over the whole input, for its plane
// tables, and codes each block with its plane's table or its own, whichever is smaller.
#include <memory>
#include <vector>

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
  h.version = format::version_for(flags);
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

// Counts the symbols of each plane in chunks [begin, end) into counts[plane][symbol]. The raw bits
// the split writes are those the coding pass writes again.
void count_range(const Layout& lay, const uint8_t* src, uint8_t* dst, uint64_t begin, uint64_t end,
                 uint64_t (*counts)[256]) {
  std::unique_ptr<uint8_t[]> symbuf(new uint8_t[2 * lay.block_symbols()]);
  uint8_t* sym[2] = {symbuf.get(), symbuf.get() + lay.block_symbols()};
  uint8_t* raw[2] = {dst + lay.raw_off(0), dst + lay.raw_off(1)};
  for (uint64_t j = begin; j < end; ++j) {
    split_chunk(lay.t, src, lay.chunk(j), raw, sym);
    for (int p = 0; p < lay.planes; ++p) {
      uint32_t c[256];
      ans::histogram(sym[p], lay.symbols_in(j), c);
      for (int s = 0; s < 256; ++s) counts[p][s] += c[s];
    }
  }
}

// Codes chunks [begin, end) into the worker's sinks; records each block's size. tables[p]: plane
// p's frequencies in a SHARED_TABLE stream, null otherwise. There each block is coded both ways,
// with the plane's table and with its own, and keeps the smaller; a block that keeps its own has
// bit 0 of its size set (sizes are multiples of 16 otherwise), as its block_end entry will.
void encode_range(const Layout& lay, const uint8_t* src, uint8_t* dst, bool checksum,
                  const uint32_t* const tables[2], Worker& w, uint64_t begin, uint64_t end,
                  uint64_t* sizes) {
  // One coder per plane, so that each keeps the coding tables of its plane's table, and one for
  // the blocks' own tables.
  std::vector<ans::BlockEncoder> enc;
  for (int p = 0; p < lay.planes; ++p) enc.emplace_back(lay.log2_block);
  ans::BlockEncoder own_enc(lay.log2_block);
  const uint64_t own_cap = tables[0] ? format::max_block_bytes(lay.block_symbols()) : 0;
  std::unique_ptr<uint8_t[]> own_buf(new uint8_t[own_cap ? own_cap : 1]);
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
      uint64_t size = enc[p].encode(sym[p], lay.symbols_in(j), lay.prob_bits, s.base + s.used, s.cap - s.used,
                                    tables[p]);
      if (size == 0) {
        w.overflow = true;
        break;
      }
      uint64_t own = 0;
      if (tables[p]) {
        const uint64_t mine = own_enc.encode(sym[p], lay.symbols_in(j), lay.prob_bits, own_buf.get(), own_cap);
        if (mine && mine < size) {
          std::memcpy(s.base + s.used, own_buf.get(), mine);
          size = mine, own = 1;
        }
      }
      s.used += size;
      sizes[p * lay.blocks_per_plane + j] = size | own;
    }
  }
}

Status check_options(DType t, const void* src, uint64_t count, const void* dst, uint64_t* written,
                     const EncodeOptions& opt) {
  if (!format::dtype_valid(static_cast<uint8_t>(t)) || !written || !dst || (count && !src) ||
      count > (uint64_t{1} << 58) || opt.threads < 0 ||
      (opt.log2_block && (opt.log2_block < format::kMinLog2Block || opt.log2_block > format::kMaxLog2Block)) ||
      (opt.prob_bits && (opt.prob_bits < format::kMinProbBits || opt.prob_bits > format::kMaxProbBits)) ||
      opt.table < kTableAuto || opt.table > kTableShared || (opt.mode != kModeAns && opt.mode != kModeFast))
    return Status::kInvalidArgument;
  return Status::kOk;
}

// Counts every plane's symbols over the whole input and scales them to the plane tables'
// frequencies, freqs[plane][symbol]. Returns the bytes the plane tables take.
uint64_t plane_tables(const Layout& lay, const uint8_t* src, uint8_t* dst, int threads, uint32_t (*freqs)[256]) {
  struct Counts {
    uint64_t c[2][256];
  };
  std::vector<Counts> counts(threads, Counts{});
  run_workers(threads, lay.blocks_per_plane, [&](int w, uint64_t b, uint64_t e) {
    count_range(lay, src, dst, b, e, counts[w].c);
  });
  uint64_t bytes = 0;
  for (int p = 0; p < lay.planes; ++p) {
    uint64_t total[256] = {};
    for (const auto& c : counts)
      for (int s = 0; s < 256; ++s) total[s] += c.c[p][s];
    ans::normalize(total, lay.nsym, lay.prob_bits, freqs[p]);
    uint32_t nsym = 0;
    for (int s = 0; s < 256; ++s) nsym += freqs[p][s] != 0;
    bytes += format::shared_table_bytes(nsym);
  }
  return bytes;
}

// Writes the plane tables at dst (the layout's tables_off), padding zeroed.
void write_plane_tables(const Layout& lay, const uint32_t (*freqs)[256], uint8_t* dst) {
  for (int p = 0; p < lay.planes; ++p) {
    uint8_t bitmap[format::kBitmapBytes] = {};
    uint32_t nsym = 0;
    for (int s = 0; s < 256; ++s) {
      if (!freqs[p][s]) continue;
      bitmap[s / 8] |= static_cast<uint8_t>(1u << (s % 8));
      const uint16_t f = static_cast<uint16_t>(freqs[p][s]);
      std::memcpy(dst + format::kBitmapBytes + 2 * nsym++, &f, 2);
    }
    std::memcpy(dst, bitmap, sizeof bitmap);
    const uint64_t used = format::kBitmapBytes + 2 * nsym, size = format::shared_table_bytes(nsym);
    std::memset(dst + used, 0, size - used);
    dst += size;
  }
}

}  // namespace

Status compress(DType t, const void* src_v, uint64_t count, void* dst_v, uint64_t cap,
                uint64_t* written, const EncodeOptions& opt) {
  MPIZIP_CHECK(check_options(t, src_v, count, dst_v, written, opt));
  const auto* src = static_cast<const uint8_t*>(src_v);
  auto* dst = static_cast<uint8_t*>(dst_v);
  if (opt.mode == kModeFast) return compress_fast(t, src, count, dst, cap, written, opt);
  const int lb = opt.log2_block ? opt.log2_block : default_log2_block(t, count);
  const int pb = opt.prob_bits ? opt.prob_bits : default_prob_bits(t);
  const uint64_t stored_bytes = format::kHeaderBytes + count * format::elem_bytes(t);
  Layout lay(t, count, lb, pb);
  if (count == 0 || lay.data_off >= stored_bytes || cap < lay.data_off)
    return write_stored(t, src, count, dst, cap, written, lb, pb);

  const int threads = resolve_threads(opt.threads, stored_bytes, lay.blocks_per_plane);
  const bool shared = opt.table == kTableShared || (opt.table == kTableAuto && lb <= kMaxSharedLog2Block);
  uint32_t freqs[2][256] = {};
  const uint32_t* tables[2] = {nullptr, nullptr};
  if (shared) {
    lay.set_tables(plane_tables(lay, src, dst, threads, freqs));
    if (lay.data_off >= stored_bytes || cap < lay.data_off)
      return write_stored(t, src, count, dst, cap, written, lb, pb);
    tables[0] = freqs[0];
    tables[1] = freqs[1];
  }
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
    encode_range(lay, src, dst, opt.checksum, tables, workers[w], b, e, sizes.data());
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
    end += sizes[k] & ~uint64_t{15};
    const uint64_t entry = end | (sizes[k] & 1);  // bit 0: the block has its own table
    std::memcpy(coded + format::kCodedHeaderBytes + 8 * k, &entry, 8);
  }
  uint64_t table_end = format::kCodedHeaderBytes + 8 * lay.nblocks;
  std::memset(coded + table_end, 0, format::align_up(table_end) - table_end);
  if (shared) write_plane_tables(lay, freqs, dst + lay.tables_off);
  zero_raw_padding(lay, dst);
  uint8_t flags = opt.checksum ? format::kFlagChecksum : 0;
  if (shared) flags |= format::kFlagSharedTable;
  write_header(dst, t, count, flags, lb, pb, format::raw_bytes(t, count));
  *written = total;
  return Status::kOk;
}

}  // namespace mpizip::kernels::cpu
