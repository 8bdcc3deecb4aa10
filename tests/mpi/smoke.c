/* An ordinary C MPI program touching every entry point MPIZip intercepts; it checks its own
 * results, so it must pass identically with and without libmpizip preloaded. Runs on 2..N ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CHECK_ABORT_AFTER 0
#include "tests/mpi/check.h"

#define N 1000

static int rank, size;

static void point_to_point(MPI_Comm comm) {
  double out[N], in[N];
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int i = 0; i < N; ++i) out[i] = rank * 1e6 + i * 0.5;

  /* blocking ring */
  if (rank % 2 == 0) {
    MPI_Send(out, N, MPI_DOUBLE, right, 7, comm);
    MPI_Recv(in, N, MPI_DOUBLE, left, 7, comm, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(in, N, MPI_DOUBLE, left, 7, comm, MPI_STATUS_IGNORE);
    MPI_Send(out, N, MPI_DOUBLE, right, 7, comm);
  }
  for (int i = 0; i < N; ++i) CHECK(in[i] == left * 1e6 + i * 0.5, "ring value %d", i);

  /* non-blocking with status, any source */
  MPI_Request req[2];
  MPI_Status st[2];
  MPI_Irecv(in, N, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &req[0]);
  MPI_Isend(out, N / 2, MPI_DOUBLE, right, 11, comm, &req[1]);
  MPI_Waitall(2, req, st);
  int count = -1;
  MPI_Get_count(&st[0], MPI_DOUBLE, &count);
  CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == 11 && count == N / 2, "status %d %d %d",
        st[0].MPI_SOURCE, st[0].MPI_TAG, count);

  /* sendrecv, sendrecv_replace, ssend/issend */
  MPI_Sendrecv(out, N, MPI_DOUBLE, right, 1, in, N, MPI_DOUBLE, left, 1, comm, MPI_STATUS_IGNORE);
  CHECK(in[N - 1] == left * 1e6 + (N - 1) * 0.5, "sendrecv");
  memcpy(in, out, sizeof out);
  MPI_Sendrecv_replace(in, N, MPI_DOUBLE, right, 2, left, 2, comm, MPI_STATUS_IGNORE);
  CHECK(in[3] == left * 1e6 + 1.5, "sendrecv_replace");
  MPI_Irecv(in, N, MPI_DOUBLE, left, 3, comm, &req[0]);
  MPI_Issend(out, N, MPI_DOUBLE, right, 3, comm, &req[1]);
  int index = -1, done = 0;
  MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE);
  CHECK(index == 0 || index == 1, "waitany index");
  while (!done) MPI_Testall(2, req, &done, MPI_STATUSES_IGNORE);
  if (rank % 2 == 0) {
    MPI_Ssend(out, 1, MPI_DOUBLE, right, 4, comm);
    MPI_Recv(in, 1, MPI_DOUBLE, left, 4, comm, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(in, 1, MPI_DOUBLE, left, 4, comm, MPI_STATUS_IGNORE);
    MPI_Ssend(out, 1, MPI_DOUBLE, right, 4, comm);
  }

  /* probes and matched probes */
  MPI_Isend(out, 17, MPI_DOUBLE, right, 5, comm, &req[1]);
  MPI_Status ps;
  MPI_Probe(left, 5, comm, &ps);
  MPI_Get_count(&ps, MPI_DOUBLE, &count);
  CHECK(count == 17, "probe count %d", count);
  int flag = 0;
  while (!flag) MPI_Iprobe(left, 5, comm, &flag, &ps);
  MPI_Message msg;
  MPI_Mprobe(left, 5, comm, &msg, &ps);
  MPI_Mrecv(in, N, MPI_DOUBLE, &msg, &ps);
  CHECK(in[16] == left * 1e6 + 8.0, "mrecv");
  MPI_Wait(&req[1], MPI_STATUS_IGNORE);
  MPI_Isend(out, 3, MPI_DOUBLE, right, 6, comm, &req[1]);
  flag = 0;
  while (!flag) MPI_Improbe(left, 6, comm, &flag, &msg, &ps);
  MPI_Imrecv(in, N, MPI_DOUBLE, &msg, &req[0]);
  int outcount = 0, indices[2];
  int completed = 0;
  while (completed < 2) {
    MPI_Waitsome(2, req, &outcount, indices, MPI_STATUSES_IGNORE);
    if (outcount == MPI_UNDEFINED) break;
    completed += outcount;
  }
  CHECK(in[2] == left * 1e6 + 1.0, "imrecv");

  /* persistent requests, test forms, request status, cancel, free */
  MPI_Send_init(out, N, MPI_DOUBLE, right, 8, comm, &req[1]);
  MPI_Recv_init(in, N, MPI_DOUBLE, left, 8, comm, &req[0]);
  for (int it = 0; it < 3; ++it) {
    MPI_Startall(2, req);
    int some = 0;
    completed = 0;
    while (completed < 2) {
      MPI_Testsome(2, req, &some, indices, MPI_STATUSES_IGNORE);
      if (some == MPI_UNDEFINED) break;
      completed += some;
    }
    CHECK(in[N - 2] == left * 1e6 + (N - 2) * 0.5, "persistent");
  }
  MPI_Start(&req[0]);
  MPI_Cancel(&req[0]);
  MPI_Wait(&req[0], &ps);
  int cancelled = 0;
  MPI_Test_cancelled(&ps, &cancelled);
  CHECK(cancelled, "cancel of a pending persistent receive");
  MPI_Request_free(&req[0]);
  MPI_Request_free(&req[1]);
  MPI_Isend(out, 1, MPI_DOUBLE, right, 9, comm, &req[1]);
  MPI_Recv(in, 1, MPI_DOUBLE, left, 9, comm, MPI_STATUS_IGNORE);
  flag = 0;
  while (!flag) MPI_Request_get_status(req[1], &flag, MPI_STATUS_IGNORE);
  MPI_Test(&req[1], &flag, MPI_STATUS_IGNORE);
  index = 0;
  MPI_Testany(1, &req[1], &index, &flag, MPI_STATUS_IGNORE);
  CHECK(flag && index == MPI_UNDEFINED, "testany on an inactive request");
}

