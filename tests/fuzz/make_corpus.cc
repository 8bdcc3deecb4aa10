// Writes the seed corpus of a fuzz target (tests/fuzz/run.sh): valid inputs only, which the
// fuzzer then mutates.
//   make_corpus TARGET DIR
// decode:       small streams of every element type and precision, with and without checksum,
//               coded (one table per block, and SHARED_TABLE) and STORED.
// decode_fast:  fast streams (version 3) of every element type, with and without checksum, whose
//               chunks take each code width (2, 4 and 8 bits) and escapes.
// match_header: match messages of every form (plain, inline raw and compressed, bulk, split,
//               bulk from device memory, chunked) with the payload the receiver's transport serves.
// hello:        the allreduce's hellos, agreeing with the target's own and not.
// chunked:      chunked messages of every element type: each chunk's stream as a sender writes it.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "coll/wire.h"
#include "kernels/codec_cpu.h"
#include "p2p/wire.h"

namespace cpu = mpizip::kernels::cpu;
namespace p2p = mpizip::p2p;
namespace coll = mpizip::coll;
using mpizip::format::DType;

namespace {

int files = 0;
std::string dir;

bool write_seed(const std::vector<uint8_t>& s) {
  std::string path = dir + "/seed-" + std::to_string(files++);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = s.empty() || std::fwrite(s.data(), 1, s.size(), f) == s.size();
  return std::fclose(f) == 0 && ok;
}

// Elements whose exponents look like real data's: normally distributed floats' bytes.
std::vector<uint8_t> sample(DType t, uint64_t count, std::mt19937& gen) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const uint64_t eb = mpizip::format::elem_bytes(t);
  std::vector<uint8_t> data(count * eb);
  for (size_t i = 0; i < data.size(); ++i) {
    float f = normal(gen);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    data[i] = static_cast<uint8_t>(i % eb + 1 == eb ? bits >> 24 : bits >> (i % 3) * 5);
  }
  return data;
}

std::vector<uint8_t> compress(DType t, const std::vector<uint8_t>& data, bool checksum) {
  const uint64_t count = data.size() / mpizip::format::elem_bytes(t);
  std::vector<uint8_t> s(cpu::max_compressed_size(t, count));
  cpu::EncodeOptions opt;
  opt.checksum = checksum;
  uint64_t written = 0;
  if (cpu::compress(t, data.data(), count, s.data(), s.size(), &written, opt) != mpizip::Status::kOk)
    std::abort();
  s.resize(written);
  return s;
}

// One transfer as tests/fuzz/feed_transport.h serves it: a 2-byte length, then the bytes.
void feed(std::vector<uint8_t>* out, const uint8_t* p, uint64_t n) {
  out->push_back(static_cast<uint8_t>(n));
  out->push_back(static_cast<uint8_t>(n >> 8));
  out->insert(out->end(), p, p + n);
}

// fuzz_match_header's input: selector bytes, the match message's length and bytes, the feed.
bool match_seed(uint8_t sel, uint8_t cap_sel, const std::vector<uint8_t>& msg,
                const std::vector<uint8_t>& rest) {
  std::vector<uint8_t> in{sel, cap_sel, static_cast<uint8_t>(msg.size()),
                          static_cast<uint8_t>(msg.size() >> 8)};
  in.insert(in.end(), msg.begin(), msg.end());
  in.insert(in.end(), rest.begin(), rest.end());
  return write_seed(in);
}

std::vector<uint8_t> full(const p2p::MatchHeader& h, uint64_t bare, const uint8_t* inline_payload,
                          uint64_t inline_bytes) {
  std::vector<uint8_t> m(p2p::match_size(p2p::kHeaderBytes + inline_bytes, bare), 0);
  std::memcpy(m.data(), &h, p2p::kHeaderBytes);
  if (inline_bytes) std::memcpy(m.data() + p2p::kHeaderBytes, inline_payload, inline_bytes);
  return m;
}

