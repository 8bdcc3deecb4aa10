// Host side of the GPU codec (kernels/codec_gpu.h): argument checks, launch shapes, and the
// instantiations of the decoder, the split stage and the count stage (the encoder's are in
// kernels/encode_*.cu, kernels/encode_kernels.cuh); the runtime element type picks one through
// launch::dispatch.
#include "kernels/codec_gpu.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "kernels/ans_decode.cuh"
#include "kernels/ans_encode.cuh"
#include "kernels/count_stage.cuh"
#include "kernels/fast_gpu.h"
#include "kernels/launch.h"
#include "kernels/split_stage.cuh"
#include "src/platform/gpu.h"

namespace mpizip::kernels::gpu {

using format::DType;

namespace {

using namespace launch;

// Encoder: one 32-lane group per CTA (launch::kEncThreads). Decoder: 4 groups per CTA.
constexpr int kEncGroups = kEncThreads / lanes::kLanes;
constexpr int kDecThreads = 128;
constexpr int kDecGroups = kDecThreads / lanes::kLanes;
constexpr int kSplitThreads = 256;
// prob_bits by default: 10 for blocks on a table shared by the plane (up to kMaxSharedLog2Block),
// 11 for larger blocks, which keep tables of their own (resolve_prob_bits says why).
constexpr int kSharedProbBits = 10;
constexpr int kOwnProbBits = 11;
constexpr int kMaxGpuProbBits = 11;  // see encode::group_smem_bytes

// Groups of the streamed instantiation that workspace_bytes() leaves scratch for (its 20 a
// multiprocessor on up to 204 multiprocessors; an H200's 132 take 2,640); the launcher runs as many
// as the caller's workspace holds. Launches of fewer
// blocks than kStreamMinBlocks fit the shared-memory instantiations in one wave on an H100 or H200,
// where the streamed one gains nothing, so workspace_bytes() leaves them no scratch.
constexpr uint64_t kMaxStreamGroups = 4096;
constexpr uint64_t kStreamMinBlocks = 1024;
constexpr uint64_t kScratchAlign = 256;

// Decoder CTAs that fit a multiprocessor's shared memory (6; fp64's two tables: 3); the register
// cap lets them all reside, since resident groups are what hides the rANS chains' latency. fp32
// keeps a few more registers (4 chunks a lane per window), at 5. (Two blocks a group, two chains a
// lane, measured slower: kernels/NOTES-codec-gpu.md, v5.)
#ifndef MPIZIP_DEC_MIN_CTAS
#define MPIZIP_DEC_MIN_CTAS 6
#endif
template <DType T>
constexpr int kDecMinCtas = T == DType::kFp64 ? 3 : T == DType::kFp32 ? (MPIZIP_DEC_MIN_CTAS < 5 ? MPIZIP_DEC_MIN_CTAS : 5) : MPIZIP_DEC_MIN_CTAS;

template <DType T, bool kAligned>
__global__ void __launch_bounds__(kDecThreads, kDecMinCtas<T>) decode_kernel(const MPIZIP_GRID_CONSTANT decode::Params p) {
  extern __shared__ uint4 smem[];
  decode::run<T, kAligned>(p, reinterpret_cast<uint8_t*>(smem));
}

template <DType T, bool kAligned>
__global__ void __launch_bounds__(kSplitThreads) split_kernel(const split::StageParams p) {
  split::run_stage<T, kAligned>(p);
}

template <DType T, bool kAligned>
__global__ void __launch_bounds__(count::kThreads) count_kernel(const MPIZIP_GRID_CONSTANT count::Params p) {
  count::run<T, kAligned>(p);
}

// The workspace: launch state, the count stage's counts, then the encoder's look-back entries and
// the streamed instantiation's slots.
constexpr uint64_t kCountsAt = scan::kStateBytes;
constexpr uint64_t kEntriesAt = kCountsAt + encode::kCountsBytes;
// The encoder's launch after a count stage: a programmatic dependent launch where CUDA has it (the
// encoder starts while the count stage runs and waits for it inside, encode::count_stage_done),
// else an ordinary one.
gpuError_t launch_after_count(const void* k, int grid, void** args, uint32_t smem, gpuStream_t stream) {
#if defined(MPIZIP_HIP) || defined(__HIPCC__)
  return gpuLaunchKernel(k, dim3(grid), dim3(kEncThreads), args, smem, stream);
#else
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(kEncThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelExC(&cfg, k, args);
#endif
}

// The encoder's CTAs for `work` CTAs' worth of blocks when at most `grid` are resident: as many
// waves as `grid` gives, each of equal size (2048 blocks on 1452 slots: two waves of 1024, each
// block at the latency of a multiprocessor holding 7.8 groups, not 11). A block's latency grows
// with the groups sharing its multiprocessor (kernels/NOTES-codec-gpu.md, v6), so a full wave and
// a part wave cost more than two equal ones.
#ifndef MPIZIP_ENC_EQUAL_WAVES
#define MPIZIP_ENC_EQUAL_WAVES 1
#endif
uint64_t waves(uint64_t work, int grid) { return grid < 1 ? 0 : (work + grid - 1) / grid; }

int equal_waves(uint64_t work, int grid) {
  if (!MPIZIP_ENC_EQUAL_WAVES || grid < 1 || work <= static_cast<uint64_t>(grid)) return grid;
  const uint64_t waves = (work + grid - 1) / grid;
  return static_cast<int>((work + waves - 1) / waves);
}

bool stored_form(DType t, uint64_t count) { return count * format::elem_bytes(t) <= encode::kStoredMaxBytes; }

uint64_t tickets(DType t, uint64_t count, int lb) {
  return stored_form(t, count) ? 1 : format::total_blocks(t, count, lb);
}

bool options_valid(const EncodeOptions& opt) {
  return (opt.log2_block == 0 || (opt.log2_block >= format::kMinLog2Block && opt.log2_block <= format::kMaxLog2Block)) &&
         (opt.prob_bits == 0 || (opt.prob_bits >= format::kMinProbBits && opt.prob_bits <= kMaxGpuProbBits)) &&
         opt.max_ctas >= 0 && opt.encoder >= 0 && opt.encoder <= 4 && opt.table >= kTableAuto &&
         opt.table <= kTableShared && !(opt.table == kTableShared && opt.log2_block > kMaxSharedLog2Block) &&
         (opt.mode == kModeAns || opt.mode == kModeFast);
}

Status launch_encode(DType t, const Buffer* buffers, int n, void* workspace, uint64_t workspace_bytes,
                     DeviceResult* results, const EncodeOptions& opt, void* stream, bool fused) {
  if (!buffers || n < 1 || n > kMaxBatch || !workspace || !aligned16(workspace) || !results ||
      !format::dtype_valid(static_cast<uint8_t>(t)) || !options_valid(opt) || opt.mode != kModeAns)
    return Status::kInvalidArgument;
  uint64_t max_count = 0;
  for (int i = 0; i < n; ++i) {
    if ((!buffers[i].src && buffers[i].count) || !buffers[i].dst) return Status::kInvalidArgument;
    max_count = std::max(max_count, buffers[i].count);
  }
  if (max_count > (uint64_t{1} << 58)) return Status::kInvalidArgument;
  static_assert(sizeof(encode::Params) <= 4096, "kernel parameters fit the launch limit");
  encode::Params p{};
  p.n = n;
  p.log2_block = resolve_log2_block(t, max_count, opt);
  p.prob_bits = resolve_prob_bits(t, max_count, opt);
  p.checksum = opt.checksum;
  const bool shared = resolve_shared_table(t, max_count, opt);
  // The streamed instantiation keeps tables per block; larger blocks than kMaxSharedLog2Block may
  // need the flat-table fallback, which a shared table cannot take.
  if (shared && (opt.encoder == 4 || p.log2_block > kMaxSharedLog2Block)) return Status::kInvalidArgument;
  bool aligned = true;
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const Buffer& b = buffers[i];
    p.item[i] = {static_cast<const uint8_t*>(b.src), b.count, static_cast<uint8_t*>(b.dst), b.dst_capacity};
    if (stored_form(t, b.count)) p.stored |= uint64_t{1} << i;
    p.first[i] = static_cast<uint32_t>(total);
    total += tickets(t, b.count, p.log2_block);
    aligned = aligned && aligned16(b.src) && aligned16(b.dst);
  }
  if (total >= (uint64_t{1} << 31) || workspace_bytes < kEntriesAt + 8 * total) return Status::kInvalidArgument;
  p.first[n] = static_cast<uint32_t>(total);
  p.state = static_cast<scan::State*>(workspace);
  p.entries = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(workspace) + kEntriesAt);
  p.counts = shared ? reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(workspace) + kCountsAt) : nullptr;
  p.results = results;
  // The rest of the workspace, after this launch's entries: the streamed instantiation's slots.
  const uint64_t scratch_at = format::align_up(kEntriesAt + 8 * total, kScratchAlign);
  p.slot_bytes = encode::stream_slot_bytes(p.log2_block, p.prob_bits);
  p.scratch = static_cast<uint8_t*>(workspace) + scratch_at;
  const uint64_t slots = workspace_bytes > scratch_at ? (workspace_bytes - scratch_at) / p.slot_bytes : 0;
  const uint32_t smem = kEncGroups * encode::group_smem_bytes(p.log2_block, p.prob_bits);
  return dispatch(t, [&](auto tag) -> Status {
    constexpr DType T = decltype(tag)::value;
    // One kernel of each instantiation for this launch's form (fused or not, aligned or not).
    const void* kernels[4] = {encode_wide_kernel(T, fused, aligned), encode_mid_kernel(T, fused, aligned),
                              encode_narrow_kernel(T, fused, aligned), encode_stream_kernel(T, fused, aligned)};
    const uint32_t smem_max = kEncGroups * encode::group_smem_bytes(format::kMaxLog2Block, kMaxGpuProbBits);
    const uint32_t stream_smem = kEncGroups * encode::stream_group_smem_bytes<T>();
    const uint64_t work = (total + kEncGroups - 1) / kEncGroups;
    // The instantiation whose groups take the work in the fewest waves, the wider of two that tie
    // (the streamed one last: only where the workspace holds a slot for each of its groups, and
    // not for fp64, whose two planes each read the input twice, 4 bytes an element more than the
    // shared-memory ones: 1.08-1.16x their time from 64 MiB, kernels/NOTES-codec-gpu.md, v13).
    const uint64_t stream_ctas = shared ? 0 : slots / kEncGroups;
    int best = 0, grids[4] = {0, 0, 0, 0};
    for (int v = 0; v < 4; ++v) {
      const bool streamed = v == 3;
      if (streamed && stream_ctas == 0) break;
      int resident = 0;
      MPIZIP_CHECK(resident_ctas(kernels[v], kEncThreads, streamed ? stream_smem : smem,
                                 streamed ? stream_smem : smem_max, &resident));
      grids[v] = grid_for(work, resident, opt.max_ctas);
      if (streamed) grids[v] = static_cast<int>(std::min<uint64_t>(grids[v], stream_ctas));
      if (streamed && T == DType::kFp64) break;
      if (waves(work, grids[v]) < waves(work, grids[best])) best = v;
    }
    if (opt.encoder) best = opt.encoder - 1;
    if (grids[best] < 1) return Status::kInvalidArgument;  // the streamed one forced, without scratch
    const uint32_t smem_best = best == 3 ? stream_smem : smem;
    const void* k = kernels[best];
    const int grid = equal_waves(work, grids[best]);
    if (shared) {
      // The count stage first, on the same stream: the plane tables come from its counts.
      count::Params cp{};
      uint64_t max_chunks = 0;
      for (int i = 0; i < n; ++i) {
        cp.item[i] = p.item[i];
        max_chunks = std::max(max_chunks, (buffers[i].count * format::elem_bytes(t) + 15) / 16);
      }
      cp.n = n, cp.stored = p.stored, cp.counts = p.counts, cp.log2_block = p.log2_block, cp.prob_bits = p.prob_bits;
      const void* ck = aligned ? (const void*)count_kernel<T, true> : (const void*)count_kernel<T, false>;
      int resident = 0;
      MPIZIP_CHECK(resident_ctas(ck, count::kThreads, 0, 0, &resident));
      const uint64_t per_cta = uint64_t{count::kThreads} * count::kChunksPerThread;
      const int cgrid = grid_for((max_chunks + per_cta - 1) / per_cta, resident, opt.max_ctas);
      void* cargs[] = {&cp};
      MPIZIP_GPU_CHECK(gpuLaunchKernel(ck, dim3(std::max(cgrid, 1), n), dim3(count::kThreads), cargs, 0,
                                       static_cast<gpuStream_t>(stream)));
    }
    void* args[] = {&p};
    const gpuError_t launched =
        shared ? launch_after_count(k, grid, args, smem_best, static_cast<gpuStream_t>(stream))
               : gpuLaunchKernel(k, dim3(grid), dim3(kEncThreads), args, smem_best, static_cast<gpuStream_t>(stream));
    // A count stage whose encoder did not start leaves its counts: zero them for the next launch.
    if (launched != gpuSuccess && shared) (void)gpuMemsetAsync(p.counts, 0, encode::kCountsBytes, static_cast<gpuStream_t>(stream));
    MPIZIP_GPU_CHECK(launched);
#if MPIZIP_ENC_PROF
    encode::report_prof(static_cast<gpuStream_t>(stream), p.log2_block, total, grid);
#endif
    return Status::kOk;
  });
}

}  // namespace

