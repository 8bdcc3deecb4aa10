// Per-communicator hints (src/core/comm_hints.h) on 2-4 ranks, host buffers. Run by
// tests/mpi/hints.sh with MPIZIP_PROTOCOL=on, MPIZIP_STATS=1 (the traffic counters),
// MPIZIP_HOST_COMPRESS=0 and MPIZIP_ALLREDUCE=off, so that every hint that takes effect changes
// what the environment asks for; and without MPIZip, where the same calls must give the same data.
//
// Every message and allreduce is checked bit for bit. With MPIZip the program also checks the
// path taken (MPIZip_Comm_traffic: messages compressed or not, two-shot allreduce run or not) and
// what MPI_Comm_get_info returns: the MPI library's own keys and values (PMPI_Comm_get_info, which
// MPIZip does not intercept) plus the four hints with the values in force. Lines on stdout name
// the cases for the script; it checks the warnings on stderr.
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/mpizip.h"
#include "tests/mpi/check.h"

static int rank = 0, size = 0;
static int mpizip_on = 0;
static int (*traffic_fn)(MPI_Comm, MPIZip_Traffic*) = NULL;

enum { kBig = 1 << 19, kMid = 1 << 16 };  // floats: 2 MiB and 256 KiB

// Floats of every sign and mantissa with exponents in a narrow band (compressible, as trained
// weights are), different for each sender and message.
static void fill(float* x, int n, uint32_t seed) {
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    uint32_t bits = (seed & 0x807fffffu) | (((seed >> 23) % 16 + 120) << 23);
    memcpy(&x[i], &bits, sizeof bits);
  }
}

static MPIZip_Traffic traffic(MPI_Comm comm) {
  MPIZip_Traffic t;
  memset(&t, 0, sizeof t);
  if (traffic_fn != NULL) CHECK(traffic_fn(comm, &t) == MPI_SUCCESS, "MPIZip_Comm_traffic");
  return t;
}

// The traffic of `comm` once `messages` more sends than in `before` are counted. A send is counted
// once its payload has left, which a send that completed from MPIZip's memory may still be doing in
// the background: MPIZip calls advance it (for at most 10 s). Where none is expected, they still
// advance for 0.2 s, so that a send wrongly taken through the protocol gets counted (and fails).
static MPIZip_Traffic settled(MPI_Comm comm, const MPIZip_Traffic* before, unsigned messages) {
  MPIZip_Traffic t = traffic(comm);
  for (double t0 = MPI_Wtime(); traffic_fn != NULL &&
                                (t.sent_messages < before->sent_messages + messages ||
                                 (messages == 0 && MPI_Wtime() - t0 < 0.2)) &&
                                MPI_Wtime() - t0 < 10.0;) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, 32000, comm, &flag, MPI_STATUS_IGNORE);
    t = traffic(comm);
  }
  return t;
}

// Rank r sends n floats to r+1 and receives from r-1, checked bit for bit. Returns how many of
// this rank's sends were compressed (from the traffic counters) and sets *sent to how many protocol
// messages it sent, waiting for `expect` of them to be counted (a host buffer sent uncompressed is
// the MPI library's own message, which MPIZip does not count: expect 0 there).
static unsigned long long ring(MPI_Comm comm, int n, const char* what, unsigned long long* sent,
                               unsigned expect) {
  MPIZip_Traffic before = traffic(comm);
  float* out = malloc(sizeof(float) * n);
  float* in = malloc(sizeof(float) * n);
  float* want = malloc(sizeof(float) * n);
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  fill(out, n, 1000u + (uint32_t)rank);
  fill(want, n, 1000u + (uint32_t)from);
  memset(in, 0, sizeof(float) * n);
  MPI_Sendrecv(out, n, MPI_FLOAT, to, 5, in, n, MPI_FLOAT, from, 5, comm, MPI_STATUS_IGNORE);
  CHECK(memcmp(in, want, sizeof(float) * n) == 0, "%s: ring of %d floats not bit-exact", what, n);
  free(out), free(in), free(want);
  MPIZip_Traffic after = settled(comm, &before, expect);
  if (sent != NULL) *sent = after.sent_messages - before.sent_messages;
  return after.sent_compressed - before.sent_compressed;
}

// An allreduce of integer-valued floats (exact in any order), checked bit for bit. Returns whether
// MPIZip's two-shot ran it (it counts its messages in the traffic).
static int allreduce(MPI_Comm comm, const char* what) {
  enum { n = 4099 };
  static float x[n], y[n], want[n];
  for (int i = 0; i < n; ++i) {
    x[i] = (float)((i * 7 + rank * 13) % 1001 - 500);
    want[i] = 0;
    for (int r = 0; r < size; ++r) want[i] += (float)((i * 7 + r * 13) % 1001 - 500);
  }
  MPIZip_Traffic before = traffic(comm);
  MPI_Allreduce(x, y, n, MPI_FLOAT, MPI_SUM, comm);
  CHECK(memcmp(y, want, sizeof y) == 0, "%s: allreduce not bit-exact", what);
  return traffic(comm).sent_messages != before.sent_messages;
}

