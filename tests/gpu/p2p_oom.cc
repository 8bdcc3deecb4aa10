// Point-to-point of device buffers under MPIZip when memory runs out (DESIGN.md D5, D7): exhausted
// device memory or tiny pools fall back to the uncompressed path (or to receiving through host
// memory), the message still arrives bit-exact, every call returns MPI_SUCCESS and the
// communicator's error handler is never called. Two ranks sharing one GPU, each its own node
// (MPIZIP_FORCE_INTERNODE=1, so that device buffers are compressed). Run by
// tests/gpu/run-p2p-oom.sh, which also checks the one-time notices in the ranks' stderr.
//
//   p2p_oom --gpu-present          exit 0 with a GPU, 77 without (before MPI starts)
//   p2p_oom CASE [BYTES]           under mpirun -np 2 with MPIZip preloaded
//
// Cases (BYTES: size of the large messages; 320 MiB by default, above the default 256 MiB device
// pool bound, so that no block of that size is kept in a pool):
//   recv-oom            the receiver exhausts device memory (cudaMalloc of ever smaller chunks until
//                       cudaMalloc fails) after the sender has queued its compression: MPI_Send
//                       (the receiver waits for it with MPI_Probe) and MPI_Isend (the sender tells
//                       the receiver with a plain message once the send is posted);
//   send-oom            the sender exhausts device memory before MPI_Send / MPI_Isend: the codec's
//                       stream allocation fails (on one shared GPU the receiver has none either,
//                       and needs none for an uncompressed message of its own size);
//   send-oom-workspace  the codec's stream comes from the device pool but its workspace must grow,
//                       and cannot: messages within one pool size class, larger than any before;
//   tiny-pools          ordinary traffic of BYTES (64 MiB by default) repeated, for runs with
//                       MPIZIP_DEVICE_POOL_BYTES=1M MPIZIP_STAGING_BYTES=1M.
// Each case sends bf16 (MPIZIP_BF16) and fp32 buffers of U[-1,1] values in both directions, and
// finishes with the same messages without any shortage (the library recovers).
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "include/mpizip.h"

namespace {

int rank = 0, size = 0;
MPI_Comm comm = MPI_COMM_NULL;

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);     \
      std::fprintf(stderr, __VA_ARGS__);                                      \
      std::fprintf(stderr, "\n");                                             \
      MPI_Abort(MPI_COMM_WORLD, 1);                                           \
    }                                                                         \
  } while (0)
