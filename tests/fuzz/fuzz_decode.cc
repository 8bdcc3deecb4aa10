// libFuzzer target for the CPU decoder: any byte string goes through read_header and decompress
// into a bounded buffer. The decoder must return kOk, kCorruptStream or kTruncated and never touch
// memory outside its buffers (AddressSanitizer); what it accepts must survive a re-encode.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/codec_cpu.h"

namespace cpu = mpizip::kernels::cpu;
using mpizip::Status;

namespace {
// Output bytes; a stream that claims more must end in kTruncated. Small, so that runs are fast.
constexpr uint64_t kMaxOutput = uint64_t{1} << 18;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cpu::StreamInfo info;
  if (cpu::read_header(data, size, &info) != Status::kOk) return 0;
  const uint64_t out_bytes = info.count * mpizip::format::elem_bytes(info.dtype);
  std::vector<uint8_t> out(out_bytes < kMaxOutput ? out_bytes : kMaxOutput);
  uint64_t count = 0;
  // Now and then with two threads, whose start costs more than most runs.
  Status s = cpu::decompress(data, size, out.data(), out.size(), &count, size % 16 == 0 ? 2 : 1);
  if (s == Status::kTruncated && out_bytes > out.size()) return 0;
  if (s == Status::kCorruptStream) return 0;
  if (s != Status::kOk || count != info.count) std::abort();
  // Accepted data must round-trip through the encoder.
  std::vector<uint8_t> again(cpu::max_compressed_size(info.dtype, count)), back(out.size());
  uint64_t written = 0, count2 = 0;
  if (cpu::compress(info.dtype, out.data(), count, again.data(), again.size(), &written) != Status::kOk ||
      cpu::decompress(again.data(), written, back.data(), back.size(), &count2) != Status::kOk ||
      count2 != count || (!out.empty() && std::memcmp(back.data(), out.data(), out.size()) != 0))
    std::abort();
  return 0;
}