uint64_t max_compressed_size(DType t, uint64_t count) {
  uint64_t m = 0;
  for (int lb = format::kMinLog2Block; lb <= format::kMaxLog2Block; ++lb)
    m = std::max(m, format::max_stream_bytes(t, count, lb));
  return m;
}

int resolve_log2_block(DType t, uint64_t count, const EncodeOptions& opt) {
  if (opt.log2_block) return opt.log2_block;
  // From 2048 blocks of 16384 symbols up, 16384-symbol blocks: their 200 bytes of states and table
  // cost 0.6% (bf16 uniform 0.6316, the ratio target). Below, the block's time is its serial rANS
  // chain, so smaller inputs take smaller blocks: at least 64 of them, at most 4096 symbols each.
  // Measured on the H200 (bf16 uniform, compress / decompress us, ratio): 1 MiB at 1024 symbols
  // 21.8 / 17.7 us, 0.708; at 4096 29.1 / 31.8, 0.647 (the anchor: 42 / 44, 0.641); at 8192
  // 42.7 / 51.5, 0.637. 16 MiB at 4096 58.7 / 44.1 us, at 8192 52.5 / 62.2.
  const uint64_t nsym = format::symbols_per_plane(t, count);
  if (nsym >= (uint64_t{2048} << 14)) return 14;
  int lb = format::kMinLog2Block;
  while (lb < 12 && (nsym >> (lb + 1)) >= 64) ++lb;
  return lb;
}

