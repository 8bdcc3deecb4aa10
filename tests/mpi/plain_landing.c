// Receives into host buffers larger than the bare size, with the protocol on (as in a GPU job):
// the MPI library's own receive and request, whichever form the message takes (p2p/wire.h,
// src/core/requests.h "Landing"). Run by tests/mpi/plain_landing.sh on 2 ranks with
// MPIZIP_PROTOCOL=on and MPIZIP_STATS=1, and without MPIZip.
//
// Rank 0 sends, rank 1 receives, through every completion call (MPI_Wait, a loop of MPI_Test,
// MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Testall, MPI_Testany, MPI_Testsome,
// MPI_Request_get_status then MPI_Wait, MPI_Request_free then a barrier, and blocking MPI_Recv),
// sizes from just above the bare size to 1 MiB, each checked bit for bit with its status (source,
// tag, count); then a message longer than the buffer (MPI_ERR_TRUNCATE). Twice: on a communicator
// where rank 0 sends raw (plain messages: with MPIZip, each receive must count as bare, which only
// the MPI library's own receive does), and on one where rank 0 compresses (the mpizip_compress
// hint on rank 0 only: match messages, which the receives must go on with, none counted bare).
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/mpizip.h"
#include "tests/mpi/check.h"

static int rank = 0;
static int (*bare_fn)(MPI_Comm, unsigned long long*, unsigned long long*) = NULL;
static int (*traffic_fn)(MPI_Comm, MPIZip_Traffic*) = NULL;

// Compressible floats (exponents in a narrow band), different for each message.
static void fill(float* x, int n, uint32_t seed) {
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    uint32_t bits = (seed & 0x807fffffu) | (((seed >> 23) % 16 + 120) << 23);
    memcpy(&x[i], &bits, sizeof bits);
  }
}

static unsigned long long bare_received(MPI_Comm comm) {
  unsigned long long s = 0, r = 0;
  if (bare_fn != NULL) CHECK(bare_fn(comm, &s, &r) == MPI_SUCCESS, "MPIZip_Comm_bare_messages");
  return r;
}

enum { kForms = 11 };
static const char* form_name[kForms] = {"wait", "test", "waitall", "waitany", "waitsome",
                                        "testall", "testany", "testsome", "get_status",
                                        "free", "recv"};

