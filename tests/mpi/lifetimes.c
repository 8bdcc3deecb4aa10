/* Operations that complete after their communicator was freed (issue 32, part 3(a)). MPI_Comm_free
 * only marks the communicator for deallocation: pending operations complete normally, and MPIZip
 * must not touch its per-communicator state once that is gone (tests/mpi/lifetimes.sh runs this
 * under valgrind, which shows the invalid reads and writes the data checks may not).
 *
 * usage: lifetimes [iallreduce] [p2p] [ROUNDS]   (both cases by default; 2 ranks or more)
 *   iallreduce: ROUNDS times (default 20), MPI_Iallreduce of 65536 floats (the two-shot when forced) on a duplicate
 *     of MPI_COMM_WORLD, the duplicate freed, the heap churned, then MPI_Wait; the sums checked.
 *     Open MPI 4.1's own libnbc crashes on this without MPIZip: the plain run leaves it out.
 *   p2p: 2 x ROUNDS times, on a duplicate, rank 0 sends 20,000 floats to rank 1 with MPI_Isend / MPI_Irecv
 *     (the protocol when forced; MPIZIP_STATS=1 counts its traffic), the duplicate freed, the heap
 *     churned, then MPI_Wait; status and data checked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/mpi/check.h"

static int rank, size;
static int rounds = 20; /* fewer under valgrind */

/* Allocations and frees of the sizes the freed state had, so that its memory is reused. */
static void churn(size_t base) {
  for (int k = 0; k < 50; ++k) {
    void* p = malloc(base + (size_t)k);
    memset(p, 0x77, base + (size_t)k);
    free(p);
  }
}

static void iallreduce_on_freed(void) {
  enum { N = 1 << 16 };
  const int kIterations = rounds;
  float* in = malloc(sizeof(float) * N);
  float* out = malloc(sizeof(float) * N);
  for (int it = 0; it < kIterations; ++it) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    for (int i = 0; i < N; ++i) in[i] = (float)(rank + (i + it) % 7);
    memset(out, 0, sizeof(float) * N);
    MPI_Request r;
    MPI_Iallreduce(in, out, N, MPI_FLOAT, MPI_SUM, c, &r);
    MPI_Comm_free(&c);
    CHECK(c == MPI_COMM_NULL, "MPI_Comm_free left the handle");
    churn(2000);
    int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "iallreduce %d on a freed communicator: MPI_Wait returned %d", it, rc);
    for (int i = 0; i < N; ++i) {
      /* Small integers: every order of summation is exact. */
      const float want = (float)(size * (size - 1) / 2 + size * ((i + it) % 7));
      if (out[i] != want) {
        CHECK(0, "iallreduce %d on a freed communicator: element %d is %g, want %g", it, i, out[i], want);
        break;
      }
    }
  }
  free(in);
  free(out);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void p2p_on_freed(void) {
  enum { N = 20000 };
  const int kIterations = 2 * rounds;
  float* buf = malloc(sizeof(float) * N);
  for (int it = 0; it < kIterations; ++it) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c); /* collective: every rank */
    MPI_Request r = MPI_REQUEST_NULL;
    if (rank == 0) {
      for (int i = 0; i < N; ++i) buf[i] = (float)((i + it) % 100) * 0.5f;
      MPI_Isend(buf, N, MPI_FLOAT, 1, 7, c, &r);
    } else if (rank == 1) {
      for (int i = 0; i < N; ++i) buf[i] = -1.0f;
      MPI_Irecv(buf, N, MPI_FLOAT, 0, 7, c, &r);
    }
    MPI_Comm_free(&c);
    churn(3000);
    MPI_Status st;
    int rc = MPI_Wait(&r, &st);
    CHECK(rc == MPI_SUCCESS, "message %d on a freed communicator: MPI_Wait returned %d", it, rc);
    if (rank == 1) {
      int count = -1;
      MPI_Get_count(&st, MPI_FLOAT, &count);
      CHECK(count == N && st.MPI_SOURCE == 0 && st.MPI_TAG == 7, "message %d on a freed communicator: count %d source %d tag %d",
            it, count, st.MPI_SOURCE, st.MPI_TAG);
      for (int i = 0; i < N; ++i) {
        if (buf[i] != (float)((i + it) % 100) * 0.5f) {
          CHECK(0, "message %d on a freed communicator: element %d is %g", it, i, buf[i]);
          break;
        }
      }
    }
  }
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size >= 2, "needs 2 ranks or more, not %d", size);
  int iallreduce = 0, p2p = 0;
  for (int a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "iallreduce") == 0) iallreduce = 1;
    else if (strcmp(argv[a], "p2p") == 0) p2p = 1;
    else if (atoi(argv[a]) > 0) rounds = atoi(argv[a]);
    else CHECK(0, "unknown case %s", argv[a]);
  }
  if (!iallreduce && !p2p) iallreduce = p2p = 1;
  if (iallreduce) iallreduce_on_freed();
  if (p2p) p2p_on_freed();
  if (rank == 0) printf("lifetimes: %s\n", failures ? "FAILED" : "ok");
  MPI_Finalize();
  return failures;
}
