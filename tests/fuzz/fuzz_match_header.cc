// libFuzzer target for the match message (p2p/wire.h) and the receiver that acts on it
// (p2p/recv.cc, p2p/chunked.cc): what a peer puts on the wire reaches parse_header (and
// parse_truncated_header, as what landed of a longer message) and then a
// RecvOp, whose payloads (inline, bulk, split, chunked; device payloads land in host memory on a
// machine without a GPU, as when device memory runs out) are served by FeedTransport.
// Input: byte 0 selects the receiver's bare_bytes (bits 0-1), reseals a full header's check word
// (bit 2: a conforming but hostile sender computes it), the receiver's element type (bits 3-5),
// byte 1 the receiver's capacity; bytes 2-3 the match message's length, then the message, then
// the payload bytes the transport serves.
// What an accepted header says must be self-consistent (sizes that do not wrap, an inline payload
// inside the message, a split stream's first part inside its payload, no more elements than a
// stream of payload_bytes can hold, which bounds what the receiver allocates by what it is sent,
// checked with libFuzzer's malloc limit); the receiver must end with
// an MPI error code or success, never write outside the application's buffer (AddressSanitizer),
// never report more bytes than the buffer holds, and decode only what the CPU decoder accepts.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <mpi.h>

#include "kernels/codec_cpu.h"
#include "p2p/recv.h"
#include "p2p/wire.h"
#include "src/platform/log.h"
#include "tests/fuzz/feed_transport.h"

namespace p2p = mpizip::p2p;
namespace format = mpizip::format;
using mpizip::Status;