int resolve_prob_bits(DType t, uint64_t count, const EncodeOptions& opt) {
  if (opt.prob_bits) return opt.prob_bits;
  // Measured on the H200 (kernels/NOTES-codec-gpu.md, v16): blocks of 16384 symbols code 0.01-0.1%
  // smaller at 11 than at 10 (bf16 uniform 0.6316 -> 0.6315, fp16 0.8245 -> 0.8234) at the same
  // speed, since their launches take the streamed instantiation or one wave either way and the
  // decoder's slot table is 2^11 entries in both. Launches of blocks of at most 4096 symbols
  // shrink by up to 0.3% at 11 (fp16), but some take another wave (fp32 64 MiB 4% slower).
  return resolve_log2_block(t, count, opt) > kMaxSharedLog2Block ? kOwnProbBits : kSharedProbBits;
}

bool resolve_shared_table(DType t, uint64_t count, const EncodeOptions& opt) {
  if (opt.table == kTablePerBlock) return false;
  // Measured on the H200 at 1 MiB (4096-symbol blocks, uniform data): a table in every block costs
  // 1.1% of ratio for bf16 (0.6473 against 0.6403), 1.2% for fp16, 2.4% for e4m3, and the count
  // pass and the blocks' choice cost 7 us of compression (25 against 33 us); at 16384-symbol blocks
  // the table's cost is 0.2% (a model, kernels/NOTES-codec-gpu.md, v14) and the count pass would
  // read the input a second time.
  return opt.table == kTableShared || resolve_log2_block(t, count, opt) <= kMaxSharedLog2Block;
}

