#include "p2p/wire.h"

#include <cstddef>
#include <cstring>

namespace mpizip::p2p {
namespace {

constexpr uint64_t kMagic = 0x31504d5a50495a4dULL;  // "MZIPZMP1"
constexpr uint8_t kVersion = 2;

uint64_t header_check(const MatchHeader& h) {
  static_assert(offsetof(MatchHeader, check) == 5 * 8, "the check covers every field before it");
  return format::header_hash(&h, 5);
}

}  // namespace

MatchHeader make_header(Payload payload, Encoding encoding, format::DType dtype, uint32_t bulk_tag,
                        uint64_t count, uint64_t payload_bytes) {
  MatchHeader h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.payload = payload;
  h.encoding = encoding;
  h.dtype = dtype;
  h.bulk_tag = bulk_tag;
  h.count = count;
  h.app_bytes = count * format::elem_bytes(dtype);
  h.payload_bytes = payload_bytes;
  h.check = header_check(h);
  return h;
}

bool parse_header(const void* msg, size_t bytes, uint64_t bare_bytes, MatchHeader* out,
                  size_t* payload_at) {
  if (bytes <= bare_bytes) return false;  // plain: the application's bytes, whatever they look like
  if (bytes < kHeaderBytes) return false;
  MatchHeader h;
  std::memcpy(&h, msg, kHeaderBytes);
  if (h.magic != kMagic || h.version != kVersion || h.check != header_check(h)) return false;
  if (h.payload != Payload::kInline && h.payload != Payload::kBulk &&
      h.payload != Payload::kSplit && h.payload != Payload::kBulkDevice &&
      h.payload != Payload::kChunked && h.payload != Payload::kChunkedDevice) {
    return false;
  }
  if (h.encoding != Encoding::kRaw && h.encoding != Encoding::kCompressed) return false;
  if (!format::dtype_valid(static_cast<uint8_t>(h.dtype)) || h.count > kMaxCount) return false;
  if (h.app_bytes != h.count * format::elem_bytes(h.dtype)) return false;
  if (h.payload == Payload::kChunked || h.payload == Payload::kChunkedDevice) {
    // payload_bytes is the chunk's size in application bytes.
    const uint64_t elem = format::elem_bytes(h.dtype);
    if (h.encoding != Encoding::kCompressed || h.count == 0 || h.payload_bytes == 0 ||
        h.payload_bytes % elem != 0 || h.payload_bytes > kMaxChunkBytes ||
        h.app_bytes / h.payload_bytes >= kMaxChunks ||
        bytes != match_size(kHeaderBytes, bare_bytes)) {
      return false;
    }
    *out = h;
    if (payload_at != nullptr) *payload_at = kHeaderBytes;
    return true;
  }
  if (h.encoding == Encoding::kRaw && h.payload_bytes != h.app_bytes) return false;
  // A stream holds at least its raw section (STORED: all the elements), so a compressed payload
  // cannot announce more elements than that allows: a receiver sizes its buffers by app_bytes.
  if (h.encoding == Encoding::kCompressed &&
      h.payload_bytes < format::raw_bytes(h.dtype, h.count)) {
    return false;
  }
  // An inline payload is at most kMaxInlineBytes (which also keeps the sum below from wrapping).
  if (h.payload == Payload::kInline &&
      (h.payload_bytes > kMaxInlineBytes ||
       bytes != match_size(kHeaderBytes + h.payload_bytes, bare_bytes))) {
    return false;
  }
  if (h.payload != Payload::kInline && bytes != match_size(kHeaderBytes, bare_bytes)) return false;
  if (h.payload == Payload::kSplit &&
      (h.encoding != Encoding::kCompressed ||
       h.payload_bytes < format::coded_offset(h.dtype, h.count))) {
    return false;
  }
  *out = h;
  if (payload_at != nullptr) *payload_at = kHeaderBytes;
  return true;
}

bool parse_truncated_header(const void* msg, size_t landed, uint64_t bare_bytes,
                            MatchHeader* out) {
  if (landed < kHeaderBytes) return false;
  MatchHeader h;
  std::memcpy(&h, msg, kHeaderBytes);
  // The size the header implies (parse_header() checks the rest, reading the header alone).
  const uint64_t natural =
      h.payload == Payload::kInline && h.payload_bytes <= kMaxInlineBytes
          ? kHeaderBytes + h.payload_bytes
          : kHeaderBytes;
  const uint64_t bytes = match_size(natural, bare_bytes);
  return bytes > landed && parse_header(msg, bytes, bare_bytes, out);
}

}  // namespace mpizip::p2p
