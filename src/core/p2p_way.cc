#include "src/core/p2p_way.h"

#include "src/core/comm_hints.h"
#include "src/core/mpi_beneath.h"

namespace mpizip::core {

// The protocol's view of `count` items of `type` at `buf` on `comm` (s has the protocol).
std::optional<Route> route_of(CommState* s, void* buf, int count, MPI_Datatype type,
                              MPI_Comm comm) {
  auto pt = protocol_type(s, comm, type);
  if (!pt) return std::nullopt;
  return route_of(s, buf, count, type, comm, *pt);
}

Route route_of(CommState* s, void* buf, int count, MPI_Datatype type, MPI_Comm comm,
               const ProtocolType& pt) {
  Route r;
  r.state = s;
  r.comm = comm;
  r.buffer.ptr = buf;
  r.buffer.count = static_cast<uint64_t>(count) * pt.elems;
  r.buffer.dtype = pt.dtype;
  r.buffer.device = process_has_gpu() && platform::is_device_pointer(buf);
  r.buffer.compressible = pt.compressible;
  r.stat_slot = stat_slot(pt);
  if (!pt.contiguous) {
    r.packed = true;
    r.layout = p2p::Layout{buf, count, type, comm, r.buffer.device, pt.elems,
                           format::elem_bytes(pt.dtype)};
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
                           bool any_size) {
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

// Counts an own_bare() message on a communicator with the protocol, when statistics are on.
void count_own_bare(MPI_Comm comm, bool sending) {
  CommState* s = comm_state_find(comm);
  if (s == nullptr || !s->protocol.load(std::memory_order_acquire)) return;
  (sending ? s->bare_sent : s->bare_received).fetch_add(1, std::memory_order_relaxed);
}

}  // namespace mpizip::core
