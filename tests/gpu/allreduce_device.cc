// MPI_Allreduce and MPI_Iallreduce on device buffers, 2 to 4 ranks sharing one GPU, under MPIZip
// with every call on the two-shot (MPIZIP_ALLREDUCE=twoshot), driven by
// tests/gpu/allreduce_device.sh. Placements: every rank's buffers on the device; even ranks on the
// device and odd ranks on the host; rank 0 with a host input and a device output (the others on the
// device). For every type, op and count (0, 1, P-1, P+1, a count not divisible by P; 1000003 and 16
// Mi for SUM), out of place and in place, the result must be the same on every rank, bit for bit
// the rank-order fold of kernels/reduce.h (which a host rank computes with the CPU reduce, so host
// and device ranks agree), and within tolerance of a double-precision reference. MPI_Iallreduce
// runs overlapped with device point-to-point traffic. --hashes FILE: rank 0 writes a hash per case,
// which the script compares between compressed and uncompressed runs. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "tests/coll/allreduce_check.h"

namespace {

using namespace allreduce_check;

void cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, cudaGetErrorString(err));
  MPI_Abort(MPI_COMM_WORLD, 2);
}

enum class Placement { kDevice, kMixed, kCross };
const char* placement_name(Placement p) {
  return p == Placement::kDevice ? "device" : p == Placement::kMixed ? "mixed" : "cross";
}

// A buffer in device or host memory, with copies to and from the host.
class Buffer {
 public:
  Buffer(size_t bytes, bool device) : bytes_(bytes), device_(device) {
    if (device_)
      cuda_check(cudaMalloc(&p_, bytes ? bytes : 1), "cudaMalloc");
    else
      p_ = std::malloc(bytes ? bytes : 1);
  }
  ~Buffer() {
    if (device_)
      cudaFree(p_);
    else
      std::free(p_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return p_; }
  void upload(const std::vector<uint8_t>& v) {
    cuda_check(cudaMemcpy(p_, v.data(), v.size(), cudaMemcpyDefault), "upload");
  }
  std::vector<uint8_t> download() const {
    std::vector<uint8_t> v(bytes_);
    cuda_check(cudaMemcpy(v.data(), p_, bytes_, cudaMemcpyDefault), "download");
    return v;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_;
  bool device_;
};

FILE* g_hashes = nullptr;

// Where this rank's input and output live under a placement.
void where(Placement p, bool* in_device, bool* out_device) {
  switch (p) {
    case Placement::kDevice:
      *in_device = *out_device = true;
      break;
    case Placement::kMixed:
      *in_device = *out_device = rank % 2 == 0;
      break;
    case Placement::kCross:
      *in_device = rank != 0;
      *out_device = true;
      break;
  }
}

void run_case(Placement pl, const Type& t, const OpInfo& o, uint64_t count) {
  const uint64_t seed =
      mix(count * 131 + static_cast<uint64_t>(o.op) * 7 + static_cast<uint64_t>(t.dtype));
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) in[r] = inputs_of(t, r, count, o.op, seed, true);
  const size_t bytes = count * t.bytes;
  bool in_dev = false, out_dev = false;
  where(pl, &in_dev, &out_dev);
  Buffer send(bytes, in_dev), recv(bytes, out_dev), inplace(bytes, out_dev);
  send.upload(in[rank]);
  recv.upload(std::vector<uint8_t>(bytes, 0xA5));
  inplace.upload(in[rank]);
  const int n = static_cast<int>(count);
  int rc = MPI_Allreduce(send.get(), recv.get(), n, t.mpi, o.mpi, MPI_COMM_WORLD);
  CHECK(rc == MPI_SUCCESS, "%s %s %s count %d: MPI_Allreduce returned %d", placement_name(pl),
        t.name, o.name, n, rc);
  rc = MPI_Allreduce(MPI_IN_PLACE, inplace.get(), n, t.mpi, o.mpi, MPI_COMM_WORLD);
  CHECK(rc == MPI_SUCCESS, "%s %s %s count %d: in-place MPI_Allreduce returned %d",
        placement_name(pl), t.name, o.name, n, rc);
  const std::vector<uint8_t> got = recv.download(), got_inplace = inplace.download();
  const uint64_t h = fnv1a(got.data(), bytes);
  CHECK(same_on_all_ranks(h, MPI_COMM_WORLD), "%s %s %s count %d: results differ across ranks",
        placement_name(pl), t.name, o.name, n);
  const std::vector<uint8_t> want = expected_fold(t, o.op, in, count);
  CHECK(got == want, "%s %s %s count %d: not the rank-order fold", placement_name(pl), t.name,
        o.name, n);
  CHECK(got_inplace == want, "%s %s %s count %d: in place, not the rank-order fold",
        placement_name(pl), t.name, o.name, n);
  const int bad = tolerance_failures(t, o.op, in, count, got.data());
  CHECK(bad == 0, "%s %s %s count %d: %d elements outside tolerance", placement_name(pl), t.name,
        o.name, n, bad);
  if (g_hashes != nullptr && rank == 0) {
    std::fprintf(g_hashes, "%s %s %s %d %016" PRIx64 "\n", placement_name(pl), t.name, o.name, n,
                 h);
  }
}

// MPI_Iallreduce on device buffers while device float messages circle the ring.
void overlapped(const Type& t, uint64_t count) {
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) in[r] = inputs_of(t, r, count, Op::kSum, 0x51, false);
  const size_t bytes = count * t.bytes;
  Buffer send(bytes, true), recv(bytes, true);
  send.upload(in[rank]);
  MPI_Request req;
  int rc = MPI_Iallreduce(send.get(), recv.get(), static_cast<int>(count), t.mpi, MPI_SUM,
                          MPI_COMM_WORLD, &req);
  CHECK(rc == MPI_SUCCESS, "MPI_Iallreduce returned %d", rc);
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  const size_t n = 1 << 18;
  Buffer out(n * 4, true), back(n * 4, true);
  std::vector<float> v(n);
  for (int round = 0; round < 4; ++round) {
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(rank * 1000 + round) + i * 0.25f;
    cuda_check(cudaMemcpy(out.get(), v.data(), n * 4, cudaMemcpyHostToDevice), "upload");
    MPI_Sendrecv(out.get(), static_cast<int>(n), MPI_FLOAT, next, round, back.get(),
                 static_cast<int>(n), MPI_FLOAT, prev, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    cuda_check(cudaMemcpy(v.data(), back.get(), n * 4, cudaMemcpyDeviceToHost), "download");
    bool okay = true;
    for (size_t i = 0; i < n; ++i)
      okay = okay && v[i] == static_cast<float>(prev * 1000 + round) + i * 0.25f;
    CHECK(okay, "device point-to-point data wrong while MPI_Iallreduce runs (round %d)", round);
  }
  rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "MPI_Wait returned %d", rc);
  const std::vector<uint8_t> got = recv.download();
  CHECK(got == expected_fold(t, Op::kSum, in, count),
        "%s: MPI_Iallreduce is not the rank-order fold", t.name);
}

