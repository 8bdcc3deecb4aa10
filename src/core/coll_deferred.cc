#include "src/core/coll_deferred.h"

#include <deque>
#include <mutex>
#include <utility>

#include "src/core/comm_state.h"
#include "src/core/errors.h"
#include "src/core/protocol.h"
#include "src/core/requests.h"
#include "src/core/runtime.h"
#include "src/core/settings.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

namespace mpizip::core {

// One deferred call: its agreement, then the collective it starts.
struct DeferredCall {
  int mine = 0;
  int all = 0;
  MPI_Request agreement = MPI_REQUEST_NULL;
  uint64_t seq = 0;
  DeferredStarter start;
  bool started = false;
  Status failed = Status::kOk;  // the start's failure
  std::unique_ptr<platform::Operation> op;
  std::shared_ptr<CommState> state;  // the application's communicator's (statistics)
};

// A communicator's deferred calls not yet started, in the order they were made, and the
// duplicate the MPI library's forms run on (made, without blocking, by the first deferred call).
struct DeferredQueue {
  ~DeferredQueue() {
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (finalized) return;
    if (library_ready != MPI_REQUEST_NULL) PMPI_Wait(&library_ready, MPI_STATUS_IGNORE);
    if (library != MPI_COMM_NULL) PMPI_Comm_free(&library);
  }
  std::recursive_mutex mutex;
  std::deque<std::shared_ptr<DeferredCall>> waiting;
  MPI_Comm library = MPI_COMM_NULL;
  MPI_Request library_ready = MPI_REQUEST_NULL;  // the duplicate's MPI_Comm_idup
};

namespace {

// Starts the calls at the front of `q` whose agreements are in, in order; stops at the first that
// is not. `wait`: waits for each agreement instead.
void pump(DeferredQueue& q, bool wait) {
  std::lock_guard<std::recursive_mutex> lock(q.mutex);
  while (!q.waiting.empty()) {
    DeferredCall& d = *q.waiting.front();
    int done = 0;
    int rc = wait ? PMPI_Wait(&d.agreement, MPI_STATUS_IGNORE)
                  : PMPI_Test(&d.agreement, &done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !wait && !done) return;
    const bool all = rc == MPI_SUCCESS && d.all == 1;
    if (!all && q.library_ready != MPI_REQUEST_NULL) {
      // The MPI library's form needs its duplicate.
      rc = wait ? PMPI_Wait(&q.library_ready, MPI_STATUS_IGNORE)
                : PMPI_Test(&q.library_ready, &done, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS && !wait && !done) return;
    }
    std::shared_ptr<DeferredCall> call = std::move(q.waiting.front());
    q.waiting.pop_front();
    call->started = true;
    if (rc != MPI_SUCCESS) {
      call->failed = Status::mpi(rc);
      continue;
    }
    // The starter, and the datatypes it keeps, stay with the call until it ends.
    call->failed = call->start(DeferredStart{all, q.library, call->seq}, &call->op);
    if (call->state != nullptr) {
      call->state->deferred_collectives.fetch_add(1, std::memory_order_relaxed);
      if (all) call->state->deferred_mpizip.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// The operation behind the application's request: the call's start, in its queue's order, then
// the collective.
class Deferred final : public platform::Operation {
 public:
  Deferred(std::shared_ptr<DeferredQueue> q, std::shared_ptr<DeferredCall> call)
      : queue_(std::move(q)), call_(std::move(call)) {}
  bool progress() override {
    {
      std::lock_guard<std::recursive_mutex> lock(queue_->mutex);
      if (!call_->started) pump(*queue_, false);
      if (!call_->started) return false;
    }
    if (!ok(call_->failed) || call_->op == nullptr) {
      status_.error = ok(call_->failed) ? Status::kInternal : call_->failed;
      return true;
    }
    if (!call_->op->progress()) return false;
    status_ = call_->op->status();
    return true;
  }

 private:
  std::shared_ptr<DeferredQueue> queue_;
  std::shared_ptr<DeferredCall> call_;
};

}  // namespace

CommContext* deferring_context(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || !protocol_job_on() || !active()) return nullptr;
  CommState* s = comm_state_find(comm);
  if (s == nullptr || !s->protocol.load(std::memory_order_acquire) || !s->context) return nullptr;
  CommContext& c = *s->context;
  if (!c.nodes.one_node() || comm_settings(s).force_internode) return nullptr;
  return &c;
}

bool buffers_suit_node(MPI_Comm comm, std::initializer_list<const void*> buffers) {
  CommState* s = comm_state_find(comm);
  if (s != nullptr && comm_settings(s).host_compress) return true;
  for (const void* p : buffers)
    if (p != nullptr && p != MPI_IN_PLACE && !platform::is_device_pointer(p)) return false;
  return true;
}

int defer(MPI_Comm comm, CommContext& c, bool mine, bool twoshot, DeferredStarter start,
          const char* what, MPI_Request* request) {
  if (!c.deferred) c.deferred = std::make_shared<DeferredQueue>();
  DeferredQueue& q = *c.deferred;
  std::lock_guard<std::recursive_mutex> lock(q.mutex);
  if (q.library == MPI_COMM_NULL) {
    // Every rank's first deferred call makes the duplicate, in the order of its collective calls.
    const int rc = PMPI_Comm_idup(c.p2p_comm, &q.library, &q.library_ready);
    if (rc != MPI_SUCCESS) return raise(comm, Status::mpi(rc), what);
  }
  auto call = std::make_shared<DeferredCall>();
  call->mine = mine ? 1 : 0;
  if (twoshot) call->seq = c.coll_seq++;
  call->start = std::move(start);
  call->state = c.state;
  const int rc = PMPI_Iallreduce(&call->mine, &call->all, 1, MPI_INT, MPI_MIN, c.p2p_comm,
                                 &call->agreement);
  if (rc != MPI_SUCCESS) return raise(comm, Status::mpi(rc), what);
  q.waiting.push_back(call);
  auto op = std::make_unique<Deferred>(c.deferred, std::move(call));
  return raise(comm, request_start(std::move(op), comm, request));
}

Status deferred_drain(CommContext& c) {
  if (c.deferred) pump(*c.deferred, true);
  return Status::kOk;
}

KeptType::KeptType(MPI_Datatype type) : type_(type) {
  if (type == MPI_DATATYPE_NULL) return;
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner) != MPI_SUCCESS ||
      combiner == MPI_COMBINER_NAMED)
    return;
  MPI_Datatype dup = MPI_DATATYPE_NULL;
  if (PMPI_Type_dup(type, &dup) == MPI_SUCCESS) {
    type_ = dup;
    owned_ = true;
  }
}

KeptType::~KeptType() {
  if (owned_) PMPI_Type_free(&type_);
}

}  // namespace mpizip::core
