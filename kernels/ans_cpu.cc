#include "kernels/ans_cpu.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/ans_simd_cpu.h"
#include "kernels/format.h"

namespace mpizip::kernels::cpu::ans {
namespace {

constexpr uint32_t kL = format::kAnsLow;
constexpr int kLanes = format::kLanes;
// Words below the first one that the encoder may scribble on: one for the scalar path, which
// stores before it decides, eight for the vector path, which stores eight at a time.
constexpr size_t kWordSlack = 8;

inline uint16_t load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Encoder entry of one symbol. The division x / f is a multiplication by rcp = ceil(2^64 / f),
// exact for every 32-bit x since f <= 2^15; f = 1 (rcp would be 2^64) uses rcp = 2^64 - 1, which
// yields q = x - 1, and folds the difference into bias (ryg_rans, rans64.h).
struct EncSym {
  uint64_t rcp;
  uint32_t xmax;  // renormalise when x >= xmax = f << (32 - PB)
  uint32_t bias;
  uint32_t cmpl;  // M - f
};

EncSym make_enc_sym(uint32_t f, uint32_t cum, int pb) {
  uint32_t m = 1u << pb;
  EncSym e;
  // f = M only when the block holds one symbol: encoding is then the identity and x stays at L,
  // so clamping xmax to 2^32 - 1 never triggers a renormalisation.
  uint64_t xmax = uint64_t{f} << (32 - pb);
  e.xmax = xmax > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<uint32_t>(xmax);
  e.cmpl = m - f;
  if (f == 1) {
    e.rcp = ~uint64_t{0};
    e.bias = cum + m - 1;
  } else {
    // ceil(2^64 / f): floor plus one unless f divides 2^64 (a power of two).
    const unsigned __int128 two64 = static_cast<unsigned __int128>(1) << 64;
    uint64_t fl = static_cast<uint64_t>(two64 / f);
    e.rcp = (two64 % f) ? fl + 1 : fl;
    e.bias = cum;
  }
  return e;
}

inline void encode_step(uint32_t& x, const EncSym& e, uint16_t*& p) {
  uint32_t xi = x;
  bool r = xi >= e.xmax;
  p[-1] = static_cast<uint16_t>(xi);  // stored always, kept only when renormalising
  p -= r;
  xi = r ? xi >> 16 : xi;
  uint32_t q = static_cast<uint32_t>((static_cast<unsigned __int128>(xi) * e.rcp) >> 64);
  x = xi + e.bias + q * e.cmpl;
}

template <bool kChecked>
inline bool decode_group(uint32_t* x, const uint32_t* dec, const uint8_t* symtab, int pb,
                         const uint8_t* words, uint64_t avail, uint64_t& pos, uint8_t* out, int m) {
  const uint32_t mask = (1u << pb) - 1;
  for (int lane = 0; lane < m; ++lane) {
    uint32_t xi = x[lane];
    uint32_t slot = xi & mask;
    uint32_t e = dec[slot];
    out[lane] = symtab[slot];
    xi = (e >> 16) * (xi >> pb) + (e & 0xFFFF);
    if constexpr (kChecked) {
      if (xi < kL) {
        if (pos >= avail) return false;
        xi = (xi << 16) | load16(words + 2 * pos);
        ++pos;
      }
    } else {
      bool r = xi < kL;
      uint32_t w = load16(words + 2 * pos);  // in bounds: the caller left 32 words ahead
      xi = r ? (xi << 16) | w : xi;
      pos += r;
    }
    x[lane] = xi;
  }
  return true;
}

}  // namespace

void histogram(const uint8_t* sym, uint32_t n, uint32_t* counts) {
  // Two sub-histograms, so that runs of the most frequent symbol do not all wait on one counter;
  // more were slower on the machines measured (more tables to clear and keep in L1).
  constexpr int kWays = 2;
  uint32_t h[kWays][256] = {};
  uint32_t i = 0;
  for (; i + kWays <= n; i += kWays) {
    for (int k = 0; k < kWays; ++k) ++h[k][sym[i + k]];
  }
  for (; i < n; ++i) ++h[0][sym[i]];
  for (int s = 0; s < 256; ++s) counts[s] = h[0][s] + h[1][s];
}

namespace {

// normalize() for 32-bit counts (a block's) and 64-bit ones (a plane's). The rounding of the first
// estimate is done in a type wide enough for count * M, so both give the same frequencies where
// the counts fit either.
template <typename C, typename Wide>
void normalize_counts(const C* counts, C n, int prob_bits, uint32_t* freqs) {
  const uint32_t m = 1u << prob_bits;
  uint8_t present[256];
  int k = 0;
  for (int s = 0; s < 256; ++s) {
    freqs[s] = 0;
    if (counts[s]) present[k++] = static_cast<uint8_t>(s);
  }
  if (k == 1) {
    freqs[present[0]] = m;
    return;
  }
  int64_t sum = 0;
  for (int i = 0; i < k; ++i) {
    int s = present[i];
    uint32_t f = static_cast<uint32_t>((Wide{counts[s]} * m + n / 2) / n);
    freqs[s] = f ? f : 1;
    sum += freqs[s];
  }
  // The cost sum(c_s * -log2 f_s) is separable and convex in the f_s, so moving one unit at a time
  // to where it saves most (and, once the sum is M, exchanging units while that saves anything)
  // reaches the integer optimum. up[i]: bits saved by f+1; down[i]: bits lost by f-1.
  const double kInf = std::numeric_limits<double>::infinity();
  double up[256], down[256];
  auto refresh = [&](int i) {
    int s = present[i];
    double c = static_cast<double>(counts[s]), f = freqs[s];
    up[i] = freqs[s] >= m ? -kInf : c * (std::log2(f + 1) - std::log2(f));
    down[i] = freqs[s] <= 1 ? kInf : c * (std::log2(f) - std::log2(f - 1));
  };
  for (int i = 0; i < k; ++i) refresh(i);
  auto best_up = [&](int skip) {
    int b = -1;
    for (int i = 0; i < k; ++i)
      if (i != skip && (b < 0 || up[i] > up[b])) b = i;
    return b;
  };
  auto best_down = [&](int skip) {
    int b = -1;
    for (int i = 0; i < k; ++i)
      if (i != skip && (b < 0 || down[i] < down[b])) b = i;
    return b;
  };
  for (; sum < m; ++sum) {
    int i = best_up(-1);
    ++freqs[present[i]];
    refresh(i);
  }
  for (; sum > m; --sum) {
    int i = best_down(-1);
    --freqs[present[i]];
    refresh(i);
  }
  for (int iter = 0; iter < 4 * 256 + 64; ++iter) {
    int i = best_up(-1);
    int j = best_down(i);
    if (!(up[i] > down[j] * (1 + 1e-12) + 1e-9)) break;
    ++freqs[present[i]];
    --freqs[present[j]];
    refresh(i);
    refresh(j);
  }
}

}  // namespace

void normalize(const uint32_t* counts, uint32_t n, int prob_bits, uint32_t* freqs) {
  normalize_counts<uint32_t, uint64_t>(counts, n, prob_bits, freqs);
}

void normalize(const uint64_t* counts, uint64_t n, int prob_bits, uint32_t* freqs) {
  normalize_counts<uint64_t, unsigned __int128>(counts, n, prob_bits, freqs);
}

// The coding tables of one set of frequencies, and the head a block with its own table carries.
struct BlockEncoder::Tables {
  int nsym = 0;
  uint8_t bitmap[format::kBitmapBytes];
  uint16_t ftab[256];
  EncSym tab[256];
  simd::EncEntry vtab[256];
  // The external table these tables were built from; pb 0 when they came from a block's own.
  uint32_t ext_freqs[256];
  int ext_pb = 0;

