/* Arguments MPI calls erroneous, or datatype pairings that users write anyway, on messages the
 * protocol takes (issue 32, parts 3(b)-(e)). Every call runs with MPI_ERRORS_RETURN; rank 0 prints
 * one line per call with the error class it returned, which tests/mpi/arg_errors.sh compares with
 * the plain run (what the MPI library itself returns is the answer); data and counts are checked
 * here. 2 ranks or more (ranks above 1 only take part in the collectives).
 *
 * usage: arg_errors            (c) invalid arguments: MPI_Send_init to rank = size, MPI_Recv_init
 *                                  with tag -5, MPI_Allreduce with sendbuf == recvbuf;
 *                              (d) pairings: floats received as MPI_BYTE, MPI_UINT16_T as
 *                                  MPI_UNSIGNED_SHORT, floats as MPI_INT, MPI_PACKED as floats:
 *                                  MPI_SUCCESS, the bytes sent, the counts of the receive's type;
 *                              (e) MPI_Bsend of 400 KB with no attached buffer, a 1000-byte one
 *                                  (MPI_ERR_BUFFER) and a large enough one (sent, data checked).
 *        arg_errors truncate   (b) 100000 floats into a 16-float receive (MPI_ERR_TRUNCATE), then
 *                                  MPI_Finalize: the job must end at once with status 0 (the
 *                                  script times it). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/mpi/check.h"

static int rank, size;
static MPI_Comm comm; /* a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN */

/* Rank 0's line: the call and the class of its result (0 for MPI_SUCCESS). */
static int show(const char* what, int rc) {
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  if (rank == 0) printf("%s: class %d\n", what, cls);
  return cls;
}

static float value_of(int i) { return (float)(i % 1000) * 0.25f - 100.0f; }

/* (b) A handled truncation, then MPI_Finalize (on MPI_COMM_WORLD, which stays until then). */
static void truncate_then_finalize(void) {
  enum { N = 100000 };
  float* b = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) b[i] = value_of(i);
  if (rank == 0) {
    int rc = MPI_Send(b, N, MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "send of the truncated message returned %d", rc);
  } else if (rank == 1) {
    int rc = MPI_Recv(b, 16, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "16-float receive of 100000 floats: class %d, not MPI_ERR_TRUNCATE", cls);
  }
  free(b);
}

/* (c) Invalid rank and tag of persistent requests, aliased buffers of an allreduce: 65536 floats,
 * a message the protocol takes. */
static void invalid_arguments(void) {
  enum { N = 1 << 16 };
  float* b = calloc(N, sizeof(float));
  MPI_Request r = MPI_REQUEST_NULL;
  if (show("MPI_Send_init to rank = size", MPI_Send_init(b, N, MPI_FLOAT, size, 0, comm, &r)) == MPI_SUCCESS &&
      r != MPI_REQUEST_NULL) {
    MPI_Request_free(&r); /* never started */
  }
  r = MPI_REQUEST_NULL;
  if (show("MPI_Recv_init with tag -5", MPI_Recv_init(b, N, MPI_FLOAT, 0, -5, comm, &r)) == MPI_SUCCESS &&
      r != MPI_REQUEST_NULL) {
    MPI_Request_free(&r);
  }
  show("MPI_Allreduce with sendbuf == recvbuf", MPI_Allreduce(b, b, N, MPI_FLOAT, MPI_SUM, comm));
  free(b);
  MPI_Barrier(comm);
}

/* Receives on rank 1 what rank 0 sends: `n` elements of `stype` from `out`, received as at most
 * `rcount` of `rtype` into a zeroed buffer of `rbytes` bytes; the received bytes must be the sent
 * ones (`bytes` of them) and MPI_Get_count with `rtype` must give `want_count`. */
static void pairing(const char* what, const void* out, int n, MPI_Datatype stype, int rcount, MPI_Datatype rtype,
                    size_t rbytes, size_t bytes, int want_count, int tag) {
  int rc = MPI_SUCCESS;
  if (rank == 0) {
    rc = MPI_Send(out, n, stype, 1, tag, comm);
    CHECK(rc == MPI_SUCCESS, "%s: send returned %d", what, rc);
  } else if (rank == 1) {
    unsigned char* in = calloc(rbytes, 1);
    MPI_Status st;
    rc = MPI_Recv(in, rcount, rtype, 0, tag, comm, &st);
    int count = -1;
    MPI_Get_count(&st, rtype, &count);
    CHECK(rc == MPI_SUCCESS, "%s: receive returned %d", what, rc);
    CHECK(count == want_count, "%s: MPI_Get_count gives %d, want %d", what, count, want_count);
    CHECK(memcmp(in, out, bytes) == 0, "%s: the received bytes are not those sent", what);
    for (size_t i = bytes; i < rbytes; ++i) {
      if (in[i] != 0) {
        CHECK(0, "%s: byte %zu written past the message (%zu bytes)", what, i, bytes);
        break;
      }
    }
    free(in);
  }
  /* Rank 1's result on rank 0's line. */
  MPI_Bcast(&rc, 1, MPI_INT, 1, comm);
  show(what, rc);
}

