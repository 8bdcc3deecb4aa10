/* MPI point-to-point semantics that must not change under MPIZip, whatever path a message takes
 * (plain, protocol raw inline or bulk, compressed). Run three ways by p2p_semantics.sh: without
 * MPIZip, with it, and with compression forced on every message. Needs 2..4 ranks.
 *
 * The same source built with -DP2P_DEVICE_BUFFERS is tests/gpu/p2p_semantics_device (run by
 * tests/gpu/run-p2p-semantics.sh): every buffer handed to a point-to-point call is then device
 * memory (cudaMalloc), filled and checked through host copies, with the same checks. Only the ints
 * of handshakes stay on the host. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef P2P_DEVICE_BUFFERS
#include <cuda_runtime_api.h>
#if defined(OPEN_MPI) && OPEN_MPI && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif
#endif
#define PROGRAM "p2p_semantics_device"
#else
#define PROGRAM "p2p_semantics"
#endif
#define CHECK_ABORT_AFTER 0
#include "tests/mpi/check.h"

static int rank, size;

/* ---- datatypes: MPIZip's own when the library is loaded, the same-signature MPI ones otherwise */
static MPI_Datatype t_bf16, t_fp16, t_e4m3, t_e5m2;
static int mpizip_on;
static int (*comm_protocol)(MPI_Comm);

static MPI_Datatype lookup_type(const char* symbol, MPI_Datatype fallback) {
  MPI_Datatype* p = (MPI_Datatype*)dlsym(RTLD_DEFAULT, symbol);
  return p != NULL ? *p : fallback;
}

static void setup_types(void) {
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "MPIZip_Active");
  mpizip_on = active != NULL && active();
  comm_protocol = (int (*)(MPI_Comm))dlsym(RTLD_DEFAULT, "MPIZip_Comm_protocol");
  t_bf16 = lookup_type("MPIZip_bf16", MPI_UINT16_T);
  t_fp16 = lookup_type("MPIZip_fp16", MPI_UINT16_T);
  t_e4m3 = lookup_type("MPIZip_fp8_e4m3", MPI_UINT8_T);
  t_e5m2 = lookup_type("MPIZip_fp8_e5m2", MPI_UINT8_T);
}

/* ---- realistic data: U[-1,1] floats, cast per type by truncation of the float bits */
static uint64_t rng_state;
static uint32_t next_u32(void) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng_state >> 32);
}
static float next_uniform(void) { return (float)((next_u32() >> 8) * (2.0 / 16777216.0) - 1.0); }

/* Fills `bytes` bytes of elements of `esize` bytes with float-like values seeded by `seed`. */
static void fill(void* buf, size_t bytes, int esize, uint64_t seed) {
  rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
  unsigned char* p = buf;
  for (size_t i = 0; i + (size_t)esize <= bytes; i += (size_t)esize) {
    float f = next_uniform();
    uint32_t u;
    memcpy(&u, &f, 4);
    if (esize == 4) {
      memcpy(p + i, &u, 4);
    } else if (esize == 8) {
      double d = (double)f * (1.0 + next_uniform() * 1e-9);
      memcpy(p + i, &d, 8);
    } else if (esize == 2) {
      uint16_t h = (uint16_t)(u >> 16);
      memcpy(p + i, &h, 2);
    } else {
      p[i] = (unsigned char)(u >> 24) ^ (unsigned char)(next_u32() & 0x3);
    }
  }
}

static int esize_of(MPI_Datatype t) {
  int s;
  MPI_Type_size(t, &s);
  return s;
}

/* ---- message buffers. Every buffer handed to a point-to-point call comes from buf_alloc: host
 * memory, or device memory with -DP2P_DEVICE_BUFFERS. The test reads and writes them only through
 * these functions, from and into host memory. */
static void* buf_alloc(size_t bytes);
static void buf_free(void* b);
static void buf_put(void* b, const void* host, size_t bytes); /* host -> buffer */
static void buf_get(void* host, const void* b, size_t bytes); /* buffer -> host */
static void buf_set(void* b, int byte, size_t bytes);
static void buf_copy(void* dst, const void* src, size_t bytes); /* buffer -> buffer */

#ifdef P2P_DEVICE_BUFFERS
#define CUDA(call)                                                           \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    CHECK(err_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(err_));   \
  } while (0)
/* The copies and sets run on the legacy default stream, while MPIZip works on streams of its own:
 * each waits until the device holds the result (cudaMemcpy from pageable host memory may return
 * before its DMA ends, cudaMemset and device-to-device copies return at once). */
static void* buf_alloc(size_t bytes) {
  void* p = NULL;
  CUDA(cudaMalloc(&p, bytes > 0 ? bytes : 1));
  return p;
}
static void buf_free(void* b) { CUDA(cudaFree(b)); }
static void buf_put(void* b, const void* host, size_t bytes) {
  if (bytes == 0) return;
  CUDA(cudaMemcpy(b, host, bytes, cudaMemcpyHostToDevice));
  CUDA(cudaDeviceSynchronize());
}
static void buf_get(void* host, const void* b, size_t bytes) {
  if (bytes == 0) return;
  CUDA(cudaMemcpy(host, b, bytes, cudaMemcpyDeviceToHost));
}
static void buf_set(void* b, int byte, size_t bytes) {
  CUDA(cudaMemset(b, byte, bytes));
  CUDA(cudaDeviceSynchronize());
}
static void buf_copy(void* dst, const void* src, size_t bytes) {
  CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  CUDA(cudaDeviceSynchronize());
}
#else
static void* buf_alloc(size_t bytes) {
  void* p = malloc(bytes > 0 ? bytes : 1);
  CHECK(p != NULL, "out of memory (%zu bytes)", bytes);
  return p;
}
static void buf_free(void* b) { free(b); }
static void buf_put(void* b, const void* host, size_t bytes) { memcpy(b, host, bytes); }
static void buf_get(void* host, const void* b, size_t bytes) { memcpy(host, b, bytes); }
static void buf_set(void* b, int byte, size_t bytes) { memset(b, byte, bytes); }
static void buf_copy(void* dst, const void* src, size_t bytes) { memcpy(dst, src, bytes); }
#endif

