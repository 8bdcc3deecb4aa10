// A catalogue of collective calls for the collective tests: every collective that takes buffers,
// blocking and non-blocking, on MPI_COMM_WORLD, an intercommunicator and neighbourhood topologies,
// with MPI_IN_PLACE, root-only arguments left null on the other ranks, v-variants with uneven counts
// (zeros among them) and displacements in reverse order with gaps, and a strided MPI_Type_vector
// whose gaps MPI must leave alone; beside them, ready sends (which MPIZip carries as standard
// sends). A case names its buffers (bytes and element kind, so that the drivers can fill them
// deterministically) and runs its call on whatever memory the driver hands it. Two drivers use
// it: tests/mpi/collectives.cc (host buffers, with and without MPIZip: results must not change)
// and tests/gpu/coll_staged_device.cc (device buffers against host buffers).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace coll_cases {

inline int rank = 0, size = 0;

#define CASES_CHECK(cond, ...)                                                \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "rank %d: %s:%d: ", coll_cases::rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                      \
      std::fprintf(stderr, "\n");                                             \
      MPI_Abort(MPI_COMM_WORLD, 1);                                           \
    }                                                                         \
  } while (0)

// MPI_Init, then this rank's place in MPI_COMM_WORLD.
inline void start_mpi(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
}

enum class Elem { kInt, kFloat, kDouble };

struct Buffer {
  size_t bytes;
  Elem elem;
};

struct Case {
  std::string name;
  std::vector<Buffer> buffers;
  // Runs the call on `b` (one pointer per buffer), blocking or through its non-blocking form.
  std::function<void(void* const* b, bool nonblocking)> run;
  bool has_nonblocking = true;
};

// The bytes a buffer starts with: a function of the case, the buffer and the rank. Integers small
// enough that sums never overflow; floats U[-1,1].
inline std::vector<uint8_t> initial(const Buffer& buf, uint64_t seed) {
  std::vector<uint8_t> v(buf.bytes);
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const size_t esize = buf.elem == Elem::kDouble ? 8 : 4;
  for (size_t i = 0; i + esize <= v.size(); i += esize) {
    if (buf.elem == Elem::kInt) {
      int32_t x = static_cast<int32_t>(g() % 2001) - 1000;
      std::memcpy(&v[i], &x, 4);
    } else if (buf.elem == Elem::kFloat) {
      float x = static_cast<float>(u(g));
      std::memcpy(&v[i], &x, 4);
    } else {
      double x = u(g);
      std::memcpy(&v[i], &x, 8);
    }
  }
  return v;
}

inline uint64_t seed_of(size_t case_index, size_t buffer, int n) {
  return (case_index * 1000003u + buffer * 7919u + static_cast<uint64_t>(rank) * 104729u) ^
         (static_cast<uint64_t>(n) << 40);
}

