// Collectives that the MPI library runs, with device buffers, under an MPI that cannot read GPU
// memory. Each rank decides for itself (DESIGN.md, D3: where a buffer lives is a local fact): a
// buffer argument in device memory is replaced by a host copy of the bytes the call covers, copied
// in before the call when MPI reads it (or when MPI writes only part of it, so that what it does not
// write keeps the device's contents), and copied back once the call has completed when MPI writes
// it. The MPI library then runs the very call the application made, on host memory: the results are
// bitwise those of the same call on host buffers.
//
// Each collective is described once, by a *layout* (coll_staging.cc) that says which of its buffer
// arguments MPI reads or writes on this rank and which bytes (root-only arguments, MPI_IN_PLACE, the
// counts and displacements of the v- and w-variants, intercommunicators); the blocking and the
// non-blocking entry point share it. A non-blocking one posts the MPI library's non-blocking call on
// the host copies behind a generalized request (src/core/requests.h), which copies the results back
// when that call completes. With no buffer on the device, the call goes to the MPI library as it is.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>

#include "src/core/mpi_beneath.h"
#include "src/core/reduce_type.h"
#include "src/core/runtime.h"
#include "src/platform/buffers.h"
#include "src/platform/operation.h"

namespace mpizip::core {

// How the MPI call uses a buffer argument on this rank.
enum class Access : uint8_t {
  kNone,    // not at all (a root-only argument elsewhere): left as it is
  kRead,    // input: copied to the host before the call
  kWrite,   // output: copied back after it (copied in first unless MPI writes every byte)
  kUpdate,  // both (MPI_IN_PLACE): copied in before, back after
};

// The bytes a buffer argument covers, as offsets from its address: [lo, hi), the union of the
// true extents of the elements the call touches; `payload` counts the bytes of data among them (it
// equals hi - lo when the elements leave no gaps).
struct Span {
  MPI_Aint lo = 0;
  MPI_Aint hi = 0;
  MPI_Aint payload = 0;
  bool any = false;
};

// The host copies standing in for one call's device buffers (at most two: what it sends and what
// it receives), and for a non-blocking call the MPI library's request. An Operation, so that the
// request engine can complete a non-blocking call.
class Staging final : public platform::Operation {
 public:
  explicit Staging(MPI_Comm comm) : comm_(comm) {}
  ~Staging() override;
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // Replaces *buf, a device buffer, by the address of a host copy of `span` (copied in according
  // to `access`). An MPI error code (MPI_ERR_NO_MEM when host memory ran out).
  int add(void** buf, Access access, const Span& span);
  bool empty() const { return count_ == 0; }

  // After the blocking MPI call that returned `rc`: copies the outputs back. Returns rc, or the
  // error of a failed copy (raised on the communicator).
  int finish(int rc);
  // Raises an error of MPIZip's own (staging) on the communicator and returns it.
  int fail(int rc) const;

  // Non-blocking: where the MPI library's request goes; progress() completes once it has and the
  // outputs are back on the device.
  MPI_Request* request() { return &request_; }
  bool progress() override;

 private:
  struct Region {
    char* device = nullptr;  // the buffer's address + span.lo
    uint64_t bytes = 0;
    bool store = false;  // copied back after the call
    platform::HostBuffer host;
  };
  int store();

  MPI_Comm comm_;
  std::array<Region, 2> regions_;
  int count_ = 0;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

// True when a device buffer can reach a collective: MPIZip is active in a process with a GPU.
// Otherwise every staged entry point is the MPI library's call and nothing else.
inline bool staging_on() { return process_has_gpu() && active() && !mpi_cuda_aware(); }

// Registers a staged non-blocking call with the request engine as the application's request.
int staging_start(std::unique_ptr<Staging> s, MPI_Comm comm, MPI_Request* request);

// The communicator of a call: its last argument (every collective's but MPI_Reduce_local's, whose
// errors go to MPI_COMM_WORLD). Taken by position, since in some MPI libraries MPI_Comm is an int.
template <bool kHasComm, class... A>
MPI_Comm comm_of(A&... a) {
  if constexpr (kHasComm) {
    return std::get<sizeof...(A) - 1>(std::forward_as_tuple(a...));
  } else {
    return MPI_COMM_WORLD;
  }
}

// An entry point of a blocking collective: `kLayout(Staging&, args...)` stages what this rank's
// buffers need, then `kCall(args...)` (the PMPI function) runs on the host copies. (Always the
// blocking call: a rank may not turn it into the non-blocking form on its own, since MPI never
// matches a blocking collective with a non-blocking one.)
// A reduction's op as the MPI library gets it (reduce_type.h, library_op: MPIZip's own operation
// for its float types, which the library cannot reduce with its own), for calls with kReduction:
// every reducing collective has its datatype and op at positions 3 and 4.
template <bool kReduction, class... A>
void to_library_op(A&... a) {
  if constexpr (kReduction) {
    auto args = std::tie(a...);
    std::get<4>(args) = library_op(std::get<3>(args), std::get<4>(args));
  }
}

template <auto kLayout, auto kCall, bool kHasComm = true, bool kReduction = false>
struct Blocking {
  template <class... A>
  int operator()(A... a) const {
    to_library_op<kReduction>(a...);
    if (!staging_on()) return kCall(a...);
    Staging s(comm_of<kHasComm>(a...));
    int rc = kLayout(s, a...);
    if (rc != MPI_SUCCESS) return s.fail(rc);
    if (s.empty()) return kCall(a...);
    return s.finish(kCall(a...));
  }
};

// The non-blocking form: the same layout over every argument but the request, then `kCall` (the
// PMPI_I* function) into the staging's own request, behind a generalized one.
template <auto kLayout, auto kCall, bool kReduction = false>
struct Nonblocking {
  template <class... A>
  int operator()(A... a) const {
    to_library_op<kReduction>(a...);
    if (!staging_on()) return kCall(a...);
    return start(std::forward_as_tuple(a...), std::make_index_sequence<sizeof...(A) - 1>());
  }