  void build(const uint32_t* freqs, int prob_bits) {
    std::memset(bitmap, 0, sizeof bitmap);
    nsym = 0;
    uint32_t cum = 0;
    for (int s = 0; s < 256; ++s) {
      if (!freqs[s]) continue;
      bitmap[s / 8] |= static_cast<uint8_t>(1u << (s % 8));
      ftab[nsym++] = static_cast<uint16_t>(freqs[s]);
      tab[s] = make_enc_sym(freqs[s], cum, prob_bits);
      vtab[s] = {std::nextafter(1.0 / freqs[s], 2.0), freqs[s] << 16 | cum, 0};  // inv at or above 1 / f
      cum += freqs[s];
    }
  }
};

BlockEncoder::BlockEncoder(int log2_block, bool use_simd)
    : simd_(use_simd && simd::available()),
      words_(new uint16_t[(size_t{1} << log2_block) + kWordSlack]),
      tab_(new Tables()) {}

BlockEncoder::BlockEncoder(BlockEncoder&&) noexcept = default;
BlockEncoder::~BlockEncoder() = default;

uint64_t BlockEncoder::encode(const uint8_t* sym, uint32_t n, int prob_bits, uint8_t* out,
                              uint64_t cap, const uint32_t* freqs) {
  Tables& t = *tab_;
  if (!freqs) {
    uint32_t counts[256], own[256];
    histogram(sym, n, counts);
    normalize(counts, n, prob_bits, own);
    t.build(own, prob_bits);
    t.ext_pb = 0;
  } else if (t.ext_pb != prob_bits || std::memcmp(t.ext_freqs, freqs, sizeof t.ext_freqs) != 0) {
    t.build(freqs, prob_bits);
    std::memcpy(t.ext_freqs, freqs, sizeof t.ext_freqs);
    t.ext_pb = prob_bits;
  }
  const int nsym = t.nsym;

  // Groups from last to first, lanes from last to first: the words fill the buffer from its end,
  // so each group's words come out in ascending lane order, groups in ascending order.
  uint32_t x[kLanes];
  for (uint32_t& xi : x) xi = kL;
  uint16_t* const end = words_.get() + kWordSlack + n;
  uint16_t* p = end;
  // A table of one symbol (f = M) codes to nothing: every step leaves x at L and emits no word.
  uint32_t g = nsym > 1 ? n / kLanes : 0;  // full groups
  if (nsym > 1) {
    for (int lane = static_cast<int>(n - g * kLanes) - 1; lane >= 0; --lane)
      encode_step(x[lane], t.tab[sym[g * kLanes + lane]], p);
  }
  // The vector path needs f < M, that is two symbols or more.
  if (simd_ && nsym > 1) {
    simd::encode_groups(x, t.vtab, prob_bits, sym, g, &p);
    g = 0;
  }
  while (g-- > 0) {
    const uint8_t* s = sym + g * kLanes;
    for (int lane = kLanes - 1; lane >= 0; --lane) encode_step(x[lane], t.tab[s[lane]], p);
  }
  uint64_t nwords = static_cast<uint64_t>(end - p);

  // With an external table the block has no head: it starts with the states.
  uint64_t states_off = freqs ? 0 : format::block_table_bytes(static_cast<uint32_t>(nsym));
  uint64_t words_off = states_off + 4 * kLanes;
  uint64_t total = format::align_up(words_off + 2 * nwords);
  if (total > cap) return 0;
  if (!freqs) {
    std::memcpy(out, t.bitmap, sizeof t.bitmap);
    std::memcpy(out + format::kBitmapBytes, t.ftab, 2 * nsym);
    std::memset(out + format::kBitmapBytes + 2 * nsym, 0, states_off - format::kBitmapBytes - 2 * nsym);
  }
  std::memcpy(out + states_off, x, sizeof x);
  std::memcpy(out + words_off, p, 2 * nwords);
  std::memset(out + words_off + 2 * nwords, 0, total - words_off - 2 * nwords);
  return total;
}

BlockDecoder::BlockDecoder(bool use_simd) : simd_(use_simd && simd::available()) {}

bool BlockDecoder::build_tables(const uint8_t* bitmap, const uint8_t* freqs, int nsym, int prob_bits) {
  const uint32_t m = 1u << prob_bits;
  if (table_bits_ < prob_bits) {  // sized on first use: small messages need small tables
    dec_.reset(new uint32_t[m]);
    sym_.reset(new uint8_t[m]);
    packed_.reset(new uint32_t[size_t{1} << std::min(prob_bits, simd::kMaxProbBits)]);
    table_bits_ = prob_bits;
  }
  const bool pack = prob_bits <= simd::kMaxProbBits;
  uint32_t cum = 0;
  int i = 0;
  for (int s = 0; s < 256; ++s) {
    if (!(bitmap[s / 8] >> (s % 8) & 1)) continue;
    uint32_t f = load16(freqs + 2 * i++);
    if (f == 0 || f > m - cum) return false;  // zero frequency, or the sum would pass M
    for (uint32_t r = 0; r < f; ++r) {
      dec_[cum + r] = f << 16 | r;
      sym_[cum + r] = static_cast<uint8_t>(s);
      if (pack) packed_[cum + r] = uint32_t(s) << 24 | (f - 1) << 12 | r;
    }
    cum += f;
  }
  return i == nsym && cum == m;
}

bool BlockDecoder::build_external(const uint32_t* freqs, int prob_bits) {
  if (ext_pb_ == prob_bits && std::memcmp(ext_freqs_, freqs, sizeof ext_freqs_) == 0) return true;
  ext_pb_ = 0;
  uint8_t bitmap[format::kBitmapBytes] = {};
  uint8_t ftab[2 * 256];
  int nsym = 0;
  for (int s = 0; s < 256; ++s) {
    if (!freqs[s]) continue;
    if (freqs[s] > (1u << prob_bits)) return false;
    bitmap[s / 8] |= static_cast<uint8_t>(1u << (s % 8));
    const uint16_t f = static_cast<uint16_t>(freqs[s]);
    std::memcpy(ftab + 2 * nsym++, &f, 2);
  }
  if (!build_tables(bitmap, ftab, nsym, prob_bits)) return false;
  std::memcpy(ext_freqs_, freqs, sizeof ext_freqs_);
  ext_pb_ = prob_bits;
  return true;
}

Status BlockDecoder::decode(const uint8_t* blk, uint64_t bytes, int prob_bits, uint32_t n,
                            uint8_t* out, const uint32_t* freqs) {
  uint64_t states_off = 0;
  if (freqs) {
    if (!build_external(freqs, prob_bits)) return Status::kCorruptStream;
  } else {
    if (bytes < format::kBitmapBytes) return Status::kCorruptStream;
    int nsym = 0;
    for (size_t i = 0; i < format::kBitmapBytes; ++i) nsym += std::popcount(blk[i]);
    states_off = format::block_table_bytes(static_cast<uint32_t>(nsym));
    if (states_off + 4 * kLanes > bytes) return Status::kCorruptStream;
    ext_pb_ = 0;  // the block's own table replaces the external one's
    if (!build_tables(blk, blk + format::kBitmapBytes, nsym, prob_bits)) return Status::kCorruptStream;
  }
  uint64_t words_off = states_off + 4 * kLanes;
  if (words_off > bytes) return Status::kCorruptStream;

  uint32_t x[kLanes];
  for (int lane = 0; lane < kLanes; ++lane) {
    x[lane] = load32(blk + states_off + 4 * lane);
    if (x[lane] < kL) return Status::kCorruptStream;
  }
  const uint8_t* words = blk + words_off;
  const uint64_t avail = (bytes - words_off) / 2;
  uint64_t pos = 0;
  const uint32_t full = n / kLanes;
  uint32_t g = 0;
  if (simd_ && prob_bits <= simd::kMaxProbBits) {
    g = simd::decode_groups(x, packed_.get(), prob_bits, words, avail, &pos, out, full);
    if (g < full) {
      // Fewer than 32 words left: the vector path reads 8 words at a time, so it goes on from a
      // zero-padded copy of them. A valid stream never reads past the copy's real words; a corrupt
      // one that does is caught right after.
      uint8_t tail[4 * kLanes] = {};
      const uint64_t rest = avail - pos;
      std::memcpy(tail, words + 2 * pos, 2 * rest);
      uint64_t tpos = 0;
      g += simd::decode_groups(x, packed_.get(), prob_bits, tail, 2 * kLanes, &tpos, out + g * kLanes, full - g);
      if (tpos > rest) return Status::kCorruptStream;
      pos += tpos;
    }
  }
  for (; g < full && pos + kLanes <= avail; ++g)
    decode_group<false>(x, dec_.get(), sym_.get(), prob_bits, words, avail, pos, out + g * kLanes, kLanes);
  for (; g * kLanes < n; ++g) {
    int m = static_cast<int>(n - g * kLanes < kLanes ? n - g * kLanes : kLanes);
    if (!decode_group<true>(x, dec_.get(), sym_.get(), prob_bits, words, avail, pos, out + g * kLanes, m))
      return Status::kCorruptStream;
  }
  for (uint32_t xi : x)
    if (xi != kL) return Status::kCorruptStream;
  if (format::align_up(words_off + 2 * pos) != bytes) return Status::kCorruptStream;
  return Status::kOk;
}

}  // namespace mpizip::kernels::cpu::ans
