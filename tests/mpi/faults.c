// Failures in the middle of a message never hang a rank or deliver wrong data (tests/mpi/faults.sh).
//
//   faults send   2 ranks, MPI_ERRORS_RETURN. Rank 0 runs with MPIZIP_FAULT=send: each of its
//                 chunked sends fails right after its match message is posted. Rank 1's receive of
//                 it (blocking, then non-blocking) must return an error, not wait for chunks that
//                 never come, and so must rank 0's send; then a small message each way and an
//                 allreduce must be exact (the communicator still works, messages stay in order).
//   faults allreduce  2-4 ranks, MPI_ERRORS_RETURN. Rank 1 runs with MPIZIP_FAULT=allreduce: its
//                 part of a two-shot allreduce of several pieces fails as its second piece starts
//                 (as exhausted device memory would). Every rank's MPI_Allreduce (blocking, then
//                 non-blocking) must return an error, not wait for pieces that never come; then
//                 messages around the ring and a one-piece two-shot allreduce must be exact (every
//                 message of the failed collectives was consumed, and the ranks agree on the next).
//   faults dead   2 ranks. Rank 1 dies (_exit) while rank 0's large message to it is under way;
//                 the script checks that the job ends within a bounded time.
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/mpi/check.h"

static int rank = 0;

// Floats with a narrow exponent range (compressible) and every mantissa pattern.
static void fill(float* x, int n, uint32_t seed) {
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    uint32_t bits = (seed & 0x807fffffu) | (((seed >> 23) % 8 + 120) << 23);
    memcpy(&x[i], &bits, sizeof bits);
  }
}

static const char* error_text(int rc) {
  static char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return text;
}

static void after(MPI_Comm comm) {
  // The communicator still works: a small message each way, in order, and an allreduce.
  float small[16], got[16];
  fill(small, 16, 99u + (uint32_t)rank);
  const int peer = 1 - rank;
  MPI_Status st;
  int rc = MPI_Sendrecv(small, 16, MPI_FLOAT, peer, 5, got, 16, MPI_FLOAT, peer, 5, comm, &st);
  float want[16];
  fill(want, 16, 99u + (uint32_t)peer);
  CHECK(rc == MPI_SUCCESS && memcmp(got, want, sizeof want) == 0,
        "small message after the failure: rc %d", rc);
  double one = 1, sum = 0;
  rc = MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
  CHECK(rc == MPI_SUCCESS && sum == 2.0, "allreduce after the failure: rc %d, sum %g", rc, sum);
}

static int run_send(int n) {
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  float* x = malloc(sizeof(float) * (size_t)n);
  fill(x, n, 12345u);
  const double t0 = MPI_Wtime();
  if (rank == 0) {
    int rc = MPI_Send(x, n, MPI_FLOAT, 1, 1, comm);
    CHECK(rc != MPI_SUCCESS, "blocking send: expected an error, got success");
    if (rc != MPI_SUCCESS) printf("faults: send: rank 0: blocking send failed: %s\n", error_text(rc));
    MPI_Request req;
    rc = MPI_Isend(x, n, MPI_FLOAT, 1, 2, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS, "non-blocking send: expected an error, got success");
    if (rc != MPI_SUCCESS) printf("faults: send: rank 0: non-blocking send failed: %s\n", error_text(rc));
  } else {
    float* y = malloc(sizeof(float) * (size_t)n);
    MPI_Status st;
    int rc = MPI_Recv(y, n, MPI_FLOAT, 0, 1, comm, &st);
    CHECK(rc != MPI_SUCCESS, "blocking receive: expected an error, got success");
    if (rc != MPI_SUCCESS) printf("faults: send: rank 1: blocking receive failed: %s\n", error_text(rc));
    MPI_Request req;
    rc = MPI_Irecv(y, n, MPI_FLOAT, 0, 2, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, &st);
    CHECK(rc != MPI_SUCCESS, "non-blocking receive: expected an error, got success");
    if (rc != MPI_SUCCESS) printf("faults: send: rank 1: non-blocking receive failed: %s\n", error_text(rc));
    free(y);
  }
  after(comm);
  printf("faults: send: rank %d: %s after %.2f s\n", rank, failures ? "FAILED" : "ok",
         MPI_Wtime() - t0);
  free(x);
  return failures;
}

// Integers as floats: sums are exact in any order.
static void fill_ints(float* x, int n, int seed) {
  for (int i = 0; i < n; ++i) x[i] = (float)((i * 7 + seed * 13) % 17 - 8);
}