 private:
  template <class Args, size_t... I>
  static int start(Args args, std::index_sequence<I...>) {
    MPI_Request* request = std::get<sizeof...(I)>(args);
    const MPI_Comm comm = comm_of<true>(std::get<I>(args)...);
    auto s = std::make_unique<Staging>(comm);
    int rc = kLayout(*s, std::get<I>(args)...);
    if (rc != MPI_SUCCESS) return s->fail(rc);
    if (s->empty()) return kCall(std::get<I>(args)..., request);
    rc = kCall(std::get<I>(args)..., s->request());
    if (rc != MPI_SUCCESS) return rc;  // the MPI library has raised it
    return staging_start(std::move(s), comm, request);
  }

 public:
  // The same call on `on` (a duplicate of the call's communicator, ranked alike) in place of its
  // communicator, the last argument, as an operation of its own rather than the application's
  // request (a deferred call, coll_deferred.h). Errors as a status, raised on nothing.
  template <class... A>
  Status operation_on(MPI_Comm on, std::unique_ptr<platform::Operation>* op, A... a) const {
    to_library_op<kReduction>(a...);
    return start_on(on, op, std::forward_as_tuple(a...), std::make_index_sequence<sizeof...(A) - 1>());
  }

 private:
  template <class Args, size_t... I>
  static Status start_on(MPI_Comm on, std::unique_ptr<platform::Operation>* op, Args args,
                         std::index_sequence<I...>) {
    auto s = std::make_unique<Staging>(on);
    int rc = kLayout(*s, std::get<I>(args)..., on);
    if (rc == MPI_SUCCESS) rc = kCall(std::get<I>(args)..., on, s->request());
    if (rc != MPI_SUCCESS) return Status::mpi(rc);
    *op = std::move(s);
    return Status::kOk;
  }
};

// The layouts, one per collective (coll_staging.cc): each takes the blocking call's arguments, the
// buffers by reference so that it can put host copies in their place.
namespace layout {
int allreduce(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type,
              MPI_Op op, MPI_Comm comm);
int reduce(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type,
           MPI_Op op, int root, MPI_Comm comm);
int reduce_local(Staging& s, const void*& inbuf, void*& inoutbuf, int count, MPI_Datatype type,
                 MPI_Op op);
int bcast(Staging& s, void*& buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int gather(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype, void*& recvbuf,
           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int gatherv(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype, void*& recvbuf,
            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
            MPI_Comm comm);
int scatter(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype, void*& recvbuf,
            int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int scatterv(Staging& s, const void*& sendbuf, const int sendcounts[], const int displs[],
             MPI_Datatype sendtype, void*& recvbuf, int recvcount, MPI_Datatype recvtype, int root,
             MPI_Comm comm);
int allgather(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
              void*& recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int allgatherv(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
               void*& recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype,
               MPI_Comm comm);
int alltoall(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
             void*& recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int alltoallv(Staging& s, const void*& sendbuf, const int sendcounts[], const int sdispls[],
              MPI_Datatype sendtype, void*& recvbuf, const int recvcounts[], const int rdispls[],
              MPI_Datatype recvtype, MPI_Comm comm);
int alltoallw(Staging& s, const void*& sendbuf, const int sendcounts[], const int sdispls[],
              const MPI_Datatype sendtypes[], void*& recvbuf, const int recvcounts[],
              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
int reduce_scatter(Staging& s, const void*& sendbuf, void*& recvbuf, const int recvcounts[],
                   MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int reduce_scatter_block(Staging& s, const void*& sendbuf, void*& recvbuf, int recvcount,
                         MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int scan(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type, MPI_Op op,
         MPI_Comm comm);
int exscan(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type,
           MPI_Op op, MPI_Comm comm);
// Neighbourhood collectives: counts per neighbour of the communicator's topology.
int neighbor_allgather(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
                       void*& recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int neighbor_allgatherv(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
                        void*& recvbuf, const int recvcounts[], const int displs[],
                        MPI_Datatype recvtype, MPI_Comm comm);
int neighbor_alltoall(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
                      void*& recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int neighbor_alltoallv(Staging& s, const void*& sendbuf, const int sendcounts[],
                       const int sdispls[], MPI_Datatype sendtype, void*& recvbuf,
                       const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm);
int neighbor_alltoallw(Staging& s, const void*& sendbuf, const int sendcounts[],
                       const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void*& recvbuf,
                       const int recvcounts[], const MPI_Aint rdispls[],
                       const MPI_Datatype recvtypes[], MPI_Comm comm);
}  // namespace layout

// The entry points (handlers of src/interpose/mpi_calls.def): each staged collective, blocking
// and non-blocking, from its layout and the MPI library's functions. MPI_Allreduce and
// MPI_Iallreduce reach theirs through coll_route.h, when MPIZip does not run them itself.
#define MPIZIP_STAGED(name, blocking, nonblocking)                        \
  inline constexpr Blocking<layout::name, blocking> name{};               \
  inline constexpr Nonblocking<layout::name, nonblocking> i##name{};
#define MPIZIP_STAGED_REDUCTION(name, blocking, nonblocking)              \
  inline constexpr Blocking<layout::name, blocking, true, true> name{};   \
  inline constexpr Nonblocking<layout::name, nonblocking, true> i##name{};
MPIZIP_STAGED_REDUCTION(reduce, PMPI_Reduce, PMPI_Ireduce)
MPIZIP_STAGED(bcast, PMPI_Bcast, PMPI_Ibcast)
MPIZIP_STAGED(gather, PMPI_Gather, PMPI_Igather)
MPIZIP_STAGED(gatherv, PMPI_Gatherv, PMPI_Igatherv)
MPIZIP_STAGED(scatter, PMPI_Scatter, PMPI_Iscatter)
MPIZIP_STAGED(scatterv, PMPI_Scatterv, PMPI_Iscatterv)
MPIZIP_STAGED(allgather, PMPI_Allgather, PMPI_Iallgather)
MPIZIP_STAGED(allgatherv, PMPI_Allgatherv, PMPI_Iallgatherv)
MPIZIP_STAGED(alltoall, PMPI_Alltoall, PMPI_Ialltoall)
MPIZIP_STAGED(alltoallv, PMPI_Alltoallv, PMPI_Ialltoallv)
MPIZIP_STAGED(alltoallw, PMPI_Alltoallw, PMPI_Ialltoallw)
MPIZIP_STAGED_REDUCTION(reduce_scatter, PMPI_Reduce_scatter, PMPI_Ireduce_scatter)
MPIZIP_STAGED_REDUCTION(reduce_scatter_block, PMPI_Reduce_scatter_block, PMPI_Ireduce_scatter_block)
MPIZIP_STAGED_REDUCTION(scan, PMPI_Scan, PMPI_Iscan)
MPIZIP_STAGED_REDUCTION(exscan, PMPI_Exscan, PMPI_Iexscan)
MPIZIP_STAGED(neighbor_allgather, PMPI_Neighbor_allgather, PMPI_Ineighbor_allgather)
MPIZIP_STAGED(neighbor_allgatherv, PMPI_Neighbor_allgatherv, PMPI_Ineighbor_allgatherv)
MPIZIP_STAGED(neighbor_alltoall, PMPI_Neighbor_alltoall, PMPI_Ineighbor_alltoall)
MPIZIP_STAGED(neighbor_alltoallv, PMPI_Neighbor_alltoallv, PMPI_Ineighbor_alltoallv)
MPIZIP_STAGED(neighbor_alltoallw, PMPI_Neighbor_alltoallw, PMPI_Ineighbor_alltoallw)
#undef MPIZIP_STAGED
#undef MPIZIP_STAGED_REDUCTION
inline constexpr Blocking<layout::reduce_local, PMPI_Reduce_local, false, true> reduce_local{};
inline constexpr Blocking<layout::allreduce, PMPI_Allreduce, true, true> staged_allreduce{};
inline constexpr Nonblocking<layout::allreduce, PMPI_Iallreduce, true> staged_iallreduce{};

// MPIX_Query_cuda_support's answer where MPIZip gives it: true when MPIZip is active in a process
// with a CUDA GPU, where every call that takes a buffer accepts device memory (point-to-point and
// collectives staged, or run by MPIZip itself). Otherwise the MPI library answers.
bool cuda_support();

}  // namespace mpizip::core
