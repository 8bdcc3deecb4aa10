// The MPIZip compressed stream format, versions 1 and 2 (docs/FORMAT.md), as constants and pure functions
// shared by the CPU reference codec and the GPU codec. Host and device code; no CUDA dependency.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define MPIZIP_HD __host__ __device__
#else
#define MPIZIP_HD
#endif

namespace mpizip::format {

// Element types, as stored in the header's dtype byte. Values are part of the wire format.
enum class DType : uint8_t {
  kBf16 = 1,
  kFp16 = 2,
  kFp32 = 3,
  kFp64 = 4,
  kE4m3 = 5,
  kE5m2 = 6,
};

inline constexpr uint8_t kMagic[4] = {'M', 'P', 'Z', '1'};
// Version 1: every block carries its own table. Version 2 adds the SHARED_TABLE flag (one table
// per symbol plane for the whole stream); a stream without it is written as version 1, byte for
// byte what version 1 always was, so that decoders of version 1 still read it.
inline constexpr uint8_t kVersion = 1;
inline constexpr uint8_t kVersionShared = 2;
inline constexpr size_t kHeaderBytes = 32;
inline constexpr size_t kCodedHeaderBytes = 16;  // coded_bytes + checksum
inline constexpr size_t kAlign = 16;
inline constexpr int kLanes = 32;
inline constexpr uint32_t kAnsLow = 1u << 16;  // rANS lower bound L
inline constexpr int kMinLog2Block = 10;
inline constexpr int kMaxLog2Block = 16;
inline constexpr int kMinProbBits = 9;
inline constexpr int kMaxProbBits = 15;
inline constexpr size_t kBitmapBytes = 32;

enum Flags : uint8_t {
  kFlagChecksum = 1u << 0,
  kFlagStored = 1u << 1,
  kFlagSharedTable = 1u << 2,  // version 2 only, never with kFlagStored
};

// The version a stream with these flags is written as.
MPIZIP_HD constexpr uint8_t version_for(uint8_t flags) {
  return (flags & kFlagSharedTable) ? kVersionShared : kVersion;
}
// Whether a header's version and flags go together (unknown bits, SHARED_TABLE outside version 2,
// SHARED_TABLE with STORED are all invalid).
MPIZIP_HD constexpr bool version_flags_valid(uint8_t version, uint8_t flags) {
  if (version == kVersion) return (flags & ~(kFlagChecksum | kFlagStored)) == 0;
  if (version == kVersionShared)
    return (flags & ~(kFlagChecksum | kFlagStored | kFlagSharedTable)) == 0 && (flags & kFlagSharedTable) &&
           !(flags & kFlagStored);
  return false;
}

// The 32-byte header, byte for byte (little-endian hosts only; all supported targets are).
struct Header {
  uint8_t magic[4];
  uint8_t version;
  uint8_t dtype;
  uint8_t flags;
  uint8_t log2_block;
  uint64_t count;      // elements
  uint64_t raw_bytes;  // raw section, padding included
  uint8_t prob_bits;
  uint8_t planes;
  uint8_t reserved[6];
};
static_assert(sizeof(Header) == kHeaderBytes, "header is 32 bytes");

MPIZIP_HD constexpr uint64_t align_up(uint64_t n, uint64_t a = kAlign) { return (n + a - 1) / a * a; }

MPIZIP_HD constexpr bool dtype_valid(uint8_t d) { return d >= 1 && d <= 6; }

// Bytes per element in the original data.
MPIZIP_HD constexpr size_t elem_bytes(DType t) {
  switch (t) {
    case DType::kBf16: case DType::kFp16: return 2;
    case DType::kFp32: return 4;
    case DType::kFp64: return 8;
    case DType::kE4m3: case DType::kE5m2: return 1;
  }
  return 0;
}

// Number of symbol planes.
MPIZIP_HD constexpr int planes(DType t) { return t == DType::kFp64 ? 2 : 1; }

// Symbols in each plane for `count` elements.
MPIZIP_HD constexpr uint64_t symbols_per_plane(DType t, uint64_t count) {
  return t == DType::kE4m3 ? (count + 1) / 2 : count;
}

// Raw sub-planes: number and unpadded sizes. At most 2 sub-planes.
MPIZIP_HD constexpr int raw_subplanes(DType t) {
  return (t == DType::kFp32 || t == DType::kFp64) ? 2 : 1;
}
MPIZIP_HD constexpr uint64_t raw_subplane_bytes(DType t, uint64_t count, int i) {
  switch (t) {
    case DType::kBf16: case DType::kFp16: return count;
    case DType::kFp32: return i == 0 ? 2 * count : count;
    case DType::kFp64: return i == 0 ? 4 * count : 2 * count;
    case DType::kE4m3: return (count + 1) / 2;
    case DType::kE5m2: return 3 * ((count + 7) / 8);
  }
  return 0;
}
// Offset of raw sub-plane i from the start of the stream.
MPIZIP_HD constexpr uint64_t raw_subplane_offset(DType t, uint64_t count, int i) {
  return i == 0 ? kHeaderBytes : kHeaderBytes + align_up(raw_subplane_bytes(t, count, 0));
}
MPIZIP_HD constexpr uint64_t raw_bytes(DType t, uint64_t count) {
  uint64_t n = 0;
  for (int i = 0; i < raw_subplanes(t); ++i) n += align_up(raw_subplane_bytes(t, count, i));
  return n;
}

MPIZIP_HD constexpr uint64_t blocks_per_plane(DType t, uint64_t count, int log2_block) {
  return (symbols_per_plane(t, count) + (uint64_t{1} << log2_block) - 1) >> log2_block;
}
MPIZIP_HD constexpr uint64_t total_blocks(DType t, uint64_t count, int log2_block) {
  return planes(t) * blocks_per_plane(t, count, log2_block);
}

// Offset of the coded section from the start of the stream.
MPIZIP_HD constexpr uint64_t coded_offset(DType t, uint64_t count) {
  return kHeaderBytes + raw_bytes(t, count);
}
// Offset of the first block's data from the start of the coded section.
MPIZIP_HD constexpr uint64_t block_data_offset(DType t, uint64_t count, int log2_block) {
  return align_up(kCodedHeaderBytes + 8 * total_blocks(t, count, log2_block));
}

// Largest possible coded block of n symbols (with its own table; a block of a SHARED_TABLE stream
// is smaller by its table).
MPIZIP_HD constexpr uint64_t max_block_bytes(uint64_t n) {
  return align_up(kBitmapBytes + 2 * 256 + 4 + 4 * kLanes + 2 * n);
}

// The largest log2_block at which both codecs' default is SHARED_TABLE (blocks of at most 4096
// symbols, where a block's own table is 0.7-1.9% of its input; kernels/NOTES-codec-gpu.md, v14).
// Not a rule of the format: a SHARED_TABLE stream may have blocks of any size.
inline constexpr int kMaxSharedLog2BlockByDefault = 12;

// A table of `nsym` present symbols (bitmap and frequencies): its bytes in a block's head (padded
// to 4, states follow) and as a SHARED_TABLE stream's plane table (padded to 16).
MPIZIP_HD constexpr uint64_t block_table_bytes(uint32_t nsym) { return align_up(kBitmapBytes + 2 * nsym, 4); }
MPIZIP_HD constexpr uint64_t shared_table_bytes(uint32_t nsym) { return align_up(kBitmapBytes + 2 * nsym); }
// The largest plane table, and the most all of a stream's plane tables take.
inline constexpr uint64_t kMaxSharedTableBytes = shared_table_bytes(256);

// Upper bound of a whole stream (coded or STORED) for count elements at a given block size.
MPIZIP_HD constexpr uint64_t max_stream_bytes(DType t, uint64_t count, int log2_block) {
  uint64_t nsym = symbols_per_plane(t, count);
  uint64_t b = uint64_t{1} << log2_block;
  uint64_t full = nsym >> log2_block, rest = nsym & (b - 1);
  uint64_t per_plane = full * max_block_bytes(b) + (rest ? max_block_bytes(rest) : 0);
  // A SHARED_TABLE stream's blocks are smaller than these; its plane tables are counted on top.
  uint64_t coded = block_data_offset(t, count, log2_block) + planes(t) * (per_plane + kMaxSharedTableBytes);
  uint64_t packed = kHeaderBytes + raw_bytes(t, count) + coded;
  uint64_t stored = kHeaderBytes + count * elem_bytes(t);
  return packed > stored ? packed : stored;
}

// Fast streams (docs/FORMAT.md, "Fast streams"): version 3 with the FAST flag, a fixed-length
// code of each symbol (2, 4 or 8 bits, chosen per chunk) instead of rANS. Chunks of
// kFastChunkSymbols symbols; a chunk is a 16-byte head (code width, the symbols of the short codes),
// the codes padded to 16 bytes, the escaped symbols, padding to 16.
inline constexpr uint8_t kVersionFast = 3;
inline constexpr uint8_t kFlagFast = 1u << 3;
inline constexpr int kFastLog2Chunk = 12;
inline constexpr uint32_t kFastChunkSymbols = 1u << kFastLog2Chunk;
inline constexpr uint32_t kFastHeadBytes = 16;

MPIZIP_HD constexpr bool fast_version_flags_valid(uint8_t version, uint8_t flags) {
  return version == kVersionFast && (flags & kFlagFast) && (flags & ~(kFlagChecksum | kFlagFast)) == 0;
}
// The escape code of width w (2 or 4); width 8 codes every symbol as itself and has none.
MPIZIP_HD constexpr uint32_t fast_escape(int w) { return w == 8 ? 256u : (1u << w) - 1; }
// Bytes of the codes of n symbols at width w, padded to 16.
MPIZIP_HD constexpr uint64_t fast_codes_bytes(uint32_t n, int w) { return align_up((uint64_t{n} * w + 7) / 8); }
// Bytes of a chunk of n symbols at width w with nesc escaped symbols.
MPIZIP_HD constexpr uint64_t fast_chunk_bytes(uint32_t n, int w, uint32_t nesc) {
  return align_up(kFastHeadBytes + fast_codes_bytes(n, w) + nesc);
}
// The largest chunk a decoder may meet (width 4, every symbol escaped).
inline constexpr uint64_t kFastMaxChunkBytes = fast_chunk_bytes(kFastChunkSymbols, 4, kFastChunkSymbols);
// The encoders' choice of width for a chunk of n symbols whose 3 and 15 most frequent symbols
// occur top3 and top15 times: the smallest chunk, the wider code on a tie.
MPIZIP_HD constexpr int fast_choose_width(uint32_t n, uint32_t top3, uint32_t top15) {
  const uint64_t c2 = fast_chunk_bytes(n, 2, n - top3), c4 = fast_chunk_bytes(n, 4, n - top15),
                 c8 = fast_chunk_bytes(n, 8, 0);
  return (c8 <= c4 && c8 <= c2) ? 8 : c4 <= c2 ? 4 : 2;
}
// Chunks of a fast stream (all planes; chunk k of plane p is entry k * planes + p).
MPIZIP_HD constexpr uint64_t fast_chunks(DType t, uint64_t count) { return total_blocks(t, count, kFastLog2Chunk); }
// Upper bound of a fast stream (every chunk at width 8).
MPIZIP_HD constexpr uint64_t fast_max_stream_bytes(DType t, uint64_t count) {
  const uint64_t nsym = symbols_per_plane(t, count), full = nsym >> kFastLog2Chunk;
  const uint32_t rest = static_cast<uint32_t>(nsym & (kFastChunkSymbols - 1));
  return coded_offset(t, count) + block_data_offset(t, count, kFastLog2Chunk) +
         planes(t) * (full * fast_chunk_bytes(kFastChunkSymbols, 8, 0) + (rest ? fast_chunk_bytes(rest, 8, 0) : 0));
}

// The checksum's mixing function (docs/FORMAT.md, "Checksum").
MPIZIP_HD constexpr uint64_t mix64(uint64_t z) {
  z ^= z >> 33;
  z *= 0xff51afd7ed558ccdULL;
  z ^= z >> 33;
  z *= 0xc4ceb9fe1a85ec53ULL;
  z ^= z >> 33;
  return z;
}

// The integrity check of a message header: its first `n` 64-bit words. The point-to-point match
// header and the collectives' hello both end with this value. Each word goes through its own
// bijection (xor with a per-position constant, times an odd constant, rotated by its position), so
// a change confined to one word always changes the sum; the words are independent multiplies, not
// one chain of mixes, because every small message pays this on both sides.
inline uint64_t header_hash(const void* header, int n) {
  const auto* p = static_cast<const unsigned char*>(header);
  uint64_t x = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    uint64_t w;
    __builtin_memcpy(&w, p + 8 * i, sizeof w);
    w = (w ^ (0x632be59bd9b4e019ULL * static_cast<uint64_t>(i + 1))) * 0xff51afd7ed558ccdULL;
    const int r = (11 * i) & 63;
    x ^= r == 0 ? w : (w << r) | (w >> (64 - r));
  }
  return mix64(x);
}

}  // namespace mpizip::format
