/* Datatype pairs: MPI requires only that the two sides of a message use datatypes of the same type
 * signature, not the same datatype. For each protocol element type (float, double, and MPIZip's
 * bf16, fp16, e4m3, e5m2, or the integer types of the same signatures without MPIZip), and for
 * int, char, byte and long long (raw bytes where every datatype takes the protocol), n elements
 * travel between every pair of datatype kinds below (basic, contiguous, vector, hvector, indexed,
 * hindexed with blocks in reverse address order, block-indexed, subarray, struct, dup, resized), as
 * sender or receiver, for n = 0, 1, 17, 1000, 1018 (every pair) and 65530, 100000, 262144 (each kind
 * against the basic type, both ways), into receives of the same size and of 3 elements more. The
 * receiver checks every element, that every other byte of its buffer is untouched, and the status
 * (MPI_Get_count, MPI_Get_elements, source, tag, MPI_ERROR left alone by receives and by probes as
 * the MPI library's own probes do, tests/mpi/probe_error.h). Send and receive forms
 * rotate: MPI_Send, MPI_Isend, MPI_Ssend; MPI_Recv, MPI_Irecv, MPI_Mprobe + MPI_Mrecv,
 * MPI_Probe + MPI_Recv. Ranks pair up (0-1, 2-3).
 *
 * With MPIZIP_STATS=1 and DTYPE_PAIRS_EXPECT_COMPRESSED=1 (dtype_pairs.sh, protocol forced with
 * host compression) it also checks, through MPIZip_Comm_traffic, that the large messages were
 * compressed.
 *
 * Built with -DDTYPE_PAIRS_DEVICE (tests/gpu/dtype_pairs_device), every buffer handed to MPI is
 * device memory (cudaMalloc), filled and checked through host copies, gaps included. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/mpizip.h"
#include "tests/mpi/probe_error.h"
#define CHECK_ABORT_AFTER 10
#include "tests/mpi/check.h"

#ifdef DTYPE_PAIRS_DEVICE
#include <cuda_runtime_api.h>
/* The buffer MPI sees: a device copy of `host` (span bytes). */
static void* to_mpi(const uint8_t* host, size_t span) {
  void* d = NULL;
  if (cudaMalloc(&d, span) != cudaSuccess) abort();
  cudaMemcpy(d, host, span, cudaMemcpyHostToDevice);
  return d;
}
static void from_mpi(uint8_t* host, void* d, size_t span) {
  cudaMemcpy(host, d, span, cudaMemcpyDeviceToHost);
  cudaFree(d);
}
#else
static void* to_mpi(const uint8_t* host, size_t span) { (void)span; return (void*)host; }
static void from_mpi(uint8_t* host, void* d, size_t span) { (void)host; (void)d; (void)span; }
#endif

static int rank, size;
static int probe_error[2]; /* MPI_ERROR after a probe, a matched probe, of a status preset to 4242 */

enum { K_BASIC, K_CONTIG, K_VECTOR, K_HVECTOR, K_INDEXED, K_HINDEXED, K_BLOCKINDEXED, K_SUBARRAY,
       K_STRUCT, K_DUP, K_RESIZED, K_COUNT };
static const char* kind_name[K_COUNT] = {"basic", "contig", "vector", "hvector", "indexed",
                                         "hindexed", "blockindexed", "subarray", "struct", "dup",
                                         "resized"};

/* n elements of `t` (esize bytes) laid out as `kind`: the datatype and count to pass to MPI, the
 * byte offset of each element in signature order, and the bytes the buffer must span. */
typedef struct {
  MPI_Datatype type;
  int count;
  int derived;   /* type must be freed */
  size_t* offsets;
  size_t span;
} Layout;

