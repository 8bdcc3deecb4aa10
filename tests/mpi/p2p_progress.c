/* MPI's progress rule with MPIZip in the way: a send and a posted matching receive complete, wherever
 * the two applications sit meanwhile (inside an MPI call MPIZip does not intercept, such as
 * MPI_Barrier, or computing). With host compression and no progress thread, MPIZip keeps that
 * promise by completing a send once its payload is posted from MPIZip's own memory
 * (docs/PROTOCOL.md, "Requests and progress"). Each case would deadlock otherwise. Payloads are
 * checked bit for bit: compressible floats, and random bit patterns that do not compress (their raw
 * bytes travel apart from the match message). Rank pairs (0,1), (2,3), ... run the cases. Built
 * with -DP2P_PROGRESS_DEVICE (tests/gpu/p2p_progress_device), every float message buffer is device
 * memory (the handshakes and tokens stay in host memory, as a GPU code's counters do). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tests/mpi/check.h"
#ifdef P2P_PROGRESS_DEVICE
#include <cuda_runtime.h>
#endif

enum { N = 3 << 20 }; /* floats: 12 MiB, above every inline and compression threshold */

/* kind 0: smooth floats (compress); kind 1: random bit patterns (do not). */
static void fill(float* v, int kind, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (int i = 0; i < N; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    if (kind == 0) {
      v[i] = (float)((int)(x % 20001) - 10000) / 10000.0f;
    } else {
      memcpy(&v[i], &x, sizeof x);
    }
  }
}

/* MPIZip's bf16 datatype where MPIZip is loaded, else MPI_UINT16_T (the same bytes). */
static MPI_Datatype mpizip_bf16(void) {
  MPI_Datatype* t = (MPI_Datatype*)dlsym(RTLD_DEFAULT, "MPIZip_bf16");
  return t != NULL && *t != MPI_DATATYPE_NULL ? *t : MPI_UINT16_T;
}

/* Float message buffers of N floats: host memory, or device memory with -DP2P_PROGRESS_DEVICE. The
 * expected values (`want`) are always in host memory. */
#ifdef P2P_PROGRESS_DEVICE
#define CUDA(call) CHECK((call) == cudaSuccess, "%s failed", #call)
static float* msg_alloc(void) {
  void* p = NULL;
  CUDA(cudaMalloc(&p, sizeof(float) * N));
  return (float*)p;
}
static void msg_free(float* p) { CUDA(cudaFree(p)); }
static void msg_put(float* dst, const float* host, size_t n) {
  CUDA(cudaMemcpy(dst, host, sizeof(float) * n, cudaMemcpyHostToDevice));
}
static void msg_set(float* buf, int byte, size_t n) {
  CUDA(cudaMemset(buf, byte, sizeof(float) * n));
  CUDA(cudaDeviceSynchronize());
}
static int msg_same(const float* buf, const float* want, size_t n) {
  float* h = malloc(sizeof(float) * n);
  CUDA(cudaMemcpy(h, buf, sizeof(float) * n, cudaMemcpyDeviceToHost));
  const int same = memcmp(h, want, sizeof(float) * n) == 0;
  free(h);
  return same;
}
static float msg_at(const float* buf, size_t i) {
  float x = 0;
  CUDA(cudaMemcpy(&x, buf + i, sizeof x, cudaMemcpyDeviceToHost));
  return x;
}
#else
static float* msg_alloc(void) { return malloc(sizeof(float) * N); }
static void msg_free(float* p) { free(p); }
static void msg_put(float* dst, const float* host, size_t n) { memcpy(dst, host, sizeof(float) * n); }
static void msg_set(float* buf, int byte, size_t n) { memset(buf, byte, sizeof(float) * n); }
static int msg_same(const float* buf, const float* want, size_t n) {
  return memcmp(buf, want, sizeof(float) * n) == 0;
}
static float msg_at(const float* buf, size_t i) { return buf[i]; }
#endif

/* A message buffer holding `want`. */
static float* msg_of(const float* want) {
  float* p = msg_alloc();
  msg_put(p, want, N);
  return p;
}

static int same(const float* buf, const float* want) { return msg_same(buf, want, N); }

