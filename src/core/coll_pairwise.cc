#include "src/core/coll_pairwise.h"

#include <climits>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "src/core/coll_deferred.h"
#include "src/core/coll_staging.h"
#include "src/core/comm_context.h"
#include "src/core/comm_hints.h"
#include "src/core/comm_state.h"
#include "src/core/errors.h"
#include "src/core/p2p_route.h"
#include "src/core/protocol.h"
#include "src/core/requests.h"
#include "src/core/settings.h"
#include "src/platform/log.h"

namespace mpizip::core {
namespace {

// MPIZIP_PAIRWISE's choices, in settings.def's order.
enum PairwiseSetting { kPairwiseAuto = 0, kPairwiseOff = 1 };

// How a call reaches the route: blocking (it may set up the duplicate and, within one node, ask
// every rank about its buffers), non-blocking (neither), or a non-blocking call within one node
// whose ranks have agreed already (coll_deferred.h).
enum class Mode { kBlocking, kNonblocking, kAgreed };

// The tags of the five collectives on the duplicate, which carries nothing else: MPI orders the
// messages of one tag between two ranks, and a communicator's collectives run in the same order on
// every rank, so the blocks of one call never meet another call's receives.
enum Tag { kAlltoallv = 1, kAlltoallw = 2, kGatherv = 3, kScatterv = 4, kAllgatherv = 5 };

// Whether every rank of `comm` says yes: one small allreduce; no where it fails.
bool every_rank_says(bool mine, MPI_Comm comm) {
  int in = mine ? 1 : 0, all = 0;
  return PMPI_Allreduce(&in, &all, 1, MPI_INT, MPI_MIN, comm) == MPI_SUCCESS && all == 1;
}

// Collective over `comm` (every rank asks from the same facts, coll_pairwise.h): the duplicate the
// blocks travel on, set up by the first blocking call (`may_set_up`); MPI_COMM_NULL where the
// route is not taken. `state` is the application communicator's state; `buffers` the ones this
// rank's call uses, which decide the route within one node.
MPI_Comm pairwise_comm(MPI_Comm comm, CommState** state, Mode mode,
                       std::initializer_list<const void*> buffers) {
  const bool may_set_up = mode == Mode::kBlocking;
  if (comm == MPI_COMM_NULL || !protocol_job_on()) return MPI_COMM_NULL;
  CommState* s = comm_state_find(comm);
  if (s == nullptr || !s->protocol.load(std::memory_order_acquire) || !s->context) return MPI_COMM_NULL;
  const Settings& st = comm_settings(s);
  if (st.pairwise != kPairwiseAuto) return MPI_COMM_NULL;
  CommContext& c = *s->context;
  // Within one node a blocking call asks every rank whether its buffers suit (one small
  // allreduce): on host buffers the MPI library's own algorithms beat a message a block (0.24
  // against 0.64 us a 2-rank alltoallv of 4-256 bytes on the CPU machine), on device buffers they
  // are staged through host memory where CUDA IPC moves a block in one copy. A non-blocking call
  // cannot wait for that answer: it passes on.
  const bool one_node = c.nodes.one_node() && !st.force_internode;
  if (one_node && mode == Mode::kNonblocking) return MPI_COMM_NULL;  // deferred instead, or passed on
  *state = s;
  if (!c.pairwise_tried) {
    // A non-blocking call must not block on its peers, as the setup's collective calls would (a
    // peer may reach its own call only after a message this rank sends later): it takes the route
    // once a blocking call has set it up, which every rank sees in the same order of calls.
    if (!may_set_up) return MPI_COMM_NULL;
    c.pairwise_tried = true;
    MPI_Comm sub = MPI_COMM_NULL;
    bool ready = PMPI_Comm_dup(c.p2p_comm, &sub) == MPI_SUCCESS;
    if (ready) {
      PMPI_Comm_set_name(sub, "MPIZip pairwise");
      CommState* ss = comm_state(sub);
      ready = ss != nullptr;
      if (ready) {
        comm_hints_inherit(*s, ss);
        ready = protocol_attach(sub) == MPI_SUCCESS && ss->protocol.load() && ss->context;
      }
    }
    // Each rank's setup agrees within the duplicate; the communicator agrees here.
    if (every_rank_says(ready, c.p2p_comm)) {
      c.pairwise_comm = sub;
    } else {
      if (sub != MPI_COMM_NULL) {
        protocol_detach(sub);
        PMPI_Comm_free(&sub);
      }
      MPIZIP_INFO("pairwise collectives: a rank could not set up their communicator; the MPI "
                  "library's v-collectives run");
    }
  }
  if (one_node && mode == Mode::kBlocking && c.pairwise_comm != MPI_COMM_NULL) {
    // Deferred calls made earlier post on the duplicate first, in their order.
    (void)deferred_drain(c);
    if (!every_rank_says(buffers_suit_node(comm, buffers), c.p2p_comm)) return MPI_COMM_NULL;
  }
  return c.pairwise_comm;
}

// Bytes of `count` items of `type` (its signature's size), or -1 for a bad count or type.
int64_t bytes_of(int count, MPI_Datatype type) {
  int size = 0;
  if (count < 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS ||
      size < 0)
    return -1;
  return static_cast<int64_t>(count) * size;
}

// The extent of `type`, or nothing for a bad type.
bool extent_of(MPI_Datatype type, MPI_Aint* extent) {
  MPI_Aint lb = 0;
  return type != MPI_DATATYPE_NULL && PMPI_Type_get_extent(type, &lb, extent) == MPI_SUCCESS;
}

const void* at(const void* p, MPI_Aint bytes) { return static_cast<const char*>(p) + bytes; }
void* at(void* p, MPI_Aint bytes) { return static_cast<char*>(p) + bytes; }

// The messages of one call, as one operation: each a send or receive of MPIZip's own
// (start_send, start_recv) that this operation advances, or the MPI library's request for a plain
// one. Complete once every message is; its error the first message's that failed.
class Messages : public platform::Operation {
 public:
  Messages(MPI_Comm sub, int tag) : sub_(sub), tag_(tag) {}
  ~Messages() override {
    // A message left behind only where the call failed to post its others: MPI's own requests go
    // back to MPI (the operations of MPIZip's end with their owner).
    for (MPI_Request& r : plain_)
      if (r != MPI_REQUEST_NULL) PMPI_Request_free(&r);
  }
  void recv(void* buf, int count, MPI_Datatype type, int from) {
    if (!ok(posted_)) return;
    std::unique_ptr<platform::Operation> op;
    MPI_Request plain = MPI_REQUEST_NULL;
    posted_ = start_recv(buf, count, type, from, tag_, sub_, &op, &plain);
    keep(std::move(op), plain);
  }
  void send(const void* buf, int count, MPI_Datatype type, int to) {
    if (!ok(posted_)) return;
    std::unique_ptr<platform::Operation> op;
    MPI_Request plain = MPI_REQUEST_NULL;
    posted_ = start_send(buf, count, type, to, tag_, sub_, &op, &plain);
    keep(std::move(op), plain);
  }
  // kOk once every message was posted; else why one was not (those posted still complete).
  Status posted() const { return posted_; }