static Layout make_layout(int kind, int n, MPI_Datatype t, int e) {
  Layout l;
  l.offsets = malloc(sizeof(size_t) * (size_t)(n > 0 ? n : 1));
  l.derived = 1;
  l.count = 1;
  if (n == 0 && kind != K_BASIC) kind = K_CONTIG; /* every kind of 0 elements is the empty one */
  switch (kind) {
    case K_BASIC:
      l.type = t; l.count = n; l.derived = 0;
      for (int i = 0; i < n; ++i) l.offsets[i] = (size_t)i * e;
      break;
    case K_CONTIG:
      MPI_Type_contiguous(n, t, &l.type);
      for (int i = 0; i < n; ++i) l.offsets[i] = (size_t)i * e;
      break;
    case K_VECTOR:
    case K_DUP: {
      MPI_Datatype v;
      MPI_Type_vector(n, 1, 2, t, &v);
      if (kind == K_DUP) {
        MPI_Type_dup(v, &l.type);
        MPI_Type_free(&v);
      } else {
        l.type = v;
      }
      for (int i = 0; i < n; ++i) l.offsets[i] = (size_t)2 * i * e;
      break;
    }
    case K_HVECTOR:
      MPI_Type_create_hvector(n, 1, (MPI_Aint)3 * e, t, &l.type);
      for (int i = 0; i < n; ++i) l.offsets[i] = (size_t)3 * i * e;
      break;
    case K_INDEXED:
    case K_HINDEXED: {
      int* lens = malloc(sizeof(int) * (size_t)n);
      int* disps = malloc(sizeof(int) * (size_t)n);
      MPI_Aint* hdisps = malloc(sizeof(MPI_Aint) * (size_t)n);
      int nb = 0, placed = 0;
      while (placed < n) {
        int len = kind == K_INDEXED ? nb % 3 + 1 : 2;
        if (len > n - placed) len = n - placed;
        lens[nb] = len;
        placed += len;
        ++nb;
      }
      /* indexed: blocks in order with a one-element gap after each; hindexed: blocks of 2 in
       * reverse address order, 3 elements apart. */
      int at = 0, k = 0;
      for (int b = 0; b < nb; ++b) {
        int d = kind == K_INDEXED ? at : (nb - 1 - b) * 3;
        disps[b] = d;
        hdisps[b] = (MPI_Aint)d * e;
        for (int j = 0; j < lens[b]; ++j) l.offsets[k++] = (size_t)(d + j) * e;
        at += lens[b] + 1;
      }
      if (kind == K_INDEXED) {
        MPI_Type_indexed(nb, lens, disps, t, &l.type);
      } else {
        MPI_Type_create_hindexed(nb, lens, hdisps, t, &l.type);
      }
      free(lens); free(disps); free(hdisps);
      break;
    }
    case K_BLOCKINDEXED: {
      int* disps = malloc(sizeof(int) * (size_t)n);
      for (int i = 0; i < n; ++i) {
        disps[i] = 2 * i + 1;
        l.offsets[i] = (size_t)(2 * i + 1) * e;
      }
      MPI_Type_create_indexed_block(n, 1, disps, t, &l.type);
      free(disps);
      break;
    }
    case K_SUBARRAY: {
      int sizes[2] = {2, n + 3}, subsizes[2] = {1, n}, starts[2] = {1, 2};
      MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, t, &l.type);
      for (int i = 0; i < n; ++i) l.offsets[i] = (size_t)(n + 3 + 2 + i) * e;
      break;
    }
    case K_STRUCT: {
      int k = n / 2;
      int lens[2] = {k, n - k};
      MPI_Aint disps[2] = {0, (MPI_Aint)(k + 1) * e};
      MPI_Datatype types[2] = {t, t};
      MPI_Type_create_struct(2, lens, disps, types, &l.type);
      for (int i = 0; i < n; ++i) l.offsets[i] = (size_t)(i < k ? i : i + 1) * e;
      break;
    }
    case K_RESIZED:
      MPI_Type_create_resized(t, 0, (MPI_Aint)2 * e, &l.type);
      l.count = n;
      for (int i = 0; i < n; ++i) l.offsets[i] = (size_t)2 * i * e;
      break;
  }
  if (l.derived) MPI_Type_commit(&l.type);
  MPI_Aint lb, extent, tlb, textent;
  MPI_Type_get_extent(l.type, &lb, &extent);
  MPI_Type_get_true_extent(l.type, &tlb, &textent);
  l.span = l.count > 0 ? (size_t)((l.count - 1) * extent + tlb + textent) : 0;
  for (int i = 0; i < n; ++i) {
    if (l.offsets[i] + (size_t)e > l.span) l.span = l.offsets[i] + (size_t)e;
  }
  l.span += 16;
  return l;
}

static void free_layout(Layout* l) {
  if (l->derived) MPI_Type_free(&l->type);
  free(l->offsets);
}

