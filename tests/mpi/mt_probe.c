/* Matched probes and probes from several threads on one communicator (MPI_THREAD_MULTIPLE), with
 * MPI_ERROR preset in every status, and many pending receives of derived datatypes from several
 * senders.
 *
 * Part 1 (rank pairs 0-1, 2-3): the sender's 4 threads each send kMessages messages of a size that
 * varies (0 to 70,000 floats, raw inline, bulk and compressed when forced) on the thread's tag; the
 * receiver's 4 threads each take them with MPI_Improbe / MPI_Mprobe + MPI_Mrecv / MPI_Imrecv, or
 * MPI_Probe + MPI_Recv on their own tag, alternating, and check count, data and that MPI_ERROR was
 * left alone. Any-tag matched probes from all threads at once close the part: each thread takes
 * whichever message comes (MPI_ANY_TAG), so threads race for the same messages.
 *
 * Part 2 (after a barrier, like MPICH's concurrent_irecv): rank 0 posts kPending receives of an
 * hvector of doubles from every other rank, which each send them as plain MPI_DOUBLE arrays; then
 * one MPI_Waitall, and every element is checked. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mpi/probe_error.h"
#define CHECK_ABORT_AFTER 10
#include "tests/mpi/check.h"

enum { kThreads = 4, kMessages = 40, kMaxFloats = 70000, kPending = 24, kDoubles = 3000 };
static int rank, size;
static int probe_error[2]; /* MPI_ERROR after a probe, a matched probe, of a status preset to 4242 */

static int floats_of(int thread, int k) { return (int)((k * 7919u + thread * 104729u) % kMaxFloats) * (k % 5 == 0 ? 0 : 1) + (k % 7 == 1); }
static float value_of(int thread, int k, int i) { return (float)(thread * 1000 + k) + (float)i * 0.25f - 3.0f; }

static void check_data(const float* buf, int n, int thread, int k, const char* how) {
  for (int i = 0; i < n; ++i) {
    if (buf[i] != value_of(thread, k, i)) {
      CHECK(0, "%s: thread %d message %d element %d: %g, want %g", how, thread, k, i, buf[i],
            value_of(thread, k, i));
      return;
    }
  }
}

static void* sender(void* arg) {
  const int t = (int)(intptr_t)arg;
  float* buf = malloc(sizeof(float) * kMaxFloats);
  for (int k = 0; k < kMessages; ++k) {
    const int n = floats_of(t, k);
    for (int i = 0; i < n; ++i) buf[i] = value_of(t, k, i);
    MPI_Send(buf, n, MPI_FLOAT, rank ^ 1, t, MPI_COMM_WORLD);
  }
  /* The any-tag round: one message per thread, the thread's id in element 0. */
  buf[0] = (float)t;
  for (int i = 1; i < 1000; ++i) buf[i] = value_of(t, 99, i);
  MPI_Send(buf, 1000, MPI_FLOAT, rank ^ 1, 100 + t, MPI_COMM_WORLD);
  free(buf);
  return NULL;
}

static void* receiver(void* arg) {
  const int t = (int)(intptr_t)arg;
  float* buf = malloc(sizeof(float) * kMaxFloats);
  const int peer = rank ^ 1;
  for (int k = 0; k < kMessages; ++k) {
    const int n = floats_of(t, k);
    MPI_Status st;
    MPI_Message m;
    int count = -1, flag = 0, rc;
    st.MPI_ERROR = 4242;
    switch (k % 4) {
      case 0:
        do {
          rc = MPI_Improbe(peer, t, MPI_COMM_WORLD, &flag, &m, &st);
        } while (rc == MPI_SUCCESS && !flag);
        break;
      case 1:
      case 2:
        rc = MPI_Mprobe(peer, t, MPI_COMM_WORLD, &m, &st);
        break;
      default:
        rc = MPI_Probe(peer, t, MPI_COMM_WORLD, &st);
        break;
    }
    MPI_Get_count(&st, MPI_FLOAT, &count);
    CHECK(rc == MPI_SUCCESS && st.MPI_ERROR == probe_error[k % 4 != 3] && st.MPI_TAG == t && st.MPI_SOURCE == peer &&
              count == n,
          "thread %d message %d: probe rc %d error %d tag %d count %d, want %d", t, k, rc,
          st.MPI_ERROR, st.MPI_TAG, count, n);
    st.MPI_ERROR = 4343;
    if (k % 4 == 2) {
      MPI_Request r;
      rc = MPI_Imrecv(buf, kMaxFloats, MPI_FLOAT, &m, &r);
      if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, &st);
    } else if (k % 4 == 3) {
      rc = MPI_Recv(buf, kMaxFloats, MPI_FLOAT, peer, t, MPI_COMM_WORLD, &st);
    } else {
      rc = MPI_Mrecv(buf, kMaxFloats, MPI_FLOAT, &m, &st);
    }
    MPI_Get_count(&st, MPI_FLOAT, &count);
    CHECK(rc == MPI_SUCCESS && st.MPI_ERROR == 4343 && count == n,
          "thread %d message %d: receive rc %d error %d count %d, want %d", t, k, rc,
          st.MPI_ERROR, count, n);
    check_data(buf, n, t, k, "receive");
  }
  free(buf);
  return NULL;
}

