// libFuzzer target for the CPU decoder of fast streams (docs/FORMAT.md, "Fast streams"): any byte
// string goes through read_header and decompress into a bounded buffer, seeded with fast streams
// (make_corpus decode_fast), so that mutations explore the chunk table, the chunks' widths, tables,
// codes and escapes. The decoder must return kOk, kCorruptStream or kTruncated and never touch
// memory outside its buffers (AddressSanitizer); what it accepts must round-trip through the fast
// encoder, whose stream must be as large as the accepted one or smaller (the encoder picks the
// smallest width of each chunk; an accepted stream's chunks may only be larger).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/codec_cpu.h"

namespace cpu = mpizip::kernels::cpu;
using mpizip::Status;

namespace {
constexpr uint64_t kMaxOutput = uint64_t{1} << 18;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cpu::StreamInfo info;
  if (cpu::read_header(data, size, &info) != Status::kOk) return 0;
  const uint64_t out_bytes = info.count * mpizip::format::elem_bytes(info.dtype);
  std::vector<uint8_t> out(out_bytes < kMaxOutput ? out_bytes : kMaxOutput);
  uint64_t count = 0;
  Status s = cpu::decompress(data, size, out.data(), out.size(), &count, size % 16 == 0 ? 2 : 1);
  if (s == Status::kTruncated && out_bytes > out.size()) return 0;
  if (s == Status::kCorruptStream) return 0;
  if (s != Status::kOk || count != info.count) std::abort();
  if (!(info.flags & mpizip::format::kFlagFast)) return 0;
  cpu::EncodeOptions opt;
  opt.mode = cpu::kModeFast;
  opt.checksum = info.flags & mpizip::format::kFlagChecksum;
  std::vector<uint8_t> again(cpu::max_compressed_size(info.dtype, count)), back(out.size());
  uint64_t written = 0, count2 = 0;
  if (cpu::compress(info.dtype, out.data(), count, again.data(), again.size(), &written, opt) != Status::kOk ||
      cpu::decompress(again.data(), written, back.data(), back.size(), &count2) != Status::kOk ||
      count2 != count || (!out.empty() && std::memcmp(back.data(), out.data(), out.size()) != 0))
    std::abort();
  if (info.total_bytes_if_known && written > info.total_bytes_if_known) std::abort();
  return 0;
}