namespace {

constexpr uint64_t kBare[4] = {0, 8, 64, 4000};
// The receiver runs only for payloads it is sent (not merely announced) in full by this input's
// size class: it may allocate what the peer sends; it must not allocate much more.
constexpr uint64_t kMaxRecvBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxRecvChunks = 1024;

void check_header(const p2p::MatchHeader& h, size_t bytes, size_t payload_at) {
  if (!format::dtype_valid(static_cast<uint8_t>(h.dtype))) std::abort();
  const uint64_t elem = format::elem_bytes(h.dtype);
  if (h.app_bytes / elem != h.count || h.app_bytes % elem != 0) std::abort();  // count x elem wrapped
  if (payload_at > bytes) std::abort();
  if (h.payload == p2p::Payload::kInline) {
    if (h.payload_bytes > p2p::kMaxInlineBytes || payload_at + h.payload_bytes > bytes) std::abort();
  }
  if (h.payload == p2p::Payload::kSplit && format::coded_offset(h.dtype, h.count) > h.payload_bytes) {
    std::abort();
  }
  if (h.encoding == p2p::Encoding::kCompressed && h.payload != p2p::Payload::kChunked &&
      h.payload != p2p::Payload::kChunkedDevice &&
      format::raw_bytes(h.dtype, h.count) > h.payload_bytes) {
    std::abort();  // more elements than the stream can hold: buffers sized by app_bytes
  }
  if (h.payload == p2p::Payload::kChunked || h.payload == p2p::Payload::kChunkedDevice) {
    if (h.payload_bytes == 0 || p2p::chunk_count(h.app_bytes, h.payload_bytes) > p2p::kMaxChunks) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Rejections log a line each; the fuzzer's own output is what matters here.
  mpizip::log::set_level(static_cast<mpizip::log::Level>(-1));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint8_t sel = data[0], cap_sel = data[1];
  size_t msg_bytes = data[2] | (size_t{data[3]} << 8);
  data += 4, size -= 4;
  if (msg_bytes > size) msg_bytes = size;
  std::vector<uint8_t> msg(data, data + msg_bytes);  // exactly the message: ASan sees over-reads
  const uint64_t bare = kBare[sel & 3];
  if ((sel & 4) && msg_bytes >= p2p::kHeaderBytes) {
    // Reseal: the check word of whatever the fields say.
    const uint64_t check = format::header_hash(msg.data(), 5);
    std::memcpy(msg.data() + 40, &check, 8);
  }

  p2p::MatchHeader h{};
  size_t payload_at = 0;
  const bool ok = p2p::parse_header(msg.data(), msg.size(), bare, &h, &payload_at);
  if (ok) check_header(h, msg.size(), payload_at);
  // The same bytes as what landed of a match message that MPI truncated to them: a header it
  // accepts names a longer message, itself consistent (read from the landed bytes alone: ASan).
  {
    p2p::MatchHeader t{};
    if (p2p::parse_truncated_header(msg.data(), msg.size(), bare, &t)) {
      const uint64_t natural =
          p2p::kHeaderBytes + (t.payload == p2p::Payload::kInline ? t.payload_bytes : 0);
      if (p2p::match_size(natural, bare) <= msg.size()) std::abort();
      check_header(t, p2p::match_size(natural, bare), p2p::kHeaderBytes);
    }
  }
  if (ok && (h.payload_bytes > kMaxRecvBytes || h.app_bytes > kMaxRecvBytes) &&
      h.payload != p2p::Payload::kInline) {
    return 0;
  }
  // Chunks: each a transfer; many of them only make a run slow.
  const bool chunked = ok && (h.payload == p2p::Payload::kChunked || h.payload == p2p::Payload::kChunkedDevice);
  const uint64_t chunks = chunked ? p2p::chunk_count(h.app_bytes, h.payload_bytes) : 0;
  if (chunks > kMaxRecvChunks) return 0;

  // The receiver: an element type of its own (the match decides), a buffer of some capacity.
  uint8_t t = static_cast<uint8_t>(((sel >> 3) & 7) % 6 + 1);
  if (ok && (cap_sel & 0x80)) t = static_cast<uint8_t>(h.dtype);  // usually the sender's type
  const auto dtype = static_cast<format::DType>(t);
  const uint64_t elem = format::elem_bytes(dtype);
  const uint64_t announced = ok && h.app_bytes <= kMaxRecvBytes ? h.app_bytes / elem : msg.size() / elem;
  uint64_t count = 0;
  switch ((cap_sel >> 5) & 3) {
    case 0: count = announced; break;
    case 1: count = announced / 2; break;  // truncation
    case 2: count = announced + 3; break;
    default: count = cap_sel & 31; break;
  }
  std::vector<uint8_t> user(count * elem);
  p2p::UserBuffer b;
  b.ptr = user.data();
  b.count = count;
  b.dtype = dtype;
  mpizip::fuzz::FeedTransport feed(data + msg_bytes, size - msg_bytes);
  p2p::Channel ch;
  ch.transport = &feed;
  ch.policy.bare_bytes = bare;
  ch.policy.eager_bytes = p2p::kMaxInlineBytes;
  p2p::RecvOp op(ch, b, msg.data(), msg.size(), 1, 7);
  // Every transfer completes at its first test: a bounded number of steps must finish (the
  // chunked receiver takes up to kChunkWindow chunks a step).
  bool done = false;
  for (uint64_t i = 0; i < chunks + 8 && !done; ++i) done = op.progress();
  if (!done) std::abort();
  const auto& st = op.status();
  if (st.bytes > user.size()) std::abort();
  // What a receive may end with on any bytes: success, the application's errors, a corrupt
  // payload, a shortage, or the transport's failure; never an internal error.
  const Status e = st.error;
  if (e != Status::kOk && e != Status::kTypeMismatch && e != Status::kTruncated &&
      e != Status::kCorruptStream && e != Status::kOutOfMemory && e != Status::kTransportError) {
    std::abort();
  }
  if (!ok) {
    // Not MPIZip's (a bare message or the MPI library's own): the application's bytes, as the MPI
    // library delivers them, truncated where the buffer is smaller.
    const uint64_t n = std::min<uint64_t>(msg.size(), user.size());
    if ((e != Status::kOk && e != Status::kTruncated) || st.bytes != n ||
        (n > 0 && std::memcmp(user.data(), msg.data(), n) != 0)) {
      std::abort();
    }
  }
  if (ok && h.payload == p2p::Payload::kInline && h.encoding == p2p::Encoding::kCompressed &&
      e == Status::kOk && h.app_bytes > 0) {
    // Success means the payload is a stream of the header's elements: the CPU decoder agrees.
    std::vector<uint8_t> out(h.app_bytes);
    uint64_t n = 0;
    mpizip::kernels::cpu::StreamInfo info;
    if (mpizip::kernels::cpu::read_header(msg.data() + payload_at, h.payload_bytes, &info) !=
            mpizip::Status::kOk ||
        info.dtype != h.dtype ||
        mpizip::kernels::cpu::decompress(msg.data() + payload_at, h.payload_bytes, out.data(),
                                         out.size(), &n) != mpizip::Status::kOk ||
        n != h.count || std::memcmp(out.data(), user.data(), std::min(out.size(), user.size())) != 0) {
      std::abort();
    }
  }
  return 0;
}
