/* Non-blocking receives into one buffer, as OSU's osu_bw posts its window: rank 0 sends W
 * messages of floats, rank 1 receives them all into the same memory, waiting for them together
 * (MPI_Waitall), in order, or in reverse order. Each receive must report the whole message, and
 * with MPIZip every message's payload must be taken (the driver checks the statistics and that no
 * send is abandoned at MPI_Finalize): a match message that lands in the buffer must be read before
 * another receive writes there (p2p::LandingGuard). The buffer then holds one of the messages. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 4, N = 1 << 18 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float* buf = malloc(sizeof(float) * N * W);
  for (int way = 0; way < 3; ++way) {  /* waitall, in order, reverse order */
    for (int it = 0; it < 3; ++it) {
      MPI_Request r[W];
      MPI_Status st[W];
      for (int k = 0; k < W; ++k) {
        float* b = buf + (rank == 0 ? (size_t)k * N : 0);
        if (rank == 0) {
          for (int i = 0; i < N; ++i) b[i] = (float)((i + k * 7) % 1000) * 0.25f;
          MPI_Isend(b, N, MPI_FLOAT, 1, 7, MPI_COMM_WORLD, &r[k]);
        } else {
          MPI_Irecv(b, N, MPI_FLOAT, 0, 7, MPI_COMM_WORLD, &r[k]);
        }
      }
      if (rank == 0 || way == 0) {
        MPI_Waitall(W, r, st);
      } else {
        for (int k = 0; k < W; ++k) {
          const int at = way == 1 ? k : W - 1 - k;
          MPI_Wait(&r[at], &st[at]);
        }
      }
      if (rank == 1) {
        for (int k = 0; k < W; ++k) {
          int count = -1;
          MPI_Get_count(&st[k], MPI_FLOAT, &count);
          if (count != N || st[k].MPI_SOURCE != 0 || st[k].MPI_TAG != 7) {
            if (errors++ < 5) fprintf(stderr, "overlap_window: way %d receive %d: count %d\n", way, k, count);
          }
        }
        int which = -1;  /* the buffer holds one whole message */
        for (int k = 0; k < W && which < 0; ++k) {
          int same = 1;
          for (int i = 0; i < N && same; ++i) same = buf[i] == (float)((i + k * 7) % 1000) * 0.25f;
          if (same) which = k;
        }
        if (which < 0 && errors++ < 5) fprintf(stderr, "overlap_window: way %d: the buffer holds no message\n", way);
      }
      char ack = 0;
      if (rank == 0) MPI_Recv(&ack, 1, MPI_CHAR, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      else MPI_Send(&ack, 1, MPI_CHAR, 0, 8, MPI_COMM_WORLD);
    }
  }
  if (rank == 1 && errors == 0) printf("overlap_window: ok\n");
  free(buf);
  MPI_Finalize();
  return errors != 0;
}