// Completes a non-blocking collective, by MPI_Wait or by polling MPI_Test, in turn.
inline void complete(MPI_Request* r) {
  static int turn = 0;
  if (turn++ % 2 == 0) {
    CASES_CHECK(MPI_Wait(r, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Wait");
    return;
  }
  int done = 0;
  while (!done) CASES_CHECK(MPI_Test(r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test");
}

// Calls the blocking form, or the non-blocking one and completes it.
template <class Blocking, class Nonblocking, class... A>
void call(bool nonblocking, Blocking b, Nonblocking nb, A... a) {
  if (!nonblocking) {
    CASES_CHECK(b(a...) == MPI_SUCCESS, "blocking call failed");
    return;
  }
  MPI_Request r = MPI_REQUEST_NULL;
  CASES_CHECK(nb(a..., &r) == MPI_SUCCESS, "non-blocking call failed");
  complete(&r);
}
#define CASES_BOTH(Blocking, Nonblocking, nonblocking, ...) \
  coll_cases::call(nonblocking, MPI_##Blocking, MPI_##Nonblocking, __VA_ARGS__)

// Uneven counts, block i of counts[i] elements, laid out in reverse order with a gap of one
// element after each block; `span` is the buffer's length in elements.
struct Blocks {
  std::vector<int> counts, displs;
  int span = 0;
  explicit Blocks(std::vector<int> c) : counts(std::move(c)), displs(counts.size()) {
    for (size_t i = counts.size(); i-- > 0;) {
      displs[i] = span;
      span += counts[i] + 1;
    }
  }
};

// An uneven count between two ranks (zero for some pairs), and a symmetric one for in-place
// all-to-alls (never zero: Open MPI 4.1's in-place MPI_Ialltoallv mismatches its messages when
// some counts are zero, and the next collective hangs).
inline int uneven(int n, int from, int to) { return n * ((from * 3 + to * 5 + 1) % 4) / 2; }
inline int symmetric(int n, int a, int b) { return n + n * ((a + b) % 3) / 2; }

// The communicators and datatypes the cases use, made once and freed at the end.
struct World {
  MPI_Datatype vec = MPI_DATATYPE_NULL;  // 3 blocks of 2 ints, stride 4: extent 40, 24 bytes
  MPI_Aint vec_extent = 40;
  MPI_Comm inter = MPI_COMM_NULL;        // even ranks and odd ranks
  int inter_local = 0, inter_remote = 0;
  bool inter_leader_group = false;       // the even ranks' group, whose rank 0 is the root
  MPI_Comm cart = MPI_COMM_NULL;         // periodic ring: two neighbours
  MPI_Comm ring = MPI_COMM_NULL;         // directed ring: from the left, to the right

  World() {
    MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Aint lb = 0;
    MPI_Type_get_extent(vec, &lb, &vec_extent);
    if (size >= 2) {
      MPI_Comm half;
      MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
      MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 77, &inter);
      MPI_Comm_free(&half);
      MPI_Comm_size(inter, &inter_local);
      MPI_Comm_remote_size(inter, &inter_remote);
      inter_leader_group = rank % 2 == 0;
    }
    int dims = size, periods = 1;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &dims, &periods, 0, &cart);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring);
  }
  ~World() {
    MPI_Type_free(&vec);
    if (inter != MPI_COMM_NULL) MPI_Comm_free(&inter);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&ring);
  }
  // The root argument of a rooted call on the intercommunicator.
  int inter_root() const {
    if (!inter_leader_group) return 0;
    int r = 0;
    MPI_Comm_rank(inter, &r);
    return r == 0 ? MPI_ROOT : MPI_PROC_NULL;
  }
  bool inter_is_root() const { return inter_root() == MPI_ROOT; }
};

// Every case, with `n` elements as the unit count.
inline std::vector<Case> cases(const World& w, int n) {
  const MPI_Comm world = MPI_COMM_WORLD;
  const int P = size, me = rank;
  const size_t I = sizeof(int), F = sizeof(float), D = sizeof(double);
  const size_t V = static_cast<size_t>(w.vec_extent);
  const size_t un = static_cast<size_t>(n);
  const int last = P - 1;
  std::vector<Case> c;
  auto add = [&c](std::string name, std::vector<Buffer> b,
                  std::function<void(void* const*, bool)> run, bool nb = true) {
    c.push_back({std::move(name), std::move(b), std::move(run), nb});
  };

  // ---- Bcast, Reduce, Allreduce, Reduce_local, Scan, Exscan ----
  add("bcast int root 0", {{un * I, Elem::kInt}},
      [=](void* const* b, bool nb) { CASES_BOTH(Bcast, Ibcast, nb, b[0], n, MPI_INT, 0, world); });
  add("bcast vector root last", {{un * V, Elem::kInt}}, [=, &w](void* const* b, bool nb) {
    CASES_BOTH(Bcast, Ibcast, nb, b[0], n, w.vec, last, world);
  });
  add("reduce float sum root 0", {{un * F, Elem::kFloat}, {un * F, Elem::kFloat}},
      [=](void* const* b, bool nb) {
        CASES_BOTH(Reduce, Ireduce, nb, b[0], b[1], n, MPI_FLOAT, MPI_SUM, 0, world);
      });
  add("reduce double max root last, in place", {{un * D, Elem::kDouble}},
      [=](void* const* b, bool nb) {
        const void* in = me == last ? MPI_IN_PLACE : b[0];
        void* out = me == last ? b[0] : nullptr;
        CASES_BOTH(Reduce, Ireduce, nb, in, out, n, MPI_DOUBLE, MPI_MAX, last, world);
      });
  add("allreduce int sum", {{un * I, Elem::kInt}, {un * I, Elem::kInt}},
      [=](void* const* b, bool nb) {
        CASES_BOTH(Allreduce, Iallreduce, nb, b[0], b[1], n, MPI_INT, MPI_SUM, world);
      });
  add("allreduce float prod, in place", {{un * F, Elem::kFloat}}, [=](void* const* b, bool nb) {
    CASES_BOTH(Allreduce, Iallreduce, nb, MPI_IN_PLACE, b[0], n, MPI_FLOAT, MPI_PROD, world);
  });
  add("reduce_local double sum", {{un * D, Elem::kDouble}, {un * D, Elem::kDouble}},
      [=](void* const* b, bool) {
        CASES_CHECK(MPI_Reduce_local(b[0], b[1], n, MPI_DOUBLE, MPI_SUM) == MPI_SUCCESS, "MPI_Reduce_local");
      },
      false);
  add("scan float sum", {{un * F, Elem::kFloat}, {un * F, Elem::kFloat}},
      [=](void* const* b, bool nb) { CASES_BOTH(Scan, Iscan, nb, b[0], b[1], n, MPI_FLOAT, MPI_SUM, world); });
  add("scan int max, in place", {{un * I, Elem::kInt}}, [=](void* const* b, bool nb) {
    CASES_BOTH(Scan, Iscan, nb, MPI_IN_PLACE, b[0], n, MPI_INT, MPI_MAX, world);
  });
  add("exscan int sum", {{un * I, Elem::kInt}, {un * I, Elem::kInt}},
      [=](void* const* b, bool nb) { CASES_BOTH(Exscan, Iexscan, nb, b[0], b[1], n, MPI_INT, MPI_SUM, world); });
  add("exscan double sum, in place", {{un * D, Elem::kDouble}}, [=](void* const* b, bool nb) {
    CASES_BOTH(Exscan, Iexscan, nb, MPI_IN_PLACE, b[0], n, MPI_DOUBLE, MPI_SUM, world);
  });

  // ---- Gather, Gatherv, Scatter, Scatterv (receive and send arguments of the root only) ----
  add("gather int root 0", {{un * I, Elem::kInt}, {me == 0 ? P * un * I : 0, Elem::kInt}},
      [=](void* const* b, bool nb) {
        CASES_BOTH(Gather, Igather, nb, b[0], n, MPI_INT, me == 0 ? b[1] : nullptr, n, MPI_INT, 0, world);
      });
  add("gather vector root last", {{un * V, Elem::kInt}, {me == last ? P * un * V : 0, Elem::kInt}},
      [=, &w](void* const* b, bool nb) {
        CASES_BOTH(Gather, Igather, nb, b[0], n, w.vec, b[1], n, w.vec, last, world);
      });
  add("gather float root 0, in place", {{P * un * F, Elem::kFloat}},
      [=](void* const* b, bool nb) {
        const void* in = me == 0 ? MPI_IN_PLACE : static_cast<float*>(b[0]) + me * un;
        CASES_BOTH(Gather, Igather, nb, in, n, MPI_FLOAT, me == 0 ? b[0] : nullptr, n, MPI_FLOAT, 0, world);
      });
  {
    std::vector<int> counts(static_cast<size_t>(P));
    for (int i = 0; i < P; ++i) counts[static_cast<size_t>(i)] = uneven(n, i, last);
    Blocks at_root(counts);
    const int mine = uneven(n, me, last);
    add("gatherv int root last",
        {{static_cast<size_t>(mine) * I, Elem::kInt},
         {me == last ? static_cast<size_t>(at_root.span) * I : 0, Elem::kInt}},
        [=](void* const* b, bool nb) {
          const bool root = me == last;
          CASES_BOTH(Gatherv, Igatherv, nb, b[0], mine, MPI_INT, root ? b[1] : nullptr,
                     root ? at_root.counts.data() : nullptr, root ? at_root.displs.data() : nullptr,
                     MPI_INT, last, world);
        });
    add("gatherv int root last, in place", {{static_cast<size_t>(at_root.span) * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          const bool root = me == last;
          const void* in = root ? MPI_IN_PLACE
                                : static_cast<int*>(b[0]) + at_root.displs[static_cast<size_t>(me)];
          CASES_BOTH(Gatherv, Igatherv, nb, in, mine, MPI_INT, root ? b[0] : nullptr,
                     root ? at_root.counts.data() : nullptr, root ? at_root.displs.data() : nullptr,
                     MPI_INT, last, world);
        });
    add("scatterv int root last",
        {{me == last ? static_cast<size_t>(at_root.span) * I : 0, Elem::kInt},
         {static_cast<size_t>(mine) * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          const bool root = me == last;
          CASES_BOTH(Scatterv, Iscatterv, nb, root ? b[0] : nullptr, root ? at_root.counts.data() : nullptr,
                     root ? at_root.displs.data() : nullptr, MPI_INT, b[1], mine, MPI_INT, last,
                     world);
        });
    add("scatterv int root last, in place", {{static_cast<size_t>(at_root.span) * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          const bool root = me == last;
          void* out = root ? MPI_IN_PLACE
                           : static_cast<int*>(b[0]) + at_root.displs[static_cast<size_t>(me)];
          CASES_BOTH(Scatterv, Iscatterv, nb, root ? b[0] : nullptr, root ? at_root.counts.data() : nullptr,
                     root ? at_root.displs.data() : nullptr, MPI_INT, out, mine, MPI_INT, last,
                     world);
        });
  }
  add("scatter int root 0", {{me == 0 ? P * un * I : 0, Elem::kInt}, {un * I, Elem::kInt}},
      [=](void* const* b, bool nb) {
        CASES_BOTH(Scatter, Iscatter, nb, me == 0 ? b[0] : nullptr, n, MPI_INT, b[1], n, MPI_INT, 0, world);
      });
  add("scatter vector root last", {{me == last ? P * un * V : 0, Elem::kInt}, {un * V, Elem::kInt}},
      [=, &w](void* const* b, bool nb) {
        CASES_BOTH(Scatter, Iscatter, nb, b[0], n, w.vec, b[1], n, w.vec, last, world);
      });
  add("scatter double root 0, in place", {{P * un * D, Elem::kDouble}},
      [=](void* const* b, bool nb) {
        void* out = me == 0 ? MPI_IN_PLACE : static_cast<double*>(b[0]) + me * un;
        CASES_BOTH(Scatter, Iscatter, nb, me == 0 ? b[0] : nullptr, n, MPI_DOUBLE, out, n, MPI_DOUBLE, 0,
                   world);
      });

  // ---- Allgather(v), Alltoall(v, w) ----
  add("allgather int", {{un * I, Elem::kInt}, {P * un * I, Elem::kInt}},
      [=](void* const* b, bool nb) {
        CASES_BOTH(Allgather, Iallgather, nb, b[0], n, MPI_INT, b[1], n, MPI_INT, world);
      });
  add("allgather vector", {{un * V, Elem::kInt}, {P * un * V, Elem::kInt}},
      [=, &w](void* const* b, bool nb) {
        CASES_BOTH(Allgather, Iallgather, nb, b[0], n, w.vec, b[1], n, w.vec, world);
      });
  add("allgather float, in place", {{P * un * F, Elem::kFloat}}, [=](void* const* b, bool nb) {
    CASES_BOTH(Allgather, Iallgather, nb, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b[0], n, MPI_FLOAT, world);
  });
  {
    std::vector<int> counts(static_cast<size_t>(P));
    for (int i = 0; i < P; ++i) counts[static_cast<size_t>(i)] = uneven(n, i, 0);
    Blocks all(counts);
    const int mine = counts[static_cast<size_t>(me)];
    add("allgatherv int", {{static_cast<size_t>(mine) * I, Elem::kInt},
                           {static_cast<size_t>(all.span) * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Allgatherv, Iallgatherv, nb, b[0], mine, MPI_INT, b[1], all.counts.data(),
                     all.displs.data(), MPI_INT, world);
        });
    add("allgatherv int, in place", {{static_cast<size_t>(all.span) * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Allgatherv, Iallgatherv, nb, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b[0], all.counts.data(),
                     all.displs.data(), MPI_INT, world);
        });
    // Reduce_scatter: the same uneven counts (every rank's share; zeros among them).
    int total = 0;
    for (int x : counts) total += x;
    add("reduce_scatter float sum", {{static_cast<size_t>(total) * F, Elem::kFloat},
                                     {static_cast<size_t>(mine) * F, Elem::kFloat}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Reduce_scatter, Ireduce_scatter, nb, b[0], b[1], all.counts.data(), MPI_FLOAT, MPI_SUM, world);
        });
    add("reduce_scatter int sum, in place", {{static_cast<size_t>(total) * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Reduce_scatter, Ireduce_scatter, nb, MPI_IN_PLACE, b[0], all.counts.data(), MPI_INT, MPI_SUM,
                     world);
        });
  }
  add("reduce_scatter_block double sum", {{P * un * D, Elem::kDouble}, {un * D, Elem::kDouble}},
      [=](void* const* b, bool nb) {
        CASES_BOTH(Reduce_scatter_block, Ireduce_scatter_block, nb, b[0], b[1], n, MPI_DOUBLE, MPI_SUM, world);
      });
  add("reduce_scatter_block int min, in place", {{P * un * I, Elem::kInt}},
      [=](void* const* b, bool nb) {
        CASES_BOTH(Reduce_scatter_block, Ireduce_scatter_block, nb, MPI_IN_PLACE, b[0], n, MPI_INT, MPI_MIN, world);
      });
  add("alltoall int", {{P * un * I, Elem::kInt}, {P * un * I, Elem::kInt}},
      [=](void* const* b, bool nb) {
        CASES_BOTH(Alltoall, Ialltoall, nb, b[0], n, MPI_INT, b[1], n, MPI_INT, world);
      });
  add("alltoall vector", {{P * un * V, Elem::kInt}, {P * un * V, Elem::kInt}},
      [=, &w](void* const* b, bool nb) {
        CASES_BOTH(Alltoall, Ialltoall, nb, b[0], n, w.vec, b[1], n, w.vec, world);
      });
  add("alltoall double, in place", {{P * un * D, Elem::kDouble}}, [=](void* const* b, bool nb) {
    CASES_BOTH(Alltoall, Ialltoall, nb, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b[0], n, MPI_DOUBLE, world);
  });
  {
    std::vector<int> sc(static_cast<size_t>(P)), rc(static_cast<size_t>(P)),
        sym(static_cast<size_t>(P));
    for (int j = 0; j < P; ++j) {
      sc[static_cast<size_t>(j)] = uneven(n, me, j);
      rc[static_cast<size_t>(j)] = uneven(n, j, me);
      sym[static_cast<size_t>(j)] = symmetric(n, me, j);
    }
    Blocks s(sc), r(rc), y(sym);
    add("alltoallv int", {{static_cast<size_t>(s.span) * I, Elem::kInt},
                          {static_cast<size_t>(r.span) * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Alltoallv, Ialltoallv, nb, b[0], s.counts.data(), s.displs.data(), MPI_INT, b[1],
                     r.counts.data(), r.displs.data(), MPI_INT, world);
        });
    add("alltoallv float, in place", {{static_cast<size_t>(y.span) * F, Elem::kFloat}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Alltoallv, Ialltoallv, nb, MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, b[0],
                     y.counts.data(), y.displs.data(), MPI_FLOAT, world);
        });
    // Alltoallw: to and from odd-sum pairs the vector type, else ints; byte displacements.
    std::vector<MPI_Datatype> st(static_cast<size_t>(P)), rt(static_cast<size_t>(P));
    std::vector<int> sd(static_cast<size_t>(P)), rd(static_cast<size_t>(P));
    int sbytes = 0, rbytes = 0;
    for (int j = P; j-- > 0;) {
      const size_t k = static_cast<size_t>(j);
      const bool strided = (me + j) % 2 == 1;
      st[k] = rt[k] = strided ? w.vec : MPI_INT;
      const int esize = strided ? static_cast<int>(V) : static_cast<int>(I);
      sd[k] = sbytes;
      sbytes += sc[k] * esize + 4;
      rd[k] = rbytes;
      rbytes += rc[k] * esize + 4;
    }
    add("alltoallw int and vector",
        {{static_cast<size_t>(sbytes), Elem::kInt}, {static_cast<size_t>(rbytes), Elem::kInt}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Alltoallw, Ialltoallw, nb, b[0], sc.data(), sd.data(), st.data(), b[1], rc.data(),
                     rd.data(), rt.data(), world);
        });
  }

  // ---- Intercommunicator: the even ranks' rank 0 is the root of rooted calls ----
  if (w.inter != MPI_COMM_NULL) {
    const MPI_Comm ic = w.inter;
    const int root = w.inter_root();
    const bool is_root = w.inter_is_root();
    const bool root_group = w.inter_leader_group;
    const size_t remote = static_cast<size_t>(w.inter_remote);
    add("inter bcast int", {{un * I, Elem::kInt}}, [=](void* const* b, bool nb) {
      CASES_BOTH(Bcast, Ibcast, nb, b[0], n, MPI_INT, root, ic);
    });
    add("inter gather float",
        {{root_group ? 0 : un * F, Elem::kFloat}, {is_root ? remote * un * F : 0, Elem::kFloat}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Gather, Igather, nb, root_group ? nullptr : b[0], n, MPI_FLOAT,
                     is_root ? b[1] : nullptr, n, MPI_FLOAT, root, ic);
        });
    add("inter scatter int",
        {{is_root ? remote * un * I : 0, Elem::kInt}, {root_group ? 0 : un * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Scatter, Iscatter, nb, is_root ? b[0] : nullptr, n, MPI_INT,
                     root_group ? nullptr : b[1], n, MPI_INT, root, ic);
        });
    add("inter allgather int", {{un * I, Elem::kInt}, {remote * un * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Allgather, Iallgather, nb, b[0], n, MPI_INT, b[1], n, MPI_INT, ic);
        });
    add("inter alltoall double", {{remote * un * D, Elem::kDouble}, {remote * un * D, Elem::kDouble}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Alltoall, Ialltoall, nb, b[0], n, MPI_DOUBLE, b[1], n, MPI_DOUBLE, ic);
        });
    add("inter allreduce int sum", {{un * I, Elem::kInt}, {un * I, Elem::kInt}},
        [=](void* const* b, bool nb) {
          CASES_BOTH(Allreduce, Iallreduce, nb, b[0], b[1], n, MPI_INT, MPI_SUM, ic);
        });
  }

  // ---- Neighbourhoods: a periodic ring (two neighbours) and a directed ring (one each way) ----
  add("neighbor_allgather cart int", {{un * I, Elem::kInt}, {2 * un * I, Elem::kInt}},
      [=, &w](void* const* b, bool nb) {
        CASES_BOTH(Neighbor_allgather, Ineighbor_allgather, nb, b[0], n, MPI_INT, b[1], n, MPI_INT, w.cart);
      });
  {
    const int left = (me + P - 1) % P;
    const int mine = uneven(n, me, 0), from_left = uneven(n, left, 0);
    Blocks in({from_left});
    const MPI_Aint gap = 8;  // bytes before the one block, in the w-variant
    add("neighbor_alltoall ring vector", {{un * V, Elem::kInt}, {un * V, Elem::kInt}},
        [=, &w](void* const* b, bool nb) {
          CASES_BOTH(Neighbor_alltoall, Ineighbor_alltoall, nb, b[0], n, w.vec, b[1], n, w.vec, w.ring);
        });
    add("neighbor_allgatherv ring int", {{static_cast<size_t>(mine) * I, Elem::kInt},
                                         {static_cast<size_t>(in.span) * I, Elem::kInt}},
        [=, &w](void* const* b, bool nb) {
          CASES_BOTH(Neighbor_allgatherv, Ineighbor_allgatherv, nb, b[0], mine, MPI_INT, b[1], in.counts.data(),
                     in.displs.data(), MPI_INT, w.ring);
        });
    add("neighbor_alltoallv ring float", {{static_cast<size_t>(mine + 2) * F, Elem::kFloat},
                                          {static_cast<size_t>(in.span) * F, Elem::kFloat}},
        [=, &w](void* const* b, bool nb) {
          const int sdispl = 2;
          CASES_BOTH(Neighbor_alltoallv, Ineighbor_alltoallv, nb, b[0], &mine, &sdispl, MPI_FLOAT, b[1],
                     in.counts.data(), in.displs.data(), MPI_FLOAT, w.ring);
        });
    add("neighbor_alltoallw ring int",
        {{static_cast<size_t>(gap) + static_cast<size_t>(mine) * I, Elem::kInt},
         {static_cast<size_t>(gap) + static_cast<size_t>(from_left) * I, Elem::kInt}},
        [=, &w](void* const* b, bool nb) {
          const MPI_Datatype t = MPI_INT;
          CASES_BOTH(Neighbor_alltoallw, Ineighbor_alltoallw, nb, b[0], &mine, &gap, &t, b[1], &from_left, &gap, &t,
                     w.ring);
        });
  }
  // ---- Several at once: collectives in flight together with point-to-point, one Waitall ----
  add("together: bcast, allgather, alltoall vector, sendrecv",
      {{un * I, Elem::kInt}, {un * F, Elem::kFloat}, {P * un * F, Elem::kFloat},
       {P * un * V, Elem::kInt}, {P * un * V, Elem::kInt}, {un * I, Elem::kInt},
       {un * I, Elem::kInt}},
      [=, &w](void* const* b, bool nb) {
        const int right = (me + 1) % P, left = (me + P - 1) % P;
        if (!nb) {
          MPI_Bcast(b[0], n, MPI_INT, 0, world);
          MPI_Allgather(b[1], n, MPI_FLOAT, b[2], n, MPI_FLOAT, world);
          MPI_Alltoall(b[3], n, w.vec, b[4], n, w.vec, world);
          MPI_Sendrecv(b[5], n, MPI_INT, right, 5, b[6], n, MPI_INT, left, 5, world,
                       MPI_STATUS_IGNORE);
          return;
        }
        MPI_Request r[5];
        MPI_Irecv(b[6], n, MPI_INT, left, 5, world, &r[0]);
        MPI_Ibcast(b[0], n, MPI_INT, 0, world, &r[1]);
        MPI_Iallgather(b[1], n, MPI_FLOAT, b[2], n, MPI_FLOAT, world, &r[2]);
        MPI_Ialltoall(b[3], n, w.vec, b[4], n, w.vec, world, &r[3]);
        MPI_Isend(b[5], n, MPI_INT, right, 5, world, &r[4]);
        CASES_CHECK(MPI_Waitall(5, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
      });
  // ---- Ready sends (the receive is posted before a barrier), plain and persistent ----
  add("ready send float ring", {{un * F, Elem::kFloat}, {un * F, Elem::kFloat}},
      [=](void* const* b, bool nb) {
        const int right = (me + 1) % P, left = (me + P - 1) % P;
        MPI_Request r[2];
        MPI_Irecv(b[1], n, MPI_FLOAT, left, 6, world, &r[0]);
        MPI_Barrier(world);
        if (nb) {
          MPI_Irsend(b[0], n, MPI_FLOAT, right, 6, world, &r[1]);
        } else {
          MPI_Rsend(b[0], n, MPI_FLOAT, right, 6, world);
          r[1] = MPI_REQUEST_NULL;
        }
        CASES_CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
      });
  add("persistent ready send double ring", {{un * D, Elem::kDouble}, {un * D, Elem::kDouble}},
      [=](void* const* b, bool) {
        const int right = (me + 1) % P, left = (me + P - 1) % P;
        MPI_Request r[2];
        MPI_Rsend_init(b[0], n, MPI_DOUBLE, right, 7, world, &r[1]);
        MPI_Irecv(b[1], n, MPI_DOUBLE, left, 7, world, &r[0]);
        MPI_Barrier(world);
        MPI_Start(&r[1]);
        CASES_CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
        MPI_Request_free(&r[1]);
      },
      false);
  return c;
}

// Bytes after each buffer that no call may touch.
constexpr size_t kGuard = 64;

// The bytes buffer `i` of case `k` starts with on this rank, guard included.
inline std::vector<uint8_t> start_bytes(const Case& c, size_t k, size_t i, int n) {
  std::vector<uint8_t> v = initial(c.buffers[i], seed_of(k, i, n));
  v.resize(v.size() + kGuard, static_cast<uint8_t>(0xA5 ^ i));
  return v;
}

// Runs case `k` on host buffers; returns what they hold afterwards, guards included.
inline std::vector<std::vector<uint8_t>> run_on_host(const Case& c, size_t k, int n, bool nb) {
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < c.buffers.size(); ++i) bufs.push_back(start_bytes(c, k, i, n));
  for (auto& b : bufs) ptrs.push_back(b.data());
  c.run(ptrs.data(), nb);
  return bufs;
}

// FNV-1a of a buffer's bytes.
inline uint64_t digest(const void* p, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace coll_cases