bool match_header_corpus(std::mt19937& gen) {
  constexpr uint64_t kBare[4] = {0, 8, 64, 4000};  // as fuzz_match_header.cc
  for (int t = 1; t <= 6; ++t) {
    const DType dtype = static_cast<DType>(t);
    const uint64_t eb = mpizip::format::elem_bytes(dtype);
    for (int bsel : {1, 3}) {
      const uint64_t bare = kBare[bsel];
      // The receiver's type is the sender's (bit 7 of cap_sel); capacity exact, half, more.
      for (uint8_t cap : {uint8_t{0x80}, uint8_t{0xA0}, uint8_t{0xC0}}) {
        const uint8_t sel = static_cast<uint8_t>(bsel | ((t - 1) << 3));
        // Plain: the application's bytes alone, just past bare_bytes.
        const uint64_t n = bare / eb + 2;
        if (!match_seed(sel, cap, sample(dtype, n, gen), {})) return false;
        // Full header, inline raw and compressed.
        for (uint64_t count : {uint64_t{3}, uint64_t{700}}) {
          auto data = sample(dtype, count, gen);
          auto h = p2p::make_header(p2p::Payload::kInline, p2p::Encoding::kRaw, dtype, 0, count, data.size());
          if (!match_seed(sel, cap, full(h, bare, data.data(), data.size()), {})) return false;
          auto s = compress(dtype, data, count > 100);
          h = p2p::make_header(p2p::Payload::kInline, p2p::Encoding::kCompressed, dtype, 0, count, s.size());
          if (!match_seed(sel, cap, full(h, bare, s.data(), s.size()), {})) return false;
          // Bulk (host and device), raw and compressed: the payload comes from the transport.
          for (auto pl : {p2p::Payload::kBulk, p2p::Payload::kBulkDevice}) {
            std::vector<uint8_t> rest;
            feed(&rest, data.data(), data.size());
            h = p2p::make_header(pl, p2p::Encoding::kRaw, dtype, 9, count, data.size());
            if (!match_seed(sel, cap, full(h, bare, nullptr, 0), rest)) return false;
            rest.clear();
            feed(&rest, s.data(), s.size());
            h = p2p::make_header(pl, p2p::Encoding::kCompressed, dtype, 9, count, s.size());
            if (!match_seed(sel | 4, cap, full(h, bare, nullptr, 0), rest)) return false;
          }
          // Split: the header and raw section, then the coded section.
          const uint64_t part0 = mpizip::format::coded_offset(dtype, count);
          if (s.size() >= part0) {
            std::vector<uint8_t> rest;
            feed(&rest, s.data(), part0);
            feed(&rest, s.data() + part0, s.size() - part0);
            h = p2p::make_header(p2p::Payload::kSplit, p2p::Encoding::kCompressed, dtype, 9, count,
                                 cpu::max_compressed_size(dtype, count));
            if (!match_seed(sel, cap, full(h, bare, nullptr, 0), rest)) return false;
          }
          // Chunked (host and device): chunks of 256 elements, each its own stream.
          for (auto pl : {p2p::Payload::kChunked, p2p::Payload::kChunkedDevice}) {
            const uint64_t chunk = 256;
            std::vector<uint8_t> rest;
            for (uint64_t k = 0; k * chunk < count; ++k) {
              const uint64_t m2 = count - k * chunk < chunk ? count - k * chunk : chunk;
              std::vector<uint8_t> part(data.begin() + k * chunk * eb, data.begin() + (k * chunk + m2) * eb);
              auto cs = compress(dtype, part, k == 0);
              feed(&rest, cs.data(), cs.size());
            }
            h = p2p::make_header(pl, p2p::Encoding::kCompressed, dtype, 9, count, chunk * eb);
            if (!match_seed(sel, cap, full(h, bare, nullptr, 0), rest)) return false;
          }
        }
      }
    }
  }
  return true;
}

bool hello_corpus() {
  // fuzz_hello.cc's own hello for selector `sel`, and variations of it.
  for (int sel = 0; sel < 64; sel += 5) {
    const auto dtype = static_cast<DType>(sel % 6 + 1);
    const auto op = static_cast<mpizip::kernels::reduce::Op>((sel >> 3) % 4 + 1);
    const uint64_t count = 1000 + (sel & 7) * 4096, piece = 256 << (sel & 3);
    for (int v = 0; v < 4; ++v) {
      const uint8_t flags = v == 1 ? 0 : v == 2 ? coll::kHelloFailed : coll::kHelloCompress;
      const coll::Hello h = coll::make_hello(dtype, op, count + (v == 3), piece, 17, flags,
                                             v == 0 ? 4096 : 0);
      std::vector<uint8_t> in(1 + sizeof h);
      in[0] = static_cast<uint8_t>(sel);
      std::memcpy(in.data() + 1, &h, sizeof h);
      if (!write_seed(in)) return false;
    }
  }
  return true;
}

