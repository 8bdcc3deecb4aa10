// MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Allgather on the TMA intra-node path
// (coll/tma_coll.h), 2 to 4 ranks sharing the GPU, under MPIZip (tests/gpu/run-tma.sh). Every type
// (fp32, fp64, bf16, fp16), op (sum, prod, min, max), in place and out of place, counts from 1
// element (not divisible by the rank count among them) are checked bit for bit against the
// fixed-order reference computed here on the host: result[i] = ((in_0[i] op in_1[i]) op in_2[i])
// ..., with kernels/reduce.h's arithmetic. Inputs mix NaNs (several payloads), infinities, signed
// zeros, subnormals and ordinary values. Then 1,000 back-to-back collectives of changing kinds and
// sizes on inputs that change every time (a stale flag shows as an old result), interleaved with
// device point-to-point traffic, and host buffers on odd ranks (staged). --small: a few cases (for
// compute-sanitizer); --big: add a 1 GiB fp32 allreduce; --mpi-below B: float and double reductions
// under B bytes are checked against the MPI library's result (MPIZIP_TMA_MIN_BYTES=B sends them
// there); --slab: every device buffer is carved out of one 64 MiB allocation, at offsets that move
// from case to case, as an application allocates once at its largest size (the engine shares such
// buffers at any call size instead of staging them: tma_coll.sh checks the statistics' staged=0),
// out-of-place calls only (an in-place reduce-scatter stages its input by design). Exits 77 without
// a GPU.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/reduce.h"

namespace {

using mpizip::format::DType;
using mpizip::kernels::reduce::Fold;
using mpizip::kernels::reduce::Op;

int rank = 0, nranks = 1;
long failures = 0, cases = 0;
// --mpi-below B: float and double reductions under B bytes go to the MPI library (MPIZip's
// MPIZIP_TMA_MIN_BYTES), so their reference is the MPI library's own result on host copies.
uint64_t mpi_below = 0;
// --slab: device buffers come from one allocation (Buf), handed out from slab_used on and taken
// back at the start of each case.
char* slab = nullptr;
size_t slab_used = 0;
constexpr size_t kSlabBytes = size_t{64} << 20;

void cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, cudaGetErrorString(err));
  MPI_Abort(MPI_COMM_WORLD, 2);
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

size_t elem_size(DType t) { return t == DType::kFp64 ? 8 : t == DType::kFp32 ? 4 : 2; }