  bool progress() override {
    bool all = true;
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (done_[i]) continue;
      if (ops_[i]->progress()) {
        done_[i] = true;
        note(ops_[i]->status().error);
      } else if (ops_[i]->detachable()) {
        // A send whose bytes are MPIZip's and posted: done for the call, as an MPI_Isend's request
        // is (the request engine finishes it in the background).
        done_[i] = true;
        note(ops_[i]->status().error);
        background_adopt(std::move(ops_[i]));
      } else {
        all = false;
      }
    }
    for (MPI_Request& r : plain_) {
      if (r == MPI_REQUEST_NULL) continue;
      int flag = 0;
      const int rc = PMPI_Test(&r, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        note(Status::mpi(rc));
        if (r != MPI_REQUEST_NULL) PMPI_Request_free(&r);
        r = MPI_REQUEST_NULL;
      } else if (!flag) {
        all = false;
      }
    }
    if (all) status_.error = ok(posted_) ? error_ : posted_;
    return all;
  }
  bool awaits_own_calls() const override {
    for (size_t i = 0; i < ops_.size(); ++i)
      if (!done_[i] && ops_[i]->awaits_own_calls()) return true;
    return false;
  }

 private:
  void keep(std::unique_ptr<platform::Operation> op, MPI_Request plain) {
    if (op != nullptr) {
      ops_.push_back(std::move(op));
      done_.push_back(false);
    }
    if (plain != MPI_REQUEST_NULL) plain_.push_back(plain);
  }
  void note(Status s) {
    if (ok(error_) && !ok(s)) error_ = s;
  }

