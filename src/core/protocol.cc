#include "src/core/protocol.h"

#include "src/core/coll_route.h"
#include "src/core/comm_context.h"

#include "src/transport/transport.h"

#include <algorithm>
#include <cstdint>

#include "include/mpizip.h"
#include "p2p/wire.h"
#include "src/core/agreement.h"
#include "src/core/reduce_type.h"
#include "src/core/requests.h"
#include "src/core/settings.h"
#include "src/core/type_signature.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

MPI_Datatype MPIZip_bf16 = MPI_DATATYPE_NULL;
MPI_Datatype MPIZip_fp16 = MPI_DATATYPE_NULL;
MPI_Datatype MPIZip_fp8_e4m3 = MPI_DATATYPE_NULL;
MPI_Datatype MPIZip_fp8_e5m2 = MPI_DATATYPE_NULL;
int MPIZip_uint16_element_keyval = MPI_KEYVAL_INVALID;
int MPIZip_uint8_element_keyval = MPI_KEYVAL_INVALID;

namespace mpizip::core {

bool g_job_on = false;

namespace {

bool g_job_gpu = false;  // some rank of the job has a GPU
uint64_t g_eager_bytes = 0;
uint64_t g_bare_bytes = 0;
int g_err_corrupt = MPI_ERR_OTHER;
int g_err_peer = MPI_ERR_OTHER;

int make_type(MPI_Datatype base, const char* name, MPI_Datatype* out) {
  int rc = PMPI_Type_dup(base, out);
  if (rc == MPI_SUCCESS) PMPI_Type_set_name(*out, name);
  return rc;
}

}  // namespace

int protocol_create_handles() {
  int rc = MPI_SUCCESS;
  if (rc == MPI_SUCCESS) rc = make_type(MPI_UINT16_T, "MPIZIP_BF16", &MPIZip_bf16);
  if (rc == MPI_SUCCESS) rc = make_type(MPI_UINT16_T, "MPIZIP_FP16", &MPIZip_fp16);
  if (rc == MPI_SUCCESS) rc = make_type(MPI_UINT8_T, "MPIZIP_FP8_E4M3", &MPIZip_fp8_e4m3);
  if (rc == MPI_SUCCESS) rc = make_type(MPI_UINT8_T, "MPIZIP_FP8_E5M2", &MPIZip_fp8_e5m2);
  if (rc == MPI_SUCCESS) rc = type_signature_setup();
  if (rc == MPI_SUCCESS) rc = library_ops_create();
  if (rc == MPI_SUCCESS) {
    rc = PMPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN,
                                 &MPIZip_uint16_element_keyval, nullptr);
  }
  if (rc == MPI_SUCCESS) {
    rc = PMPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN,
                                 &MPIZip_uint8_element_keyval, nullptr);
  }
  int error_class = 0;
  if (rc == MPI_SUCCESS) rc = PMPI_Add_error_class(&error_class);
  if (rc == MPI_SUCCESS) rc = PMPI_Add_error_code(error_class, &g_err_corrupt);
  if (rc == MPI_SUCCESS) {
    char text[] = "MPIZip: corrupt compressed payload (a bounds, table, end-state or checksum check failed)";
    rc = PMPI_Add_error_string(g_err_corrupt, text);
  }
  if (rc == MPI_SUCCESS) rc = PMPI_Add_error_class(&error_class);
  if (rc == MPI_SUCCESS) rc = PMPI_Add_error_code(error_class, &g_err_peer);
  if (rc == MPI_SUCCESS) {
    char text[] = "MPIZip: another rank's part of the operation failed (its log says why)";
    rc = PMPI_Add_error_string(g_err_peer, text);
  }
  return rc;
}

