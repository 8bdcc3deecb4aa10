/* Streams that do not compress stop paying for the attempt (p2p/stream_ratios.h): rank 0 sends
 * rank 1 N messages of random float bits (which do not compress) on one tag and N of smooth floats
 * (which do) on another, interleaved; rank 1 checks every message bit for bit. The driver
 * (incompressible.sh) runs it with host compression and reads MPIZip's statistics: at the default
 * only the random stream's first 3 messages (and its retries) try compression, with
 * MPIZIP_COMPRESS=always every message, with never none. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 40, COUNT = 1 << 18 };

static uint64_t next(uint64_t* x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static void fill(float* v, int m, int random) {
  uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)m;
  for (int i = 0; i < COUNT; ++i) {
    if (random) {
      uint32_t bits = (uint32_t)next(&x);
      memcpy(&v[i], &bits, 4);
    } else {
      v[i] = (float)((i + m) % 977) * 0.125f;
    }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float* a = malloc(sizeof(float) * COUNT);
  float* b = malloc(sizeof(float) * COUNT);
  for (int m = 0; m < N; ++m) {
    for (int random = 1; random >= 0; --random) {
      fill(a, m, random);
      if (rank == 0) {
        MPI_Send(a, COUNT, MPI_FLOAT, 1, random ? 5 : 6, MPI_COMM_WORLD);
      } else {
        MPI_Recv(b, COUNT, MPI_FLOAT, 0, random ? 5 : 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (memcmp(a, b, sizeof(float) * COUNT) != 0 && errors++ < 5)
          fprintf(stderr, "incompressible: message %d (%s) differs\n", m, random ? "random" : "smooth");
      }
    }
  }
  if (rank == 1 && errors == 0) printf("incompressible: %d messages each way exact\n", N);
  free(a);
  free(b);
  MPI_Finalize();
  return errors != 0;
}