uint64_t workspace_bytes(DType t, uint64_t total_count) {
  const uint64_t blocks = format::planes(t) * (format::symbols_per_plane(t, total_count) / 1024 + kMaxBatch);
  // The streamed instantiation's scratch, where the launcher may take it (more blocks than
  // kStreamMinBlocks at the default block size): a slot for each block, up to kMaxStreamGroups (at
  // 16384-symbol blocks 18 KiB each, 72 MiB in all).
  const int lb = resolve_log2_block(t, total_count, EncodeOptions{});
  const uint64_t nblocks = format::total_blocks(t, total_count, lb) + kMaxBatch;
  const uint64_t groups = nblocks < kStreamMinBlocks ? 0 : std::min<uint64_t>(nblocks, kMaxStreamGroups);
  return format::align_up(kEntriesAt + 8 * blocks, kScratchAlign) +
         groups * encode::stream_slot_bytes(lb, resolve_prob_bits(t, total_count, EncodeOptions{}));
}

Status workspace_init(void* workspace, uint64_t bytes, void* stream) {
  if (!workspace || bytes < scan::kStateBytes) return Status::kInvalidArgument;
  MPIZIP_GPU_CHECK(gpuMemsetAsync(workspace, 0, bytes, static_cast<gpuStream_t>(stream)));
  return Status::kOk;
}

