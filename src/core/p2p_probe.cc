// Probes, matched probes and the message handles of messages they took (p2p_route.h).
#include "src/core/p2p_route.h"

#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "p2p/probe.h"
#include "src/core/errors.h"
#include "src/core/p2p_way.h"

namespace mpizip::core {
namespace {

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

}  // namespace mpizip::core