static MPI_Info make_info(const char* k1, const char* v1, const char* k2, const char* v2) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (k1 != NULL) MPI_Info_set(info, k1, v1);
  if (k2 != NULL) MPI_Info_set(info, k2, v2);
  return info;
}

static MPI_Comm dup_with(MPI_Comm parent, const char* k1, const char* v1, const char* k2,
                         const char* v2, const char* name) {
  MPI_Info info = make_info(k1, v1, k2, v2);
  MPI_Comm c;
  MPI_Comm_dup_with_info(parent, info, &c);
  MPI_Info_free(&info);
  MPI_Comm_set_name(c, (char*)name);
  return c;
}

static void set_info(MPI_Comm comm, const char* k1, const char* v1, const char* k2,
                     const char* v2) {
  MPI_Info info = make_info(k1, v1, k2, v2);
  CHECK(MPI_Comm_set_info(comm, info) == MPI_SUCCESS, "MPI_Comm_set_info");
  MPI_Info_free(&info);
}

static int is_hint(const char* key) { return strncmp(key, "mpizip_", 7) == 0; }

// MPI_Comm_get_info: the library's keys and values as PMPI_Comm_get_info gives them, and, with
// MPIZip, the four hints with the values given (compress, min_bytes, allreduce, tma).
static void expect_info(MPI_Comm comm, const char* what, const char* compress,
                        const char* min_bytes, const char* allreduce, const char* tma) {
  MPI_Info got, lib;
  CHECK(MPI_Comm_get_info(comm, &got) == MPI_SUCCESS, "%s: MPI_Comm_get_info", what);
  CHECK(PMPI_Comm_get_info(comm, &lib) == MPI_SUCCESS, "%s: PMPI_Comm_get_info", what);
  char key[MPI_MAX_INFO_KEY + 1], a[256], b[256];
  int nlib = 0, ngot = 0, flag = 0, hints = 0;
  MPI_Info_get_nkeys(lib, &nlib);
  MPI_Info_get_nkeys(got, &ngot);
  for (int k = 0; k < nlib; ++k) {
    MPI_Info_get_nthkey(lib, k, key);
    if (is_hint(key)) continue;  // the library may keep MPIZip's keys as given
    MPI_Info_get(lib, key, 255, a, &flag);
    MPI_Info_get(got, key, 255, b, &flag);
    CHECK(flag && strcmp(a, b) == 0, "%s: the library's key %s=%s is missing or changed", what,
          key, a);
  }
  for (int k = 0; k < ngot; ++k) {
    MPI_Info_get_nthkey(got, k, key);
    if (is_hint(key)) ++hints;
  }
  if (!mpizip_on) {
    MPI_Info_free(&got), MPI_Info_free(&lib);
    return;
  }
  CHECK(hints == 5, "%s: %d mpizip_ keys, want 5", what, hints);
  MPI_Info_get(got, "mpizip_emu_gbps", 255, b, &flag);  // the emulated link's rate, in force
  CHECK(flag && atof(b) > 0, "%s: mpizip_emu_gbps=%s, want a rate", what, flag ? b : "(absent)");
  const char* keys[4] = {"mpizip_compress", "mpizip_min_bytes", "mpizip_allreduce", "mpizip_tma"};
  const char* want[4] = {compress, min_bytes, allreduce, tma};
  for (int k = 0; k < 4; ++k) {
    MPI_Info_get(got, keys[k], 255, b, &flag);
    CHECK(flag && strcmp(b, want[k]) == 0, "%s: %s=%s, want %s", what, keys[k],
          flag ? b : "(absent)", want[k]);
  }
  MPI_Info_free(&got), MPI_Info_free(&lib);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "MPIZip_Active");
  mpizip_on = active != NULL && active();
  traffic_fn = (int (*)(MPI_Comm, MPIZip_Traffic*))dlsym(RTLD_DEFAULT, "MPIZip_Comm_traffic");
  if (!mpizip_on) traffic_fn = NULL;
  const int check_path = mpizip_on;
  unsigned long long sent = 0, zipped = 0;

  // The environment's values on MPI_COMM_WORLD: nothing compressed, no two-shot.
  expect_info(MPI_COMM_WORLD, "world", "false", "1048576", "off", "auto");
  zipped = ring(MPI_COMM_WORLD, kBig, "world", &sent, 0);
  if (check_path) CHECK(zipped == 0 && sent == 0, "world: %llu sent, %llu compressed", sent, zipped);
  if (check_path) CHECK(!allreduce(MPI_COMM_WORLD, "world"), "world: two-shot under MPIZIP_ALLREDUCE=off");

  // Two siblings: compression on one, off on the other; the library's own key kept.
  MPI_Comm on = dup_with(MPI_COMM_WORLD, "mpizip_compress", "true", "hints_test_key", "kept", "on");
  MPI_Comm off = dup_with(MPI_COMM_WORLD, "mpizip_compress", "false", NULL, NULL, "off");
  expect_info(on, "compress=true", "true", "1048576", "off", "auto");
  expect_info(off, "compress=false", "false", "1048576", "off", "auto");
  zipped = ring(on, kBig, "compress=true", &sent, 1);
  if (check_path) CHECK(sent == 1 && zipped == 1, "compress=true: %llu sent, %llu compressed", sent, zipped);
  zipped = ring(off, kBig, "compress=false", &sent, 0);
  if (check_path) CHECK(zipped == 0 && sent == 0, "compress=false: %llu sent, %llu compressed", sent, zipped);
  if (rank == 0) printf("hints: siblings ok\n");

  // MPI_Comm_dup copies the parent's hints; MPI_Comm_dup_with_info takes its own info only.
  MPI_Comm copy, fresh;
  MPI_Comm_dup(on, &copy);
  MPI_Info empty = make_info(NULL, NULL, NULL, NULL);
  MPI_Comm_dup_with_info(on, empty, &fresh);
  MPI_Info_free(&empty);
  expect_info(copy, "dup", "true", "1048576", "off", "auto");
  expect_info(fresh, "dup_with_info", "false", "1048576", "off", "auto");
  zipped = ring(copy, kBig, "dup", &sent, 1);
  if (check_path) CHECK(zipped == 1, "dup: %llu compressed", zipped);
  zipped = ring(fresh, kBig, "dup_with_info", &sent, 0);
  if (check_path) CHECK(zipped == 0, "dup_with_info: %llu compressed", zipped);
  MPI_Comm_free(&copy);
  MPI_Comm_free(&fresh);
  if (rank == 0) printf("hints: dup ok\n");

  // mpizip_min_bytes: 2 MiB below 4M travels raw; after MPI_Comm_set_info to 64K, 256 KiB is
  // compressed.
  MPI_Comm sized = dup_with(MPI_COMM_WORLD, "mpizip_compress", "yes", "mpizip_min_bytes", "4M", "sized");
  expect_info(sized, "min_bytes=4M", "true", "4194304", "off", "auto");
  zipped = ring(sized, kBig, "min_bytes=4M", &sent, 0);
  if (check_path) CHECK(zipped == 0, "min_bytes=4M: %llu compressed", zipped);
  set_info(sized, "mpizip_min_bytes", "64K", NULL, NULL);
  expect_info(sized, "min_bytes=64K", "true", "65536", "off", "auto");
  zipped = ring(sized, kMid, "min_bytes=64K", &sent, 1);
  if (check_path) CHECK(sent == 1 && zipped == 1, "min_bytes=64K: %llu compressed", zipped);
  // Values that are not values of the setting: one warning each, the values in force kept.
  set_info(sized, "mpizip_min_bytes", "abc", "mpizip_tma", "maybe");
  expect_info(sized, "invalid values", "true", "65536", "off", "auto");
  zipped = ring(sized, kMid, "after invalid values", &sent, 1);
  if (check_path) CHECK(zipped == 1, "after invalid values: %llu compressed", zipped);
  if (rank == 0) printf("hints: min_bytes ok\n");

  // mpizip_allreduce overrides MPIZIP_ALLREDUCE=off: on a new communicator, then on
  // MPI_COMM_WORLD (created without the two-shot's part), and back off.
  MPI_Comm twoshot = dup_with(MPI_COMM_WORLD, "mpizip_allreduce", "twoshot", NULL, NULL, "twoshot");
  expect_info(twoshot, "allreduce=twoshot", "false", "1048576", "twoshot", "auto");
  if (check_path) CHECK(allreduce(twoshot, "allreduce=twoshot"), "allreduce=twoshot: not the two-shot");
  set_info(MPI_COMM_WORLD, "mpizip_allreduce", "twoshot", "mpizip_tma", "off");
  expect_info(MPI_COMM_WORLD, "world twoshot", "false", "1048576", "twoshot", "off");
  if (check_path) CHECK(allreduce(MPI_COMM_WORLD, "world twoshot"), "world twoshot: not the two-shot");
  set_info(MPI_COMM_WORLD, "mpizip_allreduce", "off", NULL, NULL);
  expect_info(MPI_COMM_WORLD, "world off", "false", "1048576", "off", "off");
  if (check_path) CHECK(!allreduce(MPI_COMM_WORLD, "world off"), "world off: the two-shot ran");
  if (rank == 0) printf("hints: allreduce ok\n");

  // Operations keep the settings they started with: a compressed send and a two-shot allreduce
  // pending while the hints change (the receive is posted after the change).
  {
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    float* out = malloc(sizeof(float) * kBig);
    float* in = malloc(sizeof(float) * kBig);
    float* want = malloc(sizeof(float) * kBig);
    fill(out, kBig, 7u + (uint32_t)rank);
    fill(want, kBig, 7u + (uint32_t)from);
    MPIZip_Traffic before = traffic(on);
    MPI_Request req[2];
    MPI_Isend(out, kBig, MPI_FLOAT, to, 9, on, &req[0]);
    enum { n = 2048 };
    static float x[n], y[n], sum[n];
    for (int i = 0; i < n; ++i) {
      x[i] = (float)(i % 17 - 8 + rank);
      sum[i] = 0;
      for (int r = 0; r < size; ++r) sum[i] += (float)(i % 17 - 8 + r);
    }
    MPIZip_Traffic before2 = traffic(twoshot);
    MPI_Request ar;
    MPI_Iallreduce(x, y, n, MPI_FLOAT, MPI_SUM, twoshot, &ar);
    set_info(on, "mpizip_compress", "false", NULL, NULL);
    set_info(twoshot, "mpizip_allreduce", "off", NULL, NULL);
    MPI_Irecv(in, kBig, MPI_FLOAT, from, 9, on, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    MPI_Wait(&ar, MPI_STATUS_IGNORE);
    CHECK(memcmp(in, want, sizeof(float) * kBig) == 0, "pending send: not bit-exact");
    CHECK(memcmp(y, sum, sizeof y) == 0, "pending allreduce: not bit-exact");
    MPIZip_Traffic after = settled(on, &before, 1), after2 = traffic(twoshot);
    if (check_path) {
      CHECK(after.sent_compressed - before.sent_compressed == 1,
            "pending send: %llu compressed, want the 1 started with compression",
            after.sent_compressed - before.sent_compressed);
      CHECK(after2.sent_messages != before2.sent_messages, "pending allreduce: not the two-shot");
    }
    expect_info(on, "compress changed", "false", "1048576", "off", "auto");
    expect_info(twoshot, "allreduce changed", "false", "1048576", "off", "auto");
    zipped = ring(on, kBig, "after compress=false", &sent, 0);
    if (check_path) CHECK(zipped == 0, "after compress=false: %llu compressed", zipped);
    if (check_path) CHECK(!allreduce(twoshot, "after allreduce=off"), "after allreduce=off: the two-shot ran");
    free(out), free(in), free(want);
  }
  if (rank == 0) printf("hints: pending ok\n");

  // Must-agree hints that differ across the ranks: one warning, the environment's value on every
  // rank, no hang. Rank 1 asks for another allreduce, and rank 0 for another TMA mode than the
  // others (the last rank gives no hints at all where there are more than 2).
  MPI_Comm mixed = dup_with(MPI_COMM_WORLD, NULL, NULL, NULL, NULL, "mixed");
  if (rank == size - 1 && size > 2) {
    set_info(mixed, NULL, NULL, NULL, NULL);
  } else {
    set_info(mixed, "mpizip_allreduce", rank == 1 ? "auto" : "twoshot", "mpizip_tma",
             rank == 0 ? "sm" : "off");
  }
  expect_info(mixed, "mixed", "false", "1048576", "off", "auto");
  if (check_path) CHECK(!allreduce(mixed, "mixed"), "mixed: the two-shot ran");
  // A hint that may differ: only rank 0 compresses.
  set_info(mixed, "mpizip_compress", rank == 0 ? "true" : "false", NULL, NULL);
  zipped = ring(mixed, kBig, "compress on rank 0 only", &sent, rank == 0 ? 1u : 0u);
  if (check_path)
    CHECK(zipped == (rank == 0 ? 1u : 0u), "compress on rank 0 only: %llu compressed", zipped);
  if (rank == 0) printf("hints: mixed ok\n");

  MPI_Comm_free(&mixed);
  MPI_Comm_free(&twoshot);
  MPI_Comm_free(&sized);
  MPI_Comm_free(&on);
  MPI_Comm_free(&off);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf(all == 0 ? "hints: ok\n" : "hints: %d failures\n", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