/* fill() into a buffer. */
static void buf_fill(void* b, size_t bytes, int esize, uint64_t seed) {
#ifdef P2P_DEVICE_BUFFERS
  void* h = malloc(bytes > 0 ? bytes : 1);
  CHECK(h != NULL, "out of host memory (%zu bytes)", bytes);
  fill(h, bytes, esize, seed);
  buf_put(b, h, bytes);
  free(h);
#else
  fill(b, bytes, esize, seed);
#endif
}

/* Whether the buffer's first `bytes` bytes are those of host memory `want`. */
static int buf_compare(const void* b, const void* want, size_t bytes) {
#ifdef P2P_DEVICE_BUFFERS
  void* h = malloc(bytes > 0 ? bytes : 1);
  CHECK(h != NULL, "out of host memory (%zu bytes)", bytes);
  buf_get(h, b, bytes);
  int same = memcmp(h, want, bytes) == 0;
  free(h);
  return same;
#else
  return memcmp(b, want, bytes) == 0;
#endif
}

/* The byte at `offset`. */
static unsigned char buf_byte(const void* b, size_t offset) {
  unsigned char c;
  buf_get(&c, (const unsigned char*)b + offset, 1);
  return c;
}

/* ---- tests */

/* Every protocol datatype, sizes from 0 to `max_bytes`, blocking and non-blocking, bit-exact.
 * Above 16 MB only fp32, bf16 and int, up to 1 GiB (268M floats, 536M bf16: int counts). */
static void exchange_sizes(MPI_Comm comm, size_t max_bytes) {
  MPI_Datatype types[] = {MPI_FLOAT, MPI_DOUBLE, t_bf16, t_fp16, t_e4m3, t_e5m2, MPI_INT};
  size_t sizes[] = {0, 1, 7, 1000, 16384 - 1, 16384 + 1, 65536, 1 << 20, 16 << 20, 256 << 20,
                    (size_t)1 << 30};
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ++ti) {
    int es = esize_of(types[ti]);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si) {
      size_t bytes = sizes[si] / (size_t)es * (size_t)es;
      if (bytes > max_bytes) continue;
      if (bytes > (16 << 20) && ti > 0 && ti < 6 && ti != 2) continue; /* 256 MB: fp32, bf16, int */
      int count = (int)(bytes / (size_t)es);
      unsigned char* out = buf_alloc(bytes + 1);
      unsigned char* in = buf_alloc(bytes + 1);
      unsigned char* want = malloc(bytes + 1);
      CHECK(want != NULL, "out of memory (%zu bytes)", bytes + 1);
      buf_fill(out, bytes, es, (uint64_t)(rank * 1000 + ti * 31 + si));
      fill(want, bytes, es, (uint64_t)(left * 1000 + ti * 31 + si));
      buf_set(in, 0xA5, bytes + 1);
      MPI_Request r[2];
      MPI_Status st;
      MPI_Irecv(in, count, types[ti], left, (int)si, comm, &r[0]);
      MPI_Isend(out, count, types[ti], right, (int)si, comm, &r[1]);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
      CHECK(buf_compare(in, want, bytes) && buf_byte(in, bytes) == 0xA5, "type %zu, %zu bytes: data", ti,
            bytes);
      /* blocking, the other direction */
      buf_set(in, 0xA5, bytes + 1);
      if (rank % 2 == 0) {
        MPI_Send(out, count, types[ti], right, 77, comm);
        MPI_Recv(in, count, types[ti], left, 77, comm, &st);
      } else {
        MPI_Recv(in, count, types[ti], left, 77, comm, &st);
        MPI_Send(out, count, types[ti], right, 77, comm);
      }
      int got = -1;
      MPI_Get_count(&st, types[ti], &got);
      CHECK(got == count && st.MPI_SOURCE == left && st.MPI_TAG == 77, "status %d/%d %d %d", got,
            count, st.MPI_SOURCE, st.MPI_TAG);
      CHECK(buf_compare(in, want, bytes) && buf_byte(in, bytes) == 0xA5, "blocking type %zu, %zu bytes", ti,
            bytes);
      buf_free(out);
      buf_free(in);
      free(want);
    }
  }
}

/* Wildcards: every rank sends to rank 0 with a tag naming it; rank 0 receives with
 * MPI_ANY_SOURCE / MPI_ANY_TAG and checks each message against its status. */
static void wildcards(MPI_Comm comm) {
  const int n = 4096;
  float* buf = buf_alloc(sizeof(float) * n);
  if (rank != 0) {
    buf_fill(buf, sizeof(float) * n, 4, (uint64_t)rank);
    MPI_Send(buf, n, MPI_FLOAT, 0, 100 + rank, comm);
    MPI_Send(buf, n / 2, MPI_FLOAT, 0, 200 + rank, comm);
  } else {
    float* want = malloc(sizeof(float) * n);
    for (int k = 0; k < 2 * (size - 1); ++k) {
      MPI_Status st;
      MPI_Recv(buf, n, MPI_FLOAT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
      int count;
      MPI_Get_count(&st, MPI_FLOAT, &count);
      CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE || st.MPI_TAG == 200 + st.MPI_SOURCE, "tag %d", st.MPI_TAG);
      CHECK(count == (st.MPI_TAG < 200 ? n : n / 2), "count %d", count);
      fill(want, sizeof(float) * n, 4, (uint64_t)st.MPI_SOURCE);
      CHECK(buf_compare(buf, want, sizeof(float) * (size_t)count), "wildcard data");
    }
    free(want);
  }
  buf_free(buf);
  MPI_Barrier(comm);
}

