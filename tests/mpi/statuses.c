/* Statuses exactly as without MPIZip. Rank 1 prints every field an application can see (return
 * code's error class, MPI_SOURCE, MPI_TAG, MPI_ERROR preset to a marker, MPI_Get_count,
 * MPI_Get_elements, MPI_Test_cancelled, flags) after: receives of float, double, derived and
 * integer messages; truncated receives of 10, 10,000 and 2,000,000 floats into half-size buffers
 * (MPI_Recv, MPI_Irecv + MPI_Wait, MPI_Probe + MPI_Recv); probes, matched probes and matched
 * receives; the null request in MPI_Wait, MPI_Test, MPI_Request_get_status, MPI_Waitall,
 * MPI_Waitany, MPI_Testsome; MPI_PROC_NULL; receives of count 0; a cancelled receive. statuses.sh
 * runs it without MPIZip, with it, and with the protocol forced, and requires the same output. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;
static const int kMarker = 4242;

static void show(const char* what, int rc, const MPI_Status* st, MPI_Datatype t) {
  int cls = 0, count = -7, elements = -7, cancelled = -7;
  MPI_Error_class(rc, &cls);
  MPI_Get_count(st, t, &count);
  MPI_Get_elements(st, t, &elements);
  MPI_Test_cancelled(st, &cancelled);
  printf("%s: class %d source %d tag %d error %d count %d elements %d cancelled %d\n", what, cls,
         st->MPI_SOURCE, st->MPI_TAG, st->MPI_ERROR, count, elements, cancelled);
}

static void preset(MPI_Status* st) {
  st->MPI_SOURCE = 77;
  st->MPI_TAG = 78;
  st->MPI_ERROR = kMarker;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int big = 2000000;
  float* f = calloc(big, sizeof(float));
  for (int i = 0; i < big; ++i) f[i] = (float)i * 0.37f - 11.0f;
  MPI_Datatype vec;
  MPI_Type_vector(500, 1, 2, MPI_FLOAT, &vec);
  MPI_Type_commit(&vec);
  MPI_Status st;
  int tag = 0;
  if (rank == 0) {
    const int sizes[] = {0, 1, 10, 1000, 10000, big};
    for (int k = 0; k < 6; ++k) {
      MPI_Send(f, sizes[k], MPI_FLOAT, 1, tag++, MPI_COMM_WORLD);        /* exact receive */
      MPI_Send(f, sizes[k], MPI_FLOAT, 1, tag++, MPI_COMM_WORLD);        /* recv, half size */
      MPI_Send(f, sizes[k], MPI_FLOAT, 1, tag++, MPI_COMM_WORLD);        /* irecv, half size */
      MPI_Send(f, sizes[k], MPI_FLOAT, 1, tag++, MPI_COMM_WORLD);        /* irecv + test loop */
      MPI_Send(f, sizes[k], MPI_FLOAT, 1, tag++, MPI_COMM_WORLD);        /* probe + recv half */
      MPI_Send(f, sizes[k], MPI_FLOAT, 1, tag++, MPI_COMM_WORLD);        /* mprobe + mrecv half */
      MPI_Send(f, sizes[k] / 2, MPI_DOUBLE, 1, tag++, MPI_COMM_WORLD);   /* doubles */
      MPI_Send(f, sizes[k], MPI_INT, 1, tag++, MPI_COMM_WORLD);          /* ints */
    }
    MPI_Send(f, 1, vec, 1, tag++, MPI_COMM_WORLD);    /* 500 floats as a vector */
    MPI_Send(f, 1000, MPI_FLOAT, 1, tag++, MPI_COMM_WORLD); /* 1000 floats into 2 vectors */
    MPI_Send(f, 700, MPI_FLOAT, 1, tag++, MPI_COMM_WORLD);  /* 700 floats into 2 vectors */
    MPI_Send(f, 10, MPI_FLOAT, 1, 999, MPI_COMM_WORLD);     /* wildcard receive */
    MPI_Send(f, 20, MPI_FLOAT, 1, 998, MPI_COMM_WORLD);     /* iprobe, improbe */
    int ints[5] = {1, 2, 3, 4, 5};
    MPI_Send(ints, 5, MPI_INT, 1, 500, MPI_COMM_WORLD);     /* probed, then a persistent receive */
    MPI_Send(ints, 3, MPI_INT, 1, 500, MPI_COMM_WORLD);     /* its second start */
  } else if (rank == 1) {
    const int sizes[] = {0, 1, 10, 1000, 10000, big};
    char what[96];
    for (int k = 0; k < 6; ++k) {
      const int n = sizes[k];
      int rc;
      preset(&st);
      rc = MPI_Recv(f, n, MPI_FLOAT, 0, tag++, MPI_COMM_WORLD, &st);
      snprintf(what, sizeof what, "recv %d floats", n);
      show(what, rc, &st, MPI_FLOAT);
      preset(&st);
      rc = MPI_Recv(f, n / 2, MPI_FLOAT, 0, tag++, MPI_COMM_WORLD, &st);
      snprintf(what, sizeof what, "recv %d floats into %d", n, n / 2);
      show(what, rc, &st, MPI_FLOAT);
      MPI_Request r;
      preset(&st);
      rc = MPI_Irecv(f, n / 2, MPI_FLOAT, 0, tag++, MPI_COMM_WORLD, &r);
      if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, &st);
      snprintf(what, sizeof what, "irecv+wait %d floats into %d", n, n / 2);
      show(what, rc, &st, MPI_FLOAT);
      /* Completed by whichever MPI_Test finds it done (with a progress thread, the operation
       * may finish between two tests): the error must come back from that test. */
      preset(&st);
      rc = MPI_Irecv(f, n / 2, MPI_FLOAT, 0, tag++, MPI_COMM_WORLD, &r);
      int done = 0;
      while (rc == MPI_SUCCESS && !done) rc = MPI_Test(&r, &done, &st);
      snprintf(what, sizeof what, "irecv+test %d floats into %d (done %d)", n, n / 2, done);
      show(what, rc, &st, MPI_FLOAT);
      preset(&st);
      rc = MPI_Probe(0, tag, MPI_COMM_WORLD, &st);
      snprintf(what, sizeof what, "probe %d floats", n);
      show(what, rc, &st, MPI_FLOAT);
      preset(&st);
      rc = MPI_Recv(f, n / 2, MPI_FLOAT, 0, tag++, MPI_COMM_WORLD, &st);
      snprintf(what, sizeof what, "probed recv %d floats into %d", n, n / 2);
      show(what, rc, &st, MPI_FLOAT);
      MPI_Message m;
      preset(&st);
      rc = MPI_Mprobe(0, tag++, MPI_COMM_WORLD, &m, &st);
      snprintf(what, sizeof what, "mprobe %d floats", n);
      show(what, rc, &st, MPI_FLOAT);
      preset(&st);
      rc = MPI_Mrecv(f, n / 2, MPI_FLOAT, &m, &st);
      snprintf(what, sizeof what, "mrecv %d floats into %d", n, n / 2);
      show(what, rc, &st, MPI_FLOAT);
      preset(&st);
      rc = MPI_Recv(f, n / 2, MPI_DOUBLE, 0, tag++, MPI_COMM_WORLD, &st);
      snprintf(what, sizeof what, "recv %d doubles", n / 2);
      show(what, rc, &st, MPI_DOUBLE);
      preset(&st);
      rc = MPI_Recv(f, n, MPI_INT, 0, tag++, MPI_COMM_WORLD, &st);
      snprintf(what, sizeof what, "recv %d ints", n);
      show(what, rc, &st, MPI_INT);
    }
    int rc;
    float* g = calloc(4000, sizeof(float));
    preset(&st);
    rc = MPI_Recv(g, 500, MPI_FLOAT, 0, tag++, MPI_COMM_WORLD, &st);
    show("vector sent, 500 floats received", rc, &st, MPI_FLOAT);
    preset(&st);
    rc = MPI_Recv(g, 2, vec, 0, tag++, MPI_COMM_WORLD, &st);
    show("1000 floats into 2 vectors", rc, &st, vec);
    preset(&st);
    rc = MPI_Recv(g, 2, vec, 0, tag++, MPI_COMM_WORLD, &st);
    show("700 floats into 2 vectors", rc, &st, vec);
    preset(&st);
    rc = MPI_Recv(g, 10, MPI_FLOAT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    show("wildcard recv", rc, &st, MPI_FLOAT);
    int flag = 0;
    do {
      preset(&st);
      rc = MPI_Iprobe(0, 998, MPI_COMM_WORLD, &flag, &st);
    } while (rc == MPI_SUCCESS && !flag);
    show("iprobe", rc, &st, MPI_FLOAT);
    MPI_Message m;
    flag = 0;
    do {
      preset(&st);
      rc = MPI_Improbe(0, 998, MPI_COMM_WORLD, &flag, &m, &st);
    } while (rc == MPI_SUCCESS && !flag);
    show("improbe", rc, &st, MPI_FLOAT);
    MPI_Request r;
    preset(&st);
    rc = MPI_Imrecv(g, 20, MPI_FLOAT, &m, &r);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, &st);
    show("imrecv+wait", rc, &st, MPI_FLOAT);
    /* A persistent plain receive started after a probe saw its message (on a protocol
     * communicator the probe has taken it out of MPI's matching). */
    {
      int ints[5] = {0, 0, 0, 0, 0};
      MPI_Request pr;
      preset(&st);
      rc = MPI_Probe(0, 500, MPI_COMM_WORLD, &st);
      show("probe ints", rc, &st, MPI_INT);
      rc = MPI_Recv_init(ints, 5, MPI_INT, 0, 500, MPI_COMM_WORLD, &pr);
      for (int k = 0; k < 2 && rc == MPI_SUCCESS; ++k) {
        rc = MPI_Start(&pr);
        preset(&st);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&pr, &st);
        printf("persistent recv %d: %d %d %d %d %d\n", k, ints[0], ints[1], ints[2], ints[3], ints[4]);
        show("persistent recv", rc, &st, MPI_INT);
      }
      MPI_Request_free(&pr);
    }
    /* Null requests and MPI_PROC_NULL: the empty status, or as the MPI library leaves it. */
    r = MPI_REQUEST_NULL;
    preset(&st);
    rc = MPI_Wait(&r, &st);
    show("wait null", rc, &st, MPI_FLOAT);
    preset(&st);
    rc = MPI_Test(&r, &flag, &st);
    printf("test null flag %d\n", flag);
    show("test null", rc, &st, MPI_FLOAT);
    preset(&st);
    rc = MPI_Request_get_status(r, &flag, &st);
    printf("get_status null flag %d\n", flag);
    show("get_status null", rc, &st, MPI_FLOAT);
    MPI_Request rs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status sts[2];
    preset(&sts[0]);
    preset(&sts[1]);
    rc = MPI_Waitall(2, rs, sts);
    show("waitall null [0]", rc, &sts[0], MPI_FLOAT);
    int index = -5;
    preset(&st);
    rc = MPI_Waitany(2, rs, &index, &st);
    printf("waitany null index %d\n", index);
    show("waitany null", rc, &st, MPI_FLOAT);
    int outcount = -5, idx[2];
    rc = MPI_Testsome(2, rs, &outcount, idx, sts);
    printf("testsome null outcount %d rc %d\n", outcount, rc);
    preset(&st);
    rc = MPI_Recv(g, 10, MPI_FLOAT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
    show("recv proc_null", rc, &st, MPI_FLOAT);
    preset(&st);
    rc = MPI_Probe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
    show("probe proc_null", rc, &st, MPI_FLOAT);
    /* A receive nobody sends to, cancelled. */
    preset(&st);
    rc = MPI_Irecv(g, 10, MPI_FLOAT, 0, 12345, MPI_COMM_WORLD, &r);
    if (rc == MPI_SUCCESS) rc = MPI_Cancel(&r);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&r, &st);
    show("cancelled irecv (source and tag unspecified)", rc, &st, MPI_FLOAT);
    free(g);
  }
  MPI_Type_free(&vec);
  free(f);
  MPI_Finalize();
  return 0;
}
