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

// What travels without a header: a message of at most `bare_bytes` application bytes (SendPolicy,
// the same on every rank), and any message whose payload goes raw in one piece from host memory
// or inline: the application's bytes alone, sent and received by the MPI library as the
// application's own message. A message with a header (the match header, then an inline payload)
// is longer than `bare_bytes` (padded to bare_bytes + 1 where it would be shorter: match_size())
// and at most kHeaderBytes + max(eager_bytes, bare_bytes). So the receiver tells the two apart
// by the size MPI reports and, in that window, by the header's magic word, version and check
// word over its fields, and sizes consistent with the message's: a receive of at most bare_bytes
// is the MPI library's own receive into the application's buffer (any message it may legally
// match is plain), and a larger one receives into the application's buffer too and looks at what
// landed (p2p/recv.h). Why: a header costs a message its place in the MPI library's fastest path,
// and a host payload a second message (osu-bench/results/README.md, "No harm"). What it gives up:
// the element-type check of a plain message, which the MPI library does not make either.
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

// Validates a received match message of `bytes` bytes: magic, version, check, enums and sizes
// consistent with `bytes` (a header padded to match_size() included). *payload_at (when given)
// receives the payload's offset in the message. False for anything else: a plain message (at most
// `bare_bytes`, whatever it holds, or longer, holding no valid header).
bool parse_header(const void* msg, size_t bytes, uint64_t bare_bytes, MatchHeader* out,
                  size_t* payload_at = nullptr);

// Validates the first `landed` bytes of a match message that MPI truncated to them (a receive
// smaller than it): its header as parse_header() would with the message's size that the header
// itself implies, which must be larger than `landed`. False for anything else.
bool parse_truncated_header(const void* msg, size_t landed, uint64_t bare_bytes, MatchHeader* out);

}  // namespace mpizip::p2p
