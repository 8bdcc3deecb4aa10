/* The instructions a point-to-point call costs, counted under callgrind (repeatable, unlike a
 * timed run on a shared machine). One process sends to itself on MPI_COMM_SELF, so that no cycle
 * is spent waiting for a peer: `blocking` runs MPI_Send + MPI_Recv of one element, `nonblocking`
 * MPI_Isend + MPI_Recv + MPI_Wait, then MPI_Send + MPI_Recv of none, `window` MPI_Irecv + MPI_Isend +
 * MPI_Waitall of the two, `window64` 64 of each and one MPI_Waitall (osu_bw's pattern). The cost of one iteration is
 * the difference between two runs of different lengths, divided by the difference in iterations:
 *
 *   mpicc -O2 osu-bench/call_cost.c -o call_cost
 *   for n in 1000 11000; do mpirun -np 1 [-x LD_PRELOAD=libmpizip.so] valgrind --tool=callgrind \
 *     --callgrind-out-file=cg.$n ./call_cost blocking double $n; done
 *   (summary of cg.11000 - summary of cg.1000) / 10000
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: call_cost blocking|nonblocking|window|window64 double|char ITERATIONS\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  const int blocking = strcmp(argv[1], "blocking") == 0;
  const int window = strcmp(argv[1], "window") == 0;
  const int window64 = strcmp(argv[1], "window64") == 0;
  const MPI_Datatype t = strcmp(argv[2], "char") == 0 ? MPI_CHAR : MPI_DOUBLE;
  const int n = atoi(argv[3]);
  double b = 1, x = 0;
  for (int i = 0; i < n; ++i) {
    if (window64) {
      MPI_Request q[128];
      for (int k = 0; k < 64; ++k) MPI_Irecv(&x, 1, t, 0, k, MPI_COMM_SELF, &q[k]);
      for (int k = 0; k < 64; ++k) MPI_Isend(&b, 1, t, 0, k, MPI_COMM_SELF, &q[64 + k]);
      MPI_Waitall(128, q, MPI_STATUSES_IGNORE);
    } else if (window) {
      MPI_Request q[2];
      MPI_Irecv(&x, 1, t, 0, 0, MPI_COMM_SELF, &q[0]);
      MPI_Isend(&b, 1, t, 0, 0, MPI_COMM_SELF, &q[1]);
      MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    } else if (blocking) {
      MPI_Send(&b, 1, t, 0, 0, MPI_COMM_SELF);
      MPI_Recv(&x, 1, t, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    } else {
      MPI_Request q;
      MPI_Isend(&b, 1, t, 0, 0, MPI_COMM_SELF, &q);
      MPI_Recv(&x, 1, t, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
      MPI_Send(&b, 0, t, 0, 1, MPI_COMM_SELF);
      MPI_Recv(&x, 1, t, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    }
  }
  MPI_Finalize();
  return 0;
}