  MPI_Comm sub_;
  int tag_;
  Status posted_ = Status::kOk;
  Status error_ = Status::kOk;
  std::vector<std::unique_ptr<platform::Operation>> ops_;
  std::vector<bool> done_;
  std::vector<MPI_Request> plain_;
};

int comm_rank_size(MPI_Comm comm, int* me) {
  int P = 0;
  if (PMPI_Comm_rank(comm, me) != MPI_SUCCESS || PMPI_Comm_size(comm, &P) != MPI_SUCCESS) return 0;
  return P;
}

// The call's messages, posted on the duplicate; none where the route is not taken. `blocking`: the
// call may set the duplicate up (pairwise_comm).
using Posted = std::optional<std::unique_ptr<Messages>>;

// One block of an exchange: `count` items of `type`, `at` bytes into its buffer.
struct Block {
  MPI_Aint at;
  int count;
  MPI_Datatype type;
};

// The messages of an all-to-all exchange on `sub`: block out(q) of `sendbuf` to every rank q and
// block in(q) of `recvbuf` from it, receives first, then sends, each starting at a different peer
// on every rank. None where a block's count or type is one the MPI library would refuse (it then
// reports it).
template <class In, class Out>
Posted exchange(MPI_Comm sub, int tag, int P, int me, const void* sendbuf, Out out, void* recvbuf,
                In in) {
  for (int q = 0; q < P; ++q)
    if (bytes_of(out(q).count, out(q).type) < 0 || bytes_of(in(q).count, in(q).type) < 0)
      return std::nullopt;
  auto m = std::make_unique<Messages>(sub, tag);
  for (int k = 0; k < P; ++k) {
    const int q = (me + P - k) % P;
    const Block r = in(q);
    if (bytes_of(r.count, r.type) > 0) m->recv(at(recvbuf, r.at), r.count, r.type, q);
  }
  for (int k = 0; k < P; ++k) {
    const int q = (me + k) % P;
    const Block w = out(q);
    if (bytes_of(w.count, w.type) > 0) m->send(at(sendbuf, w.at), w.count, w.type, q);
  }
  return m;
}

Posted post_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                      const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, Mode blocking,
                      CommState** s) {
  if (sendbuf == MPI_IN_PLACE) return std::nullopt;  // every rank alike, as MPI asks
  const MPI_Comm sub = pairwise_comm(comm, s, blocking, {sendbuf, recvbuf});
  if (sub == MPI_COMM_NULL) return std::nullopt;
  int me = 0;
  const int P = comm_rank_size(comm, &me);
  MPI_Aint sext = 0, rext = 0;
  // Arguments the MPI library would refuse go to it, which reports them.
  if (P < 1 || sendcounts == nullptr || sdispls == nullptr || recvcounts == nullptr ||
      rdispls == nullptr || !extent_of(sendtype, &sext) || !extent_of(recvtype, &rext))
    return std::nullopt;
  return exchange(
      sub, kAlltoallv, P, me,
      sendbuf, [&](int q) { return Block{sdispls[q] * sext, sendcounts[q], sendtype}; },
      recvbuf, [&](int q) { return Block{rdispls[q] * rext, recvcounts[q], recvtype}; });
}

Posted post_alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                      const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                      const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                      Mode blocking, CommState** s) {
  if (sendbuf == MPI_IN_PLACE) return std::nullopt;
  const MPI_Comm sub = pairwise_comm(comm, s, blocking, {sendbuf, recvbuf});
  if (sub == MPI_COMM_NULL) return std::nullopt;
  int me = 0;
  const int P = comm_rank_size(comm, &me);
  if (P < 1 || sendcounts == nullptr || sdispls == nullptr || sendtypes == nullptr ||
      recvcounts == nullptr || rdispls == nullptr || recvtypes == nullptr)
    return std::nullopt;
  // Displacements in bytes, a datatype a block.
  return exchange(
      sub, kAlltoallw, P, me,
      sendbuf, [&](int q) { return Block{sdispls[q], sendcounts[q], sendtypes[q]}; },
      recvbuf, [&](int q) { return Block{rdispls[q], recvcounts[q], recvtypes[q]}; });
}