// Element i of rank q's input in case `seed`: mostly ordinary values, some special patterns.
template <typename S>
S value(DType t, uint64_t seed, int q, uint64_t i) {
  const uint64_t h = mix(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(q) * 0x100000001b3ull + i);
  const int kind = static_cast<int>(h % 64);
  S out;
  if (t == DType::kFp32) {
    uint32_t u;
    switch (kind) {
      case 0: u = 0x7FC00000u | static_cast<uint32_t>(h >> 40 & 0x3FFFFF); break;  // qNaN payloads
      case 1: u = 0xFF800001u | static_cast<uint32_t>(h >> 44 & 0xFFFF); break;   // NaN, sign set
      case 2: u = 0x7F800000u; break;
      case 3: u = 0xFF800000u; break;
      case 4: u = 0x80000000u; break;
      case 5: u = 0; break;
      case 6: case 7: u = static_cast<uint32_t>(h >> 32) & 0x807FFFFFu; break;  // subnormals
      case 8: u = 0x7F7FFFFFu; break;  // largest finite: sums overflow
      default: {
        float f = static_cast<float>(static_cast<int64_t>(h >> 11) % 2000001 - 1000000) / 65536.0f;
        std::memcpy(&u, &f, 4);
      }
    }
    std::memcpy(&out, &u, sizeof out);
  } else if (t == DType::kFp64) {
    uint64_t u;
    switch (kind) {
      case 0: u = 0x7FF8000000000000ull | (h >> 20); break;
      case 2: u = 0x7FF0000000000000ull; break;
      case 3: u = 0xFFF0000000000000ull; break;
      case 4: u = 0x8000000000000000ull; break;
      case 6: case 7: u = (h >> 12) | (h & 0x8000000000000000ull); break;
      default: {
        double f = static_cast<double>(static_cast<int64_t>(h >> 11) % 2000001 - 1000000) / 3.0;
        std::memcpy(&u, &f, 8);
      }
    }
    std::memcpy(&out, &u, sizeof out);
  } else {
    uint16_t u;
    const bool bf = t == DType::kBf16;
    switch (kind) {
      case 0: u = bf ? 0x7FC1 : 0x7E01; break;
      case 1: u = static_cast<uint16_t>((bf ? 0xFF81 : 0xFC01) | (h >> 50 & 0x3F)); break;
      case 2: u = bf ? 0x7F80 : 0x7C00; break;
      case 3: u = bf ? 0xFF80 : 0xFC00; break;
      case 4: u = 0x8000; break;
      case 5: u = 0; break;
      case 6: case 7: u = static_cast<uint16_t>((h >> 40) & (bf ? 0x807F : 0x83FF)); break;
      case 8: u = bf ? 0x7F7F : 0x7BFF; break;
      default: {
        const uint32_t e = bf ? 120 + (h >> 20) % 14 : 10 + (h >> 20) % 10;  // moderate exponents
        u = bf ? static_cast<uint16_t>(((h >> 40) & 0x8000) | (e << 7) | ((h >> 30) & 0x7F))
               : static_cast<uint16_t>(((h >> 40) & 0x8000) | (e << 10) | ((h >> 30) & 0x3FF));
      }
    }
    std::memcpy(&out, &u, sizeof out);
  }
  return out;
}

template <DType T, Op O>
void reference(uint64_t seed, uint64_t first, uint64_t n, std::vector<uint8_t>* out) {
  using F = Fold<mpizip::kernels::reduce::type_of(T), O>;
  using S = typename F::Storage;
  out->resize(n * sizeof(S));
  S* o = reinterpret_cast<S*>(out->data());
  for (uint64_t i = 0; i < n; ++i) {
    auto acc = F::first(value<S>(T, seed, 0, first + i));
    for (int q = 1; q < nranks; ++q) acc = F::next(acc, value<S>(T, seed, q, first + i));
    o[i] = F::last(acc);
  }
}

template <DType T>
void reference_op(Op op, uint64_t seed, uint64_t first, uint64_t n, std::vector<uint8_t>* out) {
  switch (op) {
    case Op::kSum: return reference<T, Op::kSum>(seed, first, n, out);
    case Op::kProd: return reference<T, Op::kProd>(seed, first, n, out);
    case Op::kMin: return reference<T, Op::kMin>(seed, first, n, out);
    case Op::kMax: return reference<T, Op::kMax>(seed, first, n, out);
  }
}

void reference_any(DType t, Op op, uint64_t seed, uint64_t first, uint64_t n,
                   std::vector<uint8_t>* out) {
  switch (t) {
    case DType::kFp32: return reference_op<DType::kFp32>(op, seed, first, n, out);
    case DType::kFp64: return reference_op<DType::kFp64>(op, seed, first, n, out);
    case DType::kBf16: return reference_op<DType::kBf16>(op, seed, first, n, out);
    default: return reference_op<DType::kFp16>(op, seed, first, n, out);
  }
}

// Rank q's input: `n` elements from element `first` of its sequence.
std::vector<uint8_t> input(DType t, uint64_t seed, int q, uint64_t first, uint64_t n) {
  std::vector<uint8_t> v(n * elem_size(t));
  for (uint64_t i = 0; i < n; ++i) {
    if (t == DType::kFp64) {
      double x = value<double>(t, seed, q, first + i);
      std::memcpy(&v[i * 8], &x, 8);
    } else if (t == DType::kFp32) {
      float x = value<float>(t, seed, q, first + i);
      std::memcpy(&v[i * 4], &x, 4);
    } else {
      uint16_t x = value<uint16_t>(t, seed, q, first + i);
      std::memcpy(&v[i * 2], &x, 2);
    }
  }
  return v;
}

