#include "coll/wire.h"

#include <cstddef>
#include <cstring>

#include "src/transport/transport.h"

namespace mpizip::coll {
namespace {

constexpr uint32_t kHelloMagic = 0x52415A4Du;  // "MZAR"
constexpr uint8_t kHelloVersion = 2;

uint64_t hash_hello(const Hello& h) {
  static_assert(offsetof(Hello, check) == 7 * 8, "hash covers every field before check");
  return format::header_hash(&h, 7);
}

}  // namespace

Hello make_hello(format::DType dtype, kernels::reduce::Op op, uint64_t count, uint64_t piece_elems,
                 uint64_t seq, uint8_t flags, uint64_t min_compress_bytes, uint8_t shape,
                 uint64_t root) {
  Hello h;
  std::memset(&h, 0, sizeof h);
  h.magic = kHelloMagic;
  h.version = kHelloVersion;
  h.dtype = dtype;
  h.op = op;
  h.flags = flags;
  h.shape = shape;
  h.root = root;
  h.count = count;
  h.piece_elems = piece_elems;
  h.min_compress_bytes = min_compress_bytes;
  h.seq = seq;
  h.check = hash_hello(h);
  return h;
}

bool parse_hello(const void* msg, uint64_t bytes, Hello* out) {
  if (bytes != kHelloBytes) return false;
  std::memcpy(out, msg, kHelloBytes);
  return out->magic == kHelloMagic && out->version == kHelloVersion &&
         out->check == hash_hello(*out);
}

Disagreement compare_hello(const Hello& mine, const Hello& theirs) {
  if (theirs.flags & kHelloFailed) return Disagreement::kFailed;
  if (theirs.shape != mine.shape) return Disagreement::kCollective;
  if (theirs.root != mine.root) return Disagreement::kRoot;
  if (theirs.dtype != mine.dtype) return Disagreement::kType;
  if (theirs.op != mine.op) return Disagreement::kOp;
  if (theirs.count != mine.count) return Disagreement::kCount;
  if (theirs.piece_elems != mine.piece_elems) return Disagreement::kPieceSize;
  if (theirs.seq != mine.seq) return Disagreement::kSequence;
  return Disagreement::kNone;
}

const char* disagreement_string(Disagreement d) {
  switch (d) {
    case Disagreement::kNone:
      return "none";
    case Disagreement::kMalformed:
      return "a malformed header";
    case Disagreement::kFailed:
      return "a rank cannot take part";
    case Disagreement::kCollective:
      return "the ranks called different collectives";
    case Disagreement::kRoot:
      return "the root differs";
    case Disagreement::kType:
      return "the datatype differs";
    case Disagreement::kOp:
      return "the reduction op differs";
    case Disagreement::kCount:
      return "the count differs";
    case Disagreement::kPieceSize:
      return "MPIZIP_ALLREDUCE_PIECE_BYTES differs";
    case Disagreement::kSequence:
      return "the ranks are at different collectives";
  }
  return "?";
}

uint64_t make_tag(uint64_t seq, Kind kind, uint64_t piece) {
  const uint64_t index =
      kind == Kind::kHello ? 0 : 1 + 2 * piece + (kind == Kind::kAllgather ? 1 : 0);
  return transport::kCollectiveTag |
         ((seq * kTagsPerCollective + index) & ~transport::kCollectiveTag);
}

}  // namespace mpizip::coll