Posted post_gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                    MPI_Comm comm, Mode blocking, CommState** s) {
  int me = 0;
  const int P = comm_rank_size(comm, &me);
  const MPI_Comm sub = pairwise_comm(comm, s, blocking, {sendbuf, me == root ? recvbuf : nullptr});
  if (sub == MPI_COMM_NULL) return std::nullopt;
  if (P < 1 || root < 0 || root >= P) return std::nullopt;
  const bool in_place = me == root && sendbuf == MPI_IN_PLACE;
  if (!in_place && bytes_of(sendcount, sendtype) < 0) return std::nullopt;
  MPI_Aint rext = 0;
  if (me == root) {
    if (recvcounts == nullptr || displs == nullptr || !extent_of(recvtype, &rext)) return std::nullopt;
    for (int q = 0; q < P; ++q)
      if (bytes_of(recvcounts[q], recvtype) < 0) return std::nullopt;
  }
  auto m = std::make_unique<Messages>(sub, kGatherv);
  if (me == root) {
    for (int k = 0; k < P; ++k) {
      const int q = (me + k) % P;
      if ((q == me && in_place) || bytes_of(recvcounts[q], recvtype) == 0) continue;
      m->recv(at(recvbuf, displs[q] * rext), recvcounts[q], recvtype, q);
    }
  }
  if (!in_place && bytes_of(sendcount, sendtype) > 0) m->send(sendbuf, sendcount, sendtype, root);
  return m;
}

Posted post_scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                     MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                     int root, MPI_Comm comm, Mode blocking, CommState** s) {
  int me = 0;
  const int P = comm_rank_size(comm, &me);
  const MPI_Comm sub = pairwise_comm(comm, s, blocking, {me == root ? sendbuf : nullptr, recvbuf});
  if (sub == MPI_COMM_NULL) return std::nullopt;
  if (P < 1 || root < 0 || root >= P) return std::nullopt;
  const bool in_place = me == root && recvbuf == MPI_IN_PLACE;
  if (!in_place && bytes_of(recvcount, recvtype) < 0) return std::nullopt;
  MPI_Aint sext = 0;
  if (me == root) {
    if (sendcounts == nullptr || displs == nullptr || !extent_of(sendtype, &sext)) return std::nullopt;
    for (int q = 0; q < P; ++q)
      if (bytes_of(sendcounts[q], sendtype) < 0) return std::nullopt;
  }
  auto m = std::make_unique<Messages>(sub, kScatterv);
  if (!in_place && bytes_of(recvcount, recvtype) > 0) m->recv(recvbuf, recvcount, recvtype, root);
  if (me == root) {
    for (int k = 0; k < P; ++k) {
      const int q = (me + k) % P;
      if ((q == me && in_place) || bytes_of(sendcounts[q], sendtype) == 0) continue;
      m->send(at(sendbuf, displs[q] * sext), sendcounts[q], sendtype, q);
    }
  }
  return m;
}

// A gather or scatter between nodes as the v-form's messages, where they are worth it: blocks of a
// protocol element type (a float type, or MPIZip's 16- and 8-bit ones: the blocks MPIZip
// compresses) whose whole, P blocks, is at least MPIZIP_ALLREDUCE_MIN_BYTES, as the two-shot's
// collectives between nodes count it. Every rank decides alike: MPI requires every block's
// signature to be the root's (`block` is this rank's own count and type: the root's receive
// count and type where it gathers in place, its send ones where it scatters).
bool worth_messages(MPI_Comm comm, int count, MPI_Datatype type) {
  CommState* s = comm_state_find(comm);
  const int64_t block = bytes_of(count, type);
  int P = 0;
  if (s == nullptr || block <= 0 || PMPI_Comm_size(comm, &P) != MPI_SUCCESS) return false;
  if (!protocol_type_of(s, comm, type)) return false;
  return static_cast<uint64_t>(block) * static_cast<uint64_t>(P) >=
         comm_settings(s).allreduce_min_bytes;
}

