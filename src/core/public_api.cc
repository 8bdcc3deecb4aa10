// The functions declared in include/mpizip.h.
#include "include/mpizip.h"

#include "config.h"
#include "src/core/comm_state.h"
#include "src/core/runtime.h"

extern "C" const char* MPIZip_Version(void) { return PACKAGE_VERSION; }

extern "C" int MPIZip_Active(void) { return mpizip::core::active() ? 1 : 0; }

extern "C" int MPIZip_Comm_protocol(MPI_Comm comm) {
  if (!mpizip::core::active()) return 0;
  mpizip::core::CommState* s = mpizip::core::comm_state_find(comm);
  return s != nullptr && s->protocol.load() ? 1 : 0;
}

extern "C" int MPIZip_Comm_bare_messages(MPI_Comm comm, unsigned long long* sent,
                                         unsigned long long* received) {
  if (sent == nullptr || received == nullptr) return MPI_ERR_ARG;
  *sent = *received = 0;
  if (!mpizip::core::active()) return MPI_ERR_COMM;
  mpizip::core::CommState* s = mpizip::core::comm_state_find(comm);
  if (s == nullptr) return MPI_ERR_COMM;
  *sent = s->bare_sent.load(std::memory_order_relaxed);
  *received = s->bare_received.load(std::memory_order_relaxed);
  return MPI_SUCCESS;
}

extern "C" int MPIZip_Comm_traffic(MPI_Comm comm, MPIZip_Traffic* out) {
  if (out == nullptr) return MPI_ERR_ARG;
  *out = MPIZip_Traffic{};
  if (!mpizip::core::active()) return MPI_ERR_COMM;
  mpizip::core::CommState* s = mpizip::core::comm_state_find(comm);
  if (s == nullptr) return MPI_ERR_COMM;
  for (const auto& c : s->sent) {
    out->sent_messages += c.messages.load(std::memory_order_relaxed);
    out->sent_compressed += c.compressed.load(std::memory_order_relaxed);
    out->sent_app_bytes += c.app_bytes.load(std::memory_order_relaxed);
    out->sent_wire_bytes += c.wire_bytes.load(std::memory_order_relaxed);
  }
  for (const auto& c : s->received) {
    out->received_messages += c.messages.load(std::memory_order_relaxed);
    out->received_compressed += c.compressed.load(std::memory_order_relaxed);
  }
  return MPI_SUCCESS;
}
