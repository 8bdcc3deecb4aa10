// Where everything lives in one stream of the MPIZip format (docs/FORMAT.md), computed once from
// the header fields, and the small helpers the CPU encoder and decoder share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "kernels/codec_cpu.h"
#include "kernels/format.h"
#include "kernels/split_cpu.h"

namespace mpizip::kernels::cpu {

struct Layout {
  Layout(format::DType type, uint64_t n, int log2_b, int pb)
      : t(type), count(n), log2_block(log2_b), prob_bits(pb),
        nsym(format::symbols_per_plane(type, n)),
        blocks_per_plane(format::blocks_per_plane(type, n, log2_b)),
        nblocks(format::total_blocks(type, n, log2_b)),
        planes(format::planes(type)),
        coded_off(format::coded_offset(type, n)),
        tables_off(coded_off + format::block_data_offset(type, n, log2_b)),
        data_off(tables_off) {}

  format::DType t;
  uint64_t count;  // elements
  int log2_block;
  int prob_bits;
  uint64_t nsym;              // symbols per plane
  uint64_t blocks_per_plane;  // = chunks
  uint64_t nblocks;           // all planes
  int planes;
  uint64_t coded_off;  // from the start of the stream
  // From the start of the stream: where a SHARED_TABLE stream's plane tables start (the block
  // table's end, padded), and the first block, which follows them (set_tables) or, without them,
  // is at tables_off.
  uint64_t tables_off;
  uint64_t data_off;

  // Makes this the layout of a SHARED_TABLE stream whose plane tables take `bytes` in all.
  void set_tables(uint64_t bytes) { data_off = tables_off + bytes; }

  uint64_t block_symbols() const { return uint64_t{1} << log2_block; }
  // Symbols in block j of any plane.
  uint32_t symbols_in(uint64_t j) const {
    return static_cast<uint32_t>(std::min(block_symbols(), nsym - j * block_symbols()));
  }
  // The elements whose symbols are block j of each plane.
  Chunk chunk(uint64_t j) const {
    uint64_t per = block_symbols() * elements_per_symbol(t);
    uint64_t first = j * per;
    return {first, std::min(per, count - first)};
  }
  uint64_t raw_off(int i) const { return format::raw_subplane_offset(t, count, i); }
};

// The checksum terms of bytes [0, nbytes) of the original data, the first of which is byte `at`
// of the whole buffer (a multiple of 4); a last partial word is zero-padded.
uint64_t checksum_part(const uint8_t* p, uint64_t at, uint64_t nbytes);

// Threads to use: `requested` if positive, else the hardware's for inputs of at least
// kParallelBytes and 1 below; never more than the work items.
inline constexpr uint64_t kParallelBytes = uint64_t{1} << 20;
int resolve_threads(int requested, uint64_t bytes, uint64_t items);

// Reads and checks the coded section's header and block table (kernels/decode_cpu.cc).
Status read_block_table(const Layout& lay, const uint8_t* src, uint64_t src_bytes, bool has_checksum, bool shared,
                        std::vector<uint64_t>* ends, uint64_t* checksum);

// Fast streams (kernels/fast_cpu.cc; docs/FORMAT.md, "Fast streams").
Status compress_fast(format::DType t, const uint8_t* src, uint64_t count, uint8_t* dst, uint64_t cap,
                     uint64_t* written, const EncodeOptions& opt);
Status decompress_fast(const StreamInfo& info, const uint8_t* src, uint64_t src_bytes, uint8_t* dst,
                       uint64_t* count_out, int threads);
namespace fast {
// One chunk of n symbols to `out` (room for format::kFastMaxChunkBytes); returns its size.
uint64_t encode_chunk(const uint8_t* sym, uint32_t n, uint8_t* out);
// One chunk of `size` bytes back to n symbols; false when it is not a valid chunk.
bool decode_chunk(const uint8_t* p, uint64_t size, uint32_t n, uint8_t* sym);
}  // namespace fast

// Runs f(worker, begin, end) on `threads` workers over contiguous ranges of [0, items); worker 0
// runs on the calling thread. A thread that cannot be started has its range run by the caller.
template <typename F>
void run_workers(int threads, uint64_t items, F&& f) {
  auto begin = [&](int w) { return items * w / threads; };
  std::vector<std::thread> pool;
  std::vector<int> inline_workers;
  for (int w = 1; w < threads; ++w) {
    try {
      pool.emplace_back([&f, w, b = begin(w), e = begin(w + 1)] { f(w, b, e); });
    } catch (const std::exception&) {
      inline_workers.push_back(w);
    }
  }
  f(0, begin(0), begin(1));
  for (int w : inline_workers) f(w, begin(w), begin(w + 1));
  for (std::thread& t : pool) t.join();
}

}  // namespace mpizip::kernels::cpu