// --fault (rank 1 runs with MPIZIP_FAULT=allreduce): a device allreduce of several pieces, whose
// part on rank 1 fails mid-collective as exhausted device memory would, returns an error on every
// rank, blocking and non-blocking; then a one-piece device allreduce is the exact rank-order fold.
void fault(const Type& t) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const uint64_t count = uint64_t{4} << 20;  // 16 MiB of fp32: MPIZIP_ALLREDUCE_PIECE_BYTES=1M
  const std::vector<uint8_t> mine = inputs_of(t, rank, count, Op::kSum, 0x77, false);
  Buffer send(count * t.bytes, true), recv(count * t.bytes, true);
  send.upload(mine);
  int rc = MPI_Allreduce(send.get(), recv.get(), static_cast<int>(count), t.mpi, MPI_SUM,
                         MPI_COMM_WORLD);
  CHECK(rc != MPI_SUCCESS, "--fault: blocking MPI_Allreduce succeeded");
  MPI_Request req;
  rc = MPI_Iallreduce(send.get(), recv.get(), static_cast<int>(count), t.mpi, MPI_SUM,
                      MPI_COMM_WORLD, &req);
  if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(rc != MPI_SUCCESS, "--fault: non-blocking MPI_Allreduce succeeded");
  const uint64_t one = 4099 * static_cast<uint64_t>(nranks) + 3;  // one piece
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) in[r] = inputs_of(t, r, one, Op::kSum, 0x78, false);
  Buffer s1(one * t.bytes, true), r1(one * t.bytes, true);
  s1.upload(in[rank]);
  rc = MPI_Allreduce(s1.get(), r1.get(), static_cast<int>(one), t.mpi, MPI_SUM, MPI_COMM_WORLD);
  CHECK(rc == MPI_SUCCESS && r1.download() == expected_fold(t, Op::kSum, in, one),
        "--fault: the allreduce after the failures returned %d or is not the rank-order fold", rc);
  std::printf("allreduce_device --fault: rank %d: %s\n", rank, failures == 0 ? "ok" : "FAILED");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    if (rank == 0) std::printf("allreduce_device: no GPU, skipped\n");
    MPI_Finalize();
    return 77;
  }
  cuda_check(cudaSetDevice(rank % gpus), "cudaSetDevice");
  if (!mpizip_active()) {
    if (rank == 0) std::fprintf(stderr, "allreduce_device: run with MPIZip preloaded\n");
    MPI_Finalize();
    return 1;
  }
  bool fault_mode = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--hashes" && i + 1 < argc && rank == 0)
      g_hashes = std::fopen(argv[++i], "w");
    if (std::string(argv[i]) == "--fault") fault_mode = true;
  }
  const std::vector<Type> types = test_types(true, true);  // fp8 too: E4M3 decoded, then folded
  if (fault_mode) {
    fault(types[2]);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
  }
  const uint64_t p = static_cast<uint64_t>(nranks);
  const uint64_t small[] = {0, 1, p - 1, p + 1, 4099 * p + 3};
  for (Placement pl : {Placement::kDevice, Placement::kMixed, Placement::kCross}) {
    for (const Type& t : types) {
      for (const OpInfo& o : kOps) {
        for (uint64_t count : small) run_case(pl, t, o, count);
      }
      run_case(pl, t, kOps[0], 1000003);
    }
  }
  run_case(Placement::kDevice, types[2], kOps[0], uint64_t{16} << 20);
  run_case(Placement::kDevice, types[2], kOps[3], uint64_t{16} << 20);
  overlapped(types[2], 3000017);
  if (g_hashes != nullptr) std::fclose(g_hashes);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("allreduce_device: %d ranks, %s\n", nranks, total == 0 ? "passed" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