// MPI_Allgatherv: every rank's block to every other rank, where the blocks are of a protocol element
// type and together at least MPIZIP_ALLREDUCE_MIN_BYTES (every rank knows every count: it decides
// alike); in place, this rank's block is where its output has it, and sent from there.
bool allgatherv_worth(MPI_Comm comm, const int recvcounts[], const int displs[],
                      MPI_Datatype recvtype) {
  int me = 0;
  const int P = comm_rank_size(comm, &me);
  MPI_Aint rext = 0;
  if (P < 1 || recvcounts == nullptr || displs == nullptr || !extent_of(recvtype, &rext))
    return false;
  int64_t total = 0;
  for (int q = 0; q < P; ++q) {
    const int64_t b = bytes_of(recvcounts[q], recvtype);
    if (b < 0) return false;
    total += b;
  }
  CommState* cs = comm_state_find(comm);
  return cs != nullptr && protocol_type_of(cs, comm, recvtype) && total > 0 &&
         static_cast<uint64_t>(total) >= comm_settings(cs).allreduce_min_bytes;
}

Posted post_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                       MPI_Comm comm, Mode mode, CommState** s) {
  if (!allgatherv_worth(comm, recvcounts, displs, recvtype)) return std::nullopt;
  int me = 0;
  const int P = comm_rank_size(comm, &me);
  MPI_Aint rext = 0;
  extent_of(recvtype, &rext);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const MPI_Comm sub = pairwise_comm(comm, s, mode, {in_place ? nullptr : sendbuf, recvbuf});
  if (sub == MPI_COMM_NULL) return std::nullopt;
  const void* mine = in_place ? at(recvbuf, displs[me] * rext) : sendbuf;
  const int count = in_place ? recvcounts[me] : sendcount;
  const MPI_Datatype type = in_place ? recvtype : sendtype;
  return exchange(
      sub, kAllgatherv, P, me,
      mine, [&](int q) { return Block{0, q == me && in_place ? 0 : count, type}; },
      recvbuf,
      [&](int q) { return Block{displs[q] * rext, q == me && in_place ? 0 : recvcounts[q], recvtype}; });
}

Posted post_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, Mode blocking,
                   CommState** s) {
  int me = 0;
  const int P = comm_rank_size(comm, &me);
  if (P < 1 || root < 0 || root >= P) return std::nullopt;
  const bool in_place = me == root && sendbuf == MPI_IN_PLACE;
  if (!(in_place ? worth_messages(comm, recvcount, recvtype)
                 : worth_messages(comm, sendcount, sendtype)))
    return std::nullopt;
  std::vector<int> counts(static_cast<size_t>(P), recvcount), displs(static_cast<size_t>(P));
  for (int q = 0; q < P; ++q) displs[q] = q * recvcount;
  if (me == root && static_cast<int64_t>(recvcount) * P > INT32_MAX) return std::nullopt;
  return post_gatherv(sendbuf, sendcount, sendtype, recvbuf, counts.data(), displs.data(),
                      recvtype, root, comm, blocking, s);
}

Posted post_scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, Mode blocking,
                    CommState** s) {
  int me = 0;
  const int P = comm_rank_size(comm, &me);
  if (P < 1 || root < 0 || root >= P) return std::nullopt;
  if (!(me == root ? worth_messages(comm, sendcount, sendtype)
                   : worth_messages(comm, recvcount, recvtype)))
    return std::nullopt;
  std::vector<int> counts(static_cast<size_t>(P), sendcount), displs(static_cast<size_t>(P));
  for (int q = 0; q < P; ++q) displs[q] = q * sendcount;
  if (me == root && static_cast<int64_t>(sendcount) * P > INT32_MAX) return std::nullopt;
  return post_scatterv(sendbuf, counts.data(), displs.data(), sendtype, recvbuf, recvcount,
                       recvtype, root, comm, blocking, s);
}

// A blocking call: every message waited for (those posted, where posting failed), then the call's
// outcome raised on the application's communicator.
int finish(Posted m, CommState* s, MPI_Comm comm, const char* what) {
  const Status posted = (*m)->posted();
  const Status done = drive(**m);
  const Status outcome = ok(posted) ? done : posted;
  if (ok(outcome)) s->pairwise_collectives.fetch_add(1, std::memory_order_relaxed);
  return raise(comm, outcome, what);
}