/* The receiver posts first and sits in MPI_Barrier; the sender's blocking send must return. */
static void recv_behind_barrier(MPI_Comm comm, int me, int kind, int synchronous) {
  float* buf = msg_alloc();
  float* want = malloc(sizeof(float) * N);
  fill(want, kind, 11u + (unsigned)kind);
  float* src = msg_of(want);
  int go = 1;
  if (me == 0) {
    MPI_Request r;
    MPI_Irecv(buf, N, MPI_FLOAT, 1, 41, comm, &r);
    MPI_Send(&go, 1, MPI_INT, 1, 42, comm);
    MPI_Barrier(comm);
    MPI_Status st;
    MPI_Wait(&r, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_FLOAT, &count);
    CHECK(count == N && st.MPI_TAG == 41 && st.MPI_SOURCE == 1, "status behind a barrier");
    CHECK(same(buf, want), "payload behind a barrier");
  } else {
    MPI_Recv(&go, 1, MPI_INT, 0, 42, comm, MPI_STATUS_IGNORE);
    if (synchronous) {
      MPI_Ssend(src, N, MPI_FLOAT, 0, 41, comm);
    } else {
      MPI_Send(src, N, MPI_FLOAT, 0, 41, comm);
    }
    MPI_Barrier(comm);
  }
  msg_free(buf);
  msg_free(src);
  free(want);
}

/* The receiver posts its protocol receive, then blocks in a call MPIZip passes to the MPI library
 * whole, while the sender sits in its blocking send of the large message; the sender enters the
 * same call only once its send has returned, so the send must complete without the receiver's
 * MPIZip code. `how`: 0 a blocking receive of a small message (the MPI library's own), 1 an
 * allreduce of MPI_INT, 2 MPI_Waitall on plain requests only, 3 MPI_Barrier after a
 * synchronous send's match (MPI_Ssend). */
static void recv_behind_blocking_call(MPI_Comm comm, int me, int kind, int how) {
  float* buf = msg_alloc();
  float* want = malloc(sizeof(float) * N);
  fill(want, kind, 53u + (unsigned)(kind * 4 + how));
  float* src = msg_of(want);
  int token = 7, got = 0;
  if (me == 0) {
    MPI_Request r;
    MPI_Irecv(buf, N, MPI_FLOAT, 1, 61, comm, &r);
    if (how == 0) {
      MPI_Recv(&got, 1, MPI_INT, 1, 62, comm, MPI_STATUS_IGNORE);
      CHECK(got == token, "small message behind a blocking receive");
    } else if (how == 1) {
      int sum = 0;
      MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, comm);
      CHECK(sum == 2 * token, "allreduce of MPI_INT behind a posted receive");
    } else if (how == 2) {
      MPI_Request plain[2];
      int other = 0;
      MPI_Irecv(&got, 1, MPI_INT, 1, 62, comm, &plain[0]);
      MPI_Irecv(&other, 1, MPI_INT, 1, 63, comm, &plain[1]);
      MPI_Waitall(2, plain, MPI_STATUSES_IGNORE);
      CHECK(got == token && other == token + 1, "plain requests behind a posted receive");
    } else {
      MPI_Barrier(comm);
    }
    MPI_Status st;
    MPI_Wait(&r, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_FLOAT, &count);
    CHECK(count == N && st.MPI_SOURCE == 1 && st.MPI_TAG == 61, "status behind call %d", how);
    CHECK(same(buf, want), "payload behind call %d", how);
  } else {
    /* The receive is posted before the send starts: a barrier of MPI's own would do, but the
     * receiver must be inside its blocking call while this rank sends, so it signals nothing and
     * the send simply starts (the receive was posted first in program order on rank 0). */
    if (how == 3) {
      MPI_Ssend(src, N, MPI_FLOAT, 0, 61, comm);
    } else {
      MPI_Send(src, N, MPI_FLOAT, 0, 61, comm);
    }
    if (how == 0) {
      MPI_Send(&token, 1, MPI_INT, 0, 62, comm);
    } else if (how == 1) {
      int sum = 0;
      MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, comm);
    } else if (how == 2) {
      int next = token + 1;
      MPI_Send(&token, 1, MPI_INT, 0, 62, comm);
      MPI_Send(&next, 1, MPI_INT, 0, 63, comm);
    } else {
      MPI_Barrier(comm);
    }
  }
  msg_free(buf);
  msg_free(src);
  free(want);
}

/* The sender posts MPI_Isend, then computes without calling MPI for a while before MPI_Wait; the
 * receiver is in its blocking receive all along. Both must complete. */
