// libFuzzer target for the two-shot allreduce's hello (coll/wire.h): what a peer sends before any
// data moves. Input: byte 0 picks this rank's own hello (bits 0-5) and whether a hostile but
// conforming sender reseals the check word (bit 6); the rest is the received message, of any size.
// parse_hello must accept only 64-byte messages whose check holds; compare_hello must then call a
// hello equal in every field the ranks share agreement and anything else a disagreement with a
// name; what TwoShot derives from an agreeing peer's hello (which pieces arrive compressed, the
// transfer tags) must be computable for every piece of the collective without wrapping.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "coll/wire.h"
#include "src/transport/transport.h"

namespace coll = mpizip::coll;
namespace format = mpizip::format;
using mpizip::kernels::reduce::Op;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t sel = data[0];
  std::vector<uint8_t> msg(data + 1, data + size);  // exactly the message: ASan sees over-reads
  if ((sel & 0x40) && msg.size() == coll::kHelloBytes) {
    const uint64_t check = format::header_hash(msg.data(), 7);
    std::memcpy(msg.data() + 56, &check, 8);
  }
  // This rank's hello: the arguments every rank must share.
  const auto dtype = static_cast<format::DType>(sel % 6 + 1);
  const auto op = static_cast<Op>((sel >> 3) % 4 + 1);
  const uint64_t count = 1000 + (sel & 7) * 4096, piece = 256 << (sel & 3);
  const coll::Hello mine = coll::make_hello(dtype, op, count, piece, 17, coll::kHelloCompress, 4096);

  coll::Hello theirs;
  std::memset(&theirs, 0xA5, sizeof theirs);
  if (!coll::parse_hello(msg.data(), msg.size(), &theirs)) return 0;
  if (msg.size() != coll::kHelloBytes) std::abort();
  const coll::Disagreement d = coll::compare_hello(mine, theirs);
  const char* why = coll::disagreement_string(d);
  if (why == nullptr || std::strcmp(why, "?") == 0) std::abort();
  const bool same = theirs.shape == mine.shape && theirs.root == mine.root &&
                    theirs.dtype == mine.dtype && theirs.op == mine.op &&
                    theirs.count == mine.count && theirs.piece_elems == mine.piece_elems &&
                    theirs.seq == mine.seq;
  if ((d == coll::Disagreement::kNone) != (same && !(theirs.flags & coll::kHelloFailed))) {
    std::abort();
  }
  if (d != coll::Disagreement::kNone) return 0;
  // Agreement: what the receiver derives from the peer's hello for each piece it gets.
  const uint64_t eb = format::elem_bytes(theirs.dtype);
  const uint64_t pieces = (theirs.count + theirs.piece_elems - 1) / theirs.piece_elems;
  if (pieces > coll::kMaxPieces) std::abort();
  uint64_t compressed = 0;
  for (uint64_t j = 0; j < pieces; ++j) {
    const uint64_t n = j + 1 < pieces ? theirs.piece_elems : theirs.count - j * theirs.piece_elems;
    if (n * eb / eb != n) std::abort();
    compressed += (theirs.flags & coll::kHelloCompress) && n > 0 && n * eb >= theirs.min_compress_bytes;
    for (coll::Kind k : {coll::Kind::kReduceScatter, coll::Kind::kAllgather}) {
      if (!(coll::make_tag(theirs.seq, k, j) & mpizip::transport::kCollectiveTag)) std::abort();
    }
  }
  if (compressed > pieces) std::abort();
  return 0;
}
