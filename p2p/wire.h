// The match message: what travels on the application's communicator, under the application's
// tag, for every message of a protocol datatype (docs/PROTOCOL.md). MPI matches it exactly as it
// would have matched the application's own message, so matching, ordering, wildcards and probes
// keep their meaning; the header says what the payload is and where it is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/format.h"

namespace mpizip::p2p {

inline constexpr size_t kHeaderBytes = 48;
inline constexpr size_t kMaxInlineBytes = 64 * 1024;  // cap of MPIZIP_EAGER_BYTES
inline constexpr size_t kMaxMatchBytes = kHeaderBytes + kMaxInlineBytes;
// Bounds a receiver accepts for Payload::kChunked (a header outside them is not MPIZip's).
inline constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxChunks = uint64_t{1} << 24;
// Most elements a header may announce: the stream format's bound (docs/FORMAT.md), under which
// count x element size and every size derived from it fit 64 bits.
inline constexpr uint64_t kMaxCount = uint64_t{1} << 58;

enum class Payload : uint8_t {
  kInline = 1,  // the payload follows the header in the match message
  kBulk = 2,    // the payload is one transfer of payload_bytes, tag bulk_tag
  kSplit = 3,   // a compressed stream in two transfers: its first format::coded_offset(dtype,
                // count) bytes (header and raw section) with tag bulk_tag, then the rest (at most
                // payload_bytes minus those) with tag bulk_tag + 1; from device memory
  kBulkDevice = 4,  // as kBulk, from device memory
  kChunked = 5,     // compressed host data in chunks of payload_bytes application bytes (a
                    // multiple of the element size), each its own stream, chunk k one transfer
                    // with tag bulk_tag + k, into host memory (p2p/chunked.h)
  kChunkedDevice = 6,  // as kChunked, compressed on the GPU, from and into device memory
};
// Transfers of kSplit and kBulkDevice payloads are received into device memory, those of kBulk
// into host memory, whatever the receiver's buffer: both sides then hand the transport the same
// kind of memory, from which it picks its route (CUDA IPC or network, staging or not).

enum class Encoding : uint8_t {
  kRaw = 1,         // the application's bytes
  kCompressed = 2,  // an MPIZip stream (docs/FORMAT.md)
};

struct MatchHeader {
  uint64_t magic;
  uint8_t version;
  Payload payload;
  Encoding encoding;
  format::DType dtype;     // element type of the sender's datatype
  uint32_t bulk_tag;       // transport tag of the payload (kBulk, kBulkDevice, kSplit)
  uint64_t count;          // elements sent
  uint64_t app_bytes;      // count x element size: bytes the receiver gets
  uint64_t payload_bytes;  // bytes of the payload as it travels (kSplit: at most)
  uint64_t check;          // hash of the fields above
};
static_assert(sizeof(MatchHeader) == kHeaderBytes, "match header is 48 bytes");

MatchHeader make_header(Payload payload, Encoding encoding, format::DType dtype, uint32_t bulk_tag,
                        uint64_t count, uint64_t payload_bytes);

// A message of at most `bare_bytes` application bytes (SendPolicy, the same on every rank) travels
// bare: the application's bytes alone, sent and received by the MPI library as the application's
// own message, with the application's datatypes. Every other match message is longer than
// `bare_bytes` (a compact one is 16 + more than bare_bytes; a full one is padded to bare_bytes + 1
// where it would be shorter: match_size()), so the receiver tells the two apart by the size MPI
// reports, and a receive of at most bare_bytes can be the MPI library's own receive into the
// application's buffer: any message it may legally match is bare. Why: a header costs a small
// message its place in the MPI library's fastest path and the receiver a request of MPIZip's
// (osu-bench/results/README.md, "No harm"). What it gives up: the element-type check of such a
// message, which the MPI library does not make either.
inline uint64_t match_size(uint64_t natural_bytes, uint64_t bare_bytes) {
  return natural_bytes > bare_bytes ? natural_bytes : bare_bytes + 1;
}

// Copies a small message's payload: 4 and 8 bytes (one element of the common types) without a
// library call, anything else with memcpy.
inline void copy_payload(void* dst, const void* src, uint64_t n) {
  if (n == 8) {
    __builtin_memcpy(dst, src, 8);
  } else if (n == 4) {
    __builtin_memcpy(dst, src, 4);
  } else if (n > 0) {
    __builtin_memcpy(dst, src, n);
  }
}

// The compact match message of a raw payload carried inline, the common small message: 16 bytes
// of header (a magic word whose low byte is the element type, then the element count), then the
// payload. It has no check word: the message's size must be exactly 16 + count x element size,
// which a corrupted count or type cannot meet but by chance of one in 2^56 per magic bit pattern.
inline constexpr size_t kCompactHeaderBytes = 16;
struct CompactHeader {
  uint64_t magic_dtype;  // kCompactMagic | element type
  uint64_t count;
};
static_assert(sizeof(CompactHeader) == kCompactHeaderBytes, "compact header is 16 bytes");
inline constexpr uint64_t kCompactMagic = 0x314e495a504d0000ULL;  // "\0\0MPZIN1", version 1

inline CompactHeader make_compact_header(format::DType dtype, uint64_t count) {
  return CompactHeader{kCompactMagic | static_cast<uint8_t>(dtype), count};
}

// Validates a received match message of `bytes` bytes, in either form: magic, version, check,
// enums and sizes consistent with `bytes` (a full header padded to match_size() included). A
// compact message comes back as the equivalent full header (an inline raw payload). *payload_at
// (when given) receives the payload's offset in the message. False for anything else: a bare
// message (at most `bare_bytes`, whatever it holds), or a plain message of a non-conforming sender.
bool parse_header(const void* msg, size_t bytes, uint64_t bare_bytes, MatchHeader* out,
                  size_t* payload_at = nullptr);

}  // namespace mpizip::p2p
