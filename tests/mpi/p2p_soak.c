/* Soak: 100,000 point-to-point messages of mixed sizes and paths (inline, bulk, compressed when the
 * run forces compression), blocking and non-blocking, between two ranks; the resident memory of
 * each rank, sampled after warm-up and at the end, must stop growing. Prints the samples. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long rss_kib(void) {
  long pages = 0, resident = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long total = argc > 1 ? atol(argv[1]) : 100000;
  long warmup = total / 10;
  int sizes[] = {1, 100, 2000, 5000, 40000, 300000};
  float* out = malloc(sizeof(float) * 300000);
  float* in = malloc(sizeof(float) * 300000);
  for (int i = 0; i < 300000; ++i) out[i] = (float)((int)(((long)i * 7919) % 2001) - 1000) / 1000.0f;
  int peer = rank ^ 1;
  long rss_warm = 0, rss_mid = 0;
  for (long k = 0; k < total && peer < size; ++k) {
    int n = sizes[k % 6] / (k % 6 == 5 && k % 100 != 5 ? 100 : 1);
    MPI_Request r[2];
    MPI_Irecv(in, n, MPI_FLOAT, peer, (int)(k % 32), MPI_COMM_WORLD, &r[0]);
    if (k % 3 == 0) {
      MPI_Send(out, n, MPI_FLOAT, peer, (int)(k % 32), MPI_COMM_WORLD);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    } else {
      MPI_Isend(out, n, MPI_FLOAT, peer, (int)(k % 32), MPI_COMM_WORLD, &r[1]);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    if (in[n - 1] != out[n - 1]) {
      fprintf(stderr, "rank %d: message %ld corrupted\n", rank, k);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (k == warmup) rss_warm = rss_kib();
    if (k == total / 2) rss_mid = rss_kib();
  }
  long rss_end = rss_kib();
  long growth = rss_end - rss_warm;
  printf("p2p_soak: rank %d: %ld messages; RSS after warm-up %ld KiB, half-way %ld KiB, end %ld KiB "
         "(growth after warm-up %ld KiB)\n", rank, total, rss_warm, rss_mid, rss_end, growth);
  int bad = growth > 4096;  /* 4 MiB: allocator noise; a leak of one buffer per message is GBs */
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  free(out);
  free(in);
  MPI_Finalize();
  return any_bad;
}