Status split(DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity, const EncodeOptions& opt,
             void* stream, void* split_done) {
  if ((!src && count) || !dst || !format::dtype_valid(static_cast<uint8_t>(t)) || !options_valid(opt) ||
      opt.mode != kModeAns || count > (uint64_t{1} << 58))
    return Status::kInvalidArgument;
  if (resolve_shared_table(t, count, opt) && resolve_log2_block(t, count, opt) > kMaxSharedLog2Block)
    return Status::kInvalidArgument;
  split::StageParams p{static_cast<const uint8_t*>(src), count, static_cast<uint8_t*>(dst), dst_capacity,
                       stored_form(t, count), resolve_log2_block(t, count, opt), resolve_prob_bits(t, count, opt), opt.checksum,
                       resolve_shared_table(t, count, opt)};
  const bool aligned = aligned16(src) && aligned16(dst);
  MPIZIP_CHECK(dispatch(t, [&](auto tag) -> Status {
    constexpr DType T = decltype(tag)::value;
    const void* k = aligned ? (const void*)split_kernel<T, true> : (const void*)split_kernel<T, false>;
    int resident = 0;
    MPIZIP_CHECK(resident_ctas(k, kSplitThreads, 0, 0, &resident));
    const uint64_t chunks = (count * format::elem_bytes(t) + 15) / 16;
    const int grid = grid_for((chunks + kSplitThreads - 1) / kSplitThreads, resident, opt.max_ctas);
    void* args[] = {&p};
    MPIZIP_GPU_CHECK(gpuLaunchKernel(k, dim3(grid), dim3(kSplitThreads), args, 0, static_cast<gpuStream_t>(stream)));
    return Status::kOk;
  }));
  if (split_done)
    MPIZIP_GPU_CHECK(gpuEventRecord(static_cast<gpuEvent_t>(split_done), static_cast<gpuStream_t>(stream)));
  return Status::kOk;
}

Status encode(DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity, void* workspace,
              uint64_t workspace_bytes, DeviceResult* result, const EncodeOptions& opt, void* stream) {
  const Buffer b{src, count, dst, dst_capacity};
  return launch_encode(t, &b, 1, workspace, workspace_bytes, result, opt, stream, false);
}

