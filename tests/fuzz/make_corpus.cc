// Writes the seed corpus of the decoder fuzz target: small valid streams of every element type,
// block size and precision, with and without checksum, coded and STORED.
//   make_corpus DIR
#include <cmath>
#include <cstring>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/codec_cpu.h"

namespace cpu = mpizip::kernels::cpu;
using mpizip::format::DType;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int files = 0;
  for (int t = 1; t <= 6; ++t) {
    const DType dtype = static_cast<DType>(t);
    const uint64_t eb = mpizip::format::elem_bytes(dtype);
    // Small streams keep runs fast; one past a 1024-symbol block still gives two blocks.
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{5}, uint64_t{300}, uint64_t{1025}, 4100 / eb}) {
      // Exponent-like bytes: the top bits of normally distributed floats.
      std::vector<uint8_t> data(count * mpizip::format::elem_bytes(dtype));
      for (size_t i = 0; i < data.size(); ++i) {
        float f = normal(gen);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        data[i] = static_cast<uint8_t>(i % mpizip::format::elem_bytes(dtype) + 1 == mpizip::format::elem_bytes(dtype)
                                           ? bits >> 24 : bits >> (i % 3) * 5);
      }
      for (int pb : {9, 12, 15}) {
        for (int checksum = 0; checksum < 2; ++checksum) {
          cpu::EncodeOptions opt;
          opt.log2_block = 10;
          opt.prob_bits = pb;
          opt.checksum = checksum;
          std::vector<uint8_t> s(cpu::max_compressed_size(dtype, count));
          uint64_t written = 0;
          if (cpu::compress(dtype, data.data(), count, s.data(), s.size(), &written, opt) != mpizip::Status::kOk)
            return 1;
          std::string path = std::string(argv[1]) + "/seed-" + std::to_string(files++);
          std::FILE* f = std::fopen(path.c_str(), "wb");
          if (!f || std::fwrite(s.data(), 1, written, f) != written) return 1;
          std::fclose(f);
        }
      }
    }
  }
  std::printf("%d seeds in %s\n", files, argv[1]);
  return 0;
}
