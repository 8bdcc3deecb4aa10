// How a point-to-point call travels: the decision each entry point makes (src/core/p2p_route.h),
// shared by the files that hold them (p2p_send.cc, p2p_recv.cc, p2p_probe.cc): the protocol's view
// of a call (Route), the flat small-message test that is all MPIZip adds to a latency-bound code's
// messages (small_message; own_bare in p2p_bare.h), the traffic counters, and the two steps every protocol send
// and receive share. Internal to src/core.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "p2p/layout.h"
#include "p2p/recv.h"
#include "p2p/send.h"
#include "p2p/wire.h"
#include "src/core/comm_state.h"
#include "src/core/p2p_bare.h"
#include "src/core/protocol.h"
#include "src/core/requests.h"
#include "src/core/runtime.h"
#include "src/core/stats.h"
#include "src/platform/device.h"
#include "src/platform/operation.h"

namespace mpizip::core {

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
                              MPI_Comm comm);
// The same, for a signature already looked at (`pt`: protocol_type's answer).
Route route_of(CommState* s, void* buf, int count, MPI_Datatype type, MPI_Comm comm,
               const ProtocolType& pt);

// The communicator has the protocol: probes and receives must look at its probed queue.
CommState* protocol_comm(MPI_Comm comm);

// Protocol when MPIZip is active, the communicator has the protocol and the datatype's signature
// is of a protocol element type; everything else (including invalid arguments, which MPI reports)
// passes through.
// A message of at most the bare size travels as the MPI library's own (p2p/wire.h), so it passes
// through here too; a receive of that size whose communicator holds probed messages takes the
// protocol's receiver instead (with `any_size`), which serves them in order in either form.
std::optional<Route> route(const void* buf, int count, MPI_Datatype type, int peer, MPI_Comm comm,
                           bool any_size = false);

// A receive of at most the bare size on a communicator whose probed queue holds messages: the
// protocol's receiver, which takes a queued message of either form (a plain receive would find a
// queued headered one only as a type error).
std::optional<Route> receive_route(void* buf, int count, MPI_Datatype type, int source,
                                   MPI_Comm comm);


// A blocking call may block inside the MPI library (instead of polling MPIZip's operations) when
// nothing of MPIZip's needs advancing meanwhile: the progress thread runs, or no MPIZip request
// is registered. Then a blocking send or receive costs one MPI call more or less like the
// application's own.
inline bool may_block_in_mpi() { return request_count() == 0; }

// Statistics of protocol messages, counted only when MPIZIP_STATS is on (a few atomic additions
// are a noticeable part of a small message's cost).
void count_traffic(std::array<TypeCounters, 8>& by_type, CommState* s, int slot,
                   const p2p::Traffic& tr);

// Counts a send's traffic when it completes.
// The operation holds the state: it may complete after the communicator is freed.
std::function<void(const p2p::Traffic&)> sent_counter(const Route& r);

// Counts a receive's traffic when it completes (it may complete inside its constructor, from the
// probed queue: then it is not counted, like a probe-served message).
void count_received(p2p::RecvOp& op, const Route& r);

// An operation whose result is known at creation (a receive served from the probed queue).
class DoneOp : public platform::Operation {
 public:
  explicit DoneOp(const platform::OpStatus& s) { status_ = s; }
  bool progress() override { return true; }
};

// How a point-to-point call travels, decided from its arguments with as little work as possible:
// this is the whole cost MPIZip adds to a latency-bound code's messages, so it is flat on purpose.
enum class Way : uint8_t {
  kPlain,    // not the protocol (route() says the same): the MPI library's own call
  kBare,     // plain (p2p/wire.h): a protocol signature of at most the bare size, or a host
             // buffer sent raw; the MPI library's own call, with the application's buffer and
             // datatype
  kRoute,    // the protocol's general path
};

struct Small {
  Way way = Way::kPlain;
  CommState* state = nullptr;
  format::DType dtype = format::DType::kFp32;
  uint64_t bytes = 0;
  int stat_slot = 0;
  ProtocolType type{};  // kRoute: the signature as protocol_type() saw it
  // For kPlain and kBare: the communicator when it has the protocol (its probed queue must be
  // looked at, and bare messages are counted there), else null; what protocol_comm() would say,
  // found by the same lookup.
  CommState* plain_comm = nullptr;
};

[[gnu::always_inline]] inline Small small_message(const void* buf, int count, MPI_Datatype type,
                                                  int peer, MPI_Comm comm, bool sending) {
  Small out;
  if (!protocol_job_on() || count < 0 || peer == MPI_PROC_NULL) return out;
  CommState* s = comm_state_find(comm);
  // A sender's host buffer that cannot be compressed travels as the MPI library's own at any size
  // and of any datatype (below): decided before the datatype is looked at, unless statistics,
  // which count bare messages by size, are on.
  if (sending && s != nullptr && !stats_on() && s->protocol.load(std::memory_order_acquire) &&
      !comm_policy(s).host_compress && !(process_has_gpu() && platform::is_device_pointer(buf))) {
    out.way = Way::kBare;
    out.state = s;
    out.plain_comm = s;
    return out;
  }
  const auto pt = protocol_type(s, comm, type);
  if (!pt) {
    out.plain_comm = active() && s != nullptr && s->protocol.load(std::memory_order_acquire)
                          ? s : nullptr;
    return out;
  }
  const p2p::SendPolicy& p = comm_policy(s);  // the communicator's hints included
  out.state = s;
  out.dtype = pt->dtype;
  out.type = *pt;
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
  // A sender's host buffer that goes raw travels plain (p2p/wire.h), with the application's
  // buffer and datatype; a receiver cannot know what its sender does, so it looks at what lands.
  if (sending && !(p.host_compress && out.bytes >= p.min_bytes) &&
      !(process_has_gpu() && platform::is_device_pointer(buf))) {
    out.way = Way::kBare;
    out.plain_comm = s;
  }
  return out;
}

// The route of a message small_message() found kRoute, from what it looked up (no second lookup
// of the communicator and the signature); none for the others, or once MPIZip is no longer active.
inline std::optional<Route> route_of(const Small& m, const void* buf, int count,
                                     MPI_Datatype type, MPI_Comm comm) {
  if (m.way != Way::kRoute || !active()) return std::nullopt;
  return route_of(m.state, const_cast<void*>(buf), count, type, comm, m.type);
}

// Counts a bare message when statistics are on.
[[gnu::always_inline]] inline void count_bare(const Small& m, bool sending) {
  if (m.way != Way::kBare || !stats_on()) [[likely]] return;
  (sending ? m.state->bare_sent : m.state->bare_received).fetch_add(1, std::memory_order_relaxed);
}

// Counts an own_bare() message on a communicator with the protocol, when statistics are on.
void count_own_bare(MPI_Comm comm, bool sending);

// Starts the protocol's send of a routed buffer. A buffered one first reserves what MPI would
// take from the attached buffer, held until the send is done (bsend_buffer.h).
Status start_routed_send(const Route& r, int dest, int tag, p2p::SendMode mode,
                         std::unique_ptr<platform::Operation>* op);

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

}  // namespace mpizip::core