/* Non-overtaking: many messages of mixed sizes (inline, bulk, compressed) on one (source, tag). */
static void ordering(MPI_Comm comm) {
  const int msgs = 200;
  int sizes[] = {1, 3000, 5000, 300000, 0, 70000};
  if (rank == 1) {
    MPI_Request* r = malloc(sizeof(MPI_Request) * msgs);
    float** bufs = malloc(sizeof(float*) * msgs);
    for (int i = 0; i < msgs; ++i) {
      int n = sizes[i % 6];
      bufs[i] = buf_alloc(sizeof(float) * (size_t)(n + 1));
      buf_fill(bufs[i], sizeof(float) * (size_t)n, 4, (uint64_t)(i + 7));
      float first = (float)i;
      if (n > 0) buf_put(bufs[i], &first, sizeof first);
      MPI_Isend(bufs[i], n, MPI_FLOAT, 0, 5, comm, &r[i]);
    }
    MPI_Waitall(msgs, r, MPI_STATUSES_IGNORE);
    for (int i = 0; i < msgs; ++i) buf_free(bufs[i]);
    free(bufs);
    free(r);
  } else if (rank == 0) {
    float* buf = buf_alloc(sizeof(float) * 300000);
    for (int i = 0; i < msgs; ++i) {
      MPI_Status st;
      MPI_Recv(buf, 300000, MPI_FLOAT, 1, 5, comm, &st);
      int count;
      MPI_Get_count(&st, MPI_FLOAT, &count);
      CHECK(count == sizes[i % 6], "message %d: count %d", i, count);
      float first = 0;
      if (count > 0) buf_get(&first, buf, sizeof first);
      if (count > 0) CHECK(first == (float)i, "message %d arrived out of order (%g)", i, first);
    }
    buf_free(buf);
  }
  MPI_Barrier(comm);
}

/* Probe, get count, receive; matched probes; statuses; MPI_STATUS_IGNORE; zero counts;
 * MPI_PROC_NULL. */
static void probes(MPI_Comm comm) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double* out = buf_alloc(3000 * sizeof(double));
  double* in = buf_alloc(3000 * sizeof(double));
  buf_fill(out, 3000 * sizeof(double), 8, (uint64_t)rank + 50);
  MPI_Request r[4];
  MPI_Isend(out, 2500, MPI_DOUBLE, right, 1, comm, &r[0]);
  MPI_Isend(out, 0, MPI_DOUBLE, right, 2, comm, &r[1]);
  MPI_Isend(out, 17, MPI_INT, right, 3, comm, &r[2]); /* a plain datatype on the same path */
  MPI_Isend(out, 100, MPI_DOUBLE, right, 4, comm, &r[3]);
  MPI_Status st;
  int count;
  MPI_Probe(left, 1, comm, &st);
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK(count == 2500 && st.MPI_SOURCE == left && st.MPI_TAG == 1, "probe: %d", count);
  MPI_Count elements;
  MPI_Get_elements_x(&st, MPI_DOUBLE, &elements);
  CHECK(elements == 2500, "probe elements %lld", (long long)elements);
  MPI_Recv(in, count, MPI_DOUBLE, left, 1, comm, MPI_STATUS_IGNORE);
  double want[3000];
  fill(want, sizeof want, 8, (uint64_t)left + 50);
  CHECK(buf_compare(in, want, 2500 * sizeof(double)), "probe then receive");
  int flag = 0;
  while (!flag) MPI_Iprobe(left, 2, comm, &flag, &st);
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK(count == 0, "zero-count probe %d", count);
  MPI_Recv(in, 10, MPI_DOUBLE, left, 2, comm, &st);
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK(count == 0, "zero-count receive %d", count);
  MPI_Message msg;
  MPI_Mprobe(left, 3, comm, &msg, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == 17, "mprobe of a plain message %d", count);
  int* ints = buf_alloc(17 * sizeof(int));
  MPI_Mrecv(ints, 17, MPI_INT, &msg, &st);
  CHECK(msg == MPI_MESSAGE_NULL && buf_compare(ints, want, 17 * sizeof(int)), "mrecv of a plain message");
  buf_free(ints);
  flag = 0;
  while (!flag) MPI_Improbe(left, 4, comm, &flag, &msg, &st);
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK(count == 100, "improbe %d", count);
  MPI_Request rr;
  MPI_Imrecv(in, 100, MPI_DOUBLE, &msg, &rr);
  MPI_Wait(&rr, &st);
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK(count == 100 && buf_compare(in, want, 100 * sizeof(double)), "imrecv");
  MPI_Waitall(4, r, MPI_STATUSES_IGNORE);

  /* MPI_PROC_NULL */
  MPI_Send(out, 10, MPI_DOUBLE, MPI_PROC_NULL, 1, comm);
  MPI_Recv(in, 10, MPI_DOUBLE, MPI_PROC_NULL, 1, comm, &st);
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0, "proc null");
  MPI_Barrier(comm);
  buf_free(out);
  buf_free(in);
}

/* Truncation with MPI_ERRORS_RETURN: the error comes back; the first elements arrive where MPIZip's
 * protocol carries the message (the larger one). What a truncated receive holds is not defined by
 * MPI: a smaller message is the MPI library's own, Open MPI over UCX delivers none of it, and
 * MPICH over UCX none of a large one, with or without MPIZip. */
static void truncation(MPI_Comm comm) {
  MPI_Comm c;
  MPI_Comm_dup(comm, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int ns[] = {100, 100000};
  for (int k = 0; k < 2; ++k) {
    int n = ns[k];
    float* out = buf_alloc(sizeof(float) * (size_t)n);
    float* in = buf_alloc(sizeof(float) * (size_t)n);
    float* want = malloc(sizeof(float) * (size_t)n);
    buf_fill(out, sizeof(float) * (size_t)n, 4, (uint64_t)rank + 9);
    fill(want, sizeof(float) * (size_t)n, 4, (uint64_t)left + 9);
    MPI_Request r;
    MPI_Isend(out, n, MPI_FLOAT, right, 9, c, &r);
    MPI_Status st;
    int rc = MPI_Recv(in, n / 2, MPI_FLOAT, left, 9, c, &st);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncation returned class %d", cls);
    if ((size_t)n * sizeof(float) > 65536 && mpizip_on && comm_protocol(c)) {
      CHECK(buf_compare(in, want, sizeof(float) * (size_t)(n / 2)), "truncated data");
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    buf_free(out);
    buf_free(in);
    free(want);
  }
  /* and through a request */
  float* out = buf_alloc(64 * sizeof(float));
  float* in = buf_alloc(8 * sizeof(float));
  buf_fill(out, 64 * sizeof(float), 4, 3);
  MPI_Request r[2];
  MPI_Status st[2];
  MPI_Irecv(in, 8, MPI_FLOAT, left, 10, c, &r[0]);
  MPI_Isend(out, 64, MPI_FLOAT, right, 10, c, &r[1]);
  /* Which error handler a multiple-completion call invokes is the library's choice: the requests'
   * communicator (Open MPI, MPIZip) or MPI_COMM_SELF / MPI_COMM_WORLD (MPICH). */
  MPI_Errhandler world_eh, self_eh;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_eh);
  MPI_Comm_get_errhandler(MPI_COMM_SELF, &self_eh);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int rc = MPI_Waitall(2, r, st);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, self_eh);
  MPI_Errhandler_free(&world_eh);
  MPI_Errhandler_free(&self_eh);
  CHECK(rc == MPI_ERR_IN_STATUS, "waitall with a truncated receive returned %d", rc);
  int cls;
  MPI_Error_class(st[0].MPI_ERROR, &cls);
  CHECK(cls == MPI_ERR_TRUNCATE, "status error class %d", cls);
  buf_free(out);
  buf_free(in);
  MPI_Comm_free(&c);
}

