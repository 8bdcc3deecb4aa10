/* Device buffers and a CUDA-aware MPI beneath MPIZip (tests/gpu/cuda_aware.sh): 2 ranks exchange
 * device buffers of MPI_INT and MPI_BYTE (outside the protocol) with MPI_Send / MPI_Recv and
 * MPI_Bcast, check every byte, and report how many device pointers reached the stand-in library
 * (tests/mpi/cuda_aware_standin.c) untouched. Usage: cuda_aware_device EXPECTED, where EXPECTED is
 * "all" (every such call handed its device pointer to the library) or "none" (MPIZip staged them). */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kInts = 100000, kBytes = 3 * 1024 * 1024 + 7 };

int main(int argc, char** argv) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) return 77;
  MPI_Init(&argc, &argv);
  int rank, size, fail = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int expect_all = argc > 1 && strcmp(argv[1], "all") == 0;
  int* h = malloc(sizeof(int) * kInts);
  unsigned char* hb = malloc(kBytes);
  int* d;
  unsigned char* db;
  cudaMalloc((void**)&d, sizeof(int) * kInts);
  cudaMalloc((void**)&db, kBytes);
  long calls = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kInts; ++i) h[i] = rank == 0 ? i * 7 + round : -1;
    for (int i = 0; i < kBytes; ++i) hb[i] = rank == 0 ? (unsigned char)(i * 13 + round) : 0;
    cudaMemcpy(d, h, sizeof(int) * kInts, cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb, kBytes, cudaMemcpyHostToDevice);
    if (rank == 0) {
      MPI_Send(d, kInts, MPI_INT, 1, round, MPI_COMM_WORLD);
      MPI_Send(db, kBytes, MPI_BYTE, 1, 100 + round, MPI_COMM_WORLD);
    } else if (rank == 1) {
      MPI_Recv(d, kInts, MPI_INT, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Recv(db, kBytes, MPI_BYTE, 0, 100 + round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank < 2) calls += 2;
    cudaMemcpy(h, d, sizeof(int) * kInts, cudaMemcpyDeviceToHost);
    cudaMemcpy(hb, db, kBytes, cudaMemcpyDeviceToHost);
    for (int i = 0; i < kInts && rank < 2; ++i) {
      if (h[i] != i * 7 + round) { fprintf(stderr, "rank %d: int %d wrong\n", rank, i); fail = 1; break; }
    }
    for (int i = 0; i < kBytes && rank < 2; ++i) {
      if (hb[i] != (unsigned char)(i * 13 + round)) { fprintf(stderr, "rank %d: byte %d wrong\n", rank, i); fail = 1; break; }
    }
    for (int i = 0; i < kInts; ++i) h[i] = rank == 0 ? i ^ round : 0;
    cudaMemcpy(d, h, sizeof(int) * kInts, cudaMemcpyHostToDevice);
    MPI_Bcast(d, kInts, MPI_INT, 0, MPI_COMM_WORLD);
    ++calls;
    cudaMemcpy(h, d, sizeof(int) * kInts, cudaMemcpyDeviceToHost);
    for (int i = 0; i < kInts; ++i) {
      if (h[i] != (i ^ round)) { fprintf(stderr, "rank %d: bcast %d wrong\n", rank, i); fail = 1; break; }
    }
  }
  long (*seen_fn)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "standin_device_pointers");
  const long seen = seen_fn != NULL ? seen_fn() : -1;
  if (seen < 0) {
    fprintf(stderr, "rank %d: the stand-in library is not loaded\n", rank);
    fail = 1;
  } else if (expect_all ? seen != calls : seen != 0) {
    fprintf(stderr, "rank %d: %ld device pointers reached the library, want %ld\n", rank, seen,
            expect_all ? calls : 0L);
    fail = 1;
  }
  int any = 0;
  MPI_Allreduce(&fail, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !any) {
    printf("cuda_aware_device: %ld device pointers per rank reached the library (%s)\n", seen,
           expect_all ? "unstaged" : "staged by MPIZip");
  }
  cudaFree(d);
  cudaFree(db);
  free(h);
  free(hb);
  MPI_Finalize();
  return any;
}
