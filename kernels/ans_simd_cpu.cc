#include "kernels/ans_simd_cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <array>
#include <climits>

namespace mpizip::kernels::cpu::ans::simd {

#if defined(__x86_64__)
namespace {

// For each 8-bit mask of renormalising lanes: lane j takes word number popcount(mask below j).
constexpr std::array<std::array<uint8_t, 8>, 256> make_word_index() {
  std::array<std::array<uint8_t, 8>, 256> t{};
  for (int m = 0; m < 256; ++m) {
    int k = 0;
    for (int j = 0; j < 8; ++j)
      if (m >> j & 1) t[m][j] = static_cast<uint8_t>(k++);
  }
  return t;
}
alignas(64) constexpr auto kWordIndex = make_word_index();

// For each 8-bit mask of renormalising lanes: the lanes whose words the encoder emits, in ascending
// order, moved to the top of the vector (so they end just below the store position).
constexpr std::array<std::array<uint8_t, 8>, 256> make_word_source() {
  std::array<std::array<uint8_t, 8>, 256> t{};
  for (int m = 0; m < 256; ++m) {
    int cnt = 0;
    for (int j = 0; j < 8; ++j) cnt += m >> j & 1;
    int k = 8 - cnt;
    for (int j = 0; j < 8; ++j)
      if (m >> j & 1) t[m][k++] = static_cast<uint8_t>(j);
  }
  return t;
}
alignas(64) constexpr auto kWordSource = make_word_source();

#define MPIZIP_AVX2 __attribute__((target("avx2,popcnt")))
#define MPIZIP_INLINE inline __attribute__((always_inline))

// One step of 8 lanes; returns the symbols in the low byte of each 32-bit lane.
MPIZIP_AVX2 MPIZIP_INLINE __m256i step8(__m256i& x, const uint32_t* packed, __m256i mask, __m128i pb,
                                 const uint8_t* words, uint64_t& pos) {
  const __m256i low12 = _mm256_set1_epi32(0xFFF);
  __m256i e = _mm256_i32gather_epi32(reinterpret_cast<const int*>(packed), _mm256_and_si256(x, mask), 4);
  __m256i f = _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(e, 12), low12), _mm256_set1_epi32(1));
  x = _mm256_add_epi32(_mm256_mullo_epi32(f, _mm256_srl_epi32(x, pb)), _mm256_and_si256(e, low12));
  __m256i renorm = _mm256_cmpeq_epi32(_mm256_srli_epi32(x, 16), _mm256_setzero_si256());
  unsigned m = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(renorm)));
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(words + 2 * pos)));
  __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kWordIndex[m].data())));
  w = _mm256_permutevar8x32_epi32(w, idx);
  x = _mm256_blendv_epi8(x, _mm256_or_si256(_mm256_slli_epi32(x, 16), w), renorm);
  pos += static_cast<uint64_t>(__builtin_popcount(m));
  return _mm256_srli_epi32(e, 24);
}

// One encoder step of 8 lanes: e holds f << 16 | c of each lane's symbol, inv its 1 / f rounded
// up (two halves of 4 lanes).
MPIZIP_AVX2 MPIZIP_INLINE void encode8(__m256i& x, __m256i e, __m256d inv_lo, __m256d inv_hi, __m128i pb,
                                __m128i shift_max, uint16_t*& p) {
  const __m256i low16 = _mm256_set1_epi32(0xFFFF);
  __m256i f = _mm256_srli_epi32(e, 16);
  __m256i xmax = _mm256_sll_epi32(f, shift_max);  // f << (32 - PB); f < M keeps it in 32 bits
  __m256i renorm = _mm256_cmpeq_epi32(_mm256_max_epu32(x, xmax), x);
  unsigned m = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(renorm)));
  __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kWordSource[m].data())));
  // The low 16 bits of each chosen lane, packed into the low 128 bits.
  const __m256i low_halves = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                              0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  __m256i w = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(x, idx), low_halves);
  w = _mm256_permute4x64_epi64(w, 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p - 8), _mm256_castsi256_si128(w));
  p -= __builtin_popcount(m);
  x = _mm256_blendv_epi8(x, _mm256_srli_epi32(x, 16), renorm);
  // q = x / f, exactly: x < 2^32 is exact in a double (converted as the signed x - 2^31, plus
  // 2^31), and 1/f rounded up keeps x * inv within 2^-28 above x / f (q < 2^23), far below the
  // 1/f that separates it from the next integer.
  const __m256d two31 = _mm256_set1_pd(2147483648.0);
  __m256i xs = _mm256_xor_si256(x, _mm256_set1_epi32(INT32_MIN));
  __m256d xlo = _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(xs)), two31);
  __m256d xhi = _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(xs, 1)), two31);
  __m128i qlo = _mm256_cvttpd_epi32(_mm256_mul_pd(xlo, inv_lo));
  __m128i qhi = _mm256_cvttpd_epi32(_mm256_mul_pd(xhi, inv_hi));
  __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(qlo), qhi, 1);
  // x' = q * M + (x - q * f) + c
  x = _mm256_add_epi32(_mm256_sub_epi32(_mm256_add_epi32(_mm256_sll_epi32(q, pb), x), _mm256_mullo_epi32(q, f)),
                       _mm256_and_si256(e, low16));
}