/* Every wait and test form over a mix of protocol and plain requests; cancel; free. */
static void completion(MPI_Comm comm) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { N = 20000 };
  float* fo = buf_alloc(sizeof(float) * N);
  float* fi = buf_alloc(sizeof(float) * N);
  float* fw = malloc(sizeof(float) * N);
  int* io = buf_alloc(50 * sizeof(int));
  int* ii = buf_alloc(50 * sizeof(int));
  int ints[50];
  buf_fill(fo, sizeof(float) * N, 4, (uint64_t)rank + 70);
  fill(fw, sizeof(float) * N, 4, (uint64_t)left + 70);
  for (int i = 0; i < 50; ++i) ints[i] = rank * 100 + i;
  buf_put(io, ints, sizeof ints);
  for (int form = 0; form < 6; ++form) {
    MPI_Request r[4];
    MPI_Status st[4];
    buf_set(fi, 0, sizeof(float) * N);
    buf_set(ii, 0, 50 * sizeof(int));
    MPI_Irecv(fi, N, MPI_FLOAT, left, 20 + form, comm, &r[0]);
    MPI_Irecv(ii, 50, MPI_INT, left, 40 + form, comm, &r[1]);
    MPI_Isend(fo, N, MPI_FLOAT, right, 20 + form, comm, &r[2]);
    MPI_Isend(io, 50, MPI_INT, right, 40 + form, comm, &r[3]);
    int done = 0, flag = 0, idx, outcount, indices[4];
    switch (form) {
      case 0: MPI_Waitall(4, r, st); break;
      case 1:
        while (!flag) MPI_Testall(4, r, &flag, st);
        break;
      case 2:
        while (done < 4) {
          MPI_Waitany(4, r, &idx, &st[0]);
          CHECK(idx != MPI_UNDEFINED, "waitany undefined with %d done", done);
          CHECK(r[idx] == MPI_REQUEST_NULL, "waitany left the request");
          ++done;
        }
        MPI_Waitany(4, r, &idx, &st[0]);
        CHECK(idx == MPI_UNDEFINED, "waitany on nothing active");
        break;
      case 3:
        while (done < 4) {
          MPI_Testany(4, r, &idx, &flag, &st[0]);
          if (flag && idx != MPI_UNDEFINED) ++done;
        }
        break;
      case 4:
        while (done < 4) {
          MPI_Waitsome(4, r, &outcount, indices, st);
          CHECK(outcount != MPI_UNDEFINED, "waitsome undefined");
          done += outcount;
        }
        MPI_Waitsome(4, r, &outcount, indices, st);
        CHECK(outcount == MPI_UNDEFINED, "waitsome on nothing active");
        break;
      case 5:
        while (done < 4) {
          MPI_Testsome(4, r, &outcount, indices, st);
          if (outcount != MPI_UNDEFINED) done += outcount;
        }
        break;
    }
    CHECK(buf_compare(fi, fw, sizeof(float) * N), "form %d: float data", form);
    buf_get(ints, ii, sizeof ints);
    CHECK(ints[49] == left * 100 + 49, "form %d: int data", form);
    if (form == 0 || form == 1) {
      int count;
      MPI_Get_count(&st[0], MPI_FLOAT, &count);
      CHECK(count == N && st[0].MPI_SOURCE == left && st[0].MPI_TAG == 20 + form, "form %d status", form);
    }
  }
  /* request status without completing */
  MPI_Request r;
  MPI_Irecv(fi, N, MPI_FLOAT, left, 60, comm, &r);
  MPI_Send(fo, N, MPI_FLOAT, right, 60, comm);
  int flag = 0;
  MPI_Status st;
  while (!flag) MPI_Request_get_status(r, &flag, &st);
  CHECK(r != MPI_REQUEST_NULL, "get_status freed the request");
  MPI_Wait(&r, &st);
  int count;
  MPI_Get_count(&st, MPI_FLOAT, &count);
  CHECK(count == N, "get_status then wait: %d", count);

  /* cancel of a pending receive */
  MPI_Irecv(fi, N, MPI_FLOAT, left, 999, comm, &r);
  MPI_Cancel(&r);
  MPI_Wait(&r, &st);
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  CHECK(cancelled, "pending receive not cancelled");

  /* free of an active send request: the message still arrives */
  MPI_Isend(fo, N, MPI_FLOAT, right, 61, comm, &r);
  MPI_Request_free(&r);
  CHECK(r == MPI_REQUEST_NULL, "request_free");
  MPI_Recv(fi, N, MPI_FLOAT, left, 61, comm, MPI_STATUS_IGNORE);
  CHECK(buf_compare(fi, fw, sizeof(float) * N), "data of a freed send");
  MPI_Barrier(comm);
  buf_free(fo);
  buf_free(fi);
  free(fw);
  buf_free(io);
  buf_free(ii);
}

