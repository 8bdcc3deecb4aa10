#include "p2p/probe.h"

#include "p2p/layout.h"
#include "src/platform/device.h"

#include "src/platform/log.h"

namespace mpizip::p2p {
namespace {

// Takes the next matching message out of MPI into the queue.
Status pull(const Channel& ch, int source, int tag, bool blocking, int* found) {
  MPI_Message msg;
  MPI_Status st;
  int rc = MPI_SUCCESS;
  *found = 1;
  if (blocking) {
    rc = PMPI_Mprobe(source, tag, ch.comm, &msg, &st);
  } else {
    rc = PMPI_Improbe(source, tag, ch.comm, found, &msg, &st);
  }
  if (rc != MPI_SUCCESS || !*found) return Status::mpi(rc);
  MPI_Count bytes = 0;
  PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
  auto m = std::make_unique<ProbedMessage>();
  m->source = st.MPI_SOURCE;
  m->tag = st.MPI_TAG;
  m->bytes.resize(static_cast<size_t>(bytes));
  rc = PMPI_Mrecv(m->bytes.data(), static_cast<int>(bytes), MPI_BYTE, &msg, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return Status::mpi(rc);
  m->protocol =
      parse_header(m->bytes.data(), m->bytes.size(), ch.policy.bare_bytes, &m->header);
  ch.probed->push(std::move(m));
  return Status::kOk;
}

}  // namespace

Status probe(const Channel& ch, int source, int tag, bool blocking, int* found, ProbeResult* out) {
  if (source == MPI_PROC_NULL) {
    *found = 1;
    *out = ProbeResult{MPI_PROC_NULL, MPI_ANY_TAG, 0};
    return Status::kOk;
  }
  for (;;) {
    if (auto r = ch.probed->peek(source, tag)) {
      *found = 1;
      *out = *r;
      return Status::kOk;
    }
    // Nothing queued matches: take the next message out of MPI. Another thread may take it from
    // the queue before we look again; then probe again, as MPI_Probe would.
    const Status s = pull(ch, source, tag, blocking, found);
    if (!ok(s) || !*found) return s;
  }
}

Status receive_plain(const ProbedMessage& m, void* buf, int count, MPI_Datatype type, MPI_Comm comm,
                  uint64_t* delivered) {
  *delivered = 0;
  if (m.protocol) {
    MPIZIP_INFO("receive of a plain datatype matched an MPIZip message (from rank %d, tag %d): "
                "the sender used another datatype", m.source, m.tag);
    return Status::kTypeMismatch;
  }
  int type_size = 0;
  PMPI_Type_size(type, &type_size);
  uint64_t capacity = static_cast<uint64_t>(count) * static_cast<uint64_t>(type_size);
  uint64_t n = m.bytes.size() < capacity ? m.bytes.size() : capacity;
  if (n > 0 && type_size > 0) {
    // The message was received as bytes; lay them out with the receiver's datatype (p2p/layout.h:
    // its elements here are the bytes of the signature, so a partly filled last item is laid out
    // as MPI lays it out). On homogeneous systems MPI_Pack's format is those bytes in order.
    const Layout l{buf, count, type, comm, platform::is_device_pointer(buf),
                   static_cast<uint64_t>(type_size), 1};
    MPIZIP_CHECK(unpack(l, m.bytes.data(), n));
  }
  *delivered = n;
  return m.bytes.size() > capacity ? Status::kTruncated : Status::kOk;
}

Status mprobe(const Channel& ch, int source, int tag, bool blocking, int* found, ProbeResult* out,
           std::unique_ptr<ProbedMessage>* message) {
  for (;;) {
    // Taken in one step under the queue's lock: another thread's receive or matched probe cannot
    // take the same message.
    if (auto m = ch.probed->take(source, tag)) {
      *found = 1;
      *out = m->result();
      *message = std::move(m);
      return Status::kOk;
    }
    const Status s = pull(ch, source, tag, blocking, found);
    if (!ok(s) || !*found) return s;
  }
}

}  // namespace mpizip::p2p