void protocol_free_handles() {
  library_ops_free();
  for (MPI_Datatype* t : {&MPIZip_bf16, &MPIZip_fp16, &MPIZip_fp8_e4m3, &MPIZip_fp8_e5m2}) {
    if (*t != MPI_DATATYPE_NULL) PMPI_Type_free(t);
  }
  for (int* k : {&MPIZip_uint16_element_keyval, &MPIZip_uint8_element_keyval}) {
    if (*k != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(k);
  }
}

namespace {

// The declared element type of MPI_UINT16_T / MPI_UINT8_T buffers on `comm`, if any.
std::optional<format::DType> declared(MPI_Comm comm, int keyval, bool sixteen) {
  void* value = nullptr;
  int found = 0;
  if (keyval == MPI_KEYVAL_INVALID || PMPI_Comm_get_attr(comm, keyval, &value, &found) != MPI_SUCCESS ||
      !found) {
    return std::nullopt;
  }
  auto v = static_cast<int>(reinterpret_cast<intptr_t>(value));
  if (sixteen && (v == MPIZIP_ELEM_BF16 || v == MPIZIP_ELEM_FP16)) {
    return static_cast<format::DType>(v);
  }
  if (!sixteen && (v == MPIZIP_ELEM_FP8_E4M3 || v == MPIZIP_ELEM_FP8_E5M2)) {
    return static_cast<format::DType>(v);
  }
  return std::nullopt;
}

}  // namespace

namespace {

// How the MPI library fills statuses where the standard leaves it a choice. What a truncated
// receive counts, the whole message (Open MPI) or the bytes delivered: a 2-element message to this
// rank received into 1 element. Whether probes and matched probes set MPI_ERROR (MPICH's
// MPI_Probe sets MPI_SUCCESS, its MPI_Mprobe and Open MPI's probes leave it alone; MPICH's probes
// of a message to the same rank both set it): a message from the previous rank of
// MPI_COMM_WORLD, as most probed messages come from another rank. Collective over MPI_COMM_WORLD.
void find_status_conventions() {
  MPI_Comm self = MPI_COMM_NULL;
  if (PMPI_Comm_dup(MPI_COMM_SELF, &self) != MPI_SUCCESS) return;
  PMPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
  int out[2] = {1, 2}, in[2] = {0, 0};
  MPI_Request req;
  MPI_Status st;
  if (PMPI_Isend(out, 2, MPI_INT, 0, 0, self, &req) == MPI_SUCCESS) {
    const int rc = PMPI_Recv(in, 1, MPI_INT, 0, 0, self, &st);
    PMPI_Wait(&req, MPI_STATUS_IGNORE);
    int n = 0;
    PMPI_Get_count(&st, MPI_INT, &n);
    int error_class = MPI_SUCCESS;
    PMPI_Error_class(rc, &error_class);
    if (error_class == MPI_ERR_TRUNCATE) status_truncation_reports_message(n == 2);
  }
  PMPI_Comm_free(&self);

  MPI_Comm ring = MPI_COMM_NULL;
  if (PMPI_Comm_dup(MPI_COMM_WORLD, &ring) != MPI_SUCCESS) return;
  int rank = 0, size = 1;
  PMPI_Comm_rank(ring, &rank);
  PMPI_Comm_size(ring, &size);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Request sends[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  PMPI_Isend(&out[0], 1, MPI_INT, right, 0, ring, &sends[0]);
  PMPI_Isend(&out[1], 1, MPI_INT, right, 1, ring, &sends[1]);
  bool sets[2] = {false, false};
  st.MPI_ERROR = MPI_ERR_OTHER;
  if (PMPI_Probe(left, 0, ring, &st) == MPI_SUCCESS) sets[0] = st.MPI_ERROR == MPI_SUCCESS;
  PMPI_Recv(&in[0], 1, MPI_INT, left, 0, ring, MPI_STATUS_IGNORE);
  MPI_Message m = MPI_MESSAGE_NULL;
  st.MPI_ERROR = MPI_ERR_OTHER;
  if (PMPI_Mprobe(left, 1, ring, &m, &st) == MPI_SUCCESS) {
    sets[1] = st.MPI_ERROR == MPI_SUCCESS;
    PMPI_Mrecv(&in[1], 1, MPI_INT, &m, MPI_STATUS_IGNORE);
  }
  PMPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
  PMPI_Comm_free(&ring);
  status_probes_set_error(sets[0], sets[1]);
}

}  // namespace

int protocol_setup_job() {
  find_status_conventions();
  const Settings& s = settings();
  std::string why;
  const bool gpu = !platform::gpus(&why).empty();
  int64_t facts[7] = {
      gpu ? 1 : 0,                            // a GPU
      s.host_compress ? 1 : 0,                // host compression asked for
      s.protocol == 1 ? 1 : 0,                // MPIZIP_PROTOCOL=on
      s.protocol == 2 ? 1 : 0,                // MPIZIP_PROTOCOL=off
      static_cast<int64_t>(s.eager_bytes),  // at most p2p::kMaxInlineBytes (settings.def)
      gpu ? 0 : 1,                            // no GPU
      static_cast<int64_t>(s.bare_bytes),   // likewise
  };
  int64_t job[7];
  int rc = PMPI_Allreduce(facts, job, 7, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return rc;
  g_job_on = s.enable && job[3] == 0 && (job[0] != 0 || job[1] != 0 || job[2] != 0);
  g_eager_bytes = static_cast<uint64_t>(job[4]);
  g_bare_bytes = static_cast<uint64_t>(job[6]);
  g_job_gpu = job[0] != 0;
  protocol_refresh_policy();
  MPIZIP_INFO("point-to-point protocol %s (GPU on some rank: %s, on every rank: %s, host "
              "compression: %s)",
              g_job_on ? "on" : "off", job[0] ? "yes" : "no", job[5] ? "no" : "yes",
              job[1] ? "yes" : "no");
  if (!g_job_on) return MPI_SUCCESS;
  rc = protocol_attach(MPI_COMM_WORLD);
  if (rc == MPI_SUCCESS) rc = protocol_attach(MPI_COMM_SELF);
  return rc;
}

void protocol_teardown_job() {
  protocol_detach(MPI_COMM_SELF);
  protocol_detach(MPI_COMM_WORLD);
  g_job_on = false;
}


// The transport options of a communicator with settings `st` (the process's, with its hints).
transport::Options transport_options(const Settings& st) {
  transport::Options opt;
  opt.kind = static_cast<transport::Kind>(st.transport);
  // A job without GPUs moves host memory only, which the MPI library does as well as UCX, and
  // progresses by itself from inside any MPI call (no progress thread needed: progress_thread.h).
  if (opt.kind == transport::Kind::kAuto && !g_job_gpu) opt.kind = transport::Kind::kPmpi;
  opt.force_internode = st.force_internode;
  opt.emu_gbps = st.emu_gbps;
  opt.emu_latency_us = st.emu_latency_us;
  opt.emu_link_per_rank = st.emu_links == 1;
  opt.staging_bytes = st.staging_bytes;
  opt.fail_ucx_start = st.fault == kFaultUcxStart;
  return opt;
}

int protocol_attach(MPI_Comm comm) {
  if (!g_job_on || comm == MPI_COMM_NULL) return MPI_SUCCESS;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return MPI_SUCCESS;
  CommState* s = comm_state(comm);
  if (s == nullptr || s->protocol.load()) return MPI_SUCCESS;
  // Ranks whose settings would disagree on the collectives' plans: off here (agreement.h). The
  // communicator's settings: the process's, with the hints it was created with (comm_hints.h).
  const Settings& st = comm_settings(s);
  if (!settings_agree(comm, st)) return MPI_SUCCESS;
  std::shared_ptr<CommContext> c;
  // The outcome is the same on every rank (comm_context_create), so the communicator is off
  // everywhere when it fails.
  if (!ok(comm_context_create(comm, transport_options(st), coll_wanted(st), &c))) {
    return MPI_SUCCESS;
  }
  c->state = s->shared_from_this();
  if (!s->cost) {
    s->cost = std::make_unique<cost::Model>(s->size);
    for (int q = 0; q < s->size && c->p2p_transport; ++q) {
      const double rate = c->p2p_transport->link_rate(q);
      if (rate > 0) s->cost->set_link(q, rate);
    }
  }
  s->context = std::move(c);
  s->protocol.store(true, std::memory_order_release);
  return MPI_SUCCESS;
}

void protocol_detach(MPI_Comm comm) {
  CommState* s = comm_state_find(comm);
  if (s == nullptr || !s->protocol.exchange(false)) return;
  // Operations still pending on the communicator (sends that completed for the application but
  // still move their payloads, receives the application has not waited for) hold the context
  // themselves (comm_context.h): this drops only the communicator's own reference.
  s->context.reset();
}

std::optional<ProtocolType> protocol_type_of(CommState* s, MPI_Comm comm, MPI_Datatype type) {
  if (s == nullptr || !s->protocol.load(std::memory_order_acquire)) return std::nullopt;
  const TypeSignature sig = type_signature(type);
  switch (sig.basic) {
    case Basic::kFloat: return ProtocolType{format::DType::kFp32, sig.elems, sig.contiguous, true};
    case Basic::kDouble: return ProtocolType{format::DType::kFp64, sig.elems, sig.contiguous, true};
    case Basic::kU16:
    case Basic::kU8: {
      const bool sixteen = sig.basic == Basic::kU16;
      std::optional<format::DType> d;
      if (sig.element != 0) {
        d = static_cast<format::DType>(sig.element);
      } else {
        d = declared(comm, sixteen ? MPIZip_uint16_element_keyval : MPIZip_uint8_element_keyval,
                     sixteen);
      }
      const format::DType raw = sixteen ? format::DType::kBf16 : format::DType::kE4m3;
      return ProtocolType{d.value_or(raw), sig.elems, sig.contiguous, d.has_value()};
    }
    case Basic::kOther:
      // Every other signature, as raw bytes (the packed form of its elements); never compressed.
      // Every signature takes the protocol, so that the two sides of a message agree on it whatever
      // datatypes they name, even where MPI calls the pairing erroneous (docs/PROTOCOL.md).
      if (sig.elems == 0) return std::nullopt;
      return ProtocolType{format::DType::kE4m3, sig.elems, sig.contiguous, false, true};
    default:
      return std::nullopt;
  }
}

std::optional<format::DType> protocol_dtype(CommState* s, MPI_Comm comm, MPI_Datatype type) {
  auto t = protocol_type(s, comm, type);
  if (!t || t->elems != 1 || !t->contiguous || !t->compressible) return std::nullopt;
  return t->dtype;
}

p2p::SendPolicy g_policy;

void protocol_refresh_policy() { g_policy = send_policy_for(settings()); }

p2p::SendPolicy send_policy_for(const Settings& st) {
  p2p::SendPolicy p;
  p.min_bytes = st.min_bytes;
  p.gpu_min_bytes = st.gpu_min_bytes;
  p.eager_bytes = g_eager_bytes;
  p.bare_bytes = g_bare_bytes;
  p.host_compress = st.host_compress;
  p.checksum = st.checksum;
  p.pipeline = static_cast<p2p::Pipeline>(st.p2p_pipeline);
  p.chunk_bytes = st.chunk_bytes;  // a multiple of 64 (settings.def): whole elements of every type
  p.fault_after_match = st.fault == kFaultSend;
  p.compress = static_cast<p2p::SendPolicy::Compress>(st.compress);
  return p;
}

p2p::Channel channel_of(CommState* s, MPI_Comm comm) {
  p2p::Channel ch;
  ch.comm = comm;
  ch.owner = s->context;
  ch.transport = s->context ? s->context->p2p_transport.get() : nullptr;
  ch.bulk_tags = &s->bulk_tags;
  ch.probed = &s->probed;
  ch.ratios = &s->ratios;
  ch.cost = s->cost.get();
  ch.policy = comm_policy(s);  // copied: the operation keeps it whatever hints follow
  return ch;
}

int corrupt_payload_error() { return g_err_corrupt; }
int peer_failed_error() { return g_err_peer; }

}  // namespace mpizip::core