/* Float-like values (U[-1,1] in fp32, truncated to the element's width), seeded. */
static uint64_t rng;
static uint32_t next_u32(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(rng >> 32);
}
static void value(uint8_t* out, int e) {
  float f = (float)((next_u32() >> 8) * (2.0 / 16777216.0) - 1.0);
  uint32_t u;
  memcpy(&u, &f, 4);
  if (e == 8) {
    double d = (double)f * (1.0 + 1e-9 * (next_u32() & 1023));
    memcpy(out, &d, 8);
  } else if (e == 4) {
    memcpy(out, &u, 4);
  } else if (e == 2) {
    uint16_t h = (uint16_t)(u >> 16);
    memcpy(out, &h, 2);
  } else {
    out[0] = (uint8_t)(u >> 24);
  }
}

static const uint8_t kGapSend = 0xEE, kGapRecv = 0x5A;
static long long sent_large; /* messages of 4 KiB or more of a float element type */
static long long sent_all;   /* every message of at least one element sent */
static int float_element;    /* the element type now sent is one MPIZip compresses */

static void do_send(const Layout* l, int n, int e, int peer, int tag, int form, uint64_t seed) {
  uint8_t* buf = malloc(l->span);
  memset(buf, kGapSend, l->span);
  rng = seed;
  for (int i = 0; i < n; ++i) value(buf + l->offsets[i], e);
  void* mbuf = to_mpi(buf, l->span);
  int rc;
  if (form == 0) {
    rc = MPI_Send(mbuf, l->count, l->type, peer, tag, MPI_COMM_WORLD);
  } else if (form == 1) {
    MPI_Request r;
    rc = MPI_Isend(mbuf, l->count, l->type, peer, tag, MPI_COMM_WORLD, &r);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Ssend(mbuf, l->count, l->type, peer, tag, MPI_COMM_WORLD);
  }
  from_mpi(buf, mbuf, l->span);
  CHECK(rc == MPI_SUCCESS, "send rc %d", rc);
  if (float_element && (size_t)n * e >= 4096) ++sent_large;
  if (n > 0) ++sent_all; /* an empty datatype (0 elements of a derived kind) stays plain */
  free(buf);
}

static void do_recv(const Layout* l, int n, int capacity, int e, MPI_Datatype elem, int peer,
                    int tag, int form, uint64_t seed, const char* what) {
  uint8_t* buf = malloc(l->span);
  memset(buf, kGapRecv, l->span);
  void* mbuf = to_mpi(buf, l->span);
  MPI_Status st;
  st.MPI_ERROR = 4242;
  int rc;
  if (form == 0) {
    rc = MPI_Recv(mbuf, l->count, l->type, peer, tag, MPI_COMM_WORLD, &st);
  } else if (form == 1) {
    MPI_Request r;
    rc = MPI_Irecv(mbuf, l->count, l->type, peer, tag, MPI_COMM_WORLD, &r);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, &st);
  } else if (form == 2) {
    MPI_Message m;
    MPI_Status ps;
    ps.MPI_ERROR = 4242;
    rc = MPI_Mprobe(peer, tag, MPI_COMM_WORLD, &m, &ps);
    int pe = -1;
    MPI_Get_elements(&ps, elem, &pe);
    CHECK(rc == MPI_SUCCESS && ps.MPI_ERROR == probe_error[1] && pe == n && ps.MPI_TAG == tag,
          "%s: mprobe rc %d error %d elements %d tag %d", what, rc, ps.MPI_ERROR, pe, ps.MPI_TAG);
    if (rc == MPI_SUCCESS) rc = MPI_Mrecv(mbuf, l->count, l->type, &m, &st);
  } else {
    MPI_Status ps;
    ps.MPI_ERROR = 4242;
    rc = MPI_Probe(peer, tag, MPI_COMM_WORLD, &ps);
    int pe = -1;
    MPI_Get_elements(&ps, elem, &pe);
    CHECK(rc == MPI_SUCCESS && ps.MPI_ERROR == probe_error[0] && pe == n, "%s: probe rc %d error %d elements %d",
          what, rc, ps.MPI_ERROR, pe);
    rc = MPI_Recv(mbuf, l->count, l->type, peer, tag, MPI_COMM_WORLD, &st);
  }
  from_mpi(buf, mbuf, l->span);
  CHECK(rc == MPI_SUCCESS, "%s: receive rc %d", what, rc);
  CHECK(st.MPI_ERROR == 4242, "%s: MPI_ERROR changed to %d", what, st.MPI_ERROR);
  CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == tag, "%s: source %d tag %d", what, st.MPI_SOURCE,
        st.MPI_TAG);
  int elements = -1, count = -1;
  MPI_Get_elements(&st, l->type, &elements);
  MPI_Get_count(&st, l->type, &count);
  /* Elements of the receive's datatype: whole items count, a partial item makes it undefined. */
  int per = l->count > 0 ? capacity / l->count : 0;
  int want = per == 0 ? 0 : (n % per == 0 ? n / per : MPI_UNDEFINED);
  CHECK(elements == n, "%s: MPI_Get_elements %d, want %d", what, elements, n);
  CHECK(count == want, "%s: MPI_Get_count %d, want %d", what, count, want);
  /* Every element where it belongs, every other byte untouched. */
  uint8_t* expect = malloc(l->span);
  memset(expect, kGapRecv, l->span);
  rng = seed;
  for (int i = 0; i < n; ++i) value(expect + l->offsets[i], e);
  if (memcmp(buf, expect, l->span) != 0) {
    size_t at = 0;
    while (buf[at] == expect[at]) ++at;
    CHECK(0, "%s: buffer differs at byte %zu of %zu (got 0x%02x, want 0x%02x)", what, at, l->span,
          buf[at], expect[at]);
  }
  free(expect);
  free(buf);
}