// A non-blocking call: the operation behind the application's request (a call whose posting
// failed ends here, once what it posted has completed).
int start(Posted m, CommState* s, MPI_Comm comm, MPI_Request* request, const char* what) {
  const Status posted = (*m)->posted();
  if (!ok(posted)) {
    drive(**m);
    return raise(comm, posted, what);
  }
  s->pairwise_collectives.fetch_add(1, std::memory_order_relaxed);
  return raise(comm, request_start(std::move(*m), comm, request));
}

// A non-blocking call within one node, deferred (coll_deferred.h) where the route has its
// duplicate (set up by an earlier blocking call: the same on every rank): this rank says whether
// `buffers` suit; then `post` (the call's messages, posted where every rank said yes) or `library`
// (the MPI library's non-blocking call, device buffers staged, on the deferred calls' duplicate).
// None where the call is not deferred.
using PostMessages = std::function<Posted()>;
using LibraryStart = std::function<Status(MPI_Comm, std::unique_ptr<platform::Operation>*)>;
std::optional<int> defer_within_node(MPI_Comm comm, std::initializer_list<const void*> buffers,
                                     PostMessages post, LibraryStart library, const char* what,
                                     MPI_Request* request) {
  CommContext* c = deferring_context(comm);
  if (c == nullptr || c->pairwise_comm == MPI_COMM_NULL) return std::nullopt;
  CommState* s = comm_state_find(comm);
  if (s == nullptr || comm_settings(s).pairwise != kPairwiseAuto) return std::nullopt;
  std::shared_ptr<CommState> state = s->shared_from_this();
  DeferredStarter start = [post = std::move(post), library = std::move(library), state](
                              const DeferredStart& how, std::unique_ptr<platform::Operation>* op) {
    if (!how.all) return library(how.library, op);
    Posted m = post();
    if (!m) return Status(Status::kInternal);  // the route is the call's facts: it cannot change
    const Status posted = (*m)->posted();
    if (!ok(posted)) {
      drive(**m);
      return posted;
    }
    state->pairwise_collectives.fetch_add(1, std::memory_order_relaxed);
    *op = std::move(*m);
    return Status(Status::kOk);
  };
  return defer(comm, *c, buffers_suit_node(comm, buffers), false, std::move(start), what, request);
}

// One call's route: a non-blocking call that may be deferred (`deferrable`) is deferred within one
// node (defer_within_node, the datatypes kept for when it starts); otherwise its messages are
// posted now, and a blocking call waits for them. `post(mode, sendtype, recvtype, &state)` posts
// the call's messages (none where the call does not suit them); `library(on, op, sendtype,
// recvtype)` starts the MPI library's non-blocking call on the deferred calls' duplicate `on`.
template <typename Post, typename Library>
std::optional<int> route_call(MPI_Comm comm, MPI_Request* request, bool deferrable,
                              std::initializer_list<const void*> buffers, MPI_Datatype sendtype,
                              MPI_Datatype recvtype, Post post, Library library,
                              const char* blocking_name, const char* nonblocking_name) {
  if (request != nullptr && deferrable) {
    auto st = std::make_shared<KeptType>(sendtype), rt = std::make_shared<KeptType>(recvtype);
    if (auto rc = defer_within_node(
            comm, buffers,
            [=] {
              CommState* s = nullptr;
              return post(Mode::kAgreed, st->get(), rt->get(), &s);
            },
            [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op) {
              return library(on, op, st->get(), rt->get());
            },
            nonblocking_name, request))
      return rc;
  }
  CommState* s = nullptr;
  Posted m = post(request == nullptr ? Mode::kBlocking : Mode::kNonblocking, sendtype, recvtype, &s);
  if (!m) return std::nullopt;
  return request ? start(std::move(m), s, comm, request, nonblocking_name)
                 : finish(std::move(m), s, comm, blocking_name);
}

// This rank's rank in `comm` (-1 where it cannot say).
int rank_in(MPI_Comm comm) {
  int me = -1;
  if (comm == MPI_COMM_NULL || PMPI_Comm_rank(comm, &me) != MPI_SUCCESS) return -1;
  return me;
}

}  // namespace