// One encoder step of 8 lanes whose table entries are at[0..7].
MPIZIP_AVX2 MPIZIP_INLINE void encode_entries8(__m256i& x, const EncEntry* at, __m128i pb, __m128i shift_max,
                                        uint16_t*& p) {
  // After the unpacks, f|c of lanes 0..7 sit in the order 0 2 4 6 1 3 5 7.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const double* e = &at->inv;
  __m256d a = _mm256_load_pd(e), b = _mm256_load_pd(e + 4), c = _mm256_load_pd(e + 8), d = _mm256_load_pd(e + 12);
  __m256d inv_lo = _mm256_permute4x64_pd(_mm256_unpacklo_pd(a, b), 0xD8);
  __m256d inv_hi = _mm256_permute4x64_pd(_mm256_unpacklo_pd(c, d), 0xD8);
  __m256 fc = _mm256_shuffle_ps(_mm256_castpd_ps(_mm256_unpackhi_pd(a, b)),
                                _mm256_castpd_ps(_mm256_unpackhi_pd(c, d)), 0x88);
  encode8(x, _mm256_permutevar8x32_epi32(_mm256_castps_si256(fc), order), inv_lo, inv_hi, pb, shift_max, p);
}

// Groups looked up per batch. Table entries are fetched with scalar loads into a batch buffer
// ahead of the vector steps: on the CPUs measured, that is much cheaper than AVX2 gathers.
constexpr uint32_t kBatchGroups = 8;

}  // namespace

MPIZIP_AVX2 void encode_groups(uint32_t* xs, const EncEntry* table, int prob_bits, const uint8_t* sym,
                               uint32_t groups, uint16_t** p_io) {
  const __m128i pb = _mm_cvtsi32_si128(prob_bits);
  const __m128i shift_max = _mm_cvtsi32_si128(32 - prob_bits);
  alignas(32) EncEntry ent[kBatchGroups * 32];
  // The four state vectors stay in registers: an indexed array would live in memory and put a
  // store-to-load round trip on every state update.
  __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs));
  __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + 8));
  __m256i x2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + 16));
  __m256i x3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + 24));
  uint16_t* p = *p_io;
  for (uint32_t end = groups; end > 0;) {
    const uint32_t begin = end > kBatchGroups ? end - kBatchGroups : 0;
    const uint8_t* s = sym + 32 * begin;
    for (uint32_t i = 0; i < 32 * (end - begin); ++i)
      _mm_store_si128(reinterpret_cast<__m128i*>(ent + i), _mm_load_si128(reinterpret_cast<const __m128i*>(table + s[i])));
    for (uint32_t g = end - begin; g-- > 0;) {
      const EncEntry* at = ent + 32 * g;
      encode_entries8(x3, at + 24, pb, shift_max, p);
      encode_entries8(x2, at + 16, pb, shift_max, p);
      encode_entries8(x1, at + 8, pb, shift_max, p);
      encode_entries8(x0, at, pb, shift_max, p);
    }
    end = begin;
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs), x0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + 8), x1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + 16), x2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + 24), x3);
  *p_io = p;
}

bool available() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt"); }

MPIZIP_AVX2 uint32_t decode_groups(uint32_t* xs, const uint32_t* packed, int prob_bits,
                                   const uint8_t* words, uint64_t avail, uint64_t* pos_io,
                                   uint8_t* out, uint32_t groups) {
  const __m256i mask = _mm256_set1_epi32((1 << prob_bits) - 1);
  const __m128i pb = _mm_cvtsi32_si128(prob_bits);
  // Symbols leave the two 128-bit halves interleaved after the packs; this puts them in order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs));
  __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + 8));
  __m256i x2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + 16));
  __m256i x3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs + 24));
  uint64_t pos = *pos_io;
  uint32_t g = 0;
  for (; g < groups && pos + 32 <= avail; ++g) {
    __m256i s0 = step8(x0, packed, mask, pb, words, pos);
    __m256i s1 = step8(x1, packed, mask, pb, words, pos);
    __m256i s2 = step8(x2, packed, mask, pb, words, pos);
    __m256i s3 = step8(x3, packed, mask, pb, words, pos);
    __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(s0, s1), _mm256_packus_epi32(s2, s3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g), _mm256_permutevar8x32_epi32(b, order));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs), x0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + 8), x1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + 16), x2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + 24), x3);
  *pos_io = pos;
  return g;
}

#else

bool available() { return false; }
uint32_t decode_groups(uint32_t*, const uint32_t*, int, const uint8_t*, uint64_t, uint64_t*, uint8_t*,
                       uint32_t) {
  return 0;
}
void encode_groups(uint32_t*, const EncEntry*, int, const uint8_t*, uint32_t, uint16_t**) {}

#endif

}  // namespace mpizip::kernels::cpu::ans::simd
