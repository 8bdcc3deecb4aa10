// The GPU codec: compresses and decompresses device buffers in the MPIZip stream format
// (docs/FORMAT.md), bit-compatible with the CPU reference codec (kernels/codec_cpu.h).
//
// Every call is stream-ordered and asynchronous: it enqueues work on `stream` (a cudaStream_t or
// hipStream_t passed as void*) and returns without waiting for the device. Nothing is allocated:
// the caller provides a workspace (workspace_bytes) and a device-visible result array. Data
// errors (corrupt stream, destination too small) are written to the result's status word, which
// the host reads after the stream has completed; the return value reports only argument errors
// (kInvalidArgument) and failed launches (kDeviceError), never data errors.
//
// One workspace serves one call at a time: calls that share a workspace must be ordered (the same
// stream, or event dependencies). Sizes are in bytes unless they say "elements"; counts are 64-bit.
// Pointers may have any element-aligned address; 16-byte aligned buffers take the fast path.
// This header is CUDA-free.
#pragma once

#include <cstdint>

#include "kernels/format.h"
#include "kernels/reduce.h"
#include "src/platform/status.h"

namespace mpizip::kernels::gpu {

// Most buffers in one batched call.
inline constexpr int kMaxBatch = 64;

// Written by the device, read by the host once the stream has completed. Must be device-visible
// memory (device memory, or mapped pinned host memory).
struct DeviceResult {
  uint64_t size;   // compress: stream bytes; decompress: elements written (0 on error)
  int32_t status;  // a mpizip::Status value: kOk, kCorruptStream, kTruncated, kTypeMismatch
  int32_t reserved;
};

struct EncodeOptions {
  int log2_block = 0;     // symbols per block, 10..16; 0: chosen from the type and the count
  int prob_bits = 0;      // ANS precision, 9..11 on the GPU; 0: the default (10 for shared tables, else 11)
  bool checksum = false;  // set the CHECKSUM flag and store the checksum of the original data
  int max_ctas = 0;       // most CTAs the kernels may occupy; 0: as many as fill the GPU
  // Which of the encoder's instantiations runs (codec_gpu.cu says why there are four): 0 the
  // launcher's choice by residency, 1 the wide one, 2 the middle one, 3 the narrow one, 4 the
  // streamed one (kInvalidArgument when the workspace holds no scratch slot for it). The streams are
  // the same whichever runs; the tests force each so that all are checked on the same inputs.
  int encoder = 0;
  // Frequency tables (docs/FORMAT.md): kTableAuto one table per symbol plane (SHARED_TABLE, each
  // block keeping its own where that is smaller) where blocks have at most 4096 symbols
  // (log2_block <= 12, every input below 2048 blocks of 16384) and one per block above;
  // kTablePerBlock or kTableShared force one (kTableShared with log2_block > 12: kInvalidArgument).
  // A shared table costs a count pass over the input before the encoder's launch.
  int table = 0;
  // The exponent coder: kModeAns (rANS with frequency tables, the smallest streams) or kModeFast
  // (docs/FORMAT.md, "Fast streams": a fixed-length code of 2, 4 or 8 bits a symbol chosen per chunk
  // of 4096 symbols plus escapes; one pass at the speed of memory, the bytes of the CPU codec's
  // fast mode). Fast mode is taken by compress() only (split(), encode() and compress_batch():
  // kInvalidArgument); log2_block, prob_bits, table and encoder do not apply to it.
  int mode = 0;
};
inline constexpr int kTableAuto = 0, kTablePerBlock = 1, kTableShared = 2;
inline constexpr int kModeAns = 0, kModeFast = 1;

// Options of decompress(): the coder the stream was written with (a fast stream given to the ANS
// decoder, or the other way round, is reported as kCorruptStream) and the most CTAs to occupy.
struct DecodeOptions {
  int max_ctas = 0;
  int mode = kModeAns;
};
// The GPU encoder takes SHARED_TABLE only up to this block size (kInvalidArgument above it).
inline constexpr int kMaxSharedLog2Block = format::kMaxSharedLog2BlockByDefault;

// One buffer of a batched call. For compression `src` holds `count` elements and `dst` receives
// the stream (`dst_capacity` bytes); for decompression `src` holds a stream of `src_bytes` bytes
// and `dst` receives up to `dst_capacity` bytes of elements.
struct Buffer {
  const void* src;
  uint64_t count;      // compression: elements in src; decompression: src_bytes
  void* dst;
  uint64_t dst_capacity;
};

// Upper bound of a stream's size for `count` elements, whatever the options (same as the CPU's).
uint64_t max_compressed_size(format::DType t, uint64_t count);

// The log2_block and prob_bits the encoder uses for `count` elements with `opt`; split() and
// encode() of one stream must see the same options.
int resolve_log2_block(format::DType t, uint64_t count, const EncodeOptions& opt);
int resolve_prob_bits(format::DType t, uint64_t count, const EncodeOptions& opt);
// Whether the stream gets one table per plane (SHARED_TABLE), from opt.table and the block size.
bool resolve_shared_table(format::DType t, uint64_t count, const EncodeOptions& opt);

// Workspace for compressing or decompressing buffers of `total_count` elements altogether (the sum
// over a batch): 1 KiB of launch state, 392 KiB of symbol counts and plane tables (a SHARED_TABLE
// launch's, 3 KiB per buffer and plane), 8 bytes per block of the smallest block size (1024 symbols), at most 0.8%
// of the input (e5m2; bf16 0.4%) plus 4 KiB; then, for 1024 blocks or more,
// the streamed encoder's scratch: a slot of ~1.13 bytes a symbol of a block for each block up to
// 4096 (bf16 at 16384-symbol blocks: 56% of the input at 64 MiB, 72 MiB from 128 MiB). A smaller
// workspace (not less than the first part) works: the launcher runs the streamed encoder on as
// many groups as it holds slots for, or not at all. It must be zeroed once before its first use (workspace_init); the kernels leave it ready for
// the next call.
uint64_t workspace_bytes(format::DType t, uint64_t total_count);
Status workspace_init(void* workspace, uint64_t workspace_bytes, void* stream);

// Split stage of split-send: writes the header and the raw section of the stream (everything but
// the coded section) and records `split_done` (a cudaEvent_t / hipEvent_t, may be null) on
// `stream` right after, so a sender can put stream[0, format::coded_offset(t, count)) on the wire
// while encode() runs. For inputs coded as STORED (tiny ones) it writes the whole stream.
Status split(format::DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity,
             const EncodeOptions& opt, void* stream, void* split_done);

// Encode stage: writes the coded section after split() has run with the same arguments, and the
// stream size to result->size.
Status encode(format::DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity,
              void* workspace, uint64_t workspace_bytes, DeviceResult* result,
              const EncodeOptions& opt, void* stream);

// Fused compression in a single launch: header, raw section and coded section. The stream size
// is in result->size (also in the coded section's coded_bytes field) once the stream completes.
Status compress(format::DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity,
                void* workspace, uint64_t workspace_bytes, DeviceResult* result,
                const EncodeOptions& opt, void* stream);

// Batched fused compression: n (<= kMaxBatch) buffers of one type in one launch; results[i] is
// buffer i's. The block size is chosen from the largest count unless opt says otherwise.
Status compress_batch(format::DType t, const Buffer* buffers, int n, void* workspace,
                      uint64_t workspace_bytes, DeviceResult* results, const EncodeOptions& opt,
                      void* stream);

// Decompresses the stream at src (`src_bytes` available) into dst straight, in one launch.
// `t` is the element type the caller expects: a stream of another type gives kTypeMismatch.
// result->size is the element count; kTruncated when dst_capacity is smaller than the data.
Status decompress(format::DType t, const void* src, uint64_t src_bytes, void* dst,
                  uint64_t dst_capacity, void* workspace, uint64_t workspace_bytes,
                  DeviceResult* result, int max_ctas, void* stream);
// The same, for a stream of either coder (opt.mode says which).
Status decompress(format::DType t, const void* src, uint64_t src_bytes, void* dst,
                  uint64_t dst_capacity, void* workspace, uint64_t workspace_bytes,
                  DeviceResult* result, const DecodeOptions& opt, void* stream);

// Batched decompression: n (<= kMaxBatch) streams of one type in one launch (Buffer::count is the
// stream's src_bytes).
Status decompress_batch(format::DType t, const Buffer* buffers, int n, void* workspace,
                        uint64_t workspace_bytes, DeviceResult* results, int max_ctas,
                        void* stream);

// Decoding fused with the reduce: out[i] = the fold of inputs[0..n) at element i in that order
// (kernels/reduce.h), where an input is either `count` raw elements at `src` (stream_bytes 0) or a
// stream of `stream_bytes` bytes at `src` that decodes to them. One launch decodes the streams
// and folds, without writing any decoded stream to memory; it gives the bits that decompressing
// each stream and then reduce() give. Up to kMaxFoldStreams of the inputs may be streams; every
// buffer and `out` must be 16-byte aligned (fold_fusable() says whether a call qualifies). `out`
// may be one of the raw inputs. results[k] is the k-th stream input's, as decompress() reports it;
// a stream of another element count gives kTruncated (more elements) or kCorruptStream (fewer).
inline constexpr int kMaxFoldStreams = 3;
struct FoldInput {
  const void* src;
  uint64_t stream_bytes;
};
bool fold_fusable(const FoldInput* inputs, int n, const void* out);
// Whether the fused kernel decodes streams of type t: every float type but fp8 E4M3, whose symbols
// carry two elements each (kernels/split.cuh); decode_fold() answers kUnsupported for it, and its
// callers decode, then reduce.
constexpr bool fold_decodes(format::DType t) { return t != format::DType::kE4m3; }
Status decode_fold(format::DType t, reduce::Op op, const FoldInput* inputs, int n, void* out, uint64_t count,
                   void* workspace, uint64_t workspace_bytes, DeviceResult* results, void* stream);

}  // namespace mpizip::kernels::gpu