static void collectives(MPI_Comm comm) {
  int csize;
  MPI_Comm_size(comm, &csize);
  float in[N], out[N];
  for (int i = 0; i < N; ++i) in[i] = (float)(rank + 1) + (float)i;
  MPI_Allreduce(in, out, N, MPI_FLOAT, MPI_SUM, comm);
  int crank;
  /* every rank's contribution, summed in the world numbering of the members */
  float mine = (float)(rank + 1), total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_FLOAT, MPI_SUM, comm);
  for (int i = 0; i < N; ++i) CHECK(out[i] == total + (float)csize * (float)i, "allreduce %d", i);
  MPI_Request r;
  MPI_Iallreduce(MPI_IN_PLACE, in, N, MPI_FLOAT, MPI_MAX, comm, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  int* all = malloc(sizeof(int) * csize);
  MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, comm);
  MPI_Comm_rank(comm, &crank);
  CHECK(all[crank] == rank, "allgather places my contribution at my rank");
  for (int i = 1; i < csize; ++i) CHECK(all[i] != all[i - 1], "allgather distinct");
  int* blocks = malloc(sizeof(int) * csize * 4);
  for (int i = 0; i < csize * 4; ++i) blocks[i] = i;
  int part[4];
  MPI_Reduce_scatter_block(blocks, part, 4, MPI_INT, MPI_SUM, comm);
  MPI_Comm_rank(comm, &crank);
  for (int i = 0; i < 4; ++i) CHECK(part[i] == csize * (crank * 4 + i), "reduce_scatter_block");
  free(all);
  free(blocks);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  point_to_point(MPI_COMM_WORLD);
  collectives(MPI_COMM_WORLD);

  MPI_Comm dup, split, created, grouped, typed, idup, dupinfo;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_name(dup, "smoke-dup");
  point_to_point(dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split);
  collectives(split);
  MPI_Group world_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_create(MPI_COMM_WORLD, world_group, &created);
  MPI_Comm_create_group(MPI_COMM_WORLD, world_group, 99, &grouped);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &typed);
  MPI_Request r;
  MPI_Comm_idup(MPI_COMM_WORLD, &idup, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Comm_dup_with_info(dup, MPI_INFO_NULL, &dupinfo);
  collectives(created);
  collectives(idup);
  point_to_point(dupinfo);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&dupinfo);
  MPI_Comm_free(&idup);
  MPI_Comm_free(&typed);
  MPI_Comm_free(&grouped);
  MPI_Comm_free(&created);
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("smoke: ok on %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
