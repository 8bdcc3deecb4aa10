#include "src/core/coll_staging.h"

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <string>

#include "src/core/comm_state.h"
#include "src/core/errors.h"
#include "src/core/requests.h"
#include "src/core/runtime.h"
#include "src/core/stats.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

namespace mpizip::core {
namespace {

// Adds the time since `start` to the communicator's staging time (MPIZIP_STATS).
void account(MPI_Comm comm, std::chrono::steady_clock::time_point start) {
  CommState* s = comm_state_find(comm);
  if (s == nullptr) return;
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - start);
  s->staging_ns.fetch_add(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
}

}  // namespace

// ---- The host copies ------------------------------------------------------------------------------

int Staging::add(void** buf, Access access, const Span& span) {
  if (count_ == static_cast<int>(regions_.size())) return MPI_ERR_INTERN;
  Region& r = regions_[static_cast<size_t>(count_)];
  r.bytes = static_cast<uint64_t>(span.hi - span.lo);
  r.device = static_cast<char*>(*buf) + span.lo;
  r.store = access != Access::kRead;
  if (r.host.resize(r.bytes) != Status::kOk) {
    MPIZIP_WARN("out of host memory staging %llu bytes of a device buffer",
                static_cast<unsigned long long>(r.bytes));
    return MPI_ERR_NO_MEM;
  }
  // An output that MPI writes only in part is copied in too: the bytes it does not write go back
  // to the device unchanged.
  if (access != Access::kWrite || span.payload != span.hi - span.lo) {
    const auto start = std::chrono::steady_clock::now();
    const Status copied = platform::copy_to_host(r.host.data(), r.device, r.bytes);
    if (copied != Status::kOk) return mpi_error(copied);
    if (stats_on()) account(comm_, start);
  }
  ++count_;
  *buf = r.host.data() - span.lo;
  return MPI_SUCCESS;
}

int Staging::store() {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count_; ++i) {
    Region& r = regions_[static_cast<size_t>(i)];
    const Status copied = !r.store        ? Status::kOk
                          : r.host.pinned() ? platform::copy_pinned_to_device(r.device, r.host.data(), r.bytes)
                                            : platform::copy_to_device(r.device, r.host.data(), r.bytes);
    if (copied != Status::kOk) return mpi_error(copied);
    r.host.clear();
  }
  if (stats_on()) account(comm_, start);
  return MPI_SUCCESS;
}

int Staging::finish(int rc) {
  if (rc != MPI_SUCCESS) return rc;  // the MPI library has raised it; the outputs stay as they are
  rc = store();
  return rc == MPI_SUCCESS ? rc : fail(rc);
}

int Staging::fail(int rc) const { return raise(comm_, rc); }

bool Staging::progress() {
  if (done_) return true;
  int flag = 0;
  int rc = PMPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
  if (rc == MPI_SUCCESS && !flag) return false;
  if (rc == MPI_SUCCESS) rc = store();
  request_ = MPI_REQUEST_NULL;
  status_.error = Status::mpi(rc);
  done_ = true;
  return true;
}

Staging::~Staging() {
  // A call posted on the host copies that the request engine could not take over: the copies must
  // outlive it.
  if (request_ != MPI_REQUEST_NULL) PMPI_Wait(&request_, MPI_STATUS_IGNORE);
}

int staging_start(std::unique_ptr<Staging> s, MPI_Comm comm, MPI_Request* request) {
  return raise(comm, request_start(std::move(s), comm, request));
}

bool cuda_support() {
  static const bool cuda = platform::gpu_backend().rfind("CUDA", 0) == 0;
  return cuda && staging_on();
}

// ---- Spans ------------------------------------------------------------------------------------------

