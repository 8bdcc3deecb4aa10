// The receive entry points, blocking, non-blocking and persistent, and the exchanges that
// combine a send with a receive (p2p_route.h).
#include "src/core/p2p_route.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "p2p/probe.h"
#include "p2p/staged.h"
#include "src/core/errors.h"
#include "src/core/mpi_status.h"
#include "src/core/p2p_way.h"
#include "src/core/runtime.h"

namespace mpizip::core {
namespace {

// A plain receive posted to MPI, as an operation (a persistent plain receive on a protocol
// communicator, whose every start must look at the probed queue first).
class PlainRecvOp : public platform::Operation {
 public:
  int post(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm) {
    return PMPI_Irecv(buf, count, type, source, tag, comm, &req_);
  }
  bool progress() override {
    if (req_ == MPI_REQUEST_NULL) return true;
    int flag = 0;
    MPI_Status st;
    const int rc = PMPI_Test(&req_, &flag, &st);
    if (!flag && rc == MPI_SUCCESS) return false;
    req_ = MPI_REQUEST_NULL;
    status_.source = st.MPI_SOURCE;
    status_.tag = st.MPI_TAG;
    status_.bytes = status_.message_bytes = status_bytes(st);
    int cancelled = 0;
    PMPI_Test_cancelled(&st, &cancelled);
    status_.cancelled = cancelled != 0;
    status_.error = Status::mpi(rc);
    return true;
  }
  bool cancel() override {
    if (req_ != MPI_REQUEST_NULL) PMPI_Cancel(&req_);
    return false;  // completes through progress(), cancelled or not
  }