int main(int argc, char** argv) {
#ifdef DTYPE_PAIRS_DEVICE
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) return 77; /* before MPI: skipped */
#endif
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  probe_error[0] = library_probe_error(4242, 0, (rank ^ 1) < size ? rank ^ 1 : rank, MPI_COMM_WORLD);
  probe_error[1] = library_probe_error(4242, 1, (rank ^ 1) < size ? rank ^ 1 : rank, MPI_COMM_WORLD);
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "MPIZip_Active");
  const int mpizip_on = active != NULL && active();
  MPI_Datatype* p;
  /* The float element types, then types the protocol carries as raw bytes. */
  enum { kTypes = 10, kFloatTypes = 6 };
  MPI_Datatype types[kTypes] = {MPI_FLOAT, MPI_DOUBLE, MPI_UINT16_T, MPI_UINT16_T, MPI_UINT8_T,
                                MPI_UINT8_T, MPI_INT, MPI_CHAR, MPI_BYTE, MPI_LONG_LONG};
  const char* syms[kFloatTypes] = {NULL, NULL, "MPIZip_bf16", "MPIZip_fp16", "MPIZip_fp8_e4m3",
                                   "MPIZip_fp8_e5m2"};
  const char* names[kTypes] = {"float", "double", "bf16", "fp16", "e4m3", "e5m2",
                               "int", "char", "byte", "long long"};
  for (int i = 2; i < 6; ++i) {
    if (mpizip_on && (p = (MPI_Datatype*)dlsym(RTLD_DEFAULT, syms[i])) != NULL) types[i] = *p;
  }
  const int sizes[kTypes] = {4, 8, 2, 2, 1, 1, 4, 1, 1, 8};
  const int small[] = {0, 1, 17, 1000, 1018};
  const int large[] = {65530, 100000, 262144};
  const int partner = rank ^ 1;
  const int sender = rank % 2 == 0;
  long long messages = 0;
  if (partner < size) {
    for (int ti = 0; ti < kTypes; ++ti) {
      const int e = sizes[ti];
      float_element = ti < kFloatTypes;
      for (int ci = 0; ci < (int)(sizeof small / sizeof *small) + (int)(sizeof large / sizeof *large); ++ci) {
        const int is_large = ci >= (int)(sizeof small / sizeof *small);
        const int n = is_large ? large[ci - (int)(sizeof small / sizeof *small)] : small[ci];
        for (int sk = 0; sk < K_COUNT; ++sk) {
          for (int rk = 0; rk < K_COUNT; ++rk) {
            if (is_large && sk != K_BASIC && rk != K_BASIC) continue;
            for (int extra = 0; extra <= 3; extra += 3) {
              if (is_large && extra && sk != K_BASIC && rk != K_BASIC) continue;
              const int tag = (int)(messages % 30000);
              const uint64_t seed = (uint64_t)messages * 7919 + 17;
              const int form = (int)(messages % 12);
              char what[160];
              snprintf(what, sizeof what, "%s n=%d %s -> %s%s form %d", names[ti], n, kind_name[sk],
                       kind_name[rk], extra ? " (receive 3 larger)" : "", form);
              if (sender) {
                Layout l = make_layout(sk, n, types[ti], e);
                do_send(&l, n, e, partner, tag, form % 3, seed);
                free_layout(&l);
              } else {
                Layout l = make_layout(rk, n + extra, types[ti], e);
                do_recv(&l, n, n + extra, e, types[ti], partner, tag, form % 4, seed, what);
                free_layout(&l);
              }
              ++messages;
            }
          }
        }
      }
    }
  }
  const char* expect = getenv("DTYPE_PAIRS_EXPECT_COMPRESSED");
  if (expect != NULL && atoi(expect) && mpizip_on && sender && partner < size) {
    int (*traffic)(MPI_Comm, MPIZip_Traffic*) =
        (int (*)(MPI_Comm, MPIZip_Traffic*))dlsym(RTLD_DEFAULT, "MPIZip_Comm_traffic");
    MPIZip_Traffic t;
    memset(&t, 0, sizeof t);
    CHECK(traffic != NULL && traffic(MPI_COMM_WORLD, &t) == MPI_SUCCESS, "MPIZip_Comm_traffic");
    /* A send is counted once its payload has left, which a blocking send that completed from
     * MPIZip's memory may still be doing in the background: where every message is expected in
     * the counts, give them MPIZip calls (each advances them) for up to 10 s. */
    const char* all_env = getenv("DTYPE_PAIRS_EXPECT_ALL_TYPES");
    const char* bare_env = getenv("DTYPE_PAIRS_EXPECT_BARE");
    int (*bare_messages)(MPI_Comm, unsigned long long*, unsigned long long*) =
        (int (*)(MPI_Comm, unsigned long long*, unsigned long long*))dlsym(
            RTLD_DEFAULT, "MPIZip_Comm_bare_messages");
    unsigned long long bare_sent = 0, bare_received = 0;
    if (bare_messages != NULL) bare_messages(MPI_COMM_WORLD, &bare_sent, &bare_received);
    const int every = (all_env != NULL && atoi(all_env)) || (bare_env != NULL && atoi(bare_env));
    const int bare_counts = bare_env != NULL && atoi(bare_env);
    for (double t0 = MPI_Wtime();
         every && t.sent_messages + (bare_counts ? bare_sent : 0) < (unsigned long long)sent_all &&
         MPI_Wtime() - t0 < 10.0;) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, 32000, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      traffic(MPI_COMM_WORLD, &t);
    }
    CHECK(t.sent_compressed >= (unsigned long long)sent_large,
          "%llu messages sent compressed, fewer than the %lld of 4 KiB or more", t.sent_compressed,
          sent_large);
    const char* all_types = getenv("DTYPE_PAIRS_EXPECT_ALL_TYPES");
    if (all_types != NULL && atoi(all_types)) {
      CHECK(t.sent_messages >= (unsigned long long)sent_all,
            "%llu messages took the protocol, fewer than the %lld sent", t.sent_messages, sent_all);
    }
    if (bare_env != NULL && atoi(bare_env)) {
      CHECK(bare_messages != NULL &&
                bare_messages(MPI_COMM_WORLD, &bare_sent, &bare_received) == MPI_SUCCESS,
            "MPIZip_Comm_bare_messages");
      CHECK(bare_sent > 0, "no message travelled bare");
      CHECK(t.sent_messages + bare_sent >= (unsigned long long)sent_all,
            "%llu messages bare and %llu through the protocol, fewer than the %lld sent", bare_sent,
            t.sent_messages, sent_all);
      if (rank == 0) printf("dtype_pairs: %llu messages sent bare\n", bare_sent);
    }
    if (rank == 0) {
      printf("dtype_pairs: %llu protocol messages sent, %llu compressed\n", t.sent_messages,
             t.sent_compressed);
    }
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("dtype_pairs: %lld messages per pair of ranks, %d failures\n", messages, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