static int run_allreduce(int n, int size) {
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  float* x = malloc(sizeof(float) * (size_t)n);
  float* y = malloc(sizeof(float) * (size_t)n);
  fill_ints(x, n, rank);
  const double t0 = MPI_Wtime();
  int rc = MPI_Allreduce(x, y, n, MPI_FLOAT, MPI_SUM, comm);
  CHECK(rc != MPI_SUCCESS, "blocking allreduce: expected an error, got success");
  if (rc != MPI_SUCCESS) printf("faults: allreduce: rank %d: blocking allreduce failed: %s\n", rank, error_text(rc));
  MPI_Request req;
  rc = MPI_Iallreduce(x, y, n, MPI_FLOAT, MPI_SUM, comm, &req);
  if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(rc != MPI_SUCCESS, "non-blocking allreduce: expected an error, got success");
  if (rc != MPI_SUCCESS) printf("faults: allreduce: rank %d: non-blocking allreduce failed: %s\n", rank, error_text(rc));
  // A broadcast between nodes runs on the same engine (AllreduceArgs::root): it fails the same way
  // on every rank that receives, while the root, which needs nothing from the others, completes.
  memcpy(y, x, sizeof(float) * (size_t)n);  // x stays the next allreduce's input
  rc = MPI_Bcast(y, n, MPI_FLOAT, 0, comm);
  CHECK(rank == 0 ? rc == MPI_SUCCESS : rc != MPI_SUCCESS, "broadcast: rc %d on rank %d", rc, rank);
  if (rc != MPI_SUCCESS) printf("faults: allreduce: rank %d: broadcast failed: %s\n", rank, error_text(rc));
  // The communicator still works: a message around the ring, and an allreduce of one piece.
  float small[16], got[16], want[16];
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  fill(small, 16, 99u + (uint32_t)rank);
  fill(want, 16, 99u + (uint32_t)prev);
  rc = MPI_Sendrecv(small, 16, MPI_FLOAT, next, 5, got, 16, MPI_FLOAT, prev, 5, comm, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS && memcmp(got, want, sizeof want) == 0, "ring message after the failure: rc %d", rc);
  const int m = 4096;
  rc = MPI_Allreduce(x, y, m, MPI_FLOAT, MPI_SUM, comm);
  int wrong = 0;
  for (int i = 0; i < m; ++i) {
    float sum = 0;
    for (int q = 0; q < size; ++q) sum += (float)((i * 7 + q * 13) % 17 - 8);
    wrong += y[i] != sum;
  }
  CHECK(rc == MPI_SUCCESS && wrong == 0, "allreduce after the failure: rc %d, %d wrong", rc, wrong);
  printf("faults: allreduce: rank %d: %s after %.2f s\n", rank, failures ? "FAILED" : "ok",
         MPI_Wtime() - t0);
  free(x);
  free(y);
  return failures;
}

static int run_dead(int n) {
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  float* x = malloc(sizeof(float) * (size_t)n);
  fill(x, n, 777u);
  if (rank == 0) {
    MPI_Request req;
    int rc = MPI_Isend(x, n, MPI_FLOAT, 1, 3, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    // Reached only where the MPI library lets a survivor go on (Open MPI 4 and MPICH end the job).
    printf("faults: dead: rank 0: send ended: %s\n", rc == MPI_SUCCESS ? "success" : error_text(rc));
    rc = MPI_Barrier(comm);
    printf("faults: dead: rank 0: barrier ended: %s\n", rc == MPI_SUCCESS ? "success" : error_text(rc));
  } else {
    float* y = malloc(sizeof(float) * (size_t)n);
    MPI_Request req;
    MPI_Irecv(y, n, MPI_FLOAT, 0, 3, comm, &req);
    int flag = 0;
    for (int i = 0; i < 3 && !flag; ++i) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    printf("faults: dead: rank 1: exiting mid-transfer\n");
    fflush(stdout);
    _exit(3);
  }
  free(x);
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = argc > 1 ? argv[1] : "send";
  const int n = argc > 2 ? atoi(argv[2]) : (1 << 20);
  if (strcmp(mode, "allreduce") == 0 ? size < 2 || size > 4 : size != 2) {
    if (rank == 0) fprintf(stderr, "faults: needs 2 ranks (allreduce: 2-4)\n");
    MPI_Finalize();
    return 2;
  }
  int bad = 0;
  if (strcmp(mode, "send") == 0) {
    bad = run_send(n);
  } else if (strcmp(mode, "allreduce") == 0) {
    bad = run_allreduce(n, size);
  } else if (strcmp(mode, "dead") == 0) {
    bad = run_dead(n);
  } else {
    fprintf(stderr, "faults: unknown mode %s\n", mode);
    bad = 1;
  }
  MPI_Finalize();
  return bad ? 1 : 0;
}