// Receives n floats from rank 0 with tag `tag` through completion form `form` (`want`: what they
// are, for the form that cannot be told when it completed); returns the status.
static MPI_Status receive(float* in, const float* want, int n, int tag, int form, MPI_Comm comm) {
  MPI_Status st;
  memset(&st, 0, sizeof st);
  if (form == 10) {
    MPI_Recv(in, n, MPI_FLOAT, 0, tag, comm, &st);
    return st;
  }
  // A plain request beside the receive, for the calls that take several.
  int dummy_in = 0, dummy_out = 5;
  MPI_Request r[2];
  MPI_Irecv(in, n, MPI_FLOAT, MPI_ANY_SOURCE, tag, comm, &r[0]);
  MPI_Irecv(&dummy_in, 1, MPI_INT, 0, 99, MPI_COMM_SELF, &r[1]);
  MPI_Send(&dummy_out, 1, MPI_INT, 0, 99, MPI_COMM_SELF);
  MPI_Status sts[2];
  int flag = 0, index = -1, outcount = 0, indices[2];
  switch (form) {
    case 0: MPI_Wait(&r[0], &st); break;
    case 1: while (!flag) MPI_Test(&r[0], &flag, &st); break;
    case 2: MPI_Waitall(2, r, sts); st = sts[0]; break;
    case 3:
      for (int left = 2; left > 0; --left) {
        MPI_Status any;
        MPI_Waitany(2, r, &index, &any);
        if (index == 0) st = any;
      }
      break;
    case 4:
      for (int left = 2; left > 0; left -= outcount) {
        MPI_Waitsome(2, r, &outcount, indices, sts);
        for (int k = 0; k < outcount; ++k) {
          if (indices[k] == 0) st = sts[k];
        }
      }
      break;
    case 5: while (!flag) MPI_Testall(2, r, &flag, sts); st = sts[0]; break;
    case 6:
      for (int left = 2; left > 0;) {
        MPI_Status any;
        MPI_Testany(2, r, &index, &flag, &any);
        if (flag && index != MPI_UNDEFINED) {
          --left;
          if (index == 0) st = any;
        }
      }
      break;
    case 7:
      for (int left = 2; left > 0; left -= outcount) {
        MPI_Testsome(2, r, &outcount, indices, sts);
        if (outcount == MPI_UNDEFINED) outcount = 0;
        for (int k = 0; k < outcount; ++k) {
          if (indices[k] == 0) st = sts[k];
        }
      }
      break;
    case 8: {
      MPI_Status peek;
      while (!flag) MPI_Request_get_status(r[0], &flag, &peek);
      CHECK(r[0] != MPI_REQUEST_NULL, "get_status freed the request");
      MPI_Wait(&r[0], &st);
      int count = -1;
      MPI_Get_count(&peek, MPI_FLOAT, &count);
      CHECK(count == n && peek.MPI_SOURCE == 0 && peek.MPI_TAG == tag,
            "get_status: count %d source %d tag %d", count, peek.MPI_SOURCE, peek.MPI_TAG);
      break;
    }
    case 9: {
      // Freed before it completes: it still lands, which only the data can tell. Rank 0 says when
      // its message was sent; then MPI calls (each advances what MPIZip has under way) until the
      // data is there, for at most 10 s.
      MPI_Request_free(&r[0]);
      MPI_Recv(&flag, 1, MPI_INT, 0, tag + 1, comm, MPI_STATUS_IGNORE);
      for (double t0 = MPI_Wtime(); memcmp(in, want, sizeof(float) * (size_t)n) != 0 &&
                                    MPI_Wtime() - t0 < 10.0;) {
        MPI_Iprobe(MPI_ANY_SOURCE, 32000, comm, &flag, MPI_STATUS_IGNORE);
      }
      st.MPI_SOURCE = 0;
      st.MPI_TAG = tag;
      MPI_Status_set_elements(&st, MPI_FLOAT, n);
      break;
    }
  }
  if (r[1] != MPI_REQUEST_NULL) MPI_Wait(&r[1], MPI_STATUS_IGNORE);
  return st;
}

