// ipc_latency: the floors of a small device-buffer message between two ranks of one GPU node that
// moves with one copy over CUDA IPC, beside the driver calls such a message could make
// (osu-bench/results/README.md, "No harm"). Rank 0 prints, for each size, medians of -i rounds:
//   - one process, one call each: cudaMemcpyAsync device to device then cudaStreamSynchronize
//     (memcpy_sync); a copy kernel then cudaStreamSynchronize (kernel_sync); a copy kernel whose
//     last block writes a flag to mapped pinned host memory, polled by the host (kernel_flag);
//     cudaPointerGetAttributes (attr); cudaStreamSynchronize of the idle legacy default stream
//     (sync_idle); cudaMemcpyAsync then an event recorded after it and queried until done
//     (memcpy_event); cudaMemcpy device to host into pageable memory (d2h_pageable) and into
//     pinned memory (d2h_pinned); cudaMemcpy host to device from pageable memory followed by
//     cudaStreamSynchronize(0), as a copy from pageable memory may return before its DMA lands
//     (h2d_pageable), and from pinned memory (h2d_pinned); an event created and destroyed
//     (event_create);
//   - two ranks, the one-way latency of a ping-pong (half the median round trip) where the
//     receiver pulls the sender's buffer through its IPC mapping once a flag in node-shared memory
//     says the message is there, and the sender's send completes when the receiver says it is
//     done: pulled with cudaMemcpyAsync and cudaStreamSynchronize (pull_memcpy), or with a copy
//     kernel that raises the done flag itself, which both ranks poll (pull_kernel).
// Run it plain and under osu-bench/with-mps to compare.
//
// usage: mpirun -np 2 ipc_latency [-m MIN:MAX] [-i ITERS]
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "osu-bench/common/bench_util.h"

// osu-bench/ipc_latency_copy.cu: copies n bytes on the GPU; with a flag, the last block writes
// `seq` there (mapped host memory) once every block's stores are visible system-wide.
extern "C" cudaError_t ipc_latency_copy(void* dst, const void* src, size_t n, uint64_t* flag,
                                        uint64_t seq, unsigned* arrived, cudaStream_t s);

namespace {

using osub::bench::median;

#define CK(x)                                                                      \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "ipc_latency: %s: %s\n", #x, cudaGetErrorString(e_));   \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                \
    }                                                                              \
  } while (0)


// The node-shared control block: per rank, the sequence number of the message it has posted
// (ready) and of the last message it pulled (done).
struct Control {
  std::atomic<uint64_t> ready[2];
  uint64_t done[2];  // written by the GPU (kernel) or the host (memcpy); read volatile
};