#define CUDA(call) \
  CHECK((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = "?";
  int n = 0;
  MPI_Error_string(rc, text, &n);
  return text;
}

#define CHECK_MPI(rc, what) \
  CHECK((rc) == MPI_SUCCESS, "%s returned %d (%s)", what, rc, mpi_error_text(rc).c_str())

// The communicator's error handler: it must never be called (every shortage has a fallback).
int handler_calls = 0;
void on_error(MPI_Comm*, int* code, ...) {
  ++handler_calls;
  std::fprintf(stderr, "rank %d: the error handler was called: %s\n", rank,
               mpi_error_text(*code).c_str());
}

// U[-1,1) floats from a counter-based generator (24 random bits, exact in fp32); bf16 is their top
// half, as a model's bf16 weights would be.
uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::vector<uint8_t> make_data(uint64_t count, int esize, uint64_t seed) {
  std::vector<uint8_t> v(count * esize);
  const uint64_t base = splitmix(seed) << 20;
  for (uint64_t i = 0; i < count; ++i) {
    const int64_t bits = static_cast<int64_t>(splitmix(base + i) >> 40) - (int64_t{1} << 23);
    const float f = static_cast<float>(bits) * (1.0f / (1 << 23));
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if (esize == 4) {
      std::memcpy(&v[i * 4], &x, 4);
    } else {
      const uint16_t h = static_cast<uint16_t>(x >> 16);
      std::memcpy(&v[i * 2], &h, 2);
    }
  }
  return v;
}

// Device memory taken until cudaMalloc fails: chunks of 8 GiB, then each size an eighth of the
// last, down to 512 bytes, so that not even a small allocation is left.
struct Hog {
  std::vector<void*> chunks;
  uint64_t bytes = 0;

  void exhaust() {
    for (uint64_t chunk = uint64_t{8} << 30; chunk >= 512; chunk /= 8) {
      void* p = nullptr;
      while (cudaMalloc(&p, chunk) == cudaSuccess) {
        chunks.push_back(p);
        bytes += chunk;
      }
      (void)cudaGetLastError();
    }
    CHECK(bytes > 0, "took no device memory");
    void* p = nullptr;
    if (cudaMalloc(&p, 1 << 20) == cudaSuccess) {  // another process freed memory meanwhile
      std::printf("rank %d: warning: 1 MiB of device memory left after exhausting it\n", rank);
      chunks.push_back(p);
    }
    (void)cudaGetLastError();
    static bool said = false;
    if (!said) {
      size_t free_bytes = 0, total = 0;
      (void)cudaMemGetInfo(&free_bytes, &total);
      (void)cudaGetLastError();
      std::printf("rank %d: exhausted device memory: took %.1f GiB in %zu chunks, %.2f MiB free\n",
                  rank, bytes / 1073741824.0, chunks.size(), free_bytes / 1048576.0);
      std::fflush(stdout);
      said = true;
    }
  }

  void release() {
    for (void* p : chunks) CUDA(cudaFree(p));
    chunks.clear();
    bytes = 0;
  }
};

struct Type {
  MPI_Datatype t;
  int esize;
  const char* name;
};

enum class Starve { kNone, kReceiver, kSender };

constexpr int kSignalTag = 1000;  // the sender's "my send is posted" (recv-oom, MPI_Isend)
constexpr uint64_t kGuard = 64;   // bytes past the receive buffer that must keep their contents

int next_tag = 0;

// One message of `bytes` of `ty` from `sender` to the other rank, blocking (MPI_Send / MPI_Recv) or
// not (MPI_Isend / MPI_Irecv + MPI_Wait), with the side `starve` names out of device memory while
// it sends or receives.
void transfer(const Type& ty, uint64_t bytes, int sender, bool blocking, Starve starve) {
  const int tag = ++next_tag;
  const int receiver = 1 - sender;
  const int count = static_cast<int>(bytes / ty.esize);
  bytes = static_cast<uint64_t>(count) * ty.esize;
  const uint64_t seed = static_cast<uint64_t>(tag) * 1000003u + sender;
  const char* how = blocking ? "blocking" : "non-blocking";
  Hog hog;
  MPI_Status st;
  void* d = nullptr;
  if (rank == sender) {
    auto mine = make_data(count, ty.esize, seed);
    CUDA(cudaMalloc(&d, bytes > 0 ? bytes : 1));
    CUDA(cudaMemcpy(d, mine.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_MPI(MPI_Barrier(comm), "MPI_Barrier");  // both buffers exist before any shortage
    if (starve == Starve::kSender) hog.exhaust();
    int rc;
    if (blocking) {
      rc = MPI_Send(d, count, ty.t, receiver, tag, comm);
      CHECK_MPI(rc, "MPI_Send");
    } else {
      MPI_Request r;
      CHECK_MPI(MPI_Isend(d, count, ty.t, receiver, tag, comm, &r), "MPI_Isend");
      if (starve == Starve::kReceiver) {
        int go = 1;
        CHECK_MPI(MPI_Send(&go, 1, MPI_INT, receiver, kSignalTag + tag, comm), "MPI_Send (signal)");
      }
      rc = MPI_Wait(&r, &st);
      CHECK_MPI(rc, "MPI_Wait (send)");
    }
    hog.release();
  } else {
    auto want = make_data(count, ty.esize, seed);
    CUDA(cudaMalloc(&d, bytes + kGuard));
    CUDA(cudaMemset(d, 0xA5, bytes + kGuard));
    CUDA(cudaDeviceSynchronize());
    CHECK_MPI(MPI_Barrier(comm), "MPI_Barrier");
    if (starve == Starve::kReceiver) {
      // The sender has allocated and queued its compression once its match message is here (or
      // once it says its MPI_Isend is posted): only this side runs short.
      if (blocking) {
        CHECK_MPI(MPI_Probe(sender, tag, comm, &st), "MPI_Probe");
        int got = -1;
        MPI_Get_count(&st, ty.t, &got);
        CHECK(got == count, "MPI_Probe: count %d, want %d", got, count);
      } else {
        int go = 0;
        CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, sender, kSignalTag + tag, comm, MPI_STATUS_IGNORE),
                  "MPI_Recv (signal)");
      }
      hog.exhaust();
    }
    int rc;
    if (blocking) {
      rc = MPI_Recv(d, count, ty.t, sender, tag, comm, &st);
      CHECK_MPI(rc, "MPI_Recv");
    } else {
      MPI_Request r;
      CHECK_MPI(MPI_Irecv(d, count, ty.t, sender, tag, comm, &r), "MPI_Irecv");
      rc = MPI_Wait(&r, &st);
      CHECK_MPI(rc, "MPI_Wait (receive)");
    }
    hog.release();
    int got = -1;
    MPI_Get_count(&st, ty.t, &got);
    CHECK(got == count && st.MPI_SOURCE == sender && st.MPI_TAG == tag,
          "%s %s receive: count %d (want %d), source %d, tag %d (want %d)", ty.name, how, got,
          count, st.MPI_SOURCE, st.MPI_TAG, tag);
    std::vector<uint8_t> back(bytes + kGuard);
    CUDA(cudaMemcpy(back.data(), d, bytes + kGuard, cudaMemcpyDeviceToHost));
    if (std::memcmp(back.data(), want.data(), bytes) != 0) {
      uint64_t i = 0;
      while (back[i] == want[i]) ++i;
      CHECK(false, "%s %s, %llu bytes from rank %d: first wrong byte at %llu (0x%02x, want 0x%02x)",
            ty.name, how, static_cast<unsigned long long>(bytes), sender,
            static_cast<unsigned long long>(i), back[i], want[i]);
    }
    for (uint64_t i = bytes; i < bytes + kGuard; ++i) {
      CHECK(back[i] == 0xA5, "%s %s: wrote past the receive buffer (byte %llu)", ty.name, how,
            static_cast<unsigned long long>(i));
    }
  }
  CHECK(handler_calls == 0, "the communicator's error handler was called");
  CHECK_MPI(MPI_Barrier(comm), "MPI_Barrier");
  // Freed only now: a send may complete before its receive (MPIZip holds the stream), and memory
  // freed then would end the other rank's shortage.
  CUDA(cudaFree(d));
}

// Every type, both directions, blocking and not.
void all_ways(const std::vector<Type>& types, const uint64_t* bytes_of_type, Starve starve) {
  for (int sender = 0; sender < 2; ++sender) {
    for (size_t i = 0; i < types.size(); ++i) {
      for (bool blocking : {true, false}) transfer(types[i], bytes_of_type[i], sender, blocking, starve);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--gpu-present") == 0) {
    int devices = 0;
    return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 ? 0 : 77;
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank == 0) std::printf("p2p_oom: no GPU, skipped\n");
    MPI_Finalize();
    return 77;
  }
  CHECK(size == 2, "run on 2 ranks (got %d)", size);
  CHECK(argc > 1, "usage: p2p_oom recv-oom|send-oom|send-oom-workspace|tiny-pools [BYTES]");
  CHECK(MPIZip_Active(), "this test needs MPIZip preloaded (device buffers, non-CUDA-aware MPI)");
  const std::string which = argv[1];
  const bool sized = argc > 2;
  const uint64_t arg_bytes = sized ? std::strtoull(argv[2], nullptr, 10) : 0;

  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  CHECK(MPIZip_Comm_protocol(comm), "the duplicate of MPI_COMM_WORLD has no MPIZip protocol");
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(on_error, &handler);
  MPI_Comm_set_errhandler(comm, handler);

  const std::vector<Type> types = {{MPIZIP_BF16, 2, "bf16"}, {MPI_FLOAT, 4, "fp32"}};
  const uint64_t small[] = {uint64_t{4} << 20, uint64_t{4} << 20};
  int oom_messages = 0;
  if (which == "recv-oom" || which == "send-oom") {
    const uint64_t b = sized ? arg_bytes : uint64_t{320} << 20;
    const uint64_t big[] = {b, b};
    all_ways(types, small, Starve::kNone);  // streams, events, staging and kernels are set up
    all_ways(types, big, which == "recv-oom" ? Starve::kReceiver : Starve::kSender);
    all_ways(types, big, Starve::kNone);
    oom_messages = 8;
  } else if (which == "send-oom-workspace") {
    // Streams of 64 MiB pool blocks (worst-case stream sizes: 1.84x the data for bf16, 1.42x for
    // fp32): first a smaller message of each type both ways (the pools keep its blocks, the
    // workspace fits 9.4M elements), then larger ones in the same size class under exhaustion.
    const uint64_t before[] = {uint64_t{18} << 20, uint64_t{23} << 20};
    const uint64_t after[] = {uint64_t{34} << 20, uint64_t{45} << 20};
    all_ways(types, before, Starve::kNone);
    all_ways(types, after, Starve::kSender);
    all_ways(types, after, Starve::kNone);
    oom_messages = 8;
  } else if (which == "tiny-pools") {
    const uint64_t b = sized ? arg_bytes : uint64_t{64} << 20;
    const uint64_t big[] = {b, b};
    for (int round = 0; round < 3; ++round) all_ways(types, big, Starve::kNone);
  } else {
    CHECK(false, "unknown case %s", which.c_str());
  }
  CHECK_MPI(MPI_Barrier(comm), "MPI_Barrier");
  if (rank == 0) {
    std::printf("p2p_oom %s: ok, %d messages (%d with memory exhausted), bit-exact, MPI_SUCCESS\n",
                which.c_str(), next_tag, oom_messages);
  }
  MPI_Comm_free(&comm);
  MPI_Errhandler_free(&handler);
  MPI_Finalize();
  return 0;
}