std::optional<int> pairwise_alltoallv(const void* sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return route_call(
      comm, request, sendbuf != MPI_IN_PLACE, {sendbuf, recvbuf}, sendtype, recvtype,
      [=](Mode mode, MPI_Datatype st, MPI_Datatype rt, CommState** s) {
        return post_alltoallv(sendbuf, sendcounts, sdispls, st, recvbuf, recvcounts, rdispls, rt,
                              comm, mode, s);
      },
      [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op, MPI_Datatype st, MPI_Datatype rt) {
        return ialltoallv.operation_on(on, op, sendbuf, sendcounts, sdispls, st, recvbuf,
                                       recvcounts, rdispls, rt, comm);
      },
      "MPI_Alltoallv", "MPI_Ialltoallv");
}

std::optional<int> pairwise_alltoallw(const void* sendbuf, const int sendcounts[],
                                      const int sdispls[], const MPI_Datatype sendtypes[],
                                      void* recvbuf, const int recvcounts[], const int rdispls[],
                                      const MPI_Datatype recvtypes[], MPI_Comm comm,
                                      MPI_Request* request) {
  CommState* s = nullptr;
  Posted m = post_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                            recvtypes, comm, request == nullptr ? Mode::kBlocking : Mode::kNonblocking, &s);
  if (!m) return std::nullopt;
  return request ? start(std::move(m), s, comm, request, "MPI_Ialltoallw")
                 : finish(std::move(m), s, comm, "MPI_Alltoallw");
}

std::optional<int> pairwise_gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void* recvbuf, const int recvcounts[], const int displs[],
                                    MPI_Datatype recvtype, int root, MPI_Comm comm,
                                    MPI_Request* request) {
  const int me = request != nullptr ? rank_in(comm) : -1;
  return route_call(
      comm, request, true, {sendbuf, me == root ? recvbuf : nullptr}, sendtype, recvtype,
      [=](Mode mode, MPI_Datatype st, MPI_Datatype rt, CommState** s) {
        return post_gatherv(sendbuf, sendcount, st, recvbuf, recvcounts, displs, rt, root, comm,
                            mode, s);
      },
      [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op, MPI_Datatype st, MPI_Datatype rt) {
        return igatherv.operation_on(on, op, sendbuf, sendcount, st, recvbuf, recvcounts, displs,
                                     rt, root, comm);
      },
      "MPI_Gatherv", "MPI_Igatherv");
}

std::optional<int> pairwise_scatterv(const void* sendbuf, const int sendcounts[],
                                     const int displs[], MPI_Datatype sendtype, void* recvbuf,
                                     int recvcount, MPI_Datatype recvtype, int root,
                                     MPI_Comm comm, MPI_Request* request) {
  const int me = request != nullptr ? rank_in(comm) : -1;
  return route_call(
      comm, request, true, {me == root ? sendbuf : nullptr, recvbuf}, sendtype, recvtype,
      [=](Mode mode, MPI_Datatype st, MPI_Datatype rt, CommState** s) {
        return post_scatterv(sendbuf, sendcounts, displs, st, recvbuf, recvcount, rt, root, comm,
                             mode, s);
      },
      [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op, MPI_Datatype st, MPI_Datatype rt) {
        return iscatterv.operation_on(on, op, sendbuf, sendcounts, displs, st, recvbuf, recvcount,
                                      rt, root, comm);
      },
      "MPI_Scatterv", "MPI_Iscatterv");
}

// The fixed-count forms are deferred only where their blocks are worth messages (the v-forms
// always: their counts differ per rank, the agreement decides).
std::optional<int> pairwise_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                   MPI_Comm comm, MPI_Request* request) {
  const int me = request != nullptr ? rank_in(comm) : -1;
  const bool deferrable =
      me >= 0 && (me == root && sendbuf == MPI_IN_PLACE ? worth_messages(comm, recvcount, recvtype)
                                                        : worth_messages(comm, sendcount, sendtype));
  return route_call(
      comm, request, deferrable, {sendbuf, me == root ? recvbuf : nullptr}, sendtype, recvtype,
      [=](Mode mode, MPI_Datatype st, MPI_Datatype rt, CommState** s) {
        return post_gather(sendbuf, sendcount, st, recvbuf, recvcount, rt, root, comm, mode, s);
      },
      [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op, MPI_Datatype st, MPI_Datatype rt) {
        return igather.operation_on(on, op, sendbuf, sendcount, st, recvbuf, recvcount, rt, root,
                                    comm);
      },
      "MPI_Gather", "MPI_Igather");
}