/* Sendrecv, sendrecv_replace, persistent requests. */
static void combined(MPI_Comm comm) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { N = 50000 };
  double* o = buf_alloc(sizeof(double) * N);
  double* i = buf_alloc(sizeof(double) * N);
  double* w = malloc(sizeof(double) * N);
  buf_fill(o, sizeof(double) * N, 8, (uint64_t)rank + 3);
  fill(w, sizeof(double) * N, 8, (uint64_t)left + 3);
  MPI_Status st;
  MPI_Sendrecv(o, N, MPI_DOUBLE, right, 1, i, N, MPI_DOUBLE, left, 1, comm, &st);
  int count;
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK(count == N && buf_compare(i, w, sizeof(double) * N), "sendrecv");
  buf_copy(i, o, sizeof(double) * N);
  MPI_Sendrecv_replace(i, N, MPI_DOUBLE, right, 2, left, 2, comm, &st);
  CHECK(buf_compare(i, w, sizeof(double) * N), "sendrecv_replace");
  MPI_Request r[2];
  MPI_Recv_init(i, N, MPI_DOUBLE, left, 3, comm, &r[0]);
  MPI_Send_init(o, N, MPI_DOUBLE, right, 3, comm, &r[1]);
  for (int it = 0; it < 5; ++it) {
    buf_set(i, 0, sizeof(double) * N);
    MPI_Startall(2, r);
    if (it % 2) {
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    } else {
      MPI_Wait(&r[0], &st);
      MPI_Get_count(&st, MPI_DOUBLE, &count);
      CHECK(count == N && st.MPI_SOURCE == left, "persistent status");
      MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    }
    CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL, "persistent request freed");
    CHECK(buf_compare(i, w, sizeof(double) * N), "persistent data %d", it);
  }
  MPI_Request_free(&r[0]);
  MPI_Request_free(&r[1]);
  buf_free(o);
  buf_free(i);
  free(w);
}

/* 10,000 outstanding sends (and receives). */
static void many_outstanding(MPI_Comm comm) {
  enum { M = 10000, N = 64 };
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  float* out = buf_alloc(sizeof(float) * M * N);
  float* in = buf_alloc(sizeof(float) * M * N);
  MPI_Request* r = malloc(sizeof(MPI_Request) * 2 * M);
  buf_fill(out, sizeof(float) * M * N, 4, (uint64_t)rank);
  for (int k = 0; k < M; ++k) MPI_Isend(out + (size_t)k * N, N, MPI_FLOAT, right, k % 1000, comm, &r[M + k]);
  for (int k = 0; k < M; ++k) MPI_Irecv(in + (size_t)k * N, N, MPI_FLOAT, left, k % 1000, comm, &r[k]);
  MPI_Waitall(2 * M, r, MPI_STATUSES_IGNORE);
  float* want = malloc(sizeof(float) * M * N);
  fill(want, sizeof(float) * M * N, 4, (uint64_t)left);
  CHECK(buf_compare(in, want, sizeof(float) * M * N), "10,000 outstanding");
  buf_free(out);
  buf_free(in);
  free(want);
  free(r);
}

/* A receive of another datatype than the sender's (floats received as MPIZip's bf16, a pairing MPI
 * calls erroneous but does not check) gets the bytes that were sent, as the MPI library delivers
 * them, protocol or not: MPI_SUCCESS, the element count of the receive's datatype, nothing written
 * past the message. Larger than MPIZIP_BARE_BYTES, so that it takes the protocol where it is on. */
static void type_mismatch(MPI_Comm comm) {
  MPI_Comm c;
  MPI_Comm_dup(comm, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { kFloats = 20000 };  /* 80,000 bytes */
  float* out = buf_alloc(kFloats * sizeof(float));
  uint16_t* in = buf_alloc(4 * kFloats * sizeof(uint16_t));
  buf_fill(out, kFloats * sizeof(float), 4, 1);
  buf_set(in, 0x77, 4 * kFloats * sizeof(uint16_t));
  MPI_Request r;
  MPI_Isend(out, kFloats, MPI_FLOAT, right, 1, c, &r);
  MPI_Status st;
  int rc = MPI_Recv(in, 2 * kFloats, t_bf16, left, 1, c, &st);
  int cls;
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_SUCCESS, "mismatched receive returned class %d", cls);
  int n = -1;
  MPI_Get_count(&st, t_bf16, &n);
  CHECK(n == 2 * kFloats, "mismatched receive counted %d bf16 elements", n);
  float* want = malloc(kFloats * sizeof(float));
  fill(want, kFloats * sizeof(float), 4, 1);
  CHECK(buf_compare(in, want, kFloats * sizeof(float)), "mismatched receive: other bytes");
  CHECK(buf_byte(in, kFloats * sizeof(float)) == 0x77, "mismatched receive wrote past the message");
  free(want);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  buf_free(out);
  buf_free(in);
  MPI_Comm_free(&c);
}

/* MPI_UINT16_T declared as bf16 through the communicator attribute. */
static void declared_types(MPI_Comm comm) {
  int* key = (int*)dlsym(RTLD_DEFAULT, "MPIZip_uint16_element_keyval");
  MPI_Comm c;
  MPI_Comm_dup(comm, &c);
  if (key != NULL) MPI_Comm_set_attr(c, *key, (void*)(intptr_t)1 /* MPIZIP_ELEM_BF16 */);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { N = 300000 };
  uint16_t* o = buf_alloc(2 * N);
  uint16_t* i = buf_alloc(2 * N);
  uint16_t* w = malloc(2 * N);
  buf_fill(o, 2 * N, 2, (uint64_t)rank + 11);
  fill(w, 2 * N, 2, (uint64_t)left + 11);
  MPI_Sendrecv(o, N, MPI_UINT16_T, right, 0, i, N, MPI_UINT16_T, left, 0, c, MPI_STATUS_IGNORE);
  CHECK(buf_compare(i, w, 2 * N), "declared bf16");
  MPI_Comm_free(&c);
  buf_free(o);
  buf_free(i);
  free(w);
}

/* MPI_Comm_free with operations pending: they complete normally (MPI keeps the communicator for
 * them). A receive posted, then its communicator freed before the message is even sent; a send
 * started, then its communicator freed before the wait. 256 KiB of floats: above the bare size and
 * the inline size, so the payload travels apart from the match message, through the transport the
 * communicator's context owns. */