Status compress(DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity, void* workspace,
                uint64_t workspace_bytes, DeviceResult* result, const EncodeOptions& opt, void* stream) {
  if (opt.mode == kModeFast) {
    if (!workspace || !aligned16(workspace) || workspace_bytes < kEntriesAt || !options_valid(opt))
      return Status::kInvalidArgument;
    return fast::compress(t, src, count, dst, dst_capacity, workspace,
                          reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(workspace) + kEntriesAt),
                          (workspace_bytes - kEntriesAt) / 8, result, opt.checksum, opt.max_ctas, stream);
  }
  const Buffer b{src, count, dst, dst_capacity};
  return launch_encode(t, &b, 1, workspace, workspace_bytes, result, opt, stream, true);
}

Status compress_batch(DType t, const Buffer* buffers, int n, void* workspace, uint64_t workspace_bytes,
                      DeviceResult* results, const EncodeOptions& opt, void* stream) {
  return launch_encode(t, buffers, n, workspace, workspace_bytes, results, opt, stream, true);
}

Status decompress_batch(DType t, const Buffer* buffers, int n, void* workspace, uint64_t workspace_bytes,
                        DeviceResult* results, int max_ctas, void* stream) {
  if (!buffers || n < 1 || n > kMaxBatch || !workspace || !aligned16(workspace) ||
      workspace_bytes < scan::kStateBytes || !results || !format::dtype_valid(static_cast<uint8_t>(t)) || max_ctas < 0)
    return Status::kInvalidArgument;
  static_assert(sizeof(decode::Params) <= 4096, "kernel parameters fit the launch limit");
  decode::Params p{};
  p.n = n;
  p.state = static_cast<scan::State*>(workspace);
  p.results = results;
  bool aligned = true;
  uint64_t blocks = 0;
  for (int i = 0; i < n; ++i) {
    const Buffer& b = buffers[i];
    if (!b.src || (!b.dst && b.dst_capacity)) return Status::kInvalidArgument;
    p.item[i] = {static_cast<const uint8_t*>(b.src), b.count, static_cast<uint8_t*>(b.dst), b.dst_capacity};
    aligned = aligned && aligned16(b.src) && aligned16(b.dst);
    // The stream's own block size is unknown to the host: assume the smallest.
    blocks += format::blocks_per_plane(t, b.dst_capacity / format::elem_bytes(t), format::kMinLog2Block);
  }
  return dispatch(t, [&](auto tag) -> Status {
    constexpr DType T = decltype(tag)::value;
    const void* k = aligned ? (const void*)decode_kernel<T, true> : (const void*)decode_kernel<T, false>;
    const uint32_t smem = kDecGroups * decode::group_smem_bytes<T>();
    int resident = 0;
    MPIZIP_CHECK(resident_ctas(k, kDecThreads, smem, smem, &resident));
    const int grid = grid_for((blocks + kDecGroups - 1) / kDecGroups, resident, max_ctas);
    void* args[] = {&p};
    MPIZIP_GPU_CHECK(gpuLaunchKernel(k, dim3(grid), dim3(kDecThreads), args, smem, static_cast<gpuStream_t>(stream)));
    return Status::kOk;
  });
}

Status decompress(DType t, const void* src, uint64_t src_bytes, void* dst, uint64_t dst_capacity, void* workspace,
                  uint64_t workspace_bytes, DeviceResult* result, int max_ctas, void* stream) {
  const Buffer b{src, src_bytes, dst, dst_capacity};
  return decompress_batch(t, &b, 1, workspace, workspace_bytes, result, max_ctas, stream);
}

Status decompress(DType t, const void* src, uint64_t src_bytes, void* dst, uint64_t dst_capacity, void* workspace,
                  uint64_t workspace_bytes, DeviceResult* result, const DecodeOptions& opt, void* stream) {
  if (opt.mode == kModeAns)
    return decompress(t, src, src_bytes, dst, dst_capacity, workspace, workspace_bytes, result, opt.max_ctas, stream);
  if (opt.mode != kModeFast || !workspace || !aligned16(workspace) || workspace_bytes < scan::kStateBytes)
    return Status::kInvalidArgument;
  return fast::decompress(t, src, src_bytes, dst, dst_capacity, workspace, result, opt.max_ctas, stream);
}

}  // namespace mpizip::kernels::gpu
