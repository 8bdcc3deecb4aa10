// libFuzzer target for chunked payloads (p2p/chunked.h): ChunkedReceiver, given a valid kChunked
// (or kChunkedDevice: without a GPU it lands in host memory) header, receives chunk streams a
// peer wrote (FeedTransport serves them) and decodes them into the application's buffer, against
// the CPU decoder as the oracle: when every chunk that reaches the application's buffer is a
// stream of the header's element type that decodes on its own to the chunk's elements, the
// receiver must succeed and deliver exactly those bytes (the first `capacity` of them); when any
// does not, it must report kCorruptStream (chunks wholly past the buffer's end are drained, not
// decoded: the receive is truncated anyway); a failed transfer kTransportError. Never a write past
// the buffer's capacity (the bytes after it are checked, the rest is AddressSanitizer's), never a
// hang: every transfer completes at once, so the receiver is done within a bounded number of steps.
// Input: byte 0 the element type (its value mod 6), discard (bit 3), the buffer's capacity (bits
// 4-5), kChunkedDevice (bit 6); bytes 1-2 the element count (12 bits), byte 3 the chunk size in
// 16-element units; then the feed.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/codec_cpu.h"
#include "p2p/chunked.h"
#include "p2p/wire.h"
#include "src/platform/log.h"
#include "tests/fuzz/feed_transport.h"

namespace p2p = mpizip::p2p;
namespace format = mpizip::format;
namespace cpu = mpizip::kernels::cpu;
using mpizip::Status;

namespace {

constexpr uint8_t kFill = 0xC3;

// Whether n bytes at p all still hold kFill (each byte equals the next: one memcmp, as a loop
// here would dominate the run).
bool filled(const uint8_t* p, uint64_t n) {
  return n == 0 || (p[0] == kFill && std::memcmp(p, p + 1, n - 1) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mpizip::log::set_level(static_cast<mpizip::log::Level>(-1));  // a line per corrupt chunk
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint8_t sel = data[0];
  const auto dtype = static_cast<format::DType>(sel % 6 + 1);
  const bool discard = sel & 8;
  const uint64_t elem = format::elem_bytes(dtype);
  const uint64_t count = data[1] | (static_cast<uint64_t>(data[2] & 0x0f) << 8);  // small: runs stay fast
  const uint64_t chunk_elems = (uint64_t{data[3]} + 1) * 16;
  data += 4, size -= 4;
  if (count == 0) return 0;  // a header never announces an empty chunked message
  const p2p::MatchHeader h =
      p2p::make_header((sel & 64) ? p2p::Payload::kChunkedDevice : p2p::Payload::kChunked,
                       p2p::Encoding::kCompressed, dtype, 100, count, chunk_elems * elem);
  {
    std::vector<uint8_t> msg(p2p::match_size(p2p::kHeaderBytes, 8));
    std::memcpy(msg.data(), &h, p2p::kHeaderBytes);
    p2p::MatchHeader back;
    if (!p2p::parse_header(msg.data(), msg.size(), 8, &back)) std::abort();
  }
  const uint64_t app_bytes = count * elem;
  uint64_t user_count = count;
  switch ((sel >> 4) & 3) {
    case 1: user_count = count / 2; break;
    case 2: user_count = count + 3; break;
    case 3: user_count = (count * 3) / 4; break;
    default: break;
  }
  const uint64_t capacity = user_count * elem;

  // The oracle: each chunk's stream as the transport will serve it, decoded by the CPU decoder.
  const uint64_t chunks = p2p::chunk_count(count, chunk_elems);
  std::vector<uint8_t> expect(app_bytes, 0);
  bool all_decode = true, transfer_fails = false;
  {
    const uint8_t* p = data;
    const uint8_t* end = data + size;
    const uint64_t full_cap = cpu::max_compressed_size(dtype, chunk_elems);
    for (uint64_t k = 0; k < chunks; ++k) {
      const uint64_t n = k + 1 < chunks ? chunk_elems : count - k * chunk_elems;
      const uint64_t cap = n == chunk_elems ? full_cap : cpu::max_compressed_size(dtype, n);
      uint64_t want = 0;
      if (end - p >= 2) {
        want = p[0] | (uint64_t{p[1]} << 8);
        p += 2;
      }
      if (want == 0xFFFF) {
        transfer_fails = true;
        break;
      }
      uint64_t got = want < cap ? want : cap;
      if (got > static_cast<uint64_t>(end - p)) got = static_cast<uint64_t>(end - p);
      std::vector<uint8_t> stream(p, p + got);
      p += got;
      if (k * chunk_elems * elem >= capacity) continue;  // past the buffer's end: drained only
      uint64_t decoded = 0;
      cpu::StreamInfo info;
      if (cpu::read_header(stream.data(), stream.size(), &info) != Status::kOk ||
          info.dtype != dtype ||
          cpu::decompress(stream.data(), stream.size(), expect.data() + k * chunk_elems * elem,
                          n * elem, &decoded) != Status::kOk ||
          decoded != n) {
        all_decode = false;
      }
    }
  }

  std::vector<uint8_t> user(capacity, kFill);
  p2p::UserBuffer b;
  b.ptr = user.data();
  b.count = user_count;
  b.dtype = dtype;
  mpizip::fuzz::FeedTransport feed(data, size);
  p2p::Channel ch;
  ch.transport = &feed;
  p2p::ChunkedReceiver r(ch, b, h, 1, discard);
  bool done = false;
  Status s = Status::kOk;
  for (uint64_t i = 0; i < 2 * chunks + 8 && !done && s == Status::kOk; ++i) s = r.advance(&done);
  if (transfer_fails) {
    if (s != Status::kTransportError) std::abort();
    return 0;
  }
  if (!done) std::abort();
  if (discard) {
    if (s != Status::kOk || !filled(user.data(), user.size())) std::abort();
    return 0;
  }
  if (!all_decode) {
    if (s != Status::kCorruptStream) std::abort();
  } else {
    if (s != Status::kOk) std::abort();
    const uint64_t keep = capacity < app_bytes ? capacity : app_bytes;
    if (keep > 0 && std::memcmp(user.data(), expect.data(), keep) != 0) std::abort();
  }
  if (capacity > app_bytes && !filled(user.data() + app_bytes, capacity - app_bytes)) std::abort();
  return 0;
}