static void* any_tag(void* arg) {
  (void)arg;
  float* buf = malloc(sizeof(float) * 1000);
  MPI_Status st;
  MPI_Message m;
  st.MPI_ERROR = 4242;
  int rc = MPI_Mprobe(rank ^ 1, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st);
  const int tag = st.MPI_TAG;
  CHECK(rc == MPI_SUCCESS && st.MPI_ERROR == probe_error[1] && tag >= 100 && tag < 100 + kThreads,
        "any-tag mprobe rc %d error %d tag %d", rc, st.MPI_ERROR, tag);
  rc = MPI_Mrecv(buf, 1000, MPI_FLOAT, &m, &st);
  CHECK(rc == MPI_SUCCESS && st.MPI_TAG == tag && buf[0] == (float)(tag - 100),
        "any-tag mrecv rc %d tag %d first %g", rc, st.MPI_TAG, buf[0]);
  for (int i = 1; i < 1000; ++i) {
    if (buf[i] != value_of(tag - 100, 99, i)) {
      CHECK(0, "any-tag element %d", i);
      break;
    }
  }
  free(buf);
  return NULL;
}

static void pending_derived(void) {
  /* An hvector of kDoubles doubles, every third double, received from each sender kPending
   * times; the senders send contiguous MPI_DOUBLE arrays. */
  MPI_Datatype hv;
  MPI_Type_create_hvector(kDoubles, 1, 3 * (MPI_Aint)sizeof(double), MPI_DOUBLE, &hv);
  MPI_Type_commit(&hv);
  if (rank == 0) {
    const int n = (size - 1) * kPending;
    double* bufs = malloc(sizeof(double) * 3 * kDoubles * (size_t)n);
    for (size_t i = 0; i < 3 * (size_t)kDoubles * n; ++i) bufs[i] = -1.0;
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)n);
    for (int s = 1; s < size; ++s) {
      for (int k = 0; k < kPending; ++k) {
        const int j = (s - 1) * kPending + k;
        MPI_Irecv(bufs + (size_t)j * 3 * kDoubles, 1, hv, s, k, MPI_COMM_WORLD, &reqs[j]);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Status* sts = malloc(sizeof(MPI_Status) * (size_t)n);
    int rc = MPI_Waitall(n, reqs, sts);
    CHECK(rc == MPI_SUCCESS, "waitall rc %d", rc);
    for (int j = 0; j < n; ++j) {
      const int s = j / kPending + 1, k = j % kPending;
      const double* b = bufs + (size_t)j * 3 * kDoubles;
      CHECK(sts[j].MPI_SOURCE == s && sts[j].MPI_TAG == k, "pending %d: source %d tag %d", j,
            sts[j].MPI_SOURCE, sts[j].MPI_TAG);
      for (int i = 0; i < kDoubles; ++i) {
        if (b[3 * i] != s * 1e6 + k * 1e3 + i * 0.5 || b[3 * i + 1] != -1.0 || b[3 * i + 2] != -1.0) {
          CHECK(0, "pending receive %d (from %d, tag %d): element %d is %g", j, s, k, i, b[3 * i]);
          break;
        }
      }
    }
    free(sts);
    free(reqs);
    free(bufs);
  } else {
    double* buf = malloc(sizeof(double) * kDoubles);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = kPending - 1; k >= 0; --k) { /* tags in reverse: matching by tag, not order */
      for (int i = 0; i < kDoubles; ++i) buf[i] = rank * 1e6 + k * 1e3 + i * 0.5;
      MPI_Send(buf, kDoubles, MPI_DOUBLE, 0, k, MPI_COMM_WORLD);
    }
    free(buf);
  }
  MPI_Type_free(&hv);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("mt_probe: MPI_THREAD_MULTIPLE not provided; skipped\n");
    MPI_Finalize();
    return 77;
  }
  probe_error[0] = library_probe_error(4242, 0, (rank ^ 1) < size ? rank ^ 1 : rank, MPI_COMM_WORLD);
  probe_error[1] = library_probe_error(4242, 1, (rank ^ 1) < size ? rank ^ 1 : rank, MPI_COMM_WORLD);
  if ((rank ^ 1) < size) {
    pthread_t th[kThreads];
    const int sending = rank % 2 == 0;
    for (int t = 0; t < kThreads; ++t) {
      pthread_create(&th[t], NULL, sending ? sender : receiver, (void*)(intptr_t)t);
    }
    for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
    if (!sending) {
      for (int t = 0; t < kThreads; ++t) pthread_create(&th[t], NULL, any_tag, NULL);
      for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  pending_derived();
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("mt_probe: %d failures\n", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
