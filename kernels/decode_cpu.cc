// decompress(): validate the stream's structure (header, coded section, plane tables of a
// SHARED_TABLE stream, block table), then decode each chunk's blocks and merge them with the raw
// bits straight into the destination.
#include <atomic>
#include <bit>
#include <memory>

#include "kernels/ans_cpu.h"
#include "kernels/codec_cpu.h"
#include "kernels/stream_cpu.h"

namespace mpizip::kernels::cpu {
namespace {

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Reads and checks a SHARED_TABLE stream's plane tables (docs/FORMAT.md, "Plane tables"): each
// inside the coded section, its frequencies those of its bitmap, each 1..M, summing to M. On
// success, freqs[plane][symbol] holds them (0: absent) and the layout's data offset is set past
// them.
Status read_plane_tables(Layout* lay, const uint8_t* src, uint64_t src_bytes, uint32_t (*freqs)[256]) {
  if (src_bytes < lay->coded_off + format::kCodedHeaderBytes) return Status::kCorruptStream;
  const uint64_t coded_bytes = load64(src + lay->coded_off);
  if (coded_bytes > src_bytes - lay->coded_off) return Status::kCorruptStream;
  const uint32_t m = 1u << lay->prob_bits;
  uint64_t at = lay->tables_off - lay->coded_off;  // from the start of the coded section
  for (int p = 0; p < lay->planes; ++p) {
    if (coded_bytes < at || coded_bytes - at < format::kBitmapBytes) return Status::kCorruptStream;
    const uint8_t* table = src + lay->coded_off + at;
    uint32_t nsym = 0;
    for (size_t i = 0; i < format::kBitmapBytes; ++i) nsym += std::popcount(table[i]);
    const uint64_t size = format::shared_table_bytes(nsym);
    if (coded_bytes - at < size) return Status::kCorruptStream;
    uint32_t sum = 0, k = 0;
    for (int s = 0; s < 256; ++s) {
      freqs[p][s] = 0;
      if (!(table[s / 8] >> (s % 8) & 1)) continue;
      uint16_t f;
      std::memcpy(&f, table + format::kBitmapBytes + 2 * k++, 2);
      if (f == 0 || f > m - sum) return Status::kCorruptStream;  // zero, or the sum would pass M
      freqs[p][s] = f;
      sum += f;
    }
    if (sum != m) return Status::kCorruptStream;
    at += size;
  }
  lay->set_tables(lay->coded_off + at - lay->tables_off);
  return Status::kOk;
}

// Decodes chunks [begin, end); returns the first error, and adds the checksum terms of the output.
// tables[p]: plane p's frequencies in a SHARED_TABLE stream, null otherwise.
Status decode_range(const Layout& lay, const uint8_t* src, const uint64_t* ends,
                    const uint32_t* const tables[2], uint8_t* dst, bool checksum, uint64_t begin,
                    uint64_t end, const std::atomic<bool>& failed, uint64_t* sum) {
  // One decoder per plane, so that each builds its plane's decoding tables once, and one for the
  // blocks with their own tables.
  ans::BlockDecoder dec[2], own_dec;
  std::unique_ptr<uint8_t[]> symbuf(new uint8_t[2 * lay.block_symbols()]);
  uint8_t* sym[2] = {symbuf.get(), symbuf.get() + lay.block_symbols()};
  const uint8_t* raw[2] = {src + lay.raw_off(0), src + lay.raw_off(1)};
  const uint64_t eb = format::elem_bytes(lay.t);
  for (uint64_t j = begin; j < end; ++j) {
    if (failed.load(std::memory_order_relaxed)) return Status::kCorruptStream;
    for (int p = 0; p < lay.planes; ++p) {
      uint64_t k = p * lay.blocks_per_plane + j;
      const uint64_t start = k ? ends[k - 1] & ~uint64_t{1} : 0, stop = ends[k] & ~uint64_t{1};
      const bool own = !tables[p] || (ends[k] & 1);
      MPIZIP_CHECK((own ? own_dec : dec[p]).decode(src + lay.data_off + start, stop - start, lay.prob_bits,
                                                   lay.symbols_in(j), sym[p], own ? nullptr : tables[p]));
    }
    Chunk c = lay.chunk(j);
    merge_chunk(lay.t, raw, sym, c, dst);
    if (checksum) *sum += checksum_part(dst + c.first * eb, c.first * eb, c.n * eb);
  }
  return Status::kOk;
}

}  // namespace

// Reads and checks the coded section's header and block table: ends non-decreasing, multiples of
// 16, the last one exactly at coded_bytes; in a SHARED_TABLE stream (shared) bit 0 of an entry may
// be set (the block has its own table) and is not part of the end. On success, ends[k] is block k's
// entry (its end from the first block, with that bit), and *checksum the stored checksum.
Status read_block_table(const Layout& lay, const uint8_t* src, uint64_t src_bytes, bool has_checksum, bool shared,
                        std::vector<uint64_t>* ends, uint64_t* checksum) {
  if (src_bytes < lay.coded_off + format::kCodedHeaderBytes) return Status::kCorruptStream;
  const uint8_t* coded = src + lay.coded_off;
  const uint64_t coded_bytes = load64(coded);
  const uint64_t table_bytes = lay.data_off - lay.coded_off;
  *checksum = load64(coded + 8);
  if (coded_bytes < table_bytes || coded_bytes > src_bytes - lay.coded_off ||
      (!has_checksum && *checksum != 0))
    return Status::kCorruptStream;
  ends->resize(lay.nblocks);
  uint64_t prev = 0;
  for (uint64_t k = 0; k < lay.nblocks; ++k) {
    const uint64_t entry = load64(coded + format::kCodedHeaderBytes + 8 * k);
    const uint64_t e = shared ? entry & ~uint64_t{1} : entry;
    if (e < prev || e % format::kAlign) return Status::kCorruptStream;
    (*ends)[k] = entry;
    prev = e;
  }
  return prev == coded_bytes - table_bytes ? Status::kOk : Status::kCorruptStream;
}

Status decompress(const void* src_v, uint64_t src_bytes, void* dst_v, uint64_t dst_capacity,
                  uint64_t* count_out, int threads) {
  if (!count_out || threads < 0) return Status::kInvalidArgument;
  StreamInfo info;
  MPIZIP_CHECK(read_header(src_v, src_bytes, &info));
  const auto* src = static_cast<const uint8_t*>(src_v);
  auto* dst = static_cast<uint8_t*>(dst_v);
  const uint64_t out_bytes = info.count * format::elem_bytes(info.dtype);
  if (dst_capacity < out_bytes) return Status::kTruncated;
  if (out_bytes && !dst) return Status::kInvalidArgument;

  if (info.flags & format::kFlagFast) return decompress_fast(info, src, src_bytes, dst, count_out, threads);
  if (info.flags & format::kFlagStored) {
    if (src_bytes - format::kHeaderBytes < out_bytes) return Status::kCorruptStream;
    if (out_bytes) std::memcpy(dst, src + format::kHeaderBytes, out_bytes);
    *count_out = info.count;
    return Status::kOk;
  }

  Layout lay(info.dtype, info.count, info.log2_block, info.prob_bits);
  const bool has_checksum = info.flags & format::kFlagChecksum;
  uint32_t freqs[2][256];
  const uint32_t* tables[2] = {nullptr, nullptr};
  if (info.flags & format::kFlagSharedTable) {
    MPIZIP_CHECK(read_plane_tables(&lay, src, src_bytes, freqs));
    tables[0] = freqs[0];
    tables[1] = freqs[1];
  }
  std::vector<uint64_t> ends;
  uint64_t stored_sum = 0;
  MPIZIP_CHECK(read_block_table(lay, src, src_bytes, has_checksum, tables[0] != nullptr, &ends, &stored_sum));

  const int t = resolve_threads(threads, out_bytes, lay.blocks_per_plane);
  std::vector<Status> status(t, Status::kOk);
  std::vector<uint64_t> sums(t, 0);
  std::atomic<bool> failed{false};
  run_workers(t, lay.blocks_per_plane, [&](int w, uint64_t b, uint64_t e) {
    status[w] = decode_range(lay, src, ends.data(), tables, dst, has_checksum, b, e, failed, &sums[w]);
    if (status[w] != Status::kOk) failed.store(true, std::memory_order_relaxed);
  });
  uint64_t sum = 0;
  for (int w = 0; w < t; ++w) {
    MPIZIP_CHECK(status[w]);
    sum += sums[w];
  }
  if (has_checksum && sum != stored_sum) return Status::kCorruptStream;
  *count_out = info.count;
  return Status::kOk;
}

}  // namespace mpizip::kernels::cpu