// Every size and form once on `comm`; returns how many messages rank 1 received (the one-int
// notes of the freed form included: bare messages).
static int exchange(MPI_Comm comm, const char* what) {
  const int sizes[] = {1001, 1012, 2048, 4096, 4200, 16384, 65536, 262144};
  float* out = malloc(sizeof(float) * 262144);
  float* in = malloc(sizeof(float) * 262145);
  float* want = malloc(sizeof(float) * 262144);
  int messages = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
    for (int form = 0; form < kForms; ++form) {
      const int n = sizes[si], tag = (int)(si * kForms + (size_t)form) * 2;
      fill(want, n, (uint32_t)(n * 31 + form));
      if (rank == 0) {
        memcpy(out, want, sizeof(float) * (size_t)n);
        MPI_Send(out, n, MPI_FLOAT, 1, tag, comm);
        if (form == 9) MPI_Send(&n, 1, MPI_INT, 1, tag + 1, comm);
      } else if (rank == 1) {
        memset(in, 0xA5, sizeof(float) * (size_t)(n + 1));
        MPI_Status st = receive(in, want, n, tag, form, comm);
        int count = -1;
        MPI_Get_count(&st, MPI_FLOAT, &count);
        CHECK(memcmp(in, want, sizeof(float) * (size_t)n) == 0, "%s, %d floats, %s: data", what, n,
              form_name[form]);
        unsigned char past[4];
        memcpy(past, &in[n], 4);
        CHECK(past[0] == 0xA5 && past[3] == 0xA5, "%s, %d floats, %s: written past the message",
              what, n, form_name[form]);
        CHECK(count == n && st.MPI_SOURCE == 0 && st.MPI_TAG == tag,
              "%s, %d floats, %s: count %d source %d tag %d", what, n, form_name[form], count,
              st.MPI_SOURCE, st.MPI_TAG);
        messages += form == 9 ? 2 : 1;
      }
    }
  }
  // A message longer than the buffer: MPI_ERR_TRUNCATE, through a request and blocking. Which
  // error handler MPI_Wait invokes is the library's choice here too: the request's communicator
  // (Open MPI, MPIZip) or MPI_COMM_WORLD (MPICH 4.0, which aborts otherwise without MPIZip too).
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Errhandler world_eh;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_eh);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  for (int blocking = 0; blocking < 2; ++blocking) {
    const int n = 8192;
    if (rank == 0) {
      fill(out, n, 77u);
      MPI_Send(out, n, MPI_FLOAT, 1, 1000, comm);
    } else if (rank == 1) {
      MPI_Status st;
      int rc;
      if (blocking) {
        rc = MPI_Recv(in, n / 2, MPI_FLOAT, 0, 1000, comm, &st);
      } else {
        MPI_Request r;
        MPI_Irecv(in, n / 2, MPI_FLOAT, 0, 1000, comm, &r);
        rc = MPI_Wait(&r, &st);
      }
      int cls = -1;
      MPI_Error_class(rc, &cls);
      CHECK(cls == MPI_ERR_TRUNCATE, "%s: truncated receive (%s) returned class %d", what,
            blocking ? "recv" : "irecv", cls);
    }
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh);
  MPI_Errhandler_free(&world_eh);
  MPI_Barrier(comm);
  free(out), free(in), free(want);
  return messages;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "MPIZip_Active");
  const int mpizip_on = active != NULL && active();
  if (mpizip_on) {
    bare_fn = (int (*)(MPI_Comm, unsigned long long*, unsigned long long*))dlsym(
        RTLD_DEFAULT, "MPIZip_Comm_bare_messages");
    traffic_fn = (int (*)(MPI_Comm, MPIZip_Traffic*))dlsym(RTLD_DEFAULT, "MPIZip_Comm_traffic");
  }
  CHECK(size == 2, "run on 2 ranks (%d)", size);

  // Raw from rank 0: plain messages, each the MPI library's own receive at rank 1.
  MPI_Comm raw;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  const unsigned long long bare_before = bare_received(raw);
  const int n_raw = exchange(raw, "raw");
  if (mpizip_on && rank == 1) {
    const unsigned long long bare = bare_received(raw) - bare_before;
    CHECK(bare == (unsigned long long)n_raw, "raw: %llu of %d receives were the MPI library's own",
          bare, n_raw);
  }

  // Compressed by rank 0: match messages that the same receives go on with.
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpizip_compress", rank == 0 ? "true" : "false");
  MPI_Info_set(info, "mpizip_min_bytes", "0");
  MPI_Comm zipped;
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &zipped);
  MPI_Info_free(&info);
  const unsigned long long zipped_bare_before = bare_received(zipped);
  MPIZip_Traffic before, after;
  memset(&before, 0, sizeof before);
  memset(&after, 0, sizeof after);
  if (traffic_fn != NULL) traffic_fn(zipped, &before);
  const int n_zipped = exchange(zipped, "compressed");
  if (traffic_fn != NULL) traffic_fn(zipped, &after);
  if (mpizip_on && rank == 1) {
    // The smallest messages may not compress by a header's size: those travel raw.
    const unsigned long long compressed = after.received_compressed - before.received_compressed;
    CHECK(compressed >= (unsigned long long)n_zipped / 2,
          "compressed: %llu of %d messages arrived compressed", compressed, n_zipped);
    CHECK(bare_received(zipped) - zipped_bare_before + compressed >= (unsigned long long)n_zipped,
          "compressed: messages neither compressed nor the MPI library's own");
  }
  MPI_Comm_free(&raw);
  MPI_Comm_free(&zipped);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("plain_landing: %s, %d failures\n", mpizip_on ? "MPIZip" : "plain", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
