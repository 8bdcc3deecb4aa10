#include "src/core/p2p_route.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "p2p/layout.h"
#include "p2p/probe.h"
#include "p2p/recv.h"
#include "p2p/send.h"
#include "p2p/staged.h"
#include "src/core/bsend_buffer.h"
#include "src/core/comm_hints.h"
#include "src/core/mpi_beneath.h"
#include "src/core/errors.h"
#include "src/core/mpi_status.h"
#include "src/core/progress_thread.h"
#include "src/core/protocol.h"
#include "src/core/requests.h"
#include "src/core/runtime.h"
#include "src/core/stats.h"
#include "src/platform/device.h"

namespace mpizip::core {
namespace {

// The statistics row of a protocol message: its element type, or row 0 for the raw bytes of
// another signature (src/core/stats.cc).
inline int stat_slot(const ProtocolType& pt) { return pt.bytes ? 0 : static_cast<int>(pt.dtype); }

// The protocol's view of one call, when the call takes the protocol.
struct Route {
  CommState* state = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  p2p::UserBuffer buffer;  // the elements back to back: the application's buffer, or packed
  bool packed = false;     // the datatype's elements are elsewhere: `layout` says where
  p2p::Layout layout;
  int stat_slot = 0;       // statistics row: the element type, 0 for another signature's bytes
  p2p::Channel channel() const { return channel_of(state, comm); }
};

// The protocol's view of `count` items of `type` at `buf` on `comm` (s has the protocol).
std::optional<Route> route_of(CommState* s, void* buf, int count, MPI_Datatype type,
                              MPI_Comm comm) {
  auto pt = protocol_type(s, comm, type);
  if (!pt) return std::nullopt;
  Route r;
  r.state = s;
  r.comm = comm;
  r.buffer.ptr = buf;
  r.buffer.count = static_cast<uint64_t>(count) * pt->elems;
  r.buffer.dtype = pt->dtype;
  r.buffer.device = process_has_gpu() && platform::is_device_pointer(buf);
  r.buffer.compressible = pt->compressible;
  r.stat_slot = stat_slot(*pt);
  if (!pt->contiguous) {
    r.packed = true;
    r.layout = p2p::Layout{buf, count, type, comm, r.buffer.device, pt->elems,
                           format::elem_bytes(pt->dtype)};
  }
  return r;
}

// The communicator has the protocol: probes and receives must look at its probed queue.
CommState* protocol_comm(MPI_Comm comm) {
  if (!protocol_job_on() || !active() || comm == MPI_COMM_NULL) return nullptr;
  CommState* s = comm_state_find(comm);
  return s != nullptr && s->protocol.load(std::memory_order_acquire) ? s : nullptr;
}

// Protocol when MPIZip is active, the communicator has the protocol and the datatype's signature
// is of a protocol element type; everything else (including invalid arguments, which MPI reports)
// passes through.
// A message of at most the bare size travels as the MPI library's own (p2p/wire.h), so it passes
// through here too; a receive of that size whose communicator holds probed messages takes the
// protocol's receiver instead (with `any_size`), which serves them in order in either form.
std::optional<Route> route(const void* buf, int count, MPI_Datatype type, int peer, MPI_Comm comm,
                           bool any_size = false) {
  if (!protocol_job_on() || !active() || count < 0 || peer == MPI_PROC_NULL ||
      comm == MPI_COMM_NULL) {
    return std::nullopt;
  }
  CommState* s = comm_state_find(comm);
  auto r = route_of(s, const_cast<void*>(buf), count, type, comm);
  if (r && !any_size &&
      r->buffer.count * format::elem_bytes(r->buffer.dtype) <= send_policy().bare_bytes) {
    return std::nullopt;
  }
  return r;
}

// A receive of at most the bare size on a communicator whose probed queue holds messages: the
// protocol's receiver, which takes a queued message of either form (a plain receive would find a
// queued headered one only as a type error).
std::optional<Route> receive_route(void* buf, int count, MPI_Datatype type, int source,
                                   MPI_Comm comm) {
  if (auto r = route(buf, count, type, source, comm)) return r;
  CommState* s = protocol_comm(comm);
  if (s == nullptr || s->probed.empty()) return std::nullopt;
  return route(buf, count, type, source, comm, true);
}

// A device buffer outside the protocol: staged through host memory by each side, since the MPI
// library cannot read GPU memory.
bool staged(const void* buf, int count, int peer) {
  return platform::has_gpu() && active() && !mpi_cuda_aware() && count > 0 &&
         peer != MPI_PROC_NULL && platform::is_device_pointer(buf);
}


// A blocking call may block inside the MPI library (instead of polling MPIZip's operations) when
// nothing of MPIZip's needs advancing meanwhile: the progress thread runs, or no MPIZip request
// is registered. Then a blocking send or receive costs one MPI call more or less like the
// application's own.
inline bool may_block_in_mpi() { return progress_thread_running() || request_count() == 0; }

// Statistics of protocol messages, counted only when MPIZIP_STATS is on (a few atomic additions
// are a noticeable part of a small message's cost).
void count_traffic(std::array<TypeCounters, 8>& by_type, CommState* s, int slot,
                   const p2p::Traffic& tr) {
  if (!stats_on()) return;
  TypeCounters& c = by_type[slot];
  c.messages.fetch_add(1, std::memory_order_relaxed);
  if (tr.compressed) c.compressed.fetch_add(1, std::memory_order_relaxed);
  c.app_bytes.fetch_add(tr.app_bytes, std::memory_order_relaxed);
  c.wire_bytes.fetch_add(tr.wire_bytes, std::memory_order_relaxed);
  s->codec_ns.fetch_add(static_cast<uint64_t>(tr.codec_seconds * 1e9), std::memory_order_relaxed);
  s->staging_ns.fetch_add(static_cast<uint64_t>(tr.staging_seconds * 1e9),
                          std::memory_order_relaxed);
}

// Counts a send's traffic when it completes.
// The operation holds the state: it may complete after the communicator is freed.
std::function<void(const p2p::Traffic&)> sent_counter(const Route& r) {
  if (!stats_on()) return nullptr;
  std::shared_ptr<CommState> s = r.state->shared_from_this();
  const int t = r.stat_slot;
  return [s, t](const p2p::Traffic& tr) { count_traffic(s->sent, s.get(), t, tr); };
}

// Counts a receive's traffic when it completes (it may complete inside its constructor, from the
// probed queue: then it is not counted, like a probe-served message).
void count_received(p2p::RecvOp& op, const Route& r) {
  if (!stats_on()) return;
  std::shared_ptr<CommState> s = r.state->shared_from_this();
  const int t = r.stat_slot;
  op.on_complete([s, t](const p2p::Traffic& tr) { count_traffic(s->received, s.get(), t, tr); });
}

// An operation whose result is known at creation (a receive served from the probed queue).
class DoneOp : public platform::Operation {
 public:
  explicit DoneOp(const platform::OpStatus& s) { status_ = s; }
  bool progress() override { return true; }
};

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

// How a point-to-point call travels, decided from its arguments with as little work as possible:
// this is the whole cost MPIZip adds to a latency-bound code's messages, so it is flat on purpose.
enum class Way : uint8_t {
  kPlain,    // not the protocol (route() says the same): the MPI library's own call
  kBare,     // a protocol signature of at most the bare size (p2p/wire.h): the MPI library's own
             // call too, with the application's buffer and datatype
  kCompact,  // a host buffer whose raw bytes fit inside a compact match message, sent and
             // received with one MPI call each, when nothing else of MPIZip's needs advancing
  kRoute,    // the protocol's general path
};
struct Small {
  Way way = Way::kPlain;
  CommState* state = nullptr;
  format::DType dtype = format::DType::kFp32;
  uint64_t bytes = 0;
  int stat_slot = 0;
  // For kPlain and kBare: the communicator when it has the protocol (its probed queue must be
  // looked at, and bare messages are counted there), else null; what protocol_comm() would say,
  // found by the same lookup.
  CommState* plain_comm = nullptr;
};

[[gnu::always_inline]] inline Small small_message(const void* buf, int count, MPI_Datatype type,
                                                  int peer, MPI_Comm comm, bool sending,
                                                  bool blocking = true) {
  Small out;
  if (!protocol_job_on() || count < 0 || peer == MPI_PROC_NULL) return out;
  CommState* s = comm_state_find(comm);
  const auto pt = protocol_type(s, comm, type);
  if (!pt) {
    out.plain_comm = active() && s != nullptr && s->protocol.load(std::memory_order_acquire)
                          ? s : nullptr;
    return out;
  }
  const p2p::SendPolicy& p = comm_policy(s);  // the communicator's hints included
  out.state = s;
  out.dtype = pt->dtype;
  out.bytes = static_cast<uint64_t>(count) * pt->elems * format::elem_bytes(pt->dtype);
  out.stat_slot = stat_slot(*pt);
  if (out.bytes <= p.bare_bytes) {
    // A receive whose communicator holds probed messages takes the protocol's receiver, which
    // serves queued messages of either form in order.
    out.way = !sending && !s->probed.empty() ? Way::kRoute : Way::kBare;
    out.plain_comm = s;
    return out;
  }
  out.way = Way::kRoute;
  if (!pt->contiguous || out.bytes > p.eager_bytes) return out;
  // A sender compresses from min_bytes on; a receiver of at most eager_bytes can take any message
  // that fits its buffer inline, so only the sender's choice matters here.
  if (sending && p.host_compress && out.bytes >= p.min_bytes) return out;
  if (process_has_gpu() && platform::is_device_pointer(buf)) return out;
  if (blocking && !may_block_in_mpi()) return out;
  if (!sending && !s->probed.empty()) return out;
  out.way = Way::kCompact;
  return out;
}

// Counts a bare message when statistics are on.
[[gnu::always_inline]] inline void count_bare(const Small& m, bool sending) {
  if (m.way != Way::kBare || !stats_on()) [[likely]] return;
  (sending ? m.state->bare_sent : m.state->bare_received).fetch_add(1, std::memory_order_relaxed);
}

// A message of at most the bare size (p2p/wire.h), on any communicator and of any datatype: the
// MPI library's own call (staged where the buffer is device memory), whatever the signature, since
// a message that size never takes the protocol. Decided from the datatype's size alone, before
// anything else is looked up: this is all of MPIZip's own path for a small message. A receive
// while some communicator holds probed messages takes the longer way, which looks at its queue.
[[gnu::always_inline]] inline bool own_bare(int count, MPI_Datatype type, int peer) {
  if (!protocol_job_on() || count < 0 || peer == MPI_PROC_NULL || type == MPI_DATATYPE_NULL) {
    return false;
  }
  int size = 0;
  if (type == MPI_CHAR || type == MPI_BYTE) {
    size = 1;  // OSU's and mpi4py's buffers: no call into the library
  } else if (type == MPI_FLOAT || type == MPI_INT) {
    size = 4;
  } else if (type == MPI_DOUBLE) {
    size = 8;
  } else if (PMPI_Type_size(type, &size) != MPI_SUCCESS) {
    return false;
  }
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size) <= send_policy().bare_bytes;
}

// Counts an own_bare() message on a communicator with the protocol, when statistics are on.
void count_own_bare(MPI_Comm comm, bool sending) {
  CommState* s = comm_state_find(comm);
  if (s == nullptr || !s->protocol.load(std::memory_order_acquire)) return;
  (sending ? s->bare_sent : s->bare_received).fetch_add(1, std::memory_order_relaxed);
}

// This thread's buffer for a blocking send's compact match message.
[[gnu::always_inline]] inline uint8_t* thread_send_buffer() {
  static thread_local __attribute__((tls_model("initial-exec"))) uint8_t* match = nullptr;
  if (match == nullptr) [[unlikely]] {
    static thread_local std::vector<uint8_t> storage(p2p::kCompactHeaderBytes + p2p::kMaxInlineBytes);
    match = storage.data();
  }
  return match;
}

int send_small(const Small& m, const void* buf, int dest, int tag, MPI_Comm comm,
               bool synchronous) {
  // A compact header in front of the application's bytes (p2p/wire.h): longer than the bare size.
  uint8_t* match = thread_send_buffer();
  const p2p::CompactHeader h =
      p2p::make_compact_header(m.dtype, m.bytes / format::elem_bytes(m.dtype));
  __builtin_memcpy(match, &h, p2p::kCompactHeaderBytes);
  p2p::copy_payload(match + p2p::kCompactHeaderBytes, buf, m.bytes);
  const int n = static_cast<int>(m.bytes + p2p::kCompactHeaderBytes);
  const int rc = synchronous ? PMPI_Ssend(match, n, MPI_BYTE, dest, tag, comm)
                             : PMPI_Send(match, n, MPI_BYTE, dest, tag, comm);
  raise(comm, rc);
  if (stats_on()) [[unlikely]] {
    p2p::Traffic t;
    t.app_bytes = t.wire_bytes = m.bytes;
    count_traffic(m.state->sent, m.state, m.stat_slot, t);
  }
  return rc;
}

// A device buffer of another datatype in a buffered send: MPI copies the bytes into the attached
// buffer inside the call, so a host copy that lives for the call suffices.
int bsend_staged(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 MPI_Request* request) {
  p2p::HostCopy copy;
  Status s = copy.prepare(const_cast<void*>(buf), count, type);
  if (ok(s)) s = copy.load();
  int rc = report(s, "buffered send of a device buffer");
  if (rc == MPI_SUCCESS) {
    rc = request != nullptr ? PMPI_Ibsend(copy.base(), count, type, dest, tag, comm, request)
                            : PMPI_Bsend(copy.base(), count, type, dest, tag, comm);
  }
  return raise(comm, rc);
}

// The MPI library's own send or receive of the application's arguments: every message that does
// not take the protocol (bare ones, p2p/wire.h, and plain ones), with a device buffer staged through
// host memory where the MPI library cannot read it.
int send_mpi(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
             p2p::SendMode mode) {
  const bool synchronous = mode == p2p::SendMode::kSynchronous;
  if (staged(buf, count, dest)) [[unlikely]] {
    if (mode == p2p::SendMode::kBuffered) {
      return bsend_staged(buf, count, type, dest, tag, comm, nullptr);
    }
    std::unique_ptr<platform::Operation> op;
    Status s = p2p::start_staged_send(buf, count, type, dest, tag, comm, synchronous, &op);
    if (ok(s)) s = drive(*op);
    return raise(comm, s, "send of a device buffer");
  }
  if (mode == p2p::SendMode::kBuffered) return PMPI_Bsend(buf, count, type, dest, tag, comm);
  return synchronous ? PMPI_Ssend(buf, count, type, dest, tag, comm)
                     : PMPI_Send(buf, count, type, dest, tag, comm);
}

int isend_mpi(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request, p2p::SendMode mode) {
  const bool synchronous = mode == p2p::SendMode::kSynchronous;
  if (staged(buf, count, dest)) [[unlikely]] {
    if (mode == p2p::SendMode::kBuffered) {
      return bsend_staged(buf, count, type, dest, tag, comm, request);
    }
    std::unique_ptr<platform::Operation> op;
    int rc = report(p2p::start_staged_send(buf, count, type, dest, tag, comm, synchronous, &op),
                    "send of a device buffer");
    if (rc == MPI_SUCCESS) rc = request_start(std::move(op), comm, request);
    return raise(comm, rc);
  }
  if (mode == p2p::SendMode::kBuffered) {
    return PMPI_Ibsend(buf, count, type, dest, tag, comm, request);
  }
  return synchronous ? PMPI_Issend(buf, count, type, dest, tag, comm, request)
                     : PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

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

// A message that own_bare() found of at most the bare size: counted, then the MPI library's own.
int send_bare(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              p2p::SendMode mode) {
  if (stats_on()) [[unlikely]] count_own_bare(comm, true);
  return send_mpi(buf, count, type, dest, tag, comm, mode);
}

int isend_bare(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request, p2p::SendMode mode) {
  if (stats_on()) [[unlikely]] count_own_bare(comm, true);
  return isend_mpi(buf, count, type, dest, tag, comm, request, mode);
}

int recv_bare(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Status* status) {
  if (stats_on()) [[unlikely]] count_own_bare(comm, false);
  return recv_mpi(buf, count, type, source, tag, comm, status);
}

int irecv_bare(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
               MPI_Request* request) {
  if (stats_on()) [[unlikely]] count_own_bare(comm, false);
  return irecv_mpi(buf, count, type, source, tag, comm, request);
}

// Posts the protocol's send of a routed buffer: packed first when its elements are not back to
// back (the packed copy lives as long as the send).
Status post_routed_send(const Route& r, int dest, int tag, p2p::SendMode mode,
                        std::unique_ptr<platform::Operation>* op) {
  if (!r.packed) {
    return p2p::start_send(r.channel(), r.buffer, dest, tag, mode, op, sent_counter(r));
  }
  platform::HostBuffer packed;
  MPIZIP_CHECK(p2p::pack(r.layout, &packed));
  p2p::UserBuffer b = r.buffer;
  b.ptr = packed.data();
  b.device = false;
  std::unique_ptr<platform::Operation> inner;
  MPIZIP_CHECK(p2p::start_send(r.channel(), b, dest, tag, mode, &inner, sent_counter(r)));
  *op = p2p::keep_packed(std::move(inner), std::move(packed));
  return Status::kOk;
}

// Starts the protocol's send of a routed buffer. A buffered one first reserves what MPI would
// take from the attached buffer, held until the send is done (bsend_buffer.h).
Status start_routed_send(const Route& r, int dest, int tag, p2p::SendMode mode,
                         std::unique_ptr<platform::Operation>* op) {
  if (mode != p2p::SendMode::kBuffered) return post_routed_send(r, dest, tag, mode, op);
  std::shared_ptr<const void> reserved;
  const int rc = bsend_reserve(r.buffer.count * format::elem_bytes(r.buffer.dtype), &reserved);
  if (rc != MPI_SUCCESS) return Status::mpi(rc);
  std::unique_ptr<platform::Operation> inner;
  MPIZIP_CHECK(post_routed_send(r, dest, tag, mode, &inner));
  *op = hold_while_running(std::move(inner), std::move(reserved));
  return Status::kOk;
}

// The protocol's receive of a routed buffer, its match message found by `make` (a function of the
// buffer the elements land in): into packed scratch first when the elements are not back to back.
template <typename MakeRecv>
std::unique_ptr<platform::Operation> routed_recv(const Route& r, MakeRecv make,
                                                 Status* post_error) {
  if (!r.packed) {
    auto op = make(r.buffer);
    *post_error = op->post_error();
    count_received(*op, r);
    return op;
  }
  platform::HostBuffer scratch;
  *post_error = scratch.resize(r.buffer.count * format::elem_bytes(r.buffer.dtype));
  if (!ok(*post_error)) return nullptr;
  p2p::UserBuffer b = r.buffer;
  b.ptr = scratch.data();
  b.device = false;
  auto op = make(b);
  *post_error = op->post_error();
  count_received(*op, r);
  return p2p::unpack_after(std::move(op), std::move(scratch), r.layout);
}

[[gnu::noinline]] int send_mode(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                                MPI_Comm comm, p2p::SendMode mode) {
  const bool synchronous = mode == p2p::SendMode::kSynchronous;
  const Small small = small_message(buf, count, type, dest, comm, true);
  if (small.way == Way::kCompact && mode != p2p::SendMode::kBuffered) {
    return send_small(small, buf, dest, tag, comm, synchronous);
  }
  count_bare(small, true);
  std::optional<Route> r =
      small.way != Way::kRoute && small.way != Way::kCompact ? std::nullopt
                                                             : route(buf, count, type, dest, comm);
  if (!r) return send_mpi(buf, count, type, dest, tag, comm, mode);
  std::unique_ptr<platform::Operation> op;
  Status s = start_routed_send(*r, dest, tag, mode, &op);
  if (ok(s)) s = drive_detachable(std::move(op));
  return raise(comm, s, "send");
}

[[gnu::noinline]] int isend_mode(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                                 MPI_Comm comm, MPI_Request* request, p2p::SendMode mode) {
  // A bare message (p2p/wire.h) is the MPI library's own: its request is MPI's, with nothing of
  // MPIZip's to advance or complete.
  const Small small = small_message(buf, count, type, dest, comm, true, false);
  count_bare(small, true);
  auto r = small.way == Way::kPlain || small.way == Way::kBare
               ? std::nullopt
               : route(buf, count, type, dest, comm);
  if (!r) return isend_mpi(buf, count, type, dest, tag, comm, request, mode);
  std::unique_ptr<platform::Operation> op;
  int rc = report(start_routed_send(*r, dest, tag, mode, &op), "send");
  if (rc == MPI_SUCCESS) rc = request_start(std::move(op), comm, request);
  return raise(comm, rc);
}

// A persistent send of any mode: each MPI_Start runs a fresh send (device buffers of other
// datatypes staged; a buffered one of those as a standard send, which MPI's rules allow only
// where the attached buffer would not run out: MPIZip does not count it against that buffer).
int send_init_mode(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request, p2p::SendMode mode) {
  auto r = route(buf, count, type, dest, comm);
  const bool synchronous = mode == p2p::SendMode::kSynchronous;
  if (r || staged(buf, count, dest)) {
    // MPI's own argument checks (rank, tag, count, datatype), which the MPI library makes at this
    // call and MPIZip's persistent request would otherwise put off to MPI_Start: the same call to
    // the library, its inactive request freed unused. An error went through the communicator's
    // error handler there.
    MPI_Request checked = MPI_REQUEST_NULL;
    const int rc = synchronous ? PMPI_Ssend_init(buf, count, type, dest, tag, comm, &checked)
                   : mode == p2p::SendMode::kBuffered
                       ? PMPI_Bsend_init(buf, count, type, dest, tag, comm, &checked)
                       : PMPI_Send_init(buf, count, type, dest, tag, comm, &checked);
    if (rc != MPI_SUCCESS) return rc;
    PMPI_Request_free(&checked);
  }
  if (!r && staged(buf, count, dest)) {
    return raise(comm, request_persistent(
        [buf, count, type = p2p::HeldType(type), dest, tag, comm,
         synchronous](std::unique_ptr<platform::Operation>* op) {
          return p2p::start_staged_send(buf, count, type, dest, tag, comm, synchronous, op);
        },
        comm, request));
  }
  if (!r) {
    switch (mode) {
      case p2p::SendMode::kSynchronous:
        return PMPI_Ssend_init(buf, count, type, dest, tag, comm, request);
      case p2p::SendMode::kBuffered:
        return PMPI_Bsend_init(buf, count, type, dest, tag, comm, request);
      case p2p::SendMode::kStandard:
        break;
    }
    return PMPI_Send_init(buf, count, type, dest, tag, comm, request);
  }
  Route route_copy = *r;
  return raise(comm, request_persistent(
      [route_copy, dest, tag, mode](std::unique_ptr<platform::Operation>* op) {
        return start_routed_send(route_copy, dest, tag, mode, op);
      },
      comm, request));
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

// A blocking receive with nothing else of MPIZip's under way: the match message arrives with one
// MPI_Recv into this thread's buffer (any match message fits: the eager size is the same on every
// rank, protocol.h); a raw inline payload is copied out at once, anything else goes on through
// the general receiver.
int recv_blocking(CommState* state, const p2p::UserBuffer& b, int stat_slot, int source, int tag,
                  MPI_Comm comm, MPI_Status* status) {
  uint8_t* match = thread_match_buffer();
  const int capacity = static_cast<int>(
      p2p::kHeaderBytes + std::max(send_policy().eager_bytes, send_policy().bare_bytes));
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  int rc = PMPI_Recv(match, capacity, MPI_BYTE, source, tag, comm, st);
  if (rc != MPI_SUCCESS) return raise(comm, rc);
  const uint64_t bytes = status_bytes(*st);
  platform::OpStatus done;
  p2p::Traffic traffic;
  if (p2p::deliver_inline(b, match, bytes, send_policy().bare_bytes, &done, &traffic)) {
    // MPI filled in source, tag and error; the count is the application's.
    status_set_bytes(st, reported_bytes(done), false);
    count_traffic(state->received, state, stat_slot, traffic);
    return raise(comm, report(done, "receive"));
  }
  p2p::RecvOp op(channel_of(state, comm), b, match, bytes, st->MPI_SOURCE, st->MPI_TAG);
  drive(op);
  count_traffic(state->received, state, stat_slot, op.traffic());
  return raise(comm, fill_status(op.status(), status));
}

// Fake MPI_Message handles for messages a matched probe took on a protocol communicator.
struct HeldMessage {
  MPI_Comm comm;
  std::unique_ptr<p2p::ProbedMessage> message;
};
std::mutex g_messages_mutex;
std::unordered_map<MPI_Message, HeldMessage> g_messages;
uintptr_t g_next_message = 1;

// A handle MPI never sees: the held message's address where handles are pointers (Open MPI), a
// counter in a range MPI does not use where they are integers (MPICH).
template <typename Handle>
Handle make_message_handle(void* p) {
  if constexpr (std::is_pointer_v<Handle>) {
    return reinterpret_cast<Handle>(p);
  } else {
    return static_cast<Handle>(0x6d000000 | (g_next_message++ & 0xffffff));
  }
}

MPI_Message hold_message(MPI_Comm comm, std::unique_ptr<p2p::ProbedMessage> m) {
  std::lock_guard<std::mutex> lock(g_messages_mutex);
  MPI_Message h = make_message_handle<MPI_Message>(m.get());
  g_messages[h] = HeldMessage{comm, std::move(m)};
  return h;
}

}  // namespace

bool held_message(MPI_Message h) {
  std::lock_guard<std::mutex> lock(g_messages_mutex);
  return g_messages.count(h) != 0;
}

namespace {

std::optional<HeldMessage> release_message(MPI_Message h) {
  std::lock_guard<std::mutex> lock(g_messages_mutex);
  auto it = g_messages.find(h);
  if (it == g_messages.end()) return std::nullopt;
  HeldMessage held = std::move(it->second);
  g_messages.erase(it);
  return held;
}

// The status a probe (`matched`: MPI_Mprobe, MPI_Improbe) reports for what it found.
void probe_status(const p2p::ProbeResult& r, bool matched, MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = r.source;
  status->MPI_TAG = r.tag;
  PMPI_Status_set_elements_x(status, MPI_BYTE, static_cast<MPI_Count>(r.bytes));
  PMPI_Status_set_cancelled(status, 0);
  if (probe_sets_error(matched)) status->MPI_ERROR = MPI_SUCCESS;
}

// The operation that receives a held message into the application's buffer.
std::unique_ptr<platform::Operation> receive_held(HeldMessage& held, void* buf, int count,
                                                  MPI_Datatype type) {
  CommState* s = comm_state_find(held.comm);
  if (auto r = count >= 0 ? route_of(s, buf, count, type, held.comm) : std::nullopt) {
    Status post_error;
    auto op = routed_recv(*r, [&](const p2p::UserBuffer& b) {
      return std::make_unique<p2p::RecvOp>(channel_of(s, held.comm), b, std::move(held.message));
    }, &post_error);
    if (op != nullptr) return op;
    platform::OpStatus failed;
    failed.error = post_error;
    return std::make_unique<DoneOp>(failed);
  }
  platform::OpStatus st;
  uint64_t delivered = 0;
  st.error = p2p::receive_plain(*held.message, buf, count, type, held.comm, &delivered);
  st.source = held.message->source;
  st.tag = held.message->tag;
  st.bytes = delivered;
  st.message_bytes = held.message->bytes.size();
  return std::make_unique<DoneOp>(st);
}

}  // namespace

int send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (own_bare(count, type, dest)) [[likely]] {
    return send_bare(buf, count, type, dest, tag, comm, p2p::SendMode::kStandard);
  }
  return send_mode(buf, count, type, dest, tag, comm, p2p::SendMode::kStandard);
}

int ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (own_bare(count, type, dest)) [[likely]] {
    return send_bare(buf, count, type, dest, tag, comm, p2p::SendMode::kSynchronous);
  }
  return send_mode(buf, count, type, dest, tag, comm, p2p::SendMode::kSynchronous);
}

int bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (own_bare(count, type, dest)) [[likely]] {
    return send_bare(buf, count, type, dest, tag, comm, p2p::SendMode::kBuffered);
  }
  return send_mode(buf, count, type, dest, tag, comm, p2p::SendMode::kBuffered);
}

int isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
          MPI_Request* request) {
  if (own_bare(count, type, dest)) [[likely]] {
    return isend_bare(buf, count, type, dest, tag, comm, request, p2p::SendMode::kStandard);
  }
  return isend_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kStandard);
}

int issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request) {
  if (own_bare(count, type, dest)) [[likely]] {
    return isend_bare(buf, count, type, dest, tag, comm, request, p2p::SendMode::kSynchronous);
  }
  return isend_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kSynchronous);
}

int ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request) {
  if (own_bare(count, type, dest)) [[likely]] {
    return isend_bare(buf, count, type, dest, tag, comm, request, p2p::SendMode::kBuffered);
  }
  return isend_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kBuffered);
}

namespace {

[[gnu::noinline]] int recv_general(void* buf, int count, MPI_Datatype type, int source, int tag,
                                   MPI_Comm comm, MPI_Status* status) {
  const Small small = small_message(buf, count, type, source, comm, false);
  if (small.way == Way::kCompact) {
    const p2p::UserBuffer b{buf, small.bytes / format::elem_bytes(small.dtype), small.dtype, false};
    return recv_blocking(small.state, b, small.stat_slot, source, tag, comm, status);
  }
  count_bare(small, false);
  std::optional<Route> r = small.way == Way::kPlain || small.way == Way::kBare
                               ? std::nullopt
                               : route(buf, count, type, source, comm, true);
  if (!r) {
    platform::OpStatus st;
    if (serve_plain_from_queue(small.plain_comm, buf, count, type, source, tag, comm, &st)) {
      return raise(comm, fill_status(st, status));
    }
    return recv_mpi(buf, count, type, source, tag, comm, status);
  }
  if (!r->packed && may_block_in_mpi() && r->state->probed.empty()) {
    return recv_blocking(r->state, r->buffer, r->stat_slot, source, tag, comm, status);
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
  const Small small = small_message(buf, count, type, source, comm, false, false);
  count_bare(small, false);
  std::optional<Route> r = small.way == Way::kPlain || small.way == Way::kBare
                               ? std::nullopt
                               : route(buf, count, type, source, comm, true);
  if (!r) {
    platform::OpStatus st;
    if (serve_plain_from_queue(small.plain_comm, buf, count, type, source, tag, comm, &st)) {
      return request_start(std::make_unique<DoneOp>(st), comm, request);
    }
    return irecv_mpi(buf, count, type, source, tag, comm, request);
  }
  Status posted;
  auto op = routed_recv(*r, [&](const p2p::UserBuffer& b) {
    return std::make_unique<p2p::RecvOp>(r->channel(), b, source, tag);
  }, &posted);
  if (!ok(posted)) return raise(comm, posted, "receive");
  return request_start(std::move(op), comm, request);
}

}  // namespace

int recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
         MPI_Status* status) {
  if (own_bare(count, type, source) && !p2p::ProbedQueue::any_queued()) [[likely]] {
    return recv_bare(buf, count, type, source, tag, comm, status);
  }
  return recv_general(buf, count, type, source, tag, comm, status);
}

int irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
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
  const Small out = small_message(sendbuf, sendcount, sendtype, dest, comm, true, false);
  const Small in = small_message(recvbuf, recvcount, recvtype, source, comm, false, false);
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

int send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return send_init_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kStandard);
}

int ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return send_init_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kSynchronous);
}

int bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return send_init_mode(buf, count, type, dest, tag, comm, request, p2p::SendMode::kBuffered);
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

int probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  CommState* s = protocol_comm(comm);
  if (s == nullptr || source == MPI_PROC_NULL) return PMPI_Probe(source, tag, comm, status);
  progress();
  int found = 0;
  p2p::ProbeResult r;
  const Status rc = p2p::probe(channel_of(s, comm), source, tag, true, &found, &r);
  if (ok(rc)) probe_status(r, false, status);
  return raise(comm, rc, "MPI_Probe");
}

int iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  CommState* s = protocol_comm(comm);
  if (s == nullptr || source == MPI_PROC_NULL) return PMPI_Iprobe(source, tag, comm, flag, status);
  progress();
  p2p::ProbeResult r;
  const Status rc = p2p::probe(channel_of(s, comm), source, tag, false, flag, &r);
  if (ok(rc) && *flag) probe_status(r, false, status);
  return raise(comm, rc, "MPI_Iprobe");
}

int mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  CommState* s = protocol_comm(comm);
  if (s == nullptr || source == MPI_PROC_NULL) {
    return PMPI_Mprobe(source, tag, comm, message, status);
  }
  progress();
  int found = 0;
  p2p::ProbeResult r;
  std::unique_ptr<p2p::ProbedMessage> m;
  const Status rc = p2p::mprobe(channel_of(s, comm), source, tag, true, &found, &r, &m);
  if (!ok(rc)) return raise(comm, rc, "MPI_Mprobe");
  probe_status(r, true, status);
  *message = hold_message(comm, std::move(m));
  return MPI_SUCCESS;
}

int improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
            MPI_Status* status) {
  CommState* s = protocol_comm(comm);
  if (s == nullptr || source == MPI_PROC_NULL) {
    return PMPI_Improbe(source, tag, comm, flag, message, status);
  }
  progress();
  p2p::ProbeResult r;
  std::unique_ptr<p2p::ProbedMessage> m;
  const Status rc = p2p::mprobe(channel_of(s, comm), source, tag, false, flag, &r, &m);
  if (!ok(rc)) return raise(comm, rc, "MPI_Improbe");
  if (*flag) {
    probe_status(r, true, status);
    *message = hold_message(comm, std::move(m));
  }
  return MPI_SUCCESS;
}

int mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  auto held = release_message(*message);
  if (!held) return PMPI_Mrecv(buf, count, type, message, status);
  *message = MPI_MESSAGE_NULL;
  MPI_Comm comm = held->comm;
  auto op = receive_held(*held, buf, count, type);
  drive(*op);
  return raise(comm, fill_status(op->status(), status));
}

int imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request) {
  auto held = release_message(*message);
  if (!held) return PMPI_Imrecv(buf, count, type, message, request);
  *message = MPI_MESSAGE_NULL;
  return request_start(receive_held(*held, buf, count, type), held->comm, request);
}

namespace {

// The MPI call that creates a communicator, then the protocol's collective setup of the new one.
int created(int rc, MPI_Comm* newcomm) {
  return rc == MPI_SUCCESS && active() ? protocol_attach(*newcomm) : rc;
}

}  // namespace

int comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return created(PMPI_Comm_dup(comm, newcomm), newcomm);
}

int comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
  // The info's hints, not the parent's, before MPIZip sets the communicator up with them.
  if (rc == MPI_SUCCESS) comm_hints_from_info(*newcomm, info);
  return created(rc, newcomm);
}

int comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return created(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

int comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  return created(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

int comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  return created(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

int comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  return created(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

int comm_free(MPI_Comm* comm) {
  if (active() && comm != nullptr) protocol_detach(*comm);
  return PMPI_Comm_free(comm);
}

}  // namespace mpizip::core