/* (d) Datatype pairings MPI calls erroneous or leaves to the type map, which users write anyway. */
static void pairings(void) {
  enum { N = 1 << 16, U = 100000, P = 20000 };
  float* f = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) f[i] = value_of(i);
  uint16_t* u = malloc(sizeof(uint16_t) * U);
  for (int i = 0; i < U; ++i) u[i] = (uint16_t)(i * 3 + 1);
  /* Floats as bytes, into a larger buffer (as serialization layers receive). */
  pairing("MPI_FLOAT received as MPI_BYTE", f, N, MPI_FLOAT, 1 << 20, MPI_BYTE, 1 << 20, sizeof(float) * N,
          (int)sizeof(float) * N, 1);
  /* A fixed-width type as its C twin: small (inline) and large. */
  pairing("3000 MPI_UINT16_T received as MPI_UNSIGNED_SHORT", u, 3000, MPI_UINT16_T, 3000, MPI_UNSIGNED_SHORT,
          2 * 3000, 2 * 3000, 3000, 2);
  pairing("100000 MPI_UINT16_T received as MPI_UNSIGNED_SHORT", u, U, MPI_UINT16_T, U, MPI_UNSIGNED_SHORT, 2 * U,
          2 * U, U, 3);
  /* Floats as ints: the same size, not the same type; the MPI library delivers the bytes. */
  pairing("MPI_FLOAT received as MPI_INT", f, N, MPI_FLOAT, N, MPI_INT, sizeof(int) * N, sizeof(float) * N, N, 4);
  /* A message packed with MPI_Pack (floats), received as floats. */
  int packed_size = 0, position = 0;
  MPI_Pack_size(P, MPI_FLOAT, comm, &packed_size);
  char* packed = malloc((size_t)packed_size);
  MPI_Pack(f, P, MPI_FLOAT, packed, packed_size, &position, comm);
  pairing("MPI_PACKED received as MPI_FLOAT", packed, position, MPI_PACKED, P, MPI_FLOAT, sizeof(float) * P,
          sizeof(float) * P, P, 5);
  free(packed);
  free(f);
  free(u);
  MPI_Barrier(comm);
}

/* (e) Buffered sends of 400 KB: without an attached buffer and with one too small, MPI_ERR_BUFFER;
 * with one large enough, sent. Rank 1 is told which sends succeeded and receives those. */
static void buffered(void) {
  enum { N = 100000 };
  float* b = malloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) b[i] = value_of(i + 7);
  int sent[3] = {0, 0, 0};
  /* The failing sends on a communicator of their own: Open MPI's ob1 keeps the sequence number a
   * failed MPI_Bsend took, and later messages between the two ranks on that communicator then
   * wait for it forever. */
  MPI_Comm failing;
  MPI_Comm_dup(comm, &failing);
  MPI_Comm_set_errhandler(failing, MPI_ERRORS_RETURN);
  if (rank == 0) {
    sent[0] = show("MPI_Bsend of 400 KB, no buffer attached", MPI_Bsend(b, N, MPI_FLOAT, 1, 10, failing)) == MPI_SUCCESS;
    int small = 1000 + MPI_BSEND_OVERHEAD;
    void* att = malloc((size_t)small);
    MPI_Buffer_attach(att, small);
    sent[1] = show("MPI_Bsend of 400 KB, 1000-byte buffer", MPI_Bsend(b, N, MPI_FLOAT, 1, 11, failing)) == MPI_SUCCESS;
    MPI_Buffer_detach(&att, &small);
    free(att);
    int need = 0;
    MPI_Pack_size(N, MPI_FLOAT, comm, &need);
    int large = need + MPI_BSEND_OVERHEAD;
    att = malloc((size_t)large);
    MPI_Buffer_attach(att, large);
    sent[2] = show("MPI_Bsend of 400 KB, large enough buffer", MPI_Bsend(b, N, MPI_FLOAT, 1, 12, comm)) == MPI_SUCCESS;
    CHECK(sent[2], "MPI_Bsend with a large enough buffer failed");
    MPI_Send(sent, 3, MPI_INT, 1, 13, comm); /* before the detach, which waits for the receive */
    MPI_Buffer_detach(&att, &large);
    free(att);
  } else if (rank == 1) {
    MPI_Recv(sent, 3, MPI_INT, 0, 13, comm, MPI_STATUS_IGNORE);
    float* in = malloc(sizeof(float) * N);
    for (int k = 0; k < 3; ++k) {
      if (!sent[k]) continue;
      memset(in, 0, sizeof(float) * N);
      MPI_Status st;
      int rc = MPI_Recv(in, N, MPI_FLOAT, 0, 10 + k, k < 2 ? failing : comm, &st);
      int count = -1;
      MPI_Get_count(&st, MPI_FLOAT, &count);
      CHECK(rc == MPI_SUCCESS && count == N && memcmp(in, b, sizeof(float) * N) == 0,
            "buffered send %d: rc %d count %d, or wrong data", k, rc, count);
    }
    free(in);
  }
  MPI_Comm_free(&failing);
  free(b);
  MPI_Barrier(comm);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size >= 2, "needs 2 ranks or more, not %d", size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (argc > 1 && strcmp(argv[1], "truncate") == 0) {
    truncate_then_finalize();
  } else {
    invalid_arguments();
    pairings();
    buffered();
  }
  MPI_Comm_free(&comm);
  if (rank == 0) printf("arg_errors: %s\n", failures ? "FAILED" : "ok");
  MPI_Finalize();
  return failures;
}