bool chunked_corpus(std::mt19937& gen) {
  for (int t = 1; t <= 6; ++t) {
    const DType dtype = static_cast<DType>(t);
    const uint64_t eb = mpizip::format::elem_bytes(dtype);
    for (uint64_t count : {uint64_t{1}, uint64_t{100}, uint64_t{1500}}) {
      for (uint64_t chunk : {uint64_t{16}, uint64_t{512}}) {
        for (uint8_t mode : {uint8_t{0}, uint8_t{0x10}, uint8_t{0x20}, uint8_t{0x40}}) {
          const uint8_t sel = static_cast<uint8_t>((t - 1) | mode);
          std::vector<uint8_t> in{sel, static_cast<uint8_t>(count), static_cast<uint8_t>(count >> 8),
                                  static_cast<uint8_t>(chunk / 16 - 1)};
          auto data = sample(dtype, count, gen);
          for (uint64_t k = 0; k * chunk < count; ++k) {
            const uint64_t m = count - k * chunk < chunk ? count - k * chunk : chunk;
            std::vector<uint8_t> part(data.begin() + k * chunk * eb, data.begin() + (k * chunk + m) * eb);
            auto cs = compress(dtype, part, (k & 1) != 0);
            feed(&in, cs.data(), cs.size());
          }
          if (!write_seed(in)) return false;
        }
      }
    }
  }
  return true;
}

// Fast streams: data whose chunks take width 2 (three exponents cover most), 4 (a spread with
// escapes) and 8 (random bits), every type, a partial last chunk, with and without checksum.
bool fast_corpus(std::mt19937& gen) {
  for (int t = 1; t <= 6; ++t) {
    const DType dtype = static_cast<DType>(t);
    const uint64_t eb = mpizip::format::elem_bytes(dtype);
    for (uint64_t count : {uint64_t{0}, uint64_t{3}, uint64_t{700}, uint64_t{5000} * (dtype == DType::kE4m3 ? 2 : 1)}) {
      for (int shape = 0; shape < 3; ++shape) {
        std::vector<uint8_t> data(count * eb);
        for (size_t i = 0; i < data.size(); ++i) {
          const uint32_t r = gen();
          const bool top = i % eb + 1 == eb;  // the byte holding the exponent's high bits
          data[i] = static_cast<uint8_t>(shape == 2 || !top ? r
                                         : shape == 0       ? 0x3C + (r % 8 == 0 ? r % 5 : 0) + (r >> 31) * 0x80
                                                            : 0x30 + r % 24);
        }
        for (int checksum = 0; checksum < 2; ++checksum) {
          cpu::EncodeOptions opt;
          opt.mode = cpu::kModeFast;
          opt.checksum = checksum;
          std::vector<uint8_t> s(cpu::max_compressed_size(dtype, count));
          uint64_t written = 0;
          if (cpu::compress(dtype, data.data(), count, s.data(), s.size(), &written, opt) != mpizip::Status::kOk)
            return false;
          s.resize(written);
          if (!write_seed(s)) return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s decode|decode_fast|match_header|hello|chunked DIR\n", argv[0]);
    return 2;
  }
  const std::string target = argv[1];
  dir = argv[2];
  std::mt19937 gen(1);
  if (target == "decode_fast") {
    if (!fast_corpus(gen)) return 1;
    std::printf("%d seeds in %s\n", files, argv[2]);
    return 0;
  }
  if (target != "decode") {
    bool ok = target == "match_header" ? match_header_corpus(gen)
              : target == "hello"      ? hello_corpus()
              : target == "chunked"    ? chunked_corpus(gen)
                                       : (std::fprintf(stderr, "unknown target %s\n", argv[1]), false);
    if (!ok) return 1;
    std::printf("%d seeds in %s\n", files, argv[2]);
    return 0;
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
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
          // Per-block tables at every precision; plane tables (SHARED_TABLE) at the default one.
          for (int table : {cpu::kTablePerBlock, cpu::kTableShared}) {
            if (table == cpu::kTableShared && pb != 12) continue;
            cpu::EncodeOptions opt;
            opt.log2_block = 10;
            opt.prob_bits = pb;
            opt.checksum = checksum;
            opt.table = table;
            std::vector<uint8_t> s(cpu::max_compressed_size(dtype, count));
            uint64_t written = 0;
            if (cpu::compress(dtype, data.data(), count, s.data(), s.size(), &written, opt) != mpizip::Status::kOk)
              return 1;
            s.resize(written);
            if (!write_seed(s)) return 1;
          }
        }
      }
    }
  }
  std::printf("%d seeds in %s\n", files, argv[2]);
  return 0;
}