static void isend_then_compute(MPI_Comm comm, int me, int kind) {
  float* buf = msg_alloc();
  float* want = malloc(sizeof(float) * N);
  fill(want, kind, 71u + (unsigned)kind);
  float* src = msg_of(want);
  if (me == 0) {
    MPI_Recv(buf, N, MPI_FLOAT, 1, 65, comm, MPI_STATUS_IGNORE);
    CHECK(same(buf, want), "payload of an isend followed by computation");
  } else {
    MPI_Request r;
    MPI_Isend(src, N, MPI_FLOAT, 0, 65, comm, &r);
    volatile double x = 1.0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do { /* 200 ms without an MPI call */
      for (int i = 0; i < 100000; ++i) x = x * 1.0000001 + 1e-9;
      clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1e9 + (t.tv_nsec - t0.tv_nsec) < 2e8);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  msg_free(buf);
  msg_free(src);
  free(want);
}

/* The sender waits for its MPI_Isend while the receiver, whose receive is posted, sits in
 * MPI_Barrier: the wait must return. The sender's buffer is overwritten right after, which must
 * not change what arrives. */
static void isend_wait_behind_barrier(MPI_Comm comm, int me, int kind) {
  float* buf = msg_alloc();
  float* want = malloc(sizeof(float) * N);
  fill(want, kind, 23u + (unsigned)kind);
  int go = 1;
  if (me == 0) {
    MPI_Request r;
    MPI_Irecv(buf, N, MPI_FLOAT, 1, 43, comm, &r);
    MPI_Send(&go, 1, MPI_INT, 1, 44, comm);
    MPI_Barrier(comm);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(same(buf, want), "payload of a waited isend");
  } else {
    msg_put(buf, want, N);
    MPI_Recv(&go, 1, MPI_INT, 0, 44, comm, MPI_STATUS_IGNORE);
    MPI_Request r;
    MPI_Isend(buf, N, MPI_FLOAT, 0, 43, comm, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    msg_set(buf, 0xa5, N); /* the send is complete: the buffer is the application's */
    MPI_Barrier(comm);
  }
  msg_free(buf);
  free(want);
}

/* The sender frees the communicator right after its send, before the receiver has taken the
 * payload: MPI keeps a freed communicator for its pending operations, and so must MPIZip. */
static void send_then_free(MPI_Comm parent, int me, int kind) {
  MPI_Comm comm;
  MPI_Comm_dup(parent, &comm);
  float* buf = msg_alloc();
  float* want = malloc(sizeof(float) * N);
  fill(want, kind, 37u + (unsigned)kind);
  float* src = msg_of(want);
  if (me == 0) {
    MPI_Request r;
    MPI_Irecv(buf, N, MPI_FLOAT, 1, 45, comm, &r);
    MPI_Barrier(parent);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(same(buf, want), "payload sent before MPI_Comm_free");
    MPI_Comm_free(&comm);
  } else {
    MPI_Send(src, N, MPI_FLOAT, 0, 45, comm);
    MPI_Comm_free(&comm);
    MPI_Barrier(parent);
  }
  msg_free(buf);
  msg_free(src);
  free(want);
}

/* Every send mode of a protocol datatype reaches a float receive intact: buffered (MPI_Bsend,
 * MPI_Ibsend, MPI_Bsend_init, which must complete without the receiver: the receiver posts only
 * after the barrier), synchronous persistent (MPI_Ssend_init) and ready (MPI_Rsend, MPI_Irsend,
 * MPI_Rsend_init, the receive posted first), small and large. */
static void send_modes(MPI_Comm comm, int me) {
  const int sizes[] = {1, 3, 1000, N};
  float* want = malloc(sizeof(float) * N);
  float* buf = msg_alloc();
  fill(want, 0, 51u);
  float* src = msg_of(want);
  int attach_bytes = 0;
  MPI_Pack_size(N, MPI_FLOAT, comm, &attach_bytes);
  attach_bytes = 4 * (attach_bytes + MPI_BSEND_OVERHEAD);
  char* attached = malloc((size_t)attach_bytes);
  MPI_Buffer_attach(attached, attach_bytes);
  for (int k = 0; k < 4; ++k) {
    const int n = sizes[k];
    if (me == 1) {
      MPI_Request r[2];
      MPI_Bsend(src, n, MPI_FLOAT, 0, 60, comm);
      MPI_Ibsend(src, n, MPI_FLOAT, 0, 61, comm, &r[0]);
      MPI_Bsend_init(src, n, MPI_FLOAT, 0, 62, comm, &r[1]);
      MPI_Start(&r[1]);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE); /* buffered: completes before the receiver posts */
      MPI_Request_free(&r[1]);
      MPI_Barrier(comm);
      MPI_Ssend_init(src, n, MPI_FLOAT, 0, 63, comm, &r[0]);
      MPI_Start(&r[0]);
      MPI_Wait(&r[0], MPI_STATUS_IGNORE);
      MPI_Request_free(&r[0]);
      MPI_Barrier(comm); /* the receiver's ready-mode receives are posted */
      MPI_Rsend(src, n, MPI_FLOAT, 0, 64, comm);
      MPI_Irsend(src, n, MPI_FLOAT, 0, 65, comm, &r[0]);
      MPI_Rsend_init(src, n, MPI_FLOAT, 0, 66, comm, &r[1]);
      MPI_Start(&r[1]);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
      MPI_Request_free(&r[1]);
    } else if (me == 0) {
      MPI_Barrier(comm);
      for (int tag = 60; tag <= 63; ++tag) {
        msg_set(buf, 0, N);
        MPI_Status st;
        MPI_Recv(buf, N, MPI_FLOAT, 1, tag, comm, &st);
        int count = -1;
        MPI_Get_count(&st, MPI_FLOAT, &count);
        CHECK(count == n && msg_same(buf, want, (size_t)n), "buffered or synchronous send");
      }
      MPI_Request r[3];
      float* in[3];
      for (int i = 0; i < 3; ++i) {
        in[i] = msg_alloc();
        MPI_Irecv(in[i], n, MPI_FLOAT, 1, 64 + i, comm, &r[i]);
      }
      MPI_Barrier(comm);
      MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
      for (int i = 0; i < 3; ++i) {
        CHECK(msg_same(in[i], want, (size_t)n), "ready send");
        msg_free(in[i]);
      }
    }
  }
  int size = 0;
  MPI_Buffer_detach(&attached, &size);
  free(attached);
  free(want);
  msg_free(src);
  msg_free(buf);
}

/* Large messages to a too-small buffer, and to a receive of another element type: the receiver
 * gets MPI_ERR_TRUNCATE, with the first bytes where MPIZip's protocol carries the message (the cut
 * falls inside a chunk when the payload travels in chunks) or MPI_ERR_TYPE, and the sender completes either way. */
static void cut_and_mismatch(MPI_Comm parent, int me) {
  MPI_Comm comm;
  MPI_Comm_dup(parent, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  float* want = malloc(sizeof(float) * N);
  float* buf = msg_alloc();
  fill(want, 0, 71u);
  float* src = msg_of(want);
  const int keep = N / 2 + 1234;
  if (me == 1) {
    MPI_Send(src, N, MPI_FLOAT, 0, 70, comm);
    MPI_Send(src, N, MPI_FLOAT, 0, 71, comm);
    MPI_Send(&keep, 1, MPI_INT, 0, 72, comm);
  } else if (me == 0) {
    msg_set(buf, 0, N);
    MPI_Status st;
    int rc = MPI_Recv(buf, keep, MPI_FLOAT, 1, 70, comm, &st);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncated large receive");
    int (*protocol)(MPI_Comm) = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "MPIZip_Comm_protocol");
    const int checked = protocol != NULL && protocol(comm);
    /* MPI leaves a truncated buffer's contents undefined (MPICH over UCX delivers none of a large
     * message); MPIZip's protocol delivers the prefix. */
    CHECK(!checked || msg_same(buf, want, (size_t)keep),
          "prefix of a truncated receive");
    CHECK(msg_at(buf, keep) == 0.0f, "nothing past a truncated receive's buffer");
    msg_set(buf, 0, N);
    rc = MPI_Recv(buf, 2 * N, mpizip_bf16(), 1, 71, comm, &st);
    MPI_Error_class(rc, &cls);
    /* The bytes arrive, as MPI (which does not check types) delivers them, protocol or not. */
    CHECK(cls == MPI_SUCCESS, "mismatched large receive: class %d", cls);
    CHECK(msg_same(buf, want, N), "bytes of a mismatched large receive");
    int k = 0;
    MPI_Recv(&k, 1, MPI_INT, 1, 72, comm, MPI_STATUS_IGNORE); /* the sender completed both */
    CHECK(k == keep, "after a truncated and a mismatched receive");
  }
  MPI_Comm_free(&comm);
  free(want);
  msg_free(src);
  msg_free(buf);
}

int main(int argc, char** argv) {
#ifdef P2P_PROGRESS_DEVICE
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    printf("p2p_progress: skipped, no GPU\n");
    return 77;
  }
  if (argc > 1 && strcmp(argv[1], "--gpu-present") == 0) return 0;
#endif
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  int me, n;
  MPI_Comm_rank(pair, &me);
  MPI_Comm_size(pair, &n);
  /* P2P_TRACE=1 names each case on stderr, to find where a failing run stops. */
#define STEP(call)                                                                  \
  do {                                                                              \
    if (getenv("P2P_TRACE")) fprintf(stderr, "rank %d: %s, kind %d\n", rank, #call, kind); \
    call;                                                                           \
  } while (0)
  if (n == 2) {
    int kind = 0;
    for (kind = 0; kind < 2; ++kind) {
      STEP(recv_behind_barrier(pair, me, kind, 0));
      STEP(recv_behind_barrier(pair, me, kind, 1));
      STEP(isend_wait_behind_barrier(pair, me, kind));
      for (int how = 0; how < 4; ++how) STEP(recv_behind_blocking_call(pair, me, kind, how));
      STEP(isend_then_compute(pair, me, kind));
      STEP(send_then_free(pair, me, kind));
    }
    STEP(send_modes(pair, me));
    STEP(cut_and_mismatch(pair, me));
  }
  MPI_Comm_free(&pair);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("p2p_progress: %s on %d ranks\n", total == 0 ? "ok" : "FAILED", size);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