std::optional<int> pairwise_scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                    MPI_Comm comm, MPI_Request* request) {
  const int me = request != nullptr ? rank_in(comm) : -1;
  const bool deferrable = me >= 0 && (me == root ? worth_messages(comm, sendcount, sendtype)
                                                 : worth_messages(comm, recvcount, recvtype));
  return route_call(
      comm, request, deferrable, {me == root ? sendbuf : nullptr, recvbuf}, sendtype, recvtype,
      [=](Mode mode, MPI_Datatype st, MPI_Datatype rt, CommState** s) {
        return post_scatter(sendbuf, sendcount, st, recvbuf, recvcount, rt, root, comm, mode, s);
      },
      [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op, MPI_Datatype st, MPI_Datatype rt) {
        return iscatter.operation_on(on, op, sendbuf, sendcount, st, recvbuf, recvcount, rt, root,
                                     comm);
      },
      "MPI_Scatter", "MPI_Iscatter");
}

std::optional<int> pairwise_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, const int recvcounts[], const int displs[],
                                       MPI_Datatype recvtype, MPI_Comm comm,
                                       MPI_Request* request) {
  const bool deferrable =
      request != nullptr && allgatherv_worth(comm, recvcounts, displs, recvtype);
  return route_call(
      comm, request, deferrable, {sendbuf, recvbuf}, sendtype, recvtype,
      [=](Mode mode, MPI_Datatype st, MPI_Datatype rt, CommState** s) {
        return post_allgatherv(sendbuf, sendcount, st, recvbuf, recvcounts, displs, rt, comm, mode,
                               s);
      },
      [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op, MPI_Datatype st, MPI_Datatype rt) {
        return iallgatherv.operation_on(on, op, sendbuf, sendcount, st, recvbuf, recvcounts, displs,
                                        rt, comm);
      },
      "MPI_Allgatherv", "MPI_Iallgatherv");
}

int routed_iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                       MPI_Comm comm, MPI_Request* request) {
  if (auto rc = pairwise_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                    recvtype, comm, request))
    return *rc;
  return iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                     request);
}

int routed_igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                   MPI_Request* request) {
  if (auto rc = pairwise_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                comm, request))
    return *rc;
  return igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
}

int routed_iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                    MPI_Request* request) {
  if (auto rc = pairwise_scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                 comm, request))
    return *rc;
  return iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request);
}

int routed_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                     MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                     const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  if (auto rc = pairwise_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, nullptr))
    return *rc;
  return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                   comm);
}

int routed_ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                      const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                      MPI_Request* request) {
  if (auto rc = pairwise_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, request))
    return *rc;
  return ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                    recvtype, comm, request);
}

int routed_alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                     const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                     const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  if (auto rc = pairwise_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                   rdispls, recvtypes, comm, nullptr))
    return *rc;
  return alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                   recvtypes, comm);
}

int routed_ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                      const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                      const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                      MPI_Request* request) {
  if (auto rc = pairwise_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                   rdispls, recvtypes, comm, request))
    return *rc;
  return ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                    recvtypes, comm, request);
}

int routed_gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                   MPI_Comm comm) {
  if (auto rc = pairwise_gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, root, comm, nullptr))
    return *rc;
  return gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
}

int routed_igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                    MPI_Comm comm, MPI_Request* request) {
  if (auto rc = pairwise_gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, root, comm, request))
    return *rc;
  return igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
                  request);
}

int routed_scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                    MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                    int root, MPI_Comm comm) {
  if (auto rc = pairwise_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                  recvtype, root, comm, nullptr))
    return *rc;
  return scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int routed_iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                     MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                     int root, MPI_Comm comm, MPI_Request* request) {
  if (auto rc = pairwise_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                  recvtype, root, comm, request))
    return *rc;
  return iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                   request);
}

}  // namespace mpizip::core