void wait_for(volatile uint64_t* p, uint64_t v) {
  while (*p < v) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t lo = 1, hi = 65536;
  int iters = 1000;
  if (!osub::bench::parse_range_iters(argc, argv, &lo, &hi, &iters) || size != 2) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -np 2 ipc_latency [-m MIN:MAX] [-i ITERS]\n");
    MPI_Finalize();
    return 2;
  }
  const int peer = 1 - rank;
  unsigned char *dev = nullptr, *scratch = nullptr;
  unsigned* arrived = nullptr;
  CK(cudaMalloc(&dev, hi));
  CK(cudaMalloc(&scratch, hi));
  CK(cudaMalloc(&arrived, sizeof(unsigned)));
  CK(cudaMemset(dev, rank + 1, hi));
  CK(cudaMemset(arrived, 0, sizeof(unsigned)));
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t event;
  CK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));

  // The peer's buffer through CUDA IPC.
  cudaIpcMemHandle_t mine, theirs;
  CK(cudaIpcGetMemHandle(&mine, dev));
  MPI_Sendrecv(&mine, sizeof mine, MPI_BYTE, peer, 0, &theirs, sizeof theirs, MPI_BYTE, peer, 0,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  unsigned char* peer_dev = nullptr;
  CK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&peer_dev), theirs,
                          cudaIpcMemLazyEnablePeerAccess));

  // The control block in node-shared memory, registered so that kernels can write to it.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Win win;
  Control* ctl = nullptr;
  MPI_Win_allocate_shared(rank == 0 ? 4096 : 0, 1, MPI_INFO_NULL, node, &ctl, &win);
  if (rank != 0) {
    MPI_Aint bytes;
    int unit;
    MPI_Win_shared_query(win, 0, &bytes, &unit, &ctl);
  }
  if (rank == 0) std::memset(static_cast<void*>(ctl), 0, sizeof(Control));
  MPI_Barrier(MPI_COMM_WORLD);
  CK(cudaHostRegister(ctl, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable));
  Control* ctl_dev = nullptr;
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&ctl_dev), ctl, 0));

  // A flag of this process's own for the one-process rows.
  uint64_t* own_flag = nullptr;
  uint64_t* own_flag_dev = nullptr;
  CK(cudaHostAlloc(&own_flag, 64, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&own_flag_dev), own_flag, 0));
  *own_flag = 0;
  std::vector<unsigned char> pageable(hi);
  unsigned char* pinned = nullptr;
  CK(cudaHostAlloc(&pinned, hi, cudaHostAllocDefault));

  if (rank == 0)
    std::printf("# Size  memcpy_sync_us  kernel_sync_us  kernel_flag_us  attr_us  sync_idle_us  memcpy_event_us  d2h_pageable_us  d2h_pinned_us  h2d_pageable_us  h2d_pinned_us  event_create_us  pull_memcpy_us  pull_kernel_us\n");
  const int warmup = iters / 10;
  uint64_t seq = 0, own_seq = 0;
  for (size_t n = lo; n <= hi; n *= 2) {
    std::vector<double> t_memcpy, t_kernel, t_flag, t_attr, t_idle, t_event;
    std::vector<double> t_d2h_pageable, t_d2h_pinned, t_h2d_pageable, t_h2d_pinned, t_ecreate;
    if (rank == 0) {
      for (int i = 0; i < warmup + iters; ++i) {
        double t0 = MPI_Wtime();
        CK(cudaMemcpyAsync(scratch, dev, n, cudaMemcpyDeviceToDevice, stream));
        CK(cudaStreamSynchronize(stream));
        double t1 = MPI_Wtime();
        CK(ipc_latency_copy(scratch, dev, n, nullptr, 0, arrived, stream));
        CK(cudaStreamSynchronize(stream));
        double t2 = MPI_Wtime();
        CK(ipc_latency_copy(scratch, dev, n, own_flag_dev, ++own_seq, arrived, stream));
        wait_for(own_flag, own_seq);
        double t3 = MPI_Wtime();
        cudaPointerAttributes a;
        CK(cudaPointerGetAttributes(&a, dev + n / 2));
        double t4 = MPI_Wtime();
        CK(cudaStreamSynchronize(0));
        double t5 = MPI_Wtime();
        CK(cudaMemcpyAsync(scratch, dev, n, cudaMemcpyDeviceToDevice, stream));
        CK(cudaEventRecord(event, stream));
        cudaError_t q;
        while ((q = cudaEventQuery(event)) == cudaErrorNotReady) {
        }
        CK(q);
        double t6 = MPI_Wtime();
        CK(cudaMemcpy(pageable.data(), dev, n, cudaMemcpyDeviceToHost));
        double t7 = MPI_Wtime();
        CK(cudaMemcpy(pinned, dev, n, cudaMemcpyDeviceToHost));
        double t8 = MPI_Wtime();
        CK(cudaMemcpy(scratch, pageable.data(), n, cudaMemcpyHostToDevice));
        CK(cudaStreamSynchronize(0));
        double t9 = MPI_Wtime();
        CK(cudaMemcpy(scratch, pinned, n, cudaMemcpyHostToDevice));
        double t10 = MPI_Wtime();
        cudaEvent_t fresh;
        CK(cudaEventCreateWithFlags(&fresh, cudaEventDisableTiming));
        CK(cudaEventDestroy(fresh));
        double t11 = MPI_Wtime();
        if (i >= warmup) {
          t_ecreate.push_back((t11 - t10) * 1e6);
          t_d2h_pageable.push_back((t7 - t6) * 1e6);
          t_d2h_pinned.push_back((t8 - t7) * 1e6);
          t_h2d_pageable.push_back((t9 - t8) * 1e6);
          t_h2d_pinned.push_back((t10 - t9) * 1e6);
          t_idle.push_back((t5 - t4) * 1e6);
          t_event.push_back((t6 - t5) * 1e6);
          t_memcpy.push_back((t1 - t0) * 1e6);
          t_kernel.push_back((t2 - t1) * 1e6);
          t_flag.push_back((t3 - t2) * 1e6);
          t_attr.push_back((t4 - t3) * 1e6);
        }
      }
      CK(cudaStreamSynchronize(stream));  // the last flagged kernel's tail
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double pull[2];
    for (int kernel = 0; kernel < 2; ++kernel) {
      std::vector<double> pp;
      for (int i = 0; i < warmup + iters; ++i) {
        const double t0 = MPI_Wtime();
        for (int leg = 0; leg < 2; ++leg) {
          const int sender = leg;  // rank 0 sends first, rank 1 answers
          ++seq;
          if (rank == sender) {
            ctl->ready[sender].store(seq, std::memory_order_release);
            wait_for(&ctl->done[peer], seq);  // the send completes when the receiver has pulled
          } else {
            while (ctl->ready[sender].load(std::memory_order_acquire) < seq) {
            }
            if (kernel) {
              CK(ipc_latency_copy(dev, peer_dev, n, &ctl_dev->done[rank], seq, arrived, stream));
              wait_for(&ctl->done[rank], seq);
            } else {
              CK(cudaMemcpyAsync(dev, peer_dev, n, cudaMemcpyDeviceToDevice, stream));
              CK(cudaStreamSynchronize(stream));
              std::atomic_thread_fence(std::memory_order_release);
              reinterpret_cast<volatile uint64_t*>(ctl->done)[rank] = seq;
            }
          }
        }
        if (i >= warmup) pp.push_back((MPI_Wtime() - t0) * 1e6 / 2);
      }
      CK(cudaStreamSynchronize(stream));
      MPI_Barrier(MPI_COMM_WORLD);
      pull[kernel] = median(pp);
    }
    if (rank == 0)
      std::printf("%-7zu %14.2f %15.2f %15.2f %8.2f %13.2f %16.2f %16.2f %14.2f %16.2f %14.2f %16.2f %15.2f %15.2f\n",
                  n, median(t_memcpy), median(t_kernel), median(t_flag), median(t_attr),
                  median(t_idle), median(t_event), median(t_d2h_pageable), median(t_d2h_pinned),
                  median(t_h2d_pageable), median(t_h2d_pinned), median(t_ecreate), pull[0],
                  pull[1]);
    std::fflush(stdout);
  }
  CK(cudaHostUnregister(ctl));
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
  CK(cudaIpcCloseMemHandle(peer_dev));
  cudaFree(dev);
  cudaFree(scratch);
  cudaFree(arrived);
  cudaEventDestroy(event);
  cudaFreeHost(own_flag);
  cudaFreeHost(pinned);
  MPI_Finalize();
  return 0;
}