static void freed_while_pending(MPI_Comm comm) {
  enum { N = 64 * 1024 };
  const int pair = rank ^ 1;
  MPI_Comm c;
  MPI_Comm_dup(comm, &c); /* collective: every rank, the odd one out of an odd-sized run too */
  if (pair >= size) {
    MPI_Comm_free(&c);
    MPI_Barrier(comm);
    MPI_Barrier(comm);
    return;
  }
  float* buf = buf_alloc(sizeof(float) * N);
  float* want = malloc(sizeof(float) * N);
  CHECK(want != NULL, "out of host memory");
  fill(want, sizeof(float) * N, 4, 4242 + (uint64_t)(rank & ~1));
  MPI_Request r;
  MPI_Status st;
  if (rank & 1) {
    buf_set(buf, 0, sizeof(float) * N);
    MPI_Irecv(buf, N, MPI_FLOAT, pair, 9, c, &r);
    MPI_Comm_free(&c);
    MPI_Barrier(comm); /* freed here before the sender starts */
    MPI_Barrier(comm);
    MPI_Wait(&r, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_FLOAT, &got);
    CHECK(got == N && st.MPI_SOURCE == pair && st.MPI_TAG == 9, "freed communicator: status %d %d %d",
          got, st.MPI_SOURCE, st.MPI_TAG);
    CHECK(buf_compare(buf, want, sizeof(float) * N), "freed communicator: received data");
  } else {
    buf_put(buf, want, sizeof(float) * N);
    MPI_Barrier(comm);
    MPI_Isend(buf, N, MPI_FLOAT, pair, 9, c, &r);
    MPI_Comm_free(&c);
    MPI_Barrier(comm);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  buf_free(buf);
  free(want);
}

/* A posted receive must progress while its owner sits in a call MPIZip does not intercept: the
 * sender's blocking send of a large message waits for it, and the receiver waits in MPI_Barrier
 * for the sender (MPI matches a posted receive from inside any call; so must MPIZip). */
static void progress_behind_barrier(MPI_Comm comm) {
  enum { N = 2 << 20 };
  float* buf = buf_alloc(sizeof(float) * N);
  buf_fill(buf, sizeof(float) * N, 4, 99);
  int go = 1; /* a handshake: host memory */
  if (rank == 0) {
    MPI_Request r;
    MPI_Irecv(buf, N, MPI_FLOAT, 1, 31, comm, &r);
    MPI_Send(&go, 1, MPI_INT, 1, 32, comm); /* the receive is posted: now send */
    MPI_Barrier(comm);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    MPI_Recv(&go, 1, MPI_INT, 0, 32, comm, MPI_STATUS_IGNORE);
    MPI_Send(buf, N, MPI_FLOAT, 0, 31, comm);
    MPI_Barrier(comm);
  } else {
    MPI_Barrier(comm);
  }
  buf_free(buf);
}

/* The empty status for a null request (MPI 3.1, 3.7.3): source MPI_ANY_SOURCE, tag MPI_ANY_TAG,
 * error MPI_SUCCESS, count 0, not cancelled; from every call that takes one, alone or among
 * others, with the protocol's requests beside them in the arrays. Each status is filled with other
 * bytes first, so that a field left unset shows. MPI_ERROR is checked only under MPIZip: Open MPI
 * leaves it as it was in the single-completion calls and MPICH in those and MPI_Waitall/Testall
 * (the caller reads what its stack held), while MPIZip must set it (issue 32). */
static void check_empty(const MPI_Status* st, const char* call) {
  int count = -1, cancelled = -1;
  MPI_Get_count(st, MPI_FLOAT, &count);
  MPI_Test_cancelled(st, &cancelled);
  CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0 && !cancelled,
        "%s of a null request: source %d tag %d count %d cancelled %d, not the empty status", call,
        st->MPI_SOURCE, st->MPI_TAG, count, cancelled);
  if (mpizip_on) {
    CHECK(st->MPI_ERROR == MPI_SUCCESS, "%s of a null request: MPI_ERROR %d, not MPI_SUCCESS", call,
          st->MPI_ERROR);
  }
}

static void garble(MPI_Status* st, int n) {
  memset(st, 0x5a, sizeof(MPI_Status) * (size_t)n);
  for (int i = 0; i < n; ++i) st[i].MPI_ERROR = 12345;
}

static void null_statuses(MPI_Comm comm) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Request r = MPI_REQUEST_NULL, rs[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status st, sts[4];
  int flag = 0, idx = 0;
  garble(&st, 1);
  MPI_Request_get_status(r, &flag, &st);
  CHECK(flag, "MPI_Request_get_status of a null request: flag 0");
  check_empty(&st, "MPI_Request_get_status");
  garble(&st, 1);
  MPI_Wait(&r, &st);
  check_empty(&st, "MPI_Wait");
  garble(&st, 1);
  flag = 0;
  MPI_Test(&r, &flag, &st);
  CHECK(flag, "MPI_Test of a null request: flag 0");
  check_empty(&st, "MPI_Test");
  garble(&st, 1);
  MPI_Waitany(4, rs, &idx, &st);
  CHECK(idx == MPI_UNDEFINED, "MPI_Waitany of null requests: index %d", idx);
  check_empty(&st, "MPI_Waitany");
  garble(&st, 1);
  flag = 0;
  MPI_Testany(4, rs, &idx, &flag, &st);
  CHECK(flag && idx == MPI_UNDEFINED, "MPI_Testany of null requests: flag %d index %d", flag, idx);
  check_empty(&st, "MPI_Testany");
  garble(sts, 4);
  MPI_Waitall(4, rs, sts);
  for (int i = 0; i < 4; ++i) check_empty(&sts[i], "MPI_Waitall");
  garble(sts, 4);
  flag = 0;
  MPI_Testall(4, rs, &flag, sts);
  CHECK(flag, "MPI_Testall of null requests: flag 0");
  for (int i = 0; i < 4; ++i) check_empty(&sts[i], "MPI_Testall");
  /* Null requests among a protocol receive and send (20,000 floats, above MPIZIP_BARE_BYTES). */
  enum { N = 20000 };
  float* out = buf_alloc(sizeof(float) * N);
  float* in = buf_alloc(sizeof(float) * N);
  float* want = malloc(sizeof(float) * N);
  buf_fill(out, sizeof(float) * N, 4, (uint64_t)rank + 404);
  fill(want, sizeof(float) * N, 4, (uint64_t)left + 404);
  for (int form = 0; form < 2; ++form) {
    buf_set(in, 0, sizeof(float) * N);
    MPI_Irecv(in, N, MPI_FLOAT, left, 90 + form, comm, &rs[1]);
    MPI_Isend(out, N, MPI_FLOAT, right, 90 + form, comm, &rs[3]);
    rs[0] = rs[2] = MPI_REQUEST_NULL;
    garble(sts, 4);
    if (form == 0) {
      MPI_Waitall(4, rs, sts);
    } else {
      flag = 0;
      while (!flag) MPI_Testall(4, rs, &flag, sts);
    }
    const char* call = form == 0 ? "MPI_Waitall among messages" : "MPI_Testall among messages";
    check_empty(&sts[0], call);
    check_empty(&sts[2], call);
    int count = -1;
    MPI_Get_count(&sts[1], MPI_FLOAT, &count);
    CHECK(count == N && sts[1].MPI_SOURCE == left && sts[1].MPI_TAG == 90 + form, "%s: receive status %d %d %d",
          call, count, sts[1].MPI_SOURCE, sts[1].MPI_TAG);
    CHECK(buf_compare(in, want, sizeof(float) * N), "%s: data", call);
  }
  buf_free(out);
  buf_free(in);
  free(want);
  MPI_Barrier(comm);
}

