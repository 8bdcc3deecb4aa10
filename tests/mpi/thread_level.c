/* The MPI library runs at the thread level the application asked for (issue 32, part 1). MPIZip
 * must not change the level of the library beneath after MPI_Init: Open MPI 4.1 sets its own level
 * to whatever MPI_T_init_thread is asked for, and a library back at MPI_THREAD_SINGLE stops
 * locking while the application's threads go on calling it.
 *
 * usage: thread_level single|funneled|serialized|multiple [EXPECTED [progress]]
 * Calls MPI_Init_thread with the level, then checks:
 *   - provided is EXPECTED (the level the plain run was granted; by default no check);
 *   - MPI_Query_thread (interposed) answers provided;
 *   - PMPI_Query_thread (the MPI library's own level, past the interposer) is at least provided,
 *     and exactly provided unless "progress" says that MPIZip's progress thread may run (it asks
 *     the library for MPI_THREAD_MULTIPLE);
 * and at MPI_THREAD_MULTIPLE, kThreads threads per rank exchange kMessages messages each with
 * MPI_Sendrecv (small ones and ones above MPIZIP_BARE_BYTES, which take the protocol when forced),
 * data checked. Prints "thread_level: <required> provided <level>" on rank 0. Even rank count. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CHECK_ABORT_AFTER 0 /* a library at the wrong level may hang in the threads' part */
#include "tests/mpi/check.h"

enum { kThreads = 4, kMessages = 200, kMaxFloats = 3000 };
static int rank;

static const char* const names[] = {"single", "funneled", "serialized", "multiple"};
static const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                             MPI_THREAD_MULTIPLE};

static int level_of(const char* name) {
  for (int i = 0; i < 4; ++i)
    if (strcmp(name, names[i]) == 0) return levels[i];
  return -1;
}

static const char* name_of(int level) {
  for (int i = 0; i < 4; ++i)
    if (levels[i] == level) return names[i];
  return "unknown";
}

/* 16 floats (the MPI library's own message) or 2000 (8000 bytes: the protocol when forced). */
static int floats_of(int k) { return k % 2 ? 2000 : 16; }
static float value_of(int from, int t, int k, int i) { return (float)(from * 100000 + t * 1000 + k) + 0.5f * (float)i; }

static void* exchange(void* arg) {
  const int t = (int)(intptr_t)arg, peer = rank ^ 1;
  float* out = malloc(sizeof(float) * kMaxFloats);
  float* in = malloc(sizeof(float) * kMaxFloats);
  for (int k = 0; k < kMessages; ++k) {
    const int n = floats_of(k);
    for (int i = 0; i < n; ++i) out[i] = value_of(rank, t, k, i);
    memset(in, 0, sizeof(float) * kMaxFloats);
    MPI_Status st;
    /* The thread's own tag: messages of different threads never match each other. */
    int rc = MPI_Sendrecv(out, n, MPI_FLOAT, peer, t, in, kMaxFloats, MPI_FLOAT, peer, t, MPI_COMM_WORLD, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_FLOAT, &count);
    CHECK(rc == MPI_SUCCESS && count == n && st.MPI_SOURCE == peer && st.MPI_TAG == t,
          "thread %d message %d: rc %d count %d source %d tag %d", t, k, rc, count, st.MPI_SOURCE, st.MPI_TAG);
    for (int i = 0; i < n; ++i) {
      if (in[i] != value_of(peer, t, k, i)) {
        CHECK(0, "thread %d message %d element %d: %g, want %g", t, k, i, in[i], value_of(peer, t, k, i));
        break;
      }
    }
  }
  free(out);
  free(in);
  return NULL;
}

int main(int argc, char** argv) {
  const int required = argc > 1 ? level_of(argv[1]) : -1;
  if (required < 0) {
    fprintf(stderr, "usage: thread_level single|funneled|serialized|multiple [EXPECTED [progress]]\n");
    return 2;
  }
  const int expected = argc > 2 ? level_of(argv[2]) : -1;
  const int progress = argc > 3 && strcmp(argv[3], "progress") == 0;
  int provided = -1;
  MPI_Init_thread(&argc, &argv, required, &provided);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size % 2 == 0, "needs an even number of ranks, not %d", size);
  if (expected >= 0) {
    CHECK(provided == expected, "asked for %s: provided %s (%d), the MPI library alone grants %s", argv[1],
          name_of(provided), provided, argv[2]);
  }
  int query = -1, library = -1;
  MPI_Query_thread(&query);
  CHECK(query == provided, "MPI_Query_thread answers %s (%d), MPI_Init_thread provided %s (%d)", name_of(query),
        query, name_of(provided), provided);
  /* The level the MPI library itself runs at: past the interposer. */
  PMPI_Query_thread(&library);
  CHECK(library >= provided, "asked for %s, provided %s: the MPI library runs at %s (%d)", argv[1],
        name_of(provided), name_of(library), library);
  if (!progress) {
    CHECK(library == provided, "asked for %s, provided %s, no progress thread: the MPI library runs at %s (%d)",
          argv[1], name_of(provided), name_of(library), library);
  }
  if (provided == MPI_THREAD_MULTIPLE) {
    pthread_t th[kThreads];
    for (int t = 0; t < kThreads; ++t) pthread_create(&th[t], NULL, exchange, (void*)(intptr_t)t);
    for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
    /* Still at the level after the threads' calls. */
    PMPI_Query_thread(&library);
    CHECK(library >= provided, "after the threads: the MPI library runs at %s (%d)", name_of(library), library);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("thread_level: %s provided %s\n", argv[1], name_of(provided));
  MPI_Finalize();
  return failures;
}
