// Settings that must agree (src/core/agreement.h): whatever the ranks' settings, the collectives
// and point-to-point calls on MPI_COMM_WORLD and on a duplicate of it complete with bit-exact
// results, and the program prints whether MPIZip's protocol is on for each communicator
// (MPIZip_Comm_protocol, looked up at run time: 0 when MPIZip is not loaded).
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/mpi/check.h"

// Integer-valued doubles and floats: their sums are exact in any order, so every algorithm's
// result is the one computed here, bit for bit.
static double value(int64_t i, int r) { return (double)((i * 7 + (int64_t)r * 13) % 1001 - 500); }

static void check_comm(MPI_Comm comm, const char* name, int n) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  double* x = malloc(sizeof(double) * n);
  double* y = malloc(sizeof(double) * n);
  double* want = malloc(sizeof(double) * n);
  float* fx = malloc(sizeof(float) * n);
  float* fy = malloc(sizeof(float) * n);
  float* fwant = malloc(sizeof(float) * n);
  for (int i = 0; i < n; ++i) {
    x[i] = value(i, rank);
    fx[i] = (float)value(i, rank + 1);
    want[i] = 0;
    fwant[i] = 0;
    for (int r = 0; r < size; ++r) {
      want[i] += value(i, r);
      fwant[i] += (float)value(i, r + 1);
    }
  }
  MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, comm);
  CHECK(memcmp(y, want, sizeof(double) * n) == 0, "%s: MPI_Allreduce of doubles", name);
  MPI_Allreduce(fx, fy, n, MPI_FLOAT, MPI_SUM, comm);
  CHECK(memcmp(fy, fwant, sizeof(float) * n) == 0, "%s: MPI_Allreduce of floats", name);
  // Point to point: rank 0's floats (every bit pattern of a pseudo-random sequence) to the others.
  uint32_t seed = 12345;
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    uint32_t bits = (seed & 0x807fffffu) | (((seed >> 23) % 16 + 120) << 23);
    memcpy(&fwant[i], &bits, sizeof bits);
  }
  if (rank == 0) {
    for (int r = 1; r < size; ++r) MPI_Send(fwant, n, MPI_FLOAT, r, 7, comm);
  } else {
    memset(fy, 0, sizeof(float) * n);
    MPI_Recv(fy, n, MPI_FLOAT, 0, 7, comm, MPI_STATUS_IGNORE);
    CHECK(memcmp(fy, fwant, sizeof(float) * n) == 0, "%s: MPI_Send/MPI_Recv of floats", name);
  }
  free(x), free(y), free(want), free(fx), free(fy), free(fwant);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int (*protocol)(MPI_Comm) = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "MPIZip_Comm_protocol");
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const int on_world = protocol ? protocol(MPI_COMM_WORLD) : 0;
  const int on_dup = protocol ? protocol(dup) : 0;
  const int n = 1 << 18;  // 2 MiB of doubles: above MPIZIP_ALLREDUCE_MIN_BYTES and MPIZIP_MIN_BYTES
  check_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", n);
  check_comm(dup, "its duplicate", n);
  MPI_Comm_free(&dup);
  int bad = 0;
  MPI_Allreduce(&failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("agreement: protocol on MPI_COMM_WORLD %d, on its duplicate %d\n", on_world, on_dup);
    printf(bad == 0 ? "agreement: ok\n" : "agreement: %d failures\n", bad);
  }
  MPI_Finalize();
  return bad == 0 ? 0 : 1;
}
