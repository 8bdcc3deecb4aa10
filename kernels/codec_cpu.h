// The CPU reference codec: compresses and decompresses host buffers in the MPIZip stream format
// (docs/FORMAT.md). It is the oracle the GPU codec is tested against, the codec of host buffers
// (MPIZIP_HOST_COMPRESS), and what runs the whole protocol in CI without a GPU.
//
// All functions are thread-safe and reentrant; they allocate only per-call scratch. Pointers may
// have any alignment (element-aligned or not). Sizes are in bytes unless they say "elements".
#pragma once

#include <cstdint>

#include "kernels/format.h"
#include "src/platform/status.h"

namespace mpizip::kernels::cpu {

// EncodeOptions::table: where the frequency tables go (docs/FORMAT.md, "Plane tables").
// Auto: one table per symbol plane when blocks hold at most 1 << kMaxSharedLog2Block symbols,
// where a block's own table is a large share of the block; one per block otherwise.
inline constexpr int kTableAuto = 0;
// One table in each block: a version 1 stream.
inline constexpr int kTablePerBlock = 1;
// One table per symbol plane for the whole stream: SHARED_TABLE, version 2. Costs one more pass
// over the input, to count the symbols.
inline constexpr int kTableShared = 2;
inline constexpr int kMaxSharedLog2Block = format::kMaxSharedLog2BlockByDefault;

// EncodeOptions::mode: the exponent coder. kModeAns: rANS with frequency tables (the default, the
// smallest streams). kModeFast: a fixed-length code of 2, 4 or 8 bits per symbol chosen per chunk of
// 4096 symbols, the symbols outside its short codes escaped verbatim (docs/FORMAT.md, "Fast
// streams"): a version 3 stream, never STORED, about 0.69-0.75 of bf16 where ANS gives 0.63, at the
// speed of memory on the GPU. log2_block, prob_bits and table do not apply to it. decompress()
// reads either kind.
inline constexpr int kModeAns = 0;
inline constexpr int kModeFast = 1;

struct EncodeOptions {
  int log2_block = 0;      // symbols per block, 10..16; 0: chosen from the count
  int prob_bits = 0;       // ANS precision, 9..15; 0: the default (chosen by measurement)
  bool checksum = false;   // set the CHECKSUM flag and store the checksum of the original data
  int threads = 0;         // worker threads; 0: hardware concurrency for large inputs, 1 for small
  int table = kTableAuto;  // kTableAuto, kTablePerBlock or kTableShared
  int mode = kModeAns;     // kModeAns or kModeFast
};

// What a stream's header says (read_header). Fields are those of docs/FORMAT.md.
struct StreamInfo {
  format::DType dtype;
  uint64_t count;       // elements
  uint8_t flags;        // format::Flags (kFlagSharedTable: a version 2 stream; format::kFlagFast: a fast one)
  int log2_block;
  int prob_bits;
  uint64_t raw_bytes;   // 0 for a STORED stream
  // Whole stream size in bytes, once enough of it is at hand to tell (STORED: from the header;
  // coded: once the coded section's first 8 bytes are inside src_bytes); 0 otherwise.
  uint64_t total_bytes_if_known;
};

// The defaults the encoder uses when EncodeOptions leaves them at 0.
int default_log2_block(format::DType t, uint64_t count);
int default_prob_bits(format::DType t);

// Upper bound of the compressed size in bytes of `count` elements, whatever the options.
uint64_t max_compressed_size(format::DType t, uint64_t count);

// Compresses `count` elements of type `t` at `src` into `dst` (`dst_capacity` bytes) and sets
// `*written` to the stream size. A capacity of max_compressed_size() always suffices; with less,
// kTruncated when the stream does not fit. Emits a STORED stream when coding would not shrink the
// data. kInvalidArgument: null pointers, unknown type, options out of range.
Status compress(format::DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity,
                uint64_t* written, const EncodeOptions& opt = {});

// Parses and validates the 32-byte header at `src` (`src_bytes` available, at least 32).
// kCorruptStream when any header field is out of range or inconsistent.
Status read_header(const void* src, uint64_t src_bytes, StreamInfo* info);

// Decompresses the stream at `src` (`src_bytes` available; bytes after the stream are ignored)
// into `dst` and sets `*count_out` to the number of elements written. kTruncated when
// `dst_capacity_bytes` is smaller than count * element size; kCorruptStream when any check of
// docs/FORMAT.md fails (nothing outside src[0, src_bytes) is read, nothing outside
// dst[0, count * element size) is written). `threads` as in EncodeOptions.
Status decompress(const void* src, uint64_t src_bytes, void* dst, uint64_t dst_capacity_bytes,
                  uint64_t* count_out, int threads = 0);

// The best ratio (compressed / original size) an exponent coder can reach on this buffer with one
// frequency table per symbol plane for the whole buffer: raw bits stored verbatim plus the Shannon
// entropy of each symbol plane, over the original bits. Headers and tables not counted.
double entropy_bound(format::DType t, const void* src, uint64_t count);

}  // namespace mpizip::kernels::cpu