 private:
  MPI_Request req_ = MPI_REQUEST_NULL;
};

// Receives of a non-protocol datatype on a protocol communicator, served by a message that a probe
// took out of MPI. Returns false when no queued message matches.
bool serve_plain_from_queue(CommState* s, void* buf, int count, MPI_Datatype type, int source,
                            int tag, MPI_Comm comm, platform::OpStatus* out) {
  if (s == nullptr || s->probed.empty()) return false;
  auto m = s->probed.take(source, tag);
  if (!m) return false;
  uint64_t delivered = 0;
  out->error = p2p::receive_plain(*m, buf, count, type, comm, &delivered);
  out->source = m->source;
  out->tag = m->tag;
  out->bytes = delivered;
  out->message_bytes = m->bytes.size();
  return true;
}

[[gnu::always_inline]] inline
int recv_mpi(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  if (staged(buf, count, source)) [[unlikely]] {
    std::unique_ptr<platform::Operation> op;
    const Status s = p2p::start_staged_recv(buf, count, type, source, tag, comm, &op);
    if (!ok(s)) return raise(comm, s, "receive into a device buffer");
    drive(*op);
    return raise(comm, fill_status(op->status(), status));
  }
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

[[gnu::always_inline]] inline
int irecv_mpi(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  if (staged(buf, count, source)) [[unlikely]] {
    std::unique_ptr<platform::Operation> op;
    int rc = report(p2p::start_staged_recv(buf, count, type, source, tag, comm, &op),
                    "receive into a device buffer");
    if (rc == MPI_SUCCESS) rc = request_start(std::move(op), comm, request);
    return raise(comm, rc);
  }
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

[[gnu::always_inline]] inline
int recv_bare(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Status* status) {
  if (stats_on()) [[unlikely]] count_own_bare(comm, false);
  return recv_mpi(buf, count, type, source, tag, comm, status);
}

[[gnu::always_inline]] inline
int irecv_bare(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
               MPI_Request* request) {
  if (stats_on()) [[unlikely]] count_own_bare(comm, false);
  return irecv_mpi(buf, count, type, source, tag, comm, request);
}

// This thread's buffer for a blocking receive's match message (any match message fits). The
// pointer is initial-exec TLS: no lookup call on the small-message path.
[[gnu::always_inline]] inline uint8_t* thread_match_buffer() {
  static thread_local __attribute__((tls_model("initial-exec"))) uint8_t* match = nullptr;
  if (match == nullptr) [[unlikely]] {
    static thread_local std::vector<uint8_t> storage(p2p::kMaxMatchBytes);
    match = storage.data();
  }
  return match;
}

// A receive into the application's buffer that MPI truncated (`rc`): where what landed is the
// start of a match message, the status counts its message's bytes as MPIZip's truncations do
// (reported_bytes()), not the match message's. Returns `rc`.
int truncated_match(const p2p::UserBuffer& b, uint64_t capacity, const p2p::SendPolicy& pol,
                    int rc, MPI_Status* st) {
  int cls = rc;
  PMPI_Error_class(rc, &cls);
  p2p::MatchHeader h;
  if (cls != MPI_ERR_TRUNCATE || !p2p::parse_truncated_header(b.ptr, capacity, pol.bare_bytes, &h)) {
    return rc;
  }
  platform::OpStatus s;
  s.error = Status::kTruncated;
  s.bytes = capacity;
  s.message_bytes = h.app_bytes;
  status_set_bytes(st, reported_bytes(s), false);
  return rc;
}

// A blocking receive with nothing else of MPIZip's under way, into a host buffer whose elements
// are back to back. Its message lands with one MPI_Recv (p2p/wire.h): a buffer larger than the
// bare size receives it itself, with the application's datatype (a match message is never larger
// than its message, so the buffer holds either form of any message it holds), so that a plain
// message is the MPI library's own receive and only one that is a match message (looked at when
// its size is in the window of theirs) goes on; a smaller buffer receives into this thread's
// buffer (any match message fits), whence a plain message is copied. A match message goes on
// through the general receiver.
int recv_blocking(CommState* state, const p2p::UserBuffer& b, int count, MPI_Datatype type,
                  int stat_slot, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  const p2p::SendPolicy& pol = comm_policy(state);
  const uint64_t match_capacity = p2p::kHeaderBytes + std::max(pol.eager_bytes, pol.bare_bytes);
  const uint64_t capacity = b.count * format::elem_bytes(b.dtype);
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  uint8_t* match = thread_match_buffer();
  uint64_t bytes = 0;
  if (capacity > pol.bare_bytes) {
    const int rc = PMPI_Recv(b.ptr, count, type, source, tag, comm, st);
    if (rc != MPI_SUCCESS) return raise(comm, truncated_match(b, capacity, pol, rc, st));
    bytes = status_bytes(*st);
    p2p::MatchHeader h;
    if (bytes <= pol.bare_bytes || bytes > match_capacity ||
        !p2p::parse_header(b.ptr, bytes, pol.bare_bytes, &h)) {
      if (stats_on()) [[unlikely]] state->bare_received.fetch_add(1, std::memory_order_relaxed);
      return MPI_SUCCESS;  // the MPI library's own message, its status as MPI filled it
    }
    std::memcpy(match, b.ptr, bytes);
  } else {
    const int rc = PMPI_Recv(match, static_cast<int>(match_capacity), MPI_BYTE, source, tag, comm,
                             st);
    if (rc != MPI_SUCCESS) return raise(comm, rc);
    bytes = status_bytes(*st);
    platform::OpStatus done;
    p2p::Traffic traffic;
    if (p2p::deliver_plain(b, match, bytes, pol.bare_bytes, &done, &traffic)) {
      // MPI filled in source, tag and error; the count is the application's.
      status_set_bytes(st, reported_bytes(done), false);
      count_traffic(state->received, state, stat_slot, traffic);
      return raise(comm, report(done, "receive"));
    }
  }
  p2p::RecvOp op(channel_of(state, comm), b, match, bytes, st->MPI_SOURCE, st->MPI_TAG);
  drive(op);
  count_traffic(state->received, state, stat_slot, op.traffic());
  return raise(comm, fill_status(op.status(), status));
}

// What a non-blocking receive into a host buffer larger than the bare size, posted to MPI with the
// application's datatype (its request MPI's own, requests.h), landed: a plain message stands; a
// match message (looked at when its size is in the window of theirs) goes on through the general
// receiver, from a copy of it.
class HostLanding : public Landing {
 public:
  // `guard`: the buffer's landing guard (p2p::LandingGuard), held until the receive is over.
  HostLanding(const Route& r, uint64_t capacity, std::unique_ptr<p2p::LandingGuard> guard)
      : ch_(r.channel()), b_(r.buffer), capacity_(capacity), slot_(r.stat_slot),
        state_(stats_on() ? r.state->shared_from_this() : nullptr), guard_(std::move(guard)) {}

  std::unique_ptr<platform::Operation> landed(int rc, MPI_Status* st) override {
    const p2p::SendPolicy& pol = ch_.policy;
    if (rc != MPI_SUCCESS) {
      truncated_match(b_, capacity_, pol, rc, st);
      return nullptr;
    }
    int cancelled = 0;
    PMPI_Test_cancelled(st, &cancelled);
    const uint64_t bytes = status_bytes(*st);
    const uint64_t match_capacity = p2p::kHeaderBytes + std::max(pol.eager_bytes, pol.bare_bytes);
    // What landed: in the buffer, or the copy read_early() took of it.
    const uint8_t* at = early_read_ ? early_.data() : static_cast<const uint8_t*>(b_.ptr);
    if (early_read_ && early_.size() != bytes) at = nullptr;  // not a match message's size
    p2p::MatchHeader h;
    if (cancelled || bytes <= pol.bare_bytes || bytes > std::min(capacity_, match_capacity) ||
        at == nullptr || !p2p::parse_header(at, bytes, pol.bare_bytes, &h)) {
      if (state_ && !cancelled) state_->bare_received.fetch_add(1, std::memory_order_relaxed);
      return nullptr;  // the MPI library's own message, its status as MPI filled it
    }
    std::vector<uint8_t> match(at, at + bytes);
    guard_->parsed();
    auto op = std::make_unique<p2p::RecvOp>(ch_, b_, match.data(), bytes, st->MPI_SOURCE,
                                            st->MPI_TAG);
    // Counted when it completes (statistics on), which an inline payload does at once; the
    // buffer's range is held as long as the operation lives.
    std::shared_ptr<p2p::LandingGuard> guard = std::move(guard_);
    if (state_ && op->progress()) {
      count_traffic(state_->received, state_.get(), slot_, op->traffic());
    } else if (state_) {
      std::shared_ptr<CommState> s = state_;
      const int slot = slot_;
      op->on_complete([s, slot, guard](const p2p::Traffic& t) {
        count_traffic(s->received, s.get(), slot, t);
      });
    } else {
      op->on_complete([guard](const p2p::Traffic&) {});
    }
    return op;
  }

 private:
  p2p::Channel ch_;
  p2p::UserBuffer b_;
  uint64_t capacity_;
  int slot_;
  std::shared_ptr<CommState> state_;  // for the statistics, when they are on
  std::unique_ptr<p2p::LandingGuard> guard_;
  bool early_read_ = false;
  std::vector<uint8_t> early_;  // a possible match message, read before the wait (read_early)

 public:
  void read_early(const MPI_Status& st) override {
    const p2p::SendPolicy& pol = ch_.policy;
    const uint64_t bytes = status_bytes(st);
    const uint64_t match_capacity = p2p::kHeaderBytes + std::max(pol.eager_bytes, pol.bare_bytes);
    early_read_ = true;
    if (bytes > pol.bare_bytes && bytes <= std::min(capacity_, match_capacity)) {
      const auto* p = static_cast<const uint8_t*>(b_.ptr);
      early_.assign(p, p + bytes);
    }
    guard_->parsed();
  }
};

[[gnu::noinline]] int recv_general(void* buf, int count, MPI_Datatype type, int source, int tag,
                                   MPI_Comm comm, MPI_Status* status) {
  const Small small = small_message(buf, count, type, source, comm, false);
  count_bare(small, false);
  std::optional<Route> r = route_of(small, buf, count, type, comm);
  if (!r) {
    platform::OpStatus st;
    if (serve_plain_from_queue(small.plain_comm, buf, count, type, source, tag, comm, &st)) {
      return raise(comm, fill_status(st, status));
    }
    return recv_mpi(buf, count, type, source, tag, comm, status);
  }
  std::unique_ptr<p2p::LandingGuard> guard;
  if (!r->packed && !r->buffer.device && may_block_in_mpi() && r->state->probed.empty() &&
      (guard = p2p::LandingGuard::land(buf, r->buffer.count * format::elem_bytes(r->buffer.dtype)))) {
    return recv_blocking(r->state, r->buffer, count, type, r->stat_slot, source, tag, comm,
                         status);
  }
  Status posted;
  auto op = routed_recv(*r, [&](const p2p::UserBuffer& b) {
    return std::make_unique<p2p::RecvOp>(r->channel(), b, source, tag);
  }, &posted);
  if (!ok(posted)) return raise(comm, posted, "receive");
  drive(*op);
  return raise(comm, fill_status(op->status(), status));
}

[[gnu::noinline]] int irecv_general(void* buf, int count, MPI_Datatype type, int source, int tag,
                                    MPI_Comm comm, MPI_Request* request) {
  const Small small = small_message(buf, count, type, source, comm, false);
  count_bare(small, false);
  std::optional<Route> r = route_of(small, buf, count, type, comm);
  if (!r) {
    platform::OpStatus st;
    if (serve_plain_from_queue(small.plain_comm, buf, count, type, source, tag, comm, &st)) {
      return request_start(std::make_unique<DoneOp>(st), comm, request);
    }
    return irecv_mpi(buf, count, type, source, tag, comm, request);
  }
  // A host buffer larger than the bare size, elements back to back, nothing probed to serve
  // first: the MPI library's own receive and request, looked at when it completes. Not at
  // MPI_THREAD_MULTIPLE: there a handle that MPI frees in one thread's wait may go to another
  // thread's new request before MPIZip has forgotten it (a generalized request has a callback for
  // that moment, MPI's own request none), so the receive is MPIZip's operation as below.
  const uint64_t capacity = r->buffer.count * format::elem_bytes(r->buffer.dtype);
  std::unique_ptr<p2p::LandingGuard> guard;
  if (!r->packed && !r->buffer.device && r->state->probed.empty() &&
      capacity > comm_policy(r->state).bare_bytes && thread_level() < MPI_THREAD_MULTIPLE) {
    guard = p2p::LandingGuard::land(buf, capacity);
  }
  if (guard != nullptr) {
    auto landing = std::make_unique<HostLanding>(*r, capacity, std::move(guard));
    const int rc = PMPI_Irecv(buf, count, type, source, tag, comm, request);
    if (rc != MPI_SUCCESS) return rc;
    request_watch(*request, std::move(landing), comm);
    return MPI_SUCCESS;
  }
  Status posted;
  auto op = routed_recv(*r, [&](const p2p::UserBuffer& b) {
    return std::make_unique<p2p::RecvOp>(r->channel(), b, source, tag);
  }, &posted);
  if (!ok(posted)) return raise(comm, posted, "receive");
  return request_start(std::move(op), comm, request);
}

}  // namespace

int recv_any(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  if (own_bare(count, type, source) && !p2p::ProbedQueue::any_queued()) [[likely]] {
    return recv_bare(buf, count, type, source, tag, comm, status);
  }
  return recv_general(buf, count, type, source, tag, comm, status);
}

int irecv_any(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  // A bare receive (p2p/wire.h) is the MPI library's own: its request is MPI's.
  if (own_bare(count, type, source) && !p2p::ProbedQueue::any_queued()) [[likely]] {
    return irecv_bare(buf, count, type, source, tag, comm, request);
  }
  return irecv_general(buf, count, type, source, tag, comm, request);
}

int sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
             MPI_Comm comm, MPI_Status* status) {
  // Both sides the MPI library's own (plain or bare, nothing probed to serve first): one call.
  const Small out = small_message(sendbuf, sendcount, sendtype, dest, comm, true);
  const Small in = small_message(recvbuf, recvcount, recvtype, source, comm, false);
  const auto own = [](const Small& m) { return m.way == Way::kPlain || m.way == Way::kBare; };
  if (own(out) && own(in) && (in.plain_comm == nullptr || in.plain_comm->probed.empty()) &&
      !staged(sendbuf, sendcount, dest) && !staged(recvbuf, recvcount, source)) {
    count_bare(out, true);
    count_bare(in, false);
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                         source, recvtag, comm, status);
  }
  MPI_Request sreq;
  int rc = isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &sreq);
  if (rc != MPI_SUCCESS) return rc;
  int rrc = recv(recvbuf, recvcount, recvtype, source, recvtag, comm, status);
  rc = wait(&sreq, MPI_STATUS_IGNORE);
  return rrc != MPI_SUCCESS ? rrc : raise(comm, rc);
}

int sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                     int recvtag, MPI_Comm comm, MPI_Status* status) {
  auto r = route(buf, count, type, dest, comm);
  if (!r && (staged(buf, count, dest) || staged(buf, count, source))) {
    // A device buffer of another datatype: the exchange runs on a host copy of its span.
    p2p::HostCopy copy;
    Status s = copy.prepare(buf, count, type);
    if (ok(s)) s = copy.load();
    if (!ok(s)) return raise(comm, s, "sendrecv_replace of a device buffer");
    int rc = sendrecv_replace(copy.base(), count, type, dest, sendtag, source, recvtag, comm, status);
    const Status stored = copy.store();
    if (stored != Status::kOk && rc == MPI_SUCCESS) {
      rc = raise(comm, stored, "copy back of a staged buffer");
    }
    return rc;
  }
  if (!r && protocol_comm(comm) == nullptr) {
    return PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  }
  // Send a copy, receive into the buffer. Protocol datatypes are contiguous elements; other
  // datatypes travel packed.
  int packed_size = 0;
  int rc = PMPI_Pack_size(count, type, comm, &packed_size);
  if (rc != MPI_SUCCESS) return raise(comm, rc);
  std::vector<uint8_t> copy(static_cast<size_t>(packed_size));
  MPI_Request sreq;
  if (r) {
    // The elements, packed into a copy that the send owns.
    Route sent = *r;
    sent.packed = true;
    sent.layout = p2p::Layout{buf, count, type, comm, r->buffer.device,
                              r->buffer.count / std::max(1, count),
                              format::elem_bytes(r->buffer.dtype)};
    std::unique_ptr<platform::Operation> op;
    rc = report(start_routed_send(sent, dest, sendtag, p2p::SendMode::kStandard, &op), "send");
    if (rc == MPI_SUCCESS) rc = request_start(std::move(op), comm, &sreq);
  } else {
    int position = 0;
    rc = PMPI_Pack(buf, count, type, copy.data(), packed_size, &position, comm);
    if (rc == MPI_SUCCESS) rc = PMPI_Isend(copy.data(), position, MPI_PACKED, dest, sendtag, comm, &sreq);
  }
  if (rc != MPI_SUCCESS) return raise(comm, rc);
  int rrc = recv(buf, count, type, source, recvtag, comm, status);
  rc = wait(&sreq, MPI_STATUS_IGNORE);
  return rrc != MPI_SUCCESS ? rrc : raise(comm, rc);
}

int recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  auto r = route(buf, count, type, source, comm);
  if (r || staged(buf, count, source) || protocol_comm(comm) != nullptr) {
    // MPI's own argument checks at this call, as send_init_mode() makes them.
    MPI_Request checked = MPI_REQUEST_NULL;
    const int rc = PMPI_Recv_init(buf, count, type, source, tag, comm, &checked);
    if (rc != MPI_SUCCESS) return rc;
    PMPI_Request_free(&checked);
  }
  if (!r && staged(buf, count, source)) {
    return raise(comm, request_persistent(
        [buf, count, type = p2p::HeldType(type), source, tag,
         comm](std::unique_ptr<platform::Operation>* op) {
          return p2p::start_staged_recv(buf, count, type, source, tag, comm, op);
        },
        comm, request));
  }
  if (!r && protocol_comm(comm) == nullptr) {
    return PMPI_Recv_init(buf, count, type, source, tag, comm, request);
  }
  if (!r) {
    // Each start looks at the probed queue first, as a non-persistent receive does: a receive of a
    // protocol signature (bare-sized) takes a queued message of either form through the protocol's
    // receiver.
    return raise(comm, request_persistent(
        [buf, count, type = p2p::HeldType(type), source, tag,
         comm](std::unique_ptr<platform::Operation>* op) {
          if (auto queued = receive_route(buf, count, type, source, comm)) {
            Status posted;
            auto recv_op = routed_recv(*queued, [&](const p2p::UserBuffer& b) {
              return std::make_unique<p2p::RecvOp>(queued->channel(), b, source, tag);
            }, &posted);
            if (ok(posted)) *op = std::move(recv_op);
            return posted;
          }
          platform::OpStatus st;
          if (serve_plain_from_queue(protocol_comm(comm), buf, count, type, source, tag, comm,
                                     &st)) {
            *op = std::make_unique<DoneOp>(st);
            return Status();
          }
          auto plain = std::make_unique<PlainRecvOp>();
          const int rc = plain->post(buf, count, type, source, tag, comm);
          if (rc == MPI_SUCCESS) *op = std::move(plain);
          return Status::mpi(rc);
        },
        comm, request));
  }
  Route route_copy = *r;
  return raise(comm, request_persistent(
      [route_copy, source, tag](std::unique_ptr<platform::Operation>* op) {
        Status posted;
        auto recv_op = routed_recv(route_copy, [&](const p2p::UserBuffer& b) {
          return std::make_unique<p2p::RecvOp>(route_copy.channel(), b, source, tag);
        }, &posted);
        if (ok(posted)) *op = std::move(recv_op);
        return posted;
      },
      comm, request));
}

Status start_recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  std::unique_ptr<platform::Operation>* op, MPI_Request* plain) {
  *plain = MPI_REQUEST_NULL;
  const Small small = small_message(buf, count, type, source, comm, false);
  count_bare(small, false);
  std::optional<Route> r = route_of(small, buf, count, type, comm);
  if (!r) {
    if (staged(buf, count, source))
      return p2p::start_staged_recv(buf, count, type, source, tag, comm, op);
    return Status::mpi(PMPI_Irecv(buf, count, type, source, tag, comm, plain));
  }
  Status posted;
  *op = routed_recv(*r, [&](const p2p::UserBuffer& b) {
    return std::make_unique<p2p::RecvOp>(r->channel(), b, source, tag);
  }, &posted);
  return posted;
}

}  // namespace mpizip::core