#ifndef P2P_DEVICE_BUFFERS
/* A derived datatype freed by the application while operations that use it are pending or
 * persistent: MPI_Type_free only marks it for deallocation (MPI 3.1, 4.1.9), the operations go on
 * with it. Every message above MPIZIP_BARE_BYTES: the protocol's path when forced. Host buffers
 * only: the device suite carries contiguous datatypes. */
enum { kStrided = 2000, kPendingFreed = 16 };

/* Element i of a strided message from `from`, round `k`. */
static double strided_value(int from, int k, int i) { return from * 1e6 + k * 1e3 + i * 0.5; }

/* Checks that every `stride`-th element (of `esize` bytes: double or float) holds its value and
 * the others are still -1. */
static void check_strided(const void* buf, int esize, int stride, int from, int k, const char* what) {
  for (int i = 0; i < kStrided * stride; ++i) {
    double got = esize == 8 ? ((const double*)buf)[i] : ((const float*)buf)[i];
    double want = i % stride ? -1.0 : esize == 8 ? strided_value(from, k, i / stride)
                                                 : (double)(float)strided_value(from, k, i / stride);
    if (got != want) {
      CHECK(0, "%s (from %d, round %d): element %d is %g, want %g", what, from, k, i, got, want);
      return;
    }
  }
}

static void fill_strided(void* buf, int esize, int stride, int from, int k) {
  for (int i = 0; i < kStrided * stride; ++i) {
    double v = i % stride ? -1.0 : strided_value(from, k, i / stride);
    if (esize == 8) ((double*)buf)[i] = v;
    else ((float*)buf)[i] = (float)v;
  }
}

static void freed_datatypes(MPI_Comm comm) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  /* Persistent: an hvector of doubles (16,000 bytes of payload) and a vector of floats (8,000). */
  for (int kind = 0; kind < 2; ++kind) {
    const int esize = kind == 0 ? 8 : 4, stride = kind == 0 ? 3 : 2;
    MPI_Datatype st_send, st_recv;
    if (kind == 0) {
      MPI_Type_create_hvector(kStrided, 1, 3 * (MPI_Aint)sizeof(double), MPI_DOUBLE, &st_send);
      MPI_Type_create_hvector(kStrided, 1, 3 * (MPI_Aint)sizeof(double), MPI_DOUBLE, &st_recv);
    } else {
      MPI_Type_vector(kStrided, 1, 2, MPI_FLOAT, &st_send);
      MPI_Type_vector(kStrided, 1, 2, MPI_FLOAT, &st_recv);
    }
    MPI_Type_commit(&st_send);
    MPI_Type_commit(&st_recv);
    void* out = malloc((size_t)esize * stride * kStrided);
    void* in = malloc((size_t)esize * stride * kStrided);
    MPI_Request r[2];
    MPI_Recv_init(in, 1, st_recv, left, 70 + kind, comm, &r[0]);
    MPI_Send_init(out, 1, st_send, right, 70 + kind, comm, &r[1]);
    MPI_Type_free(&st_send);
    MPI_Type_free(&st_recv);
    CHECK(st_send == MPI_DATATYPE_NULL && st_recv == MPI_DATATYPE_NULL, "MPI_Type_free left the handles");
    for (int k = 0; k < 4; ++k) {
      fill_strided(out, esize, stride, rank, k);
      for (int i = 0; i < kStrided * stride; ++i) { /* -1 everywhere */
        if (esize == 8) ((double*)in)[i] = -1.0;
        else ((float*)in)[i] = -1.0f;
      }
      int rc = MPI_Startall(2, r);
      CHECK(rc == MPI_SUCCESS, "persistent %s with its datatype freed: MPI_Startall returned %d",
            kind == 0 ? "hvector of doubles" : "vector of floats", rc);
      MPI_Status st[2];
      rc = MPI_Waitall(2, r, st);
      CHECK(rc == MPI_SUCCESS, "persistent, datatype freed: MPI_Waitall returned %d", rc);
      int elements = -1; /* of the basic type: the receive's own is freed */
      MPI_Get_elements(&st[0], kind == 0 ? MPI_DOUBLE : MPI_FLOAT, &elements);
      CHECK(elements == kStrided && st[0].MPI_SOURCE == left && st[0].MPI_TAG == 70 + kind,
            "persistent, datatype freed: %d elements from %d tag %d", elements, st[0].MPI_SOURCE, st[0].MPI_TAG);
      check_strided(in, esize, stride, left, k,
                    kind == 0 ? "persistent hvector of doubles, datatype freed" : "persistent vector of floats, datatype freed");
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    free(out);
    free(in);
  }
  /* Non-blocking: kPendingFreed receives of an hvector of doubles from every other rank, posted,
   * the datatype freed, then (after a barrier: all pending) the others send theirs with a vector
   * datatype freed right after each MPI_Isend. */
  const int peers = size - 1, n = peers * kPendingFreed;
  const size_t span = 3 * (size_t)kStrided; /* doubles a message spans */
  double* in = malloc(sizeof(double) * span * (size_t)n);
  double* out = malloc(sizeof(double) * span * (size_t)n);
  MPI_Request* r = malloc(sizeof(MPI_Request) * 2 * (size_t)n);
  for (size_t i = 0; i < span * (size_t)n; ++i) in[i] = -1.0;
  MPI_Datatype hv;
  MPI_Type_create_hvector(kStrided, 1, 3 * (MPI_Aint)sizeof(double), MPI_DOUBLE, &hv);
  MPI_Type_commit(&hv);
  for (int p = 0; p < peers; ++p) {
    const int from = (rank + 1 + p) % size;
    for (int k = 0; k < kPendingFreed; ++k) {
      const int j = p * kPendingFreed + k;
      MPI_Irecv(in + (size_t)j * span, 1, hv, from, 300 + k, comm, &r[j]);
    }
  }
  MPI_Type_free(&hv);
  MPI_Barrier(comm);
  for (int p = 0; p < peers; ++p) {
    const int to = (rank + 1 + p) % size;
    for (int k = 0; k < kPendingFreed; ++k) {
      const int j = p * kPendingFreed + k;
      fill_strided(out + (size_t)j * span, 8, 3, rank, k);
      MPI_Datatype v;
      MPI_Type_vector(kStrided, 1, 3, MPI_DOUBLE, &v);
      MPI_Type_commit(&v);
      MPI_Isend(out + (size_t)j * span, 1, v, to, 300 + k, comm, &r[n + j]);
      MPI_Type_free(&v);
    }
  }
  MPI_Status* st = malloc(sizeof(MPI_Status) * 2 * (size_t)n);
  int rc = MPI_Waitall(2 * n, r, st);
  CHECK(rc == MPI_SUCCESS, "pending operations, datatypes freed: MPI_Waitall returned %d", rc);
  for (int p = 0; p < peers; ++p) {
    const int from = (rank + 1 + p) % size;
    for (int k = 0; k < kPendingFreed; ++k) {
      const int j = p * kPendingFreed + k;
      CHECK(st[j].MPI_SOURCE == from && st[j].MPI_TAG == 300 + k, "pending receive %d: source %d tag %d", j,
            st[j].MPI_SOURCE, st[j].MPI_TAG);
      check_strided(in + (size_t)j * span, 8, 3, from, k, "pending receive of a freed hvector");
    }
  }
  free(st);
  free(r);
  free(in);
  free(out);
  MPI_Barrier(comm);
}
#endif

