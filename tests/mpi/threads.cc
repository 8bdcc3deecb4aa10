// An ordinary C++ MPI program with MPI_THREAD_MULTIPLE: four threads per rank exchange messages
// on their own duplicated communicators and on MPI_COMM_WORLD (distinct tags) at the same time, and
// one thread duplicates and frees communicators meanwhile. Checks every value.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;
constexpr int kIters = 200;
constexpr int kCount = 512;

void fail(const char* what, int rank) {
  std::fprintf(stderr, "rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// Integers and floats (the protocol's datatype when MPIZip's protocol is on), small and large.
void exchange(MPI_Comm comm, int tag, int rank, int size) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  std::vector<int> out(kCount), in(kCount);
  std::vector<float> fout(kCount * 64), fin(kCount * 64);
  for (int it = 0; it < kIters; ++it) {
    for (int i = 0; i < kCount; ++i) out[i] = rank * 1000003 + tag * 1009 + it * 7 + i;
    int nf = (it % 4 == 0) ? kCount * 64 : kCount;
    for (int i = 0; i < nf; ++i) fout[i] = static_cast<float>(out[i % kCount]) * 0.25f + i;
    MPI_Request reqs[4];
    MPI_Irecv(in.data(), kCount, MPI_INT, left, tag, comm, &reqs[0]);
    MPI_Irecv(fin.data(), nf, MPI_FLOAT, left, tag + 1000, comm, &reqs[1]);
    MPI_Isend(out.data(), kCount, MPI_INT, right, tag, comm, &reqs[2]);
    MPI_Isend(fout.data(), nf, MPI_FLOAT, right, tag + 1000, comm, &reqs[3]);
    MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < kCount; ++i) {
      if (in[i] != left * 1000003 + tag * 1009 + it * 7 + i) fail("wrong value", rank);
    }
    for (int i = 0; i < nf; ++i) {
      if (fin[i] != static_cast<float>(in[i % kCount]) * 0.25f + i) fail("wrong float", rank);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) std::printf("threads: MPI_THREAD_MULTIPLE not provided (%d); skipped\n", provided);
    MPI_Finalize();
    return 77;
  }
  std::vector<MPI_Comm> comms(kThreads);
  for (auto& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      exchange(comms[t], t, rank, size);
      exchange(MPI_COMM_WORLD, 100 + t, rank, size);
    });
  }
  // Communicator churn on a private communicator while the threads run (its own collectives).
  MPI_Comm base;
  MPI_Comm_dup(MPI_COMM_SELF, &base);
  for (int i = 0; i < 50; ++i) {
    MPI_Comm c;
    MPI_Comm_dup(base, &c);
    MPI_Comm_free(&c);
  }
  MPI_Comm_free(&base);
  for (auto& th : threads) th.join();
  for (auto& c : comms) MPI_Comm_free(&c);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("threads: ok on %d ranks x %d threads\n", size, kThreads);
  MPI_Finalize();
  return 0;
}
