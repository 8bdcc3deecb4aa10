/* When compressing pays (cost/model.h), within one job: rank 0 sends rank 1 smooth floats (which
 * compress) on two duplicates of MPI_COMM_WORLD whose emulated links differ (the hint
 * mpizip_emu_gbps: "slow" 0.02 GB/s, "fast" 20 GB/s, against a CPU codec of about 1 GB/s), then
 * random float bits (which do not) on the slow one; rank 1 checks every message bit for bit. The
 * driver (when_to_compress.sh) runs it with host compression over the emulated link and reads
 * MPIZip's statistics: the cost model compresses every smooth message on the slow link and none
 * on the fast one, and the random stream stops being compressed after its probe. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 6, COUNT = 1 << 18 };

static void fill(float* v, int m, int random) {
  uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)m;
  for (int i = 0; i < COUNT; ++i) {
    if (random) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      uint32_t bits = (uint32_t)x;
      memcpy(&v[i], &bits, 4);
    } else {
      v[i] = (float)((i + m) % 977) * 0.125f;
    }
  }
}

/* Sends N messages (rank 0 to 1) on `comm` with tag `tag`; returns the messages that differ. */
static int exchange(MPI_Comm comm, int rank, int tag, int random, float* a, float* b) {
  int errors = 0;
  for (int m = 0; m < N; ++m) {
    fill(a, m, random);
    if (rank == 0) {
      MPI_Send(a, COUNT, MPI_FLOAT, 1, tag, comm);
    } else if (rank == 1) {
      MPI_Recv(b, COUNT, MPI_FLOAT, 0, tag, comm, MPI_STATUS_IGNORE);
      if (memcmp(a, b, sizeof(float) * COUNT) != 0) ++errors;
    }
  }
  return errors;
}

static MPI_Comm link_of(const char* gbps, const char* name) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpizip_emu_gbps", gbps);
  MPI_Comm c;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
  MPI_Info_free(&info);
  MPI_Comm_set_name(c, name);
  return c;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm slow = link_of("0.02", "slow"), fast = link_of("20", "fast");
  float* a = malloc(sizeof(float) * COUNT);
  float* b = malloc(sizeof(float) * COUNT);
  int errors = exchange(slow, rank, 1, 0, a, b) + exchange(fast, rank, 1, 0, a, b) +
               exchange(slow, rank, 2, 1, a, b) + exchange(slow, rank, 2, 1, a, b);
  if (rank == 1) printf("when_to_compress: %d messages differ\n", errors);
  free(a);
  free(b);
  MPI_Comm_free(&slow);
  MPI_Comm_free(&fast);
  MPI_Finalize();
  return errors == 0 ? 0 : 1;
}