#ifdef P2P_DEVICE_BUFFERS
static int gpu_count(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

/* Whether the MPI library reads and writes device memory itself (Open MPI built with CUDA). */
static int mpi_cuda_aware(void) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support();
#else
  return 0;
#endif
}
#endif

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--help") == 0) {
    printf("usage: mpirun -np 2..4 %s [MAX_BYTES]\n"
           "MPI point-to-point semantics, messages of up to MAX_BYTES (default 16777216, at most "
           "1073741824)\n",
           PROGRAM);
#ifdef P2P_DEVICE_BUFFERS
    printf("in device memory (cudaMalloc; every rank on GPU 0). Needs MPIZip preloaded or a "
           "CUDA-aware MPI; exits 77 (skipped) without them or without a GPU.\n"
           "       %s --gpu-present: exits 0 where there is a GPU, 77 elsewhere (no MPI).\n",
           PROGRAM);
#endif
    return 0;
  }
#ifdef P2P_DEVICE_BUFFERS
  if (argc > 1 && strcmp(argv[1], "--gpu-present") == 0) return gpu_count() > 0 ? 0 : 77;
#endif
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  setup_types();
#ifdef P2P_DEVICE_BUFFERS
  /* Every rank on GPU 0 (the ranks share it), selected after MPI_Init. Without a GPU, or with
   * neither MPIZip nor a CUDA-aware MPI library to carry device buffers, every rank skips. */
  int skip = gpu_count() == 0 ? 1 : !mpizip_on && !mpi_cuda_aware() ? 2 : 0, why = 0;
  MPI_Allreduce(&skip, &why, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (why != 0) {
    if (rank == 0) {
      printf("%s: skipped: %s\n", PROGRAM,
             why == 1 ? "no GPU"
                      : "device buffers need MPIZip preloaded (the MPI library is not CUDA-aware)");
    }
    MPI_Finalize();
    return 77;
  }
  CUDA(cudaSetDevice(0));
#endif
  size_t max_bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : (size_t)16 << 20;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  /* P2P_TRACE=1 names each step on stderr, to find where a failing run stops. */
#define STEP(call)                                                              \
  do {                                                                          \
    if (getenv("P2P_TRACE")) fprintf(stderr, "rank %d: %s\n", rank, #call);     \
    call;                                                                       \
  } while (0)
  STEP(exchange_sizes(comm, max_bytes));
  STEP(wildcards(comm));
  STEP(ordering(comm));
  STEP(probes(comm));
  STEP(truncation(comm));
  STEP(completion(comm));
  STEP(combined(comm));
  STEP(many_outstanding(comm));
  STEP(type_mismatch(comm));
  STEP(declared_types(comm));
  STEP(progress_behind_barrier(comm));
  STEP(freed_while_pending(comm));
  STEP(null_statuses(comm));
#ifndef P2P_DEVICE_BUFFERS
  STEP(freed_datatypes(comm));
#endif
#undef STEP
  MPI_Comm_free(&comm);
  MPI_Barrier(MPI_COMM_WORLD);
#ifdef P2P_DEVICE_BUFFERS
  if (rank == 0) {
    printf("%s: ok on %d ranks (MPIZip %s), device buffers up to %zu bytes\n", PROGRAM, size,
           mpizip_on ? "active" : "absent", max_bytes);
  }
#else
  if (rank == 0) printf("p2p_semantics: ok on %d ranks (MPIZip %s)\n", size, mpizip_on ? "active" : "absent");
#endif
  MPI_Finalize();
  return failures;
}