// MPIZip's datatypes, from the preloaded library (this program does not link it).
MPI_Datatype lookup_type(const char* symbol) {
  auto* p = static_cast<MPI_Datatype*>(dlsym(RTLD_DEFAULT, symbol));
  if (p == nullptr) {
    std::fprintf(stderr, "%s not found: run with MPIZip preloaded\n", symbol);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return *p;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::kFp32: return MPI_FLOAT;
    case DType::kFp64: return MPI_DOUBLE;
    case DType::kBf16: return lookup_type("MPIZip_bf16");
    default: return lookup_type("MPIZip_fp16");
  }
}
MPI_Op mpi_op(Op o) {
  return o == Op::kSum ? MPI_SUM : o == Op::kProd ? MPI_PROD : o == Op::kMin ? MPI_MIN : MPI_MAX;
}
const char* type_name(DType t) {
  return t == DType::kFp32 ? "fp32" : t == DType::kFp64 ? "fp64" : t == DType::kBf16 ? "bf16" : "fp16";
}
const char* op_name(Op o) {
  return o == Op::kSum ? "sum" : o == Op::kProd ? "prod" : o == Op::kMin ? "min" : "max";
}

struct Buf {
  void* p = nullptr;
  size_t bytes = 0;
  bool device = true;
  bool carved = false;  // a part of the slab
  Buf(size_t b, bool dev) : bytes(b), device(dev) {
    if (device && slab != nullptr) {
      const size_t take = (b + 255) / 256 * 256 + 256;
      if (slab_used + take > kSlabBytes) {
        std::fprintf(stderr, "rank %d: the slab is full\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      p = slab + slab_used;
      slab_used += take;
      carved = true;
    } else if (device) {
      cuda_check(cudaMalloc(&p, b ? b : 1), "cudaMalloc");
    } else {
      p = std::malloc(b ? b : 1);
    }
  }
  ~Buf() {
    if (carved) return;
    if (device) cudaFree(p);
    else std::free(p);
  }
  void put(const std::vector<uint8_t>& v, size_t off = 0) {
    cuda_check(cudaMemcpy(static_cast<char*>(p) + off, v.data(), v.size(), cudaMemcpyDefault), "put");
  }
  std::vector<uint8_t> get(size_t off, size_t n) const {
    std::vector<uint8_t> v(n);
    cuda_check(cudaMemcpy(v.data(), static_cast<const char*>(p) + off, n, cudaMemcpyDefault), "get");
    return v;
  }
};

void expect(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, size_t elem,
            const std::string& what) {
  ++cases;
  if (got == want) return;
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  uint64_t g = 0, w = 0;
  const size_t e = i / elem * elem;
  if (e + elem <= got.size()) std::memcpy(&g, &got[e], elem);
  if (e + elem <= want.size()) std::memcpy(&w, &want[e], elem);
  if (failures < 20)
    std::fprintf(stderr, "rank %d: %s: element %zu is 0x%llx, want 0x%llx\n", rank, what.c_str(),
                 e / elem, static_cast<unsigned long long>(g), static_cast<unsigned long long>(w));
  ++failures;
}

enum class Kind { kAllreduce, kRsb, kAllgather };

// Whether a reduction of `bytes` (the collective's, as MPIZip measures it) goes to the MPI library.
bool by_mpi(DType t, uint64_t bytes) { return (t == DType::kFp32 || t == DType::kFp64) && bytes < mpi_below; }

// Rank `rank`'s block of a reduce-scatter of `count` elements per rank over inputs `in`.
void rsb_reference(DType t, Op op, uint64_t seed, uint64_t count, const std::vector<uint8_t>& in,
                   std::vector<uint8_t>* want) {
  const size_t es = elem_size(t);
  if (by_mpi(t, count * es * static_cast<uint64_t>(nranks))) {
    want->resize(count * es);
    PMPI_Reduce_scatter_block(in.data(), want->data(), static_cast<int>(count), mpi_type(t), mpi_op(op),
                              MPI_COMM_WORLD);
  } else {
    reference_any(t, op, seed, count * rank, count, want);
  }
}

// One collective, checked. `device`: this rank's buffers on the GPU (else host memory).
void one(Kind kind, DType t, Op op, uint64_t count, bool in_place, bool device, uint64_t seed) {
  const size_t es = elem_size(t);
  const uint64_t P = static_cast<uint64_t>(nranks);
  char what[160];
  std::snprintf(what, sizeof what, "%s %s %s n=%llu %s %s seed=%llu",
                kind == Kind::kAllreduce ? "allreduce" : kind == Kind::kRsb ? "reduce_scatter_block" : "allgather",
                type_name(t), op_name(op), static_cast<unsigned long long>(count),
                in_place ? "in-place" : "out-of-place", device ? "device" : "host",
                static_cast<unsigned long long>(seed));
  slab_used = (seed % 7) * 4096;  // buffers at offsets that differ from case to case
  std::vector<uint8_t> want;
  if (kind == Kind::kAllreduce) {
    Buf out(count * es, device);
    std::vector<uint8_t> in = input(t, seed, rank, 0, count);
    if (in_place) {
      out.put(in);
      MPI_Allreduce(MPI_IN_PLACE, out.p, static_cast<int>(count), mpi_type(t), mpi_op(op), MPI_COMM_WORLD);
    } else {
      Buf src(count * es, device);
      src.put(in);
      out.put(std::vector<uint8_t>(count * es, 0xA5));
      MPI_Allreduce(src.p, out.p, static_cast<int>(count), mpi_type(t), mpi_op(op), MPI_COMM_WORLD);
      expect(src.get(0, count * es), in, es, std::string(what) + " (input changed)");
    }
    if (by_mpi(t, count * es)) {
      want.resize(count * es);
      PMPI_Allreduce(in.data(), want.data(), static_cast<int>(count), mpi_type(t), mpi_op(op), MPI_COMM_WORLD);
    } else {
      reference_any(t, op, seed, 0, count, &want);
    }
    expect(out.get(0, count * es), want, es, what);
  } else if (kind == Kind::kRsb) {
    std::vector<uint8_t> in = input(t, seed, rank, 0, count * P);
    Buf big(count * P * es, device);
    big.put(in);
    if (in_place) {
      MPI_Reduce_scatter_block(MPI_IN_PLACE, big.p, static_cast<int>(count), mpi_type(t), mpi_op(op), MPI_COMM_WORLD);
      rsb_reference(t, op, seed, count, in, &want);
      expect(big.get(0, count * es), want, es, what);
    } else {
      Buf out(count * es, device);
      out.put(std::vector<uint8_t>(count * es, 0x5A));
      MPI_Reduce_scatter_block(big.p, out.p, static_cast<int>(count), mpi_type(t), mpi_op(op), MPI_COMM_WORLD);
      rsb_reference(t, op, seed, count, in, &want);
      expect(out.get(0, count * es), want, es, what);
    }
  } else {
    Buf out(count * P * es, device);
    out.put(std::vector<uint8_t>(count * P * es, 0x3C));
    std::vector<uint8_t> mine = input(t, seed, rank, 0, count);
    if (in_place) {
      out.put(mine, count * rank * es);
      MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out.p, static_cast<int>(count), mpi_type(t), MPI_COMM_WORLD);
    } else {
      Buf src(count * es, device);
      src.put(mine);
      MPI_Allgather(src.p, static_cast<int>(count), mpi_type(t), out.p, static_cast<int>(count), mpi_type(t), MPI_COMM_WORLD);
    }
    for (int q = 0; q < nranks; ++q) {
      std::vector<uint8_t> w = input(t, seed, q, 0, count);
      want.insert(want.end(), w.begin(), w.end());
    }
    expect(out.get(0, count * P * es), want, es, what);
  }
}

// A device ring exchange through MPIZip's point-to-point path, checked.
void p2p_ring(uint64_t seed) {
  const int n = 3001;
  std::vector<uint8_t> mine = input(DType::kFp32, seed, rank, 0, n);
  Buf s(n * 4, true), r(n * 4, true);
  s.put(mine);
  const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  MPI_Sendrecv(s.p, n, MPI_FLOAT, right, 7, r.p, n, MPI_FLOAT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  expect(r.get(0, n * 4), input(DType::kFp32, seed, left, 0, n), 4, "p2p ring");
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  bool small = false, big = false, carve = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--small")) small = true;
    if (!std::strcmp(argv[i], "--slab")) carve = true;
    if (!std::strcmp(argv[i], "--big")) big = true;
    if (!std::strcmp(argv[i], "--mpi-below") && i + 1 < argc) mpi_below = std::strtoull(argv[i + 1], nullptr, 0);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const DType types[] = {DType::kFp32, DType::kFp64, DType::kBf16, DType::kFp16};
  const Op ops[] = {Op::kSum, Op::kProd, Op::kMin, Op::kMax};
  const Kind kinds[] = {Kind::kAllreduce, Kind::kRsb, Kind::kAllgather};
  std::vector<uint64_t> counts = {1, 2, 3, static_cast<uint64_t>(nranks) + 1, 7, 9, 17, 1000, 4097, 65537};
  if (small) counts = {1, 5, 4097};
  uint64_t seed = 1;
  if (carve) {
    cuda_check(cudaMalloc(&slab, kSlabBytes), "cudaMalloc of the slab");
    for (Kind k : kinds)
      for (DType t : types)
        for (Op op : ops) {
          if (k == Kind::kAllgather && op != Op::kSum) continue;
          for (uint64_t n : {uint64_t{1}, uint64_t{5}, uint64_t{4097}, uint64_t{65537}})
            one(k, t, op, n, false, true, seed++);
        }
    const uint64_t sizes[] = {1, 333, 4096, 70001};
    for (int i = 0; i < 300; ++i) one(kinds[i % 3], DType::kFp32, Op::kSum, sizes[(i / 3) % 4], false, true, 100000 + i);
    small = true;
    counts.clear();
  }
  for (Kind k : kinds)
    for (DType t : types)
      for (Op op : ops) {
        if (k == Kind::kAllgather && op != Op::kSum) continue;
        for (uint64_t n : counts)
          for (int ip = 0; ip < 2; ++ip) one(k, t, op, n, ip, true, seed++);
      }
  if (!small && !carve) {
    // Larger sizes, sum only, every type, several CTAs' worth of chunks.
    for (Kind k : kinds)
      for (DType t : types)
        for (uint64_t n : {uint64_t{1} << 20, (uint64_t{3} << 20) + 5}) one(k, t, Op::kSum, n, false, true, seed++);
    // Host buffers on odd ranks: staged locally, the same collective everywhere.
    for (Kind k : kinds)
      for (int ip = 0; ip < 2; ++ip) one(k, DType::kBf16, Op::kSum, 12345, ip, rank % 2 == 0, seed++);
    // 1,000 back-to-back collectives of changing kinds and sizes, with point-to-point between.
    const uint64_t sizes[] = {1, 333, 4096, 70001, 300000};
    for (int i = 0; i < 1000; ++i) {
      const Kind k = kinds[i % 3];
      one(k, DType::kFp32, Op::kSum, sizes[(i / 3) % 5], i % 2, true, 100000 + i);
      if (i % 10 == 0) p2p_ring(200000 + i);
    }
  }
  if (carve) {
    cudaFree(slab);
    slab = nullptr;
  }
  if (big) one(Kind::kAllreduce, DType::kFp32, Op::kSum, uint64_t{1} << 28, false, true, 999);
  long total[2] = {failures, cases}, sum[2] = {0, 0};
  MPI_Allreduce(total, sum, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("tma_coll: %d ranks, %ld checks, %ld failures\n", nranks, sum[1], sum[0]);
  MPI_Finalize();
  return sum[0] == 0 ? 0 : 1;
}