namespace layout {
namespace {

// What a datatype's elements occupy.
struct Shape {
  MPI_Aint extent = 0;
  MPI_Aint true_lb = 0;
  MPI_Aint true_extent = 0;
  MPI_Count size = 0;  // bytes of data in one element
};

int shape_of(MPI_Datatype type, Shape* t) {
  MPI_Aint lb = 0;
  int rc = PMPI_Type_get_extent(type, &lb, &t->extent);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_get_true_extent(type, &t->true_lb, &t->true_extent);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_size_x(type, &t->size);
  return rc;
}

// Adds to `span` the bytes of `count` elements of shape `t` that start `displ` bytes from the
// buffer's address. The first and the last element bound them (a negative extent puts the last
// one below the first).
void cover(Span* span, const Shape& t, MPI_Aint displ, int64_t count) {
  if (count <= 0 || t.true_extent <= 0) return;
  const MPI_Aint first = displ + t.true_lb;
  const MPI_Aint last = first + static_cast<MPI_Aint>(count - 1) * t.extent;
  const MPI_Aint lo = std::min(first, last);
  const MPI_Aint hi = std::max(first, last) + t.true_extent;
  span->lo = span->any ? std::min(span->lo, lo) : lo;
  span->hi = span->any ? std::max(span->hi, hi) : hi;
  span->payload += static_cast<MPI_Aint>(count) * static_cast<MPI_Aint>(t.size);
  span->any = true;
}

// `count` elements of `type` from the buffer's address.
int span_of(Span* span, int64_t count, MPI_Datatype type) {
  Shape t;
  int rc = shape_of(type, &t);
  if (rc == MPI_SUCCESS) cover(span, t, 0, count);
  return rc;
}

// The v-variants: block i of counts[i] elements at displs[i] elements, for i < n.
int span_v(Span* span, int n, const int counts[], const int displs[], MPI_Datatype type) {
  Shape t;
  int rc = shape_of(type, &t);
  for (int i = 0; rc == MPI_SUCCESS && i < n; ++i) {
    cover(span, t, static_cast<MPI_Aint>(displs[i]) * t.extent, counts[i]);
  }
  return rc;
}

// The w-variants: block i of counts[i] elements of types[i] at displs[i] bytes, for i < n.
template <class Displ>
int span_w(Span* span, int n, const int counts[], const Displ displs[],
           const MPI_Datatype types[]) {
  for (int i = 0; i < n; ++i) {
    if (counts[i] <= 0) continue;
    Shape t;
    int rc = shape_of(types[i], &t);
    if (rc != MPI_SUCCESS) return rc;
    cover(span, t, static_cast<MPI_Aint>(displs[i]), counts[i]);
  }
  return MPI_SUCCESS;
}

// Stages `buf` when MPI uses it on this rank (`access`) and it is in device memory; `span(Span*)`
// (an MPI error code) says which bytes, asked only then: a root-only argument's counts may be
// invalid elsewhere.
template <class T, class F>
int stage(Staging& s, T*& buf, Access access, F&& span) {
  if (access == Access::kNone || buf == MPI_IN_PLACE || !platform::is_device_pointer(buf)) {
    return MPI_SUCCESS;
  }
  Span sp;
  int rc = span(&sp);
  if (rc != MPI_SUCCESS || !sp.any) return rc;
  void* b = const_cast<void*>(static_cast<const void*>(buf));
  rc = s.add(&b, access, sp);
  buf = static_cast<T*>(b);
  return rc;
}

// The first error of a layout's steps (run in order), or MPI_SUCCESS.
int first_error(std::initializer_list<int> rcs) {
  for (int rc : rcs) {
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// What an output becomes when the input is MPI_IN_PLACE.
Access output(const void* sendbuf) {
  return sendbuf == MPI_IN_PLACE ? Access::kUpdate : Access::kWrite;
}

// The communicator as the layouts see it, asked from MPI on first use.
class Group {
 public:
  explicit Group(MPI_Comm comm) : comm_(comm) {}
  int rank() { return load().rank_; }
  int size() { return load().size_; }
  // How many ranks this one sends to or receives from in an all-to-all pattern: the remote group
  // on an intercommunicator.
  int peers() { return load().peers_; }

  // This rank's part in a rooted collective: the root, one of the others, or (intercommunicator,
  // MPI_PROC_NULL) not in it.
  enum class Role { kRoot, kLeaf, kOut };
  Role role(int root) {
    load();
    if (!inter_) return rank_ == root ? Role::kRoot : Role::kLeaf;
    return root == MPI_ROOT ? Role::kRoot : root == MPI_PROC_NULL ? Role::kOut : Role::kLeaf;
  }
  // Whether this rank has a block that goes to the root (gather, reduce) or comes from it
  // (scatter): every rank of an intracommunicator, the root's own block included (unless
  // MPI_IN_PLACE), and the other group's ranks of an intercommunicator.
  bool has_block(int root) {
    const Role r = role(root);
    return r == Role::kLeaf || (r == Role::kRoot && !inter_);
  }

 private:
  Group& load() {
    if (loaded_) return *this;
    loaded_ = true;
    int inter = 0;
    PMPI_Comm_test_inter(comm_, &inter);
    inter_ = inter != 0;
    PMPI_Comm_rank(comm_, &rank_);
    PMPI_Comm_size(comm_, &size_);
    peers_ = size_;
    if (inter_) PMPI_Comm_remote_size(comm_, &peers_);
    return *this;
  }
  MPI_Comm comm_;
  bool loaded_ = false;
  bool inter_ = false;
  int rank_ = 0, size_ = 0, peers_ = 0;
};

// Neighbours of a topology communicator: how many this rank receives from and sends to. An error
// for any other communicator; the layouts then stage nothing and the MPI library reports it.
int neighbors(MPI_Comm comm, int* in, int* out) {
  int kind = MPI_UNDEFINED;
  int rc = PMPI_Topo_test(comm, &kind);
  if (rc != MPI_SUCCESS) return rc;
  if (kind == MPI_CART) {
    int dims = 0;
    rc = PMPI_Cartdim_get(comm, &dims);
    *in = *out = 2 * dims;
  } else if (kind == MPI_GRAPH) {
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    rc = PMPI_Graph_neighbors_count(comm, rank, in);
    *out = *in;
  } else if (kind == MPI_DIST_GRAPH) {
    int weighted = 0;
    rc = PMPI_Dist_graph_neighbors_count(comm, in, out, &weighted);
  } else {
    rc = MPI_ERR_TOPOLOGY;
  }
  return rc;
}

// Which bytes of a buffer a call covers, as a span function for stage(): `count` elements of
// `type` one after another; the v-variants' blocks of counts[i] elements at displs[i] elements;
// the w-variants' blocks of counts[i] elements of types[i] at displs[i] bytes (i < n). The arrays
// are read only if the buffer is staged.
auto counted(int64_t count, MPI_Datatype type) {
  return [=](Span* sp) { return span_of(sp, count, type); };
}
auto placed(int n, const int counts[], const int displs[], MPI_Datatype type) {
  return [=](Span* sp) { return span_v(sp, n, counts, displs, type); };
}
template <class Displ>
auto typed(int n, const int counts[], const Displ displs[], const MPI_Datatype types[]) {
  return [=](Span* sp) { return span_w(sp, n, counts, displs, types); };
}

// Stages both buffers of a call, the input and the output.
template <class SendSpan, class RecvSpan>
int both(Staging& s, const void*& sendbuf, Access send, SendSpan send_span, void*& recvbuf,
         Access recv, RecvSpan recv_span) {
  return first_error({stage(s, sendbuf, send, send_span), stage(s, recvbuf, recv, recv_span)});
}

// Reductions whose output has the input's shape.
int elementwise(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type,
                Access recv_access) {
  return both(s, sendbuf, Access::kRead, counted(count, type), recvbuf, recv_access,
              counted(count, type));
}

// An access on the ranks that take part, none elsewhere.
Access if_(bool takes_part, Access access) { return takes_part ? access : Access::kNone; }

}  // namespace

// ---- The layouts --------------------------------------------------------------------------------

int allreduce(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type,
              MPI_Op, MPI_Comm) {
  return elementwise(s, sendbuf, recvbuf, count, type, output(sendbuf));
}

int scan(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type, MPI_Op,
         MPI_Comm) {
  return elementwise(s, sendbuf, recvbuf, count, type, output(sendbuf));
}

// Rank 0's output is undefined, and the MPI library may leave it as it was: copied in and back, it
// stays whatever the MPI library leaves there.
int exscan(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type, MPI_Op,
           MPI_Comm comm) {
  Group g(comm);
  return elementwise(s, sendbuf, recvbuf, count, type,
                     g.rank() == 0 ? Access::kUpdate : output(sendbuf));
}

int reduce_local(Staging& s, const void*& inbuf, void*& inoutbuf, int count, MPI_Datatype type,
                 MPI_Op) {
  return elementwise(s, inbuf, inoutbuf, count, type, Access::kUpdate);
}

int reduce(Staging& s, const void*& sendbuf, void*& recvbuf, int count, MPI_Datatype type, MPI_Op,
           int root_rank, MPI_Comm comm) {
  Group g(comm);
  const bool root = g.role(root_rank) == Group::Role::kRoot;
  return both(s, sendbuf, if_(g.has_block(root_rank), Access::kRead), counted(count, type), recvbuf,
              if_(root, output(sendbuf)), counted(count, type));
}

int bcast(Staging& s, void*& buf, int count, MPI_Datatype type, int root_rank, MPI_Comm comm) {
  Group g(comm);
  const Group::Role role = g.role(root_rank);
  const Access access = role == Group::Role::kRoot   ? Access::kRead
                        : role == Group::Role::kLeaf ? Access::kWrite
                                                     : Access::kNone;
  return stage(s, buf, access, counted(count, type));
}

int gather(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype, void*& recvbuf,
           int recvcount, MPI_Datatype recvtype, int root_rank, MPI_Comm comm) {
  Group g(comm);
  const bool root = g.role(root_rank) == Group::Role::kRoot;
  return both(s, sendbuf, if_(g.has_block(root_rank), Access::kRead), counted(sendcount, sendtype),
              recvbuf, if_(root, output(sendbuf)),
              counted(int64_t{g.peers()} * recvcount, recvtype));
}

int gatherv(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype, void*& recvbuf,
            const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root_rank,
            MPI_Comm comm) {
  Group g(comm);
  const bool root = g.role(root_rank) == Group::Role::kRoot;
  return both(s, sendbuf, if_(g.has_block(root_rank), Access::kRead), counted(sendcount, sendtype),
              recvbuf, if_(root, output(sendbuf)),
              placed(g.peers(), recvcounts, displs, recvtype));
}

int scatter(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype, void*& recvbuf,
            int recvcount, MPI_Datatype recvtype, int root_rank, MPI_Comm comm) {
  Group g(comm);
  const bool root = g.role(root_rank) == Group::Role::kRoot;
  return both(s, sendbuf, if_(root, Access::kRead),
              counted(int64_t{g.peers()} * sendcount, sendtype), recvbuf,
              if_(g.has_block(root_rank), Access::kWrite), counted(recvcount, recvtype));
}

int scatterv(Staging& s, const void*& sendbuf, const int sendcounts[], const int displs[],
             MPI_Datatype sendtype, void*& recvbuf, int recvcount, MPI_Datatype recvtype,
             int root_rank, MPI_Comm comm) {
  Group g(comm);
  const bool root = g.role(root_rank) == Group::Role::kRoot;
  return both(s, sendbuf, if_(root, Access::kRead), placed(g.peers(), sendcounts, displs, sendtype),
              recvbuf, if_(g.has_block(root_rank), Access::kWrite), counted(recvcount, recvtype));
}

int allgather(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
              void*& recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  Group g(comm);
  return both(s, sendbuf, Access::kRead, counted(sendcount, sendtype), recvbuf, output(sendbuf),
              counted(int64_t{g.peers()} * recvcount, recvtype));
}

int allgatherv(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
               void*& recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype,
               MPI_Comm comm) {
  Group g(comm);
  return both(s, sendbuf, Access::kRead, counted(sendcount, sendtype), recvbuf, output(sendbuf),
              placed(g.peers(), recvcounts, displs, recvtype));
}

int alltoall(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
             void*& recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  Group g(comm);
  return both(s, sendbuf, Access::kRead, counted(int64_t{g.peers()} * sendcount, sendtype),
              recvbuf, output(sendbuf), counted(int64_t{g.peers()} * recvcount, recvtype));
}

int alltoallv(Staging& s, const void*& sendbuf, const int sendcounts[], const int sdispls[],
              MPI_Datatype sendtype, void*& recvbuf, const int recvcounts[], const int rdispls[],
              MPI_Datatype recvtype, MPI_Comm comm) {
  Group g(comm);
  return both(s, sendbuf, Access::kRead, placed(g.peers(), sendcounts, sdispls, sendtype), recvbuf,
              output(sendbuf), placed(g.peers(), recvcounts, rdispls, recvtype));
}

int alltoallw(Staging& s, const void*& sendbuf, const int sendcounts[], const int sdispls[],
              const MPI_Datatype sendtypes[], void*& recvbuf, const int recvcounts[],
              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  Group g(comm);
  return both(s, sendbuf, Access::kRead, typed(g.peers(), sendcounts, sdispls, sendtypes), recvbuf,
              output(sendbuf), typed(g.peers(), recvcounts, rdispls, recvtypes));
}

// recvcounts has an entry per rank of the (local) group: their sum is the input; in place, the
// input is in recvbuf and the result goes to its start.
int reduce_scatter(Staging& s, const void*& sendbuf, void*& recvbuf, const int recvcounts[],
                   MPI_Datatype type, MPI_Op, MPI_Comm comm) {
  Group g(comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  auto total = [&] {
    int64_t sum = 0;
    for (int i = 0; i < g.size(); ++i) sum += recvcounts[i];
    return sum;
  };
  return both(s, sendbuf, Access::kRead, [&](Span* sp) { return span_of(sp, total(), type); },
              recvbuf, output(sendbuf), [&](Span* sp) {
                return span_of(sp, in_place ? total() : recvcounts[g.rank()], type);
              });
}

int reduce_scatter_block(Staging& s, const void*& sendbuf, void*& recvbuf, int recvcount,
                         MPI_Datatype type, MPI_Op, MPI_Comm comm) {
  Group g(comm);
  const int64_t outputs = sendbuf == MPI_IN_PLACE ? g.size() : 1;
  return both(s, sendbuf, Access::kRead, counted(int64_t{g.size()} * recvcount, type), recvbuf,
              output(sendbuf), counted(outputs * recvcount, type));
}

// The neighbourhood collectives (no MPI_IN_PLACE): blocks from `in` neighbours, to `out`.
int neighbor_allgather(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
                       void*& recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  int in = 0, out = 0;
  if (neighbors(comm, &in, &out) != MPI_SUCCESS) return MPI_SUCCESS;
  return both(s, sendbuf, Access::kRead, counted(sendcount, sendtype), recvbuf, Access::kWrite,
              counted(int64_t{in} * recvcount, recvtype));
}

int neighbor_allgatherv(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
                        void*& recvbuf, const int recvcounts[], const int displs[],
                        MPI_Datatype recvtype, MPI_Comm comm) {
  int in = 0, out = 0;
  if (neighbors(comm, &in, &out) != MPI_SUCCESS) return MPI_SUCCESS;
  return both(s, sendbuf, Access::kRead, counted(sendcount, sendtype), recvbuf, Access::kWrite,
              placed(in, recvcounts, displs, recvtype));
}

int neighbor_alltoall(Staging& s, const void*& sendbuf, int sendcount, MPI_Datatype sendtype,
                      void*& recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  int in = 0, out = 0;
  if (neighbors(comm, &in, &out) != MPI_SUCCESS) return MPI_SUCCESS;
  return both(s, sendbuf, Access::kRead, counted(int64_t{out} * sendcount, sendtype), recvbuf,
              Access::kWrite, counted(int64_t{in} * recvcount, recvtype));
}

int neighbor_alltoallv(Staging& s, const void*& sendbuf, const int sendcounts[],
                       const int sdispls[], MPI_Datatype sendtype, void*& recvbuf,
                       const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm) {
  int in = 0, out = 0;
  if (neighbors(comm, &in, &out) != MPI_SUCCESS) return MPI_SUCCESS;
  return both(s, sendbuf, Access::kRead, placed(out, sendcounts, sdispls, sendtype), recvbuf,
              Access::kWrite, placed(in, recvcounts, rdispls, recvtype));
}

int neighbor_alltoallw(Staging& s, const void*& sendbuf, const int sendcounts[],
                       const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void*& recvbuf,
                       const int recvcounts[], const MPI_Aint rdispls[],
                       const MPI_Datatype recvtypes[], MPI_Comm comm) {
  int in = 0, out = 0;
  if (neighbors(comm, &in, &out) != MPI_SUCCESS) return MPI_SUCCESS;
  return both(s, sendbuf, Access::kRead, typed(out, sendcounts, sdispls, sendtypes), recvbuf,
              Access::kWrite, typed(in, recvcounts, rdispls, recvtypes));
}

}  // namespace layout
}  // namespace mpizip::core
