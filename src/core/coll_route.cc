#include "src/core/coll_route.h"

#include "src/core/coll_pairwise.h"
#include "src/core/comm_context.h"
#include "src/core/comm_hints.h"
#include "src/core/errors.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "coll/allreduce.h"
#include "coll/hierarchical.h"
#include "coll/tma_coll.h"
#include "include/mpizip.h"
#include "p2p/layout.h"
#include "src/core/agreement.h"
#include "src/core/coll_deferred.h"
#include "src/core/coll_staging.h"
#include "src/core/comm_state.h"
#include "src/core/protocol.h"
#include "src/core/reduce_type.h"
#include "src/core/stats.h"
#include "src/core/requests.h"
#include "src/core/runtime.h"
#include "src/core/settings.h"
#include "src/core/type_signature.h"
#include "src/platform/buffers.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

namespace mpizip::core {
namespace {

// MPIZIP_ALLREDUCE's choices, in settings.def's order.
enum AllreduceSetting { kAllreduceAuto = 0, kAllreduceTwoShot = 1, kAllreduceOff = 2 };
// MPIZIP_COMPRESS's choices, in settings.def's order.
enum CompressSetting { kCompressAuto = 0, kCompressAlways = 1, kCompressNever = 2 };

// ---- Policy -------------------------------------------------------------------------------------

// What the two-shot needs to know about a call that takes it.
struct Route {
  CommState* state = nullptr;
  std::shared_ptr<CommContext> context;  // with the collectives' transport
  format::DType dtype = format::DType::kFp32;
  kernels::reduce::Op op = kernels::reduce::Op::kSum;
};

// The two-shot when MPIZip is active, the communicator has the protocol and 2 to coll::kMaxRanks
// ranks, the datatype is MPI_FLOAT, MPI_DOUBLE (or a Fortran real of their size, fortran_real()),
// MPIZIP_BF16 or MPIZIP_FP16 (an MPI_UINT16_T that
// the communicator declares bf16 stays an integer to the reduction: it goes to the MPI library),
// the op MPI_SUM, MPI_PROD, MPI_MIN or MPI_MAX, and MPIZIP_ALLREDUCE picks it for this size.
// Everything else, invalid arguments included (which MPI reports), goes to the MPI library.
// The two-shot's engine on `comm` for this type and op, whatever the size and the nodes: the
// facts route() starts from (the hierarchical collectives' stages take it on their
// sub-communicators at every size).
std::optional<Route> engine_route(MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (!protocol_job_on() || !active() || comm == MPI_COMM_NULL) return std::nullopt;
  if (type != MPI_FLOAT && type != MPI_DOUBLE && type != MPIZip_bf16 && type != MPIZip_fp16 &&
      type != MPIZip_fp8_e4m3 && type != MPIZip_fp8_e5m2 && fortran_real(type) == Basic::kOther) {
    return std::nullopt;
  }
  const auto red = reduction_of(type, op);
  if (!red || !kernels::reduce::is_float(red->type)) return std::nullopt;
  CommState* s = comm_state_find(comm);
  const Settings& st = comm_settings(s);  // the communicator's hints (comm_hints.h) included
  if (st.allreduce == kAllreduceOff) return std::nullopt;
  auto dtype = protocol_dtype(s, comm, type);
  if (!dtype || s->size < 2 || s->size > coll::kMaxRanks) return std::nullopt;
  std::shared_ptr<CommContext> c = s->context;
  if (!c || !c->coll_transport) return std::nullopt;
  return Route{s, std::move(c), *dtype, red->op};
}

std::optional<Route> route(int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                           bool within_node = false) {
  if (count < 0) return std::nullopt;
  std::optional<Route> r = engine_route(type, op, comm);
  if (!r) return std::nullopt;
  const Settings& st = comm_settings(r->state);
  const std::shared_ptr<CommContext>& c = r->context;
  const std::optional<format::DType> dtype = r->dtype;
  const bool narrow = !library_reduces(kernels::reduce::type_of(*dtype));
  // Ranks of one node: nothing crosses a network, so nothing is compressed, and the MPI library
  // reduces host buffers faster than the two-shot (device buffers take the intra-node engine
  // first); every rank sees the same node map. bf16, fp16 and fp8, which the MPI library
  // cannot reduce, stay here.
  // (`within_node`: a non-blocking call deferred within one node, coll_deferred.h, asks whether the
  // engine would take it, device buffers in mind.)
  if (st.allreduce == kAllreduceAuto && !narrow && !st.force_internode && c->nodes.one_node() &&
      !within_node)
    return std::nullopt;
  const uint64_t bytes = static_cast<uint64_t>(count) * format::elem_bytes(*dtype);
  if (st.allreduce == kAllreduceAuto && !narrow && bytes < st.allreduce_min_bytes)
    return std::nullopt;
  return r;
}

// What the communicator's settings say about compressing a two-shot's pieces.
coll::Policy policy(const Settings& st) {
  coll::Policy p;
  p.compress = st.allreduce_compress && st.compress != kCompressNever;
  p.host_compress = st.host_compress;
  p.min_compress_bytes = st.min_bytes;
  p.piece_bytes = st.allreduce_piece_bytes;
  p.fuse = st.allreduce_fuse;
  p.memory_bytes = st.device_pool_bytes;
  p.checksum = st.checksum;
  p.fault = st.fault == kFaultAllreduce;
  return p;
}

// Starts the two-shot, in the memory of the output buffer (coll::AllreduceArgs): an allreduce, or
// the reduce-scatter, reduce, broadcast or allgather that the same engine runs
// (AllreduceArgs::shape; `root` for a reduce and a broadcast).
Status start_twoshot(const Route& r, const void* sendbuf, void* recvbuf, int count, MPI_Comm comm,
                     std::unique_ptr<platform::Operation>* op,
                     coll::AllreduceArgs::Shape shape = coll::AllreduceArgs::Shape::kAllreduce,
                     int root = 0, Status local_error = Status::kOk,
                     std::optional<uint64_t> seq = std::nullopt) {
  // route() found the collectives' part of the context; the operation holds a reference.
  const std::shared_ptr<CommContext>& c = r.context;
  coll::Channel ch;
  ch.owner = c;
  ch.transport = c->coll_transport.get();
  PMPI_Comm_rank(comm, &ch.rank);
  ch.nranks = r.state->size;
  ch.resources = &c->coll_resources;
  ch.policy = policy(comm_settings(r.state));  // copied: the operation keeps it
  // MPIZIP_COMPRESS: auto lets the cost model measure whether compressing pays (cost/model.h);
  // always compresses whatever it measured; never (policy()) compresses nothing.
  if (comm_settings(r.state).compress == kCompressAuto) ch.cost = r.state->cost.get();
  coll::AllreduceArgs a;
  a.input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  a.output = recvbuf;
  a.count = static_cast<uint64_t>(count);
  a.dtype = r.dtype;
  // A broadcast's owner "folds" the root's piece alone, an alltoall's owner each piece alone (an
  // allgather folds nothing): under MAX a fold of one operand is that operand, bit for bit (SUM
  // would make its NaNs canonical, kernels/reduce.h).
  const bool copies = shape == coll::AllreduceArgs::Shape::kBcast ||
                      shape == coll::AllreduceArgs::Shape::kAllgather ||
                      shape == coll::AllreduceArgs::Shape::kAlltoall;
  a.op = copies ? kernels::reduce::Op::kMax : r.op;
  a.shape = shape;
  a.root = root;
  a.local_error = local_error;
  a.device = platform::is_device_pointer(recvbuf);
  a.input_device = a.input == recvbuf ? a.device : platform::is_device_pointer(a.input);
  // The operation holds the state: it may complete after the communicator is freed.
  std::shared_ptr<CommState> s = r.state->shared_from_this();
  const format::DType t = r.dtype;
  a.on_complete = [s, t](const coll::Traffic& tr) {
    TypeCounters& c = s->sent[static_cast<int>(t)];
    c.messages.fetch_add(tr.messages, std::memory_order_relaxed);
    c.compressed.fetch_add(tr.compressed, std::memory_order_relaxed);
    c.app_bytes.fetch_add(tr.app_bytes, std::memory_order_relaxed);
    c.wire_bytes.fetch_add(tr.wire_bytes, std::memory_order_relaxed);
  };
  // A deferred call's number was taken when it was made (coll_deferred.h).
  return coll::start_allreduce(ch, a, seq ? *seq : c->coll_seq++, op);
}

// ---- TMA intra-node collectives (coll/tma_coll.h) ----------------------------------------------

// MPIZIP_TMA's choices, in settings.def's order.
enum TmaSetting { kTmaAuto = 0, kTmaSm = 1, kTmaOff = 2 };

// The options of the intra-node collectives on `comm`, or none when they are off (settings that
// every rank of it shares, as agreement.h checks, and the job's GPU switch). The settings are in
// their ranges (settings.def).
std::optional<coll::tma::Options> tma_options(MPI_Comm comm) {
  const Settings& st = comm_settings(comm_state_find(comm));  // its hints included
  if (!protocol_job_on() || !active() || st.tma == kTmaOff || st.force_internode ||
      settings_disagree(comm))
    return std::nullopt;
  coll::tma::Options o;
  o.max_ctas = static_cast<int>(st.tma_max_ctas);
  o.ctas = static_cast<int>(st.tma_ctas);
  o.chunk_bytes = static_cast<uint32_t>(st.tma_chunk_bytes);
  o.copy_engine_bytes = static_cast<uint64_t>(st.tma_copy_engine_bytes);
  o.stages = static_cast<int>(st.tma_stages);
  o.timeout_ms = static_cast<uint64_t>(st.tma_timeout_ms);
  o.fault = st.fault == kFaultTmaFail ? 1 : st.fault == kFaultTmaSilent ? 2 : 0;
  o.sm_path = st.tma == kTmaSm;
  o.host_sync = st.tma_sync == 1;
  o.sharing = static_cast<int>(st.gpu_sharing);
  return o;
}

// The intra-node collectives' group of `comm`, set up by the first call that takes them (collective:
// every rank takes this path together, its choice made from what every rank shares); null where
// MPIZip holds no context for `comm` (the same on every rank: comm_context_create agrees).
coll::tma::Group* tma_group(MPI_Comm comm, const coll::tma::Options& o) {
  CommState* s = comm_state_find(comm);
  if (s == nullptr || !s->context) return nullptr;
  CommContext& c = *s->context;
  if (!c.tma_group) c.tma_group = coll::tma::make_group(comm, c.nodes.one_node(), o);
  return c.tma_group.get();
}

// Bytes of `count` elements of `type` when they are contiguous, else 0.
uint64_t contiguous_bytes(int count, MPI_Datatype type) {
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(type, &tlb, &textent) != MPI_SUCCESS)
    return 0;
  if (size <= 0 || lb != 0 || tlb != 0 || extent != size || textent != size) return 0;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

// Whether an intra-node collective of `bytes` (coll::tma::collective_bytes) takes MPIZip's engine:
// from MPIZIP_TMA_MIN_BYTES on, and at every size for bf16, fp16 and fp8 reductions (the MPI
// library knows those types only as integers). A function of count, type and settings only.
bool tma_large_enough(uint64_t bytes, std::optional<kernels::reduce::Type> reduced) {
  const bool narrow = reduced && !library_reduces(*reduced);
  return narrow || bytes >= settings().tma_min_bytes;  // no hint changes it
}

int comm_size(MPI_Comm comm) {
  int n = 0;
  return PMPI_Comm_size(comm, &n) == MPI_SUCCESS ? n : 0;
}

// Whether a collective whose engines would measure it as `bytes` (every rank's measure alike, as
// the engines' own thresholds use it) passes straight on: smaller than every threshold of an
// engine, of a type no engine takes at every size (bf16, fp16 and fp8 reductions), on a communicator
// whose settings keep the thresholds (MPIZIP_ALLREDUCE=twoshot takes every size). A few loads and
// compares, so that the small collectives an application makes by the thousand pay for nothing
// else (the thresholds are agreed by every rank: settings.def, MPIZIP_AGREED).
bool small_passes_on(uint64_t bytes, MPI_Datatype type, MPI_Comm comm) {
  const Settings& process = settings();
  const uint64_t gate = std::min<uint64_t>(process.tma_min_bytes, process.allreduce_min_bytes);
  if (!protocol_job_on()) return true;
  if (bytes >= gate || type == MPIZip_bf16 || type == MPIZip_fp16 || type == MPIZip_fp8_e4m3 ||
      type == MPIZip_fp8_e5m2)
    return false;
  return comm_settings(comm_state_find(comm)).allreduce == kAllreduceAuto;
}

// count x the signature size of `type` (0 for a bad type or count).
uint64_t bytes_of_call(int count, MPI_Datatype type) {
  int size = 0;
  if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS ||
      size <= 0)
    return 0;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

}  // namespace

// A reduce-scatter-block of MPIZIP_BF16 or MPIZIP_FP16 that the engine did not take (time-sliced
// GPU sharing, MPIZIP_TMA=off, several nodes): the MPI library knows those types only as 16-bit
// integers and cannot reduce them, so the two-shot allreduce (which reduces them at every size, in
// the same fixed rank order as the engine) reduces the whole input into memory of the output's
// kind, and this rank's block is copied out. Not handled (*handled false) for other types, counts
// past int, or when the allreduce would go to the MPI library too.
static int narrow_reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                MPI_Datatype type, MPI_Op op, MPI_Comm comm, bool* handled);

namespace {

using coll::tma::Kind;

// Bytes of one element of `type` (its signature's size), or 0.
uint64_t type_size(MPI_Datatype type) {
  int size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0) return 0;
  return static_cast<uint64_t>(size);
}

// Whether elements of `type` lie back to back (`count` of them a contiguous run of count x size
// bytes): a fact of this rank's datatype, which another rank's may not share.
bool contiguous(MPI_Datatype type) { return contiguous_bytes(1, type) == type_size(type); }

// A reduction's (type, op) for the engine, with its element's extent checked (pairs are padded as
// C pads them: MPI_DOUBLE_INT has 16 bytes).
bool reduction_layout_ok(const Reduction& red, MPI_Datatype type) {
  MPI_Aint lb = 0, extent = 0;
  return PMPI_Type_get_extent(type, &lb, &extent) == MPI_SUCCESS && lb == 0 &&
         static_cast<uint64_t>(extent) == kernels::reduce::type_bytes(red.type);
}

// Runs `a` on the intra-node engine where it is on for `comm` and the call is large enough
// (tma_large_enough, from arguments every rank shares), the call's error raised on `comm`; none
// where the engine did not take it (every rank then passes the call on, nothing written).
std::optional<int> on_engine(MPI_Comm comm, coll::tma::Args a, const char* what,
                             std::optional<kernels::reduce::Type> reduced) {
  if (comm == MPI_COMM_NULL) return std::nullopt;
  auto o = tma_options(comm);
  if (!o) return std::nullopt;
  const int P = comm_size(comm);
  if (P < 1 || a.call.root < 0 || a.call.root >= P) return std::nullopt;
  if (!tma_large_enough(coll::tma::collective_bytes(a.call, P), reduced)) return std::nullopt;
  coll::tma::Group* g = tma_group(comm, *o);
  if (g == nullptr) return std::nullopt;
  bool handled = false;
  coll::tma::Outcome how;
  const Status s = coll::tma::collective(g, a, comm, *o, &handled, &how);
  if (handled && ok(s)) {
    if (CommState* st = comm_state_find(comm)) {
      st->engine_collectives.fetch_add(1, std::memory_order_relaxed);
      if (how.runtime_copies) st->engine_runtime_copies.fetch_add(1, std::memory_order_relaxed);
      if (how.staged) st->engine_staged.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (handled || !ok(s)) return raise(comm, s, what);
  return std::nullopt;
}

// A reduction's arguments for the engine (elements of the reduction's type), or none where MPIZip
// does not reduce this (type, op).
std::optional<coll::tma::Args> reduction_args(Kind kind, const void* sendbuf, void* recvbuf,
                                              int count, MPI_Datatype type, MPI_Op op) {
  const auto red = reduction_of(type, op);
  if (!red || count <= 0) return std::nullopt;
  coll::tma::Args a;
  a.call.kind = kind;
  a.call.count = static_cast<uint64_t>(count);
  a.call.elem = kernels::reduce::type_bytes(red->type);
  a.in_place = sendbuf == MPI_IN_PLACE;
  a.in = sendbuf;
  a.out = recvbuf;
  a.type = red->type;
  a.op = red->op;
  a.can = reduction_layout_ok(*red, type);
  return a;
}

// The engine's arguments of a collective that copies blocks of `recvcount` elements of `recvtype`
// (an allgather, an alltoall): none for an empty block.
std::optional<coll::tma::Args> block_args(Kind kind, const void* sendbuf, MPI_Datatype sendtype,
                                          void* recvbuf, int recvcount, MPI_Datatype recvtype) {
  const uint64_t block = static_cast<uint64_t>(recvcount > 0 ? recvcount : 0) * type_size(recvtype);
  if (block == 0) return std::nullopt;
  coll::tma::Args a;
  a.call.kind = kind;
  a.call.count = block;
  a.in_place = sendbuf == MPI_IN_PLACE;
  a.in = sendbuf;
  a.out = recvbuf;
  a.can = (a.in_place || contiguous(sendtype)) && contiguous(recvtype);
  return a;
}

using platform::Scratch;

// Whether every rank of `comm` says yes (one small allreduce; no where it fails).
bool every_rank(bool mine, MPI_Comm comm) {
  int in = mine ? 1 : 0, all = 0;
  return PMPI_Allreduce(&in, &all, 1, MPI_INT, MPI_MIN, comm) == MPI_SUCCESS && all == 1;
}

// Copies `bytes` between any two buffers, host or device.
Status copy_any(void* dst, const void* src, uint64_t bytes) {
  const bool dd = platform::is_device_pointer(dst), sd = platform::is_device_pointer(src);
  if (dd && sd) return platform::copy_device_to_device(dst, src, bytes);
  if (dd) return platform::copy_to_device(dst, src, bytes);
  if (sd) return platform::copy_to_host(dst, src, bytes);
  std::memmove(dst, src, bytes);
  return Status::kOk;
}

// Whether the two-shot route `r` is one between nodes (every rank its own node under
// MPIZIP_FORCE_INTERNODE), where compression pays.
bool between_nodes(const Route& r) {
  return !r.context->nodes.one_node() || comm_settings(r.state).force_internode;
}

// Runs the two-shot in `shape` and reports it as `what`.
int run_twoshot(const Route& r, const void* in, void* out, int count, MPI_Comm comm,
                coll::AllreduceArgs::Shape shape, int root, const char* what) {
  std::unique_ptr<platform::Operation> o;
  Status s = start_twoshot(r, in, out, count, comm, &o, shape, root);
  if (ok(s)) s = drive(*o);
  return raise(comm, s, what);
}

// ---- Hierarchical collectives (coll/hierarchical.h) --------------------------------------------

// MPIZIP_HIERARCHICAL's choices, in settings.def's order.
enum HierarchicalSetting { kHierarchicalAuto = 0, kHierarchicalOff = 1 };

// Collective over the communicator of context `c` (state `s`): where its ranks sit (one gather of
// each rank's node, named by its lowest rank) and, where it is N >= 2 nodes of G >= 2 ranks each,
// the node and cross sub-communicators, split from the collectives' duplicate, with MPIZip's
// protocol set up on them and the communicator's hints. Every rank gets the same outcome.
std::unique_ptr<Hierarchy> make_hierarchy(CommState& s, CommContext& c) {
  auto h = std::make_unique<Hierarchy>();
  const transport::NodeMap& m = c.nodes;
  const int P = m.size;
  int leader = m.rank;
  for (int p = 0; p < P; ++p) {
    if (m.same_host[p]) {
      leader = p;
      break;
    }
  }
  std::vector<int> leaders(static_cast<size_t>(P));
  if (PMPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, c.coll_comm) != MPI_SUCCESS)
    return h;
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const int N = static_cast<int>(distinct.size());
  if (N < 2 || P % N != 0 || P / N < 2) return h;
  const int G = P / N;
  h->node_of.assign(static_cast<size_t>(P), 0);
  h->local_of.assign(static_cast<size_t>(P), 0);
  std::vector<int> seen(static_cast<size_t>(N), 0);
  for (int p = 0; p < P; ++p) {
    const int k = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), leaders[p]) -
                                   distinct.begin());
    h->node_of[p] = k;
    h->local_of[p] = seen[k]++;
  }
  for (int k = 0; k < N; ++k) {
    if (seen[k] != G) return h;  // nodes of different sizes: the flat algorithms
  }
  h->nodes = N;
  h->per_node = G;
  h->node = h->node_of[m.rank];
  h->local = h->local_of[m.rank];
  bool ready =
      PMPI_Comm_split(c.coll_comm, h->node, h->local, &h->node_comm) == MPI_SUCCESS &&
      PMPI_Comm_split(c.coll_comm, h->local, h->node, &h->cross_comm) == MPI_SUCCESS;
  for (MPI_Comm sub : {h->node_comm, h->cross_comm}) {
    if (!ready) break;
    PMPI_Comm_set_name(sub, sub == h->node_comm ? "MPIZip node" : "MPIZip cross");
    CommState* ss = comm_state(sub);
    if (ss == nullptr) {
      ready = false;
      break;
    }
    comm_hints_inherit(s, ss);
    ready = protocol_attach(sub) == MPI_SUCCESS && ss->protocol.load() && ss->context &&
            ss->context->coll_transport;
  }
  // Each sub-communicator's setup agrees within it; the whole communicator agrees here.
  h->usable = every_rank(ready, c.coll_comm);
  if (!h->usable) {
    MPIZIP_INFO("hierarchical collectives: the sub-communicators of %d nodes of %d ranks could not "
                "be set up; the flat algorithms run", N, G);
  } else {
    MPIZIP_INFO("hierarchical collectives: %d nodes of %d ranks", N, G);
  }
  return h;
}

// The hierarchy of the two-shot route `r` where the hierarchical collectives take its calls
// (MPIZIP_HIERARCHICAL, several ranks on each of several nodes), set up by the first call that
// asks (collective: every rank asks from the same facts); null otherwise.
Hierarchy* hierarchy_of(const Route& r) {
  const Settings& st = comm_settings(r.state);
  if (st.hierarchical == kHierarchicalOff || st.force_internode || r.context->nodes.one_node())
    return nullptr;
  CommContext& c = *r.context;
  if (!c.hierarchy) c.hierarchy = make_hierarchy(*r.state, c);
  return c.hierarchy->usable ? c.hierarchy.get() : nullptr;
}

// The stages of a hierarchical collective on `h`'s sub-communicators, with MPIZip's own engines:
// intra-node, the TMA engine where it takes the call, else the two-shot's engine (whose pieces
// travel raw within a node); between nodes, the two-shot's engine. Both fold in rank order with
// kernels/reduce.h's arithmetic, so a node's result is the same bits whichever ran it.
class SubStages : public coll::hier::Stages {
 public:
  SubStages(const Hierarchy& h, MPI_Comm whole, MPI_Datatype type, MPI_Op op, uint32_t elem)
      : h_(h), whole_(whole), type_(type), op_(op), elem_(elem) {}

  Status node_reduce_scatter(const void* in, void* out, uint64_t count) override {
    // The engine's reduce-scatter writes each rank's block where MPI puts it; in place, MPI's
    // block would be at the start of the buffer, so in place the two-shot's engine runs it.
    if (in != out && count <= INT_MAX) {
      const int G = h_.per_node;
      uint64_t counts[coll::tma::kMaxRanks] = {};
      uint64_t mine = 0;
      if (G <= coll::tma::kMaxRanks) {
        for (int q = 0; q < G; ++q) {
          uint64_t b = 0;
          coll::hier::shard_of(count, elem_, G, q, &b, &counts[q]);
          if (q == h_.local) mine = b;
        }
        if (auto a = reduction_args(Kind::kReduceScatter, in,
                                    static_cast<uint8_t*>(out) + mine * elem_, 1, type_, op_)) {
          a->call.counts = counts;
          if (auto rc = on_engine(h_.node_comm, *a, "hierarchical reduce-scatter (intra-node)",
                                  a->type))
            return Status::mpi(*rc);
        }
      }
    }
    return twoshot(h_.node_comm, in, out, count, coll::AllreduceArgs::Shape::kReduceScatter, 0);
  }

  Status node_allgather(void* buf, uint64_t count) override {
    const int G = h_.per_node;
    if (G <= coll::tma::kMaxRanks) {
      uint64_t counts[coll::tma::kMaxRanks] = {}, displs[coll::tma::kMaxRanks] = {};
      for (int q = 0; q < G; ++q) {
        coll::hier::shard_of(count, elem_, G, q, &displs[q], &counts[q]);
        counts[q] *= elem_;
        displs[q] *= elem_;
      }
      coll::tma::Args a;
      a.call.kind = Kind::kAllgatherv;
      a.call.counts = counts;
      a.call.displs = displs;
      a.in_place = true;
      a.in = MPI_IN_PLACE;
      a.out = buf;
      if (auto rc = on_engine(h_.node_comm, a, "hierarchical allgather (intra-node)", std::nullopt))
        return Status::mpi(*rc);
    }
    return twoshot(h_.node_comm, buf, buf, count, coll::AllreduceArgs::Shape::kAllgather, 0);
  }

  Status node_bcast(void* buf, uint64_t count, int root) override {
    coll::tma::Args a;
    a.call.kind = Kind::kBcast;
    a.call.root = root;
    a.call.count = count * elem_;
    a.in = buf;
    a.out = buf;
    if (auto rc = on_engine(h_.node_comm, a, "hierarchical broadcast (intra-node)", std::nullopt))
      return Status::mpi(*rc);
    return twoshot(h_.node_comm, buf, buf, count, coll::AllreduceArgs::Shape::kBcast, root);
  }

  Status cross_allreduce(void* buf, uint64_t count) override {
    return twoshot(h_.cross_comm, buf, buf, count, coll::AllreduceArgs::Shape::kAllreduce, 0);
  }
  Status cross_reduce_scatter(void* buf, uint64_t count) override {
    return twoshot(h_.cross_comm, buf, buf, count, coll::AllreduceArgs::Shape::kReduceScatter, 0);
  }
  Status cross_allgather(void* buf, uint64_t count) override {
    return twoshot(h_.cross_comm, buf, buf, count, coll::AllreduceArgs::Shape::kAllgather, 0);
  }
  Status cross_bcast(void* buf, uint64_t count, int root) override {
    return twoshot(h_.cross_comm, buf, buf, count, coll::AllreduceArgs::Shape::kBcast, root);
  }

  Status agree(Status mine) override {
    int in = ok(mine) ? 1 : 0, all = 0;
    const int rc = PMPI_Allreduce(&in, &all, 1, MPI_INT, MPI_MIN, whole_);
    if (!ok(mine)) return mine;
    if (rc != MPI_SUCCESS) return Status::mpi(rc);
    return all == 1 ? Status::kOk : Status::kPeerFailed;
  }

 private:
  // The two-shot's engine on a sub-communicator, at every size.
  Status twoshot(MPI_Comm sub, const void* in, void* out, uint64_t count,
                 coll::AllreduceArgs::Shape shape, int root) {
    if (count > INT_MAX) return Status::kUnsupported;
    auto r = engine_route(type_, op_, sub);
    if (!r) return Status::kInternal;  // make_hierarchy found the engine on both
    std::unique_ptr<platform::Operation> o;
    Status s = start_twoshot(*r, in, out, static_cast<int>(count), sub, &o, shape, root);
    if (ok(s)) s = drive(*o);
    return s;
  }

  const Hierarchy& h_;
  MPI_Comm whole_;  // the communicator's private duplicate, for the agreements
  MPI_Datatype type_;
  MPI_Op op_;
  uint32_t elem_;
};

// Whether every rank passed the same (count, element type, op, root): one small allreduce on the
// communicator's private duplicate. Where they differ, the class MPI gives the mismatch (as the
// two-shot's hellos do), on every rank.
Status same_call(MPI_Comm whole, uint64_t count, const Route& r, int root) {
  const int64_t v[4] = {static_cast<int64_t>(count), static_cast<int64_t>(r.dtype),
                        static_cast<int64_t>(r.op), root};
  int64_t in[8], out[8];
  for (int i = 0; i < 4; ++i) {
    in[2 * i] = v[i];
    in[2 * i + 1] = -v[i];
  }
  const int rc = PMPI_Allreduce(in, out, 8, MPI_INT64_T, MPI_MIN, whole);
  if (rc != MPI_SUCCESS) return Status::mpi(rc);
  const int classes[4] = {MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_OP, MPI_ERR_ROOT};
  for (int i = 0; i < 4; ++i) {
    if (out[2 * i] != -out[2 * i + 1]) return Status::mpi(classes[i]);
  }
  return Status::kOk;
}

// Runs a hierarchical collective where the two-shot route `r` takes the call and the
// communicator has a hierarchy: the call's arguments agreed first, then `run` with the stages.
// None where the hierarchy does not apply (the flat algorithms then run).
std::optional<int> run_hierarchical(
    const Route& r, MPI_Comm comm, MPI_Datatype type, MPI_Op op, uint64_t count, int root,
    const char* what,
    const std::function<Status(coll::hier::Stages&, const coll::hier::Layout&, uint32_t)>& run) {
  Hierarchy* h = hierarchy_of(r);
  if (h == nullptr) return std::nullopt;
  const uint32_t elem = static_cast<uint32_t>(format::elem_bytes(r.dtype));
  coll::hier::Layout l;
  l.nodes = h->nodes;
  l.per_node = h->per_node;
  l.node = h->node;
  l.local = h->local;
  l.node_of = h->node_of.data();
  l.local_of = h->local_of.data();
  const MPI_Comm whole = r.context->coll_comm;
  Status s = same_call(whole, count, r, root);
  if (ok(s)) {
    SubStages stages(*h, whole, type, op, elem);
    s = run(stages, l, elem);
  }
  if (ok(s)) r.state->hierarchical_collectives.fetch_add(1, std::memory_order_relaxed);
  return raise(comm, s, what);
}

std::optional<int> allreduce_hierarchical(const Route& r, const void* sendbuf, void* recvbuf,
                                          int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return run_hierarchical(
      r, comm, type, op, static_cast<uint64_t>(count), 0, "MPI_Allreduce",
      [&](coll::hier::Stages& s, const coll::hier::Layout& l, uint32_t elem) {
        return coll::hier::allreduce(s, l, in, recvbuf, static_cast<uint64_t>(count), elem);
      });
}

// MPI_Reduce_scatter_block where the flat two-shot would take it (blocks of a multiple of 16
// bytes): the input's blocks reordered into scratch memory, then in stages.
std::optional<int> reduce_scatter_hierarchical(const Route& r, const void* sendbuf, void* recvbuf,
                                               int recvcount, MPI_Datatype type, MPI_Op op,
                                               MPI_Comm comm) {
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const bool device = platform::is_device_pointer(recvbuf);
  return run_hierarchical(
      r, comm, type, op, static_cast<uint64_t>(recvcount), 0, "MPI_Reduce_scatter_block",
      [&](coll::hier::Stages& s, const coll::hier::Layout& l, uint32_t elem) {
        return coll::hier::reduce_scatter_block(s, l, in, recvbuf,
                                                static_cast<uint64_t>(recvcount), elem, device);
      });
}

// MPI_Allgather where the flat two-shot would take it (blocks of a multiple of 16 bytes), in
// stages through scratch memory. A rank whose send datatype is not the contiguous run of the
// receive type's elements says so in the agreement of the call, and every rank then passes the
// call to the MPI library.
std::optional<int> allgather_hierarchical(const Route& r, const void* sendbuf, int sendcount,
                                          MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                          MPI_Datatype recvtype, MPI_Comm comm) {
  if (hierarchy_of(r) == nullptr) return std::nullopt;
  const uint64_t block = static_cast<uint64_t>(recvcount) * type_size(recvtype);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const bool can = in_place || (contiguous(sendtype) &&
                                static_cast<uint64_t>(sendcount) * type_size(sendtype) == block);
  if (!every_rank(can, r.context->coll_comm)) {
    return allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  const bool device = platform::is_device_pointer(recvbuf);
  return run_hierarchical(
      r, comm, recvtype, MPI_SUM, static_cast<uint64_t>(recvcount), 0, "MPI_Allgather",
      [&](coll::hier::Stages& s, const coll::hier::Layout& l, uint32_t elem) {
        return coll::hier::allgather(s, l, in_place ? nullptr : sendbuf, recvbuf,
                                     static_cast<uint64_t>(recvcount), elem, device);
      });
}

// MPI_Bcast where the flat two-shot would take it, in stages.
std::optional<int> bcast_hierarchical(const Route& r, void* buf, int count, MPI_Datatype type,
                                      int root, MPI_Comm comm) {
  return run_hierarchical(
      r, comm, type, MPI_SUM, static_cast<uint64_t>(count), root, "MPI_Bcast",
      [&](coll::hier::Stages& s, const coll::hier::Layout& l, uint32_t elem) {
        return coll::hier::bcast(s, l, buf, static_cast<uint64_t>(count), elem, root);
      });
}

// MPI_Reduce_scatter_block between nodes: the two-shot's reduce-scatter phase alone
// (AllreduceArgs::Shape::kReduceScatter), where the two-shot would take an allreduce of the whole
// input and each block is a multiple of 16 bytes (the engine's shards are then the blocks): the
// owner folds its block into scratch memory, from which it is copied to the output. Half the
// traffic of the allreduce and its copy. Every rank agrees first that its scratch memory was
// there (one small allreduce); none where the engine does not take the call.
// Where the engine takes a reduce-scatter-block of `recvcount` elements a rank between nodes: its
// route over the whole input (`total` elements), the rank count and the bytes of one block.
struct BlockRoute {
  Route r;
  int P = 0;
  uint64_t total = 0;
  uint64_t block = 0;
};
std::optional<BlockRoute> reduce_scatter_route(int recvcount, MPI_Datatype type, MPI_Op op,
                                               MPI_Comm comm, bool within_node = false) {
  if (comm == MPI_COMM_NULL || recvcount <= 0) return std::nullopt;
  const int P = comm_size(comm);
  const uint64_t total = static_cast<uint64_t>(recvcount) * static_cast<uint64_t>(P);
  if (P < 2 || total > INT_MAX) return std::nullopt;
  auto r = route(static_cast<int>(total), type, op, comm, within_node);
  if (!r || !(between_nodes(*r) || within_node)) return std::nullopt;
  const uint64_t block = static_cast<uint64_t>(recvcount) * format::elem_bytes(r->dtype);
  if (block % 16 != 0) return std::nullopt;
  return BlockRoute{std::move(*r), P, total, block};
}

std::optional<int> reduce_scatter_between_nodes(const void* sendbuf, void* recvbuf, int recvcount,
                                                MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  auto b = reduce_scatter_route(recvcount, type, op, comm);
  if (!b) return std::nullopt;
  if (auto rc = reduce_scatter_hierarchical(b->r, sendbuf, recvbuf, recvcount, type, op, comm))
    return rc;
  Scratch scratch;
  const bool have = ok(scratch.take(b->block * static_cast<uint64_t>(b->P),
                                    platform::is_device_pointer(recvbuf)));
  if (!every_rank(have, comm)) return std::nullopt;
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const int rc = run_twoshot(b->r, input, scratch.data, static_cast<int>(b->total), comm,
                             coll::AllreduceArgs::Shape::kReduceScatter, 0,
                             "MPI_Reduce_scatter_block");
  if (rc != MPI_SUCCESS) return rc;
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  const Status c = copy_any(recvbuf, scratch.data + static_cast<uint64_t>(me) * b->block, b->block);
  return ok(c) ? MPI_SUCCESS : raise(comm, c, "MPI_Reduce_scatter_block: its block's copy");
}

// MPI_Reduce between nodes: the reduce-scatter, then each owner's shard to the root alone
// (AllreduceArgs::Shape::kReduce), where the two-shot would take an allreduce of the same call; the
// other ranks fold their shards into scratch memory. Every rank agrees first that its scratch
// memory was there; none where the engine does not take the call.
std::optional<int> reduce_between_nodes(const void* sendbuf, void* recvbuf, int count,
                                        MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || count <= 0) return std::nullopt;
  auto r = route(count, type, op, comm);
  if (!r || !between_nodes(*r) || root < 0 || root >= r->state->size) return std::nullopt;
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  Scratch scratch;
  bool have = true;
  void* out = recvbuf;
  if (me != root) {
    have = ok(scratch.take(static_cast<uint64_t>(count) * format::elem_bytes(r->dtype),
                           platform::is_device_pointer(sendbuf)));
    out = scratch.data;
  }
  if (!every_rank(have, comm)) return std::nullopt;
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return run_twoshot(*r, input, out, count, comm, coll::AllreduceArgs::Shape::kReduce, root,
                     "MPI_Reduce");
}


// A non-blocking collective on the two-shot, with the scratch memory it ran into (if any) and the
// scratch memory its input was placed in (if any): the operation, then (on success) `bytes` from
// `from` in the scratch memory to `to`.
class WithScratch final : public platform::Operation {
 public:
  WithScratch(std::unique_ptr<platform::Operation> op, std::unique_ptr<Scratch> scratch, void* to,
              const void* from, uint64_t bytes, std::unique_ptr<Scratch> input)
      : op_(std::move(op)),
        scratch_(std::move(scratch)),
        input_(std::move(input)),
        to_(to),
        from_(from),
        bytes_(bytes) {}
  bool progress() override {
    if (!op_->progress()) return false;
    status_ = op_->status();
    if (ok(status_.error) && bytes_ > 0) {
      status_.error = copy_any(to_, from_, bytes_);
      bytes_ = 0;
    }
    return true;
  }

 private:
  std::unique_ptr<platform::Operation> op_;
  std::unique_ptr<Scratch> scratch_;
  std::unique_ptr<Scratch> input_;
  void* to_;
  const void* from_;
  uint64_t bytes_;
};

// Starts a non-blocking two-shot (MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather, MPI_Ialltoall,
// MPI_Ireduce, MPI_Ireduce_scatter_block)
// over `count` elements of `r` into scratch memory of `scratch_bytes` (output there; the caller's
// `out` gets `copy_bytes` from `copy_at` in it at the end), or straight into `out` when
// scratch_bytes is 0. A rank whose scratch memory is not there takes part failing
// (AllreduceArgs::local_error), so that the call ends with an error on every rank, as a
// non-blocking call may not wait for the agreement the blocking forms make; `local`, an error of
// this rank's found before the start, takes part failing the same way. `input`: scratch memory
// that `in` points into (an input placed there by the caller), kept until the operation ends.
// Where a non-blocking call's operation goes: the application's request, or (a call deferred
// within one node, coll_deferred.h) the deferred call, with the sequence number it took. Such a
// call's "between nodes" function then takes it within the node.
struct Sink {
  Sink(MPI_Request* r) : request(r) {}  // NOLINT: the common case
  Sink(std::unique_ptr<platform::Operation>* o, uint64_t s) : op(o), seq(s) {}
  bool within_node() const { return op != nullptr; }
  MPI_Request* request = nullptr;
  std::unique_ptr<platform::Operation>* op = nullptr;
  std::optional<uint64_t> seq;
};

int start_nonblocking(const Route& r, const void* in, void* out, int count, MPI_Comm comm,
                      coll::AllreduceArgs::Shape shape, int root, uint64_t scratch_bytes,
                      bool scratch_device, uint64_t copy_at, uint64_t copy_bytes, const char* what,
                      Sink sink, Status local = Status::kOk,
                      std::unique_ptr<Scratch> input = nullptr) {
  auto scratch = std::make_unique<Scratch>();
  if (scratch_bytes > 0 && ok(local)) {
    local = comm_settings(r.state).fault == kFaultScratch ? Status::kOutOfMemory  // MPIZIP_FAULT
                                                          : scratch->take(scratch_bytes, scratch_device);
    if (!ok(local)) MPIZIP_WARN("%s: no scratch memory here (%s)", what, status_string(local));
  }
  void* target = scratch_bytes > 0 ? static_cast<void*>(scratch->data) : out;
  std::unique_ptr<platform::Operation> o;
  int rc = report(start_twoshot(r, in, target, count, comm, &o, shape, root, local, sink.seq), what);
  if (rc != MPI_SUCCESS) return sink.op != nullptr ? rc : raise(comm, rc);
  const uint8_t* from = scratch->data != nullptr ? scratch->data + copy_at : nullptr;
  auto whole = std::make_unique<WithScratch>(std::move(o), std::move(scratch), out, from,
                                             from != nullptr ? copy_bytes : 0, std::move(input));
  if (sink.op != nullptr) {
    *sink.op = std::move(whole);
    if (stats_on()) r.state->nonblocking_collectives.fetch_add(1, std::memory_order_relaxed);
    return MPI_SUCCESS;
  }
  rc = request_start(std::move(whole), comm, sink.request);
  if (rc == MPI_SUCCESS && stats_on())
    r.state->nonblocking_collectives.fetch_add(1, std::memory_order_relaxed);
  return raise(comm, rc);
}

// MPI_Ireduce_scatter_block between nodes: as reduce_scatter_between_nodes (flat), non-blocking.
std::optional<int> ireduce_scatter_between_nodes(const void* sendbuf, void* recvbuf, int recvcount,
                                                 MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                                 Sink request) {
  auto b = reduce_scatter_route(recvcount, type, op, comm, request.within_node());
  if (!b) return std::nullopt;
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return start_nonblocking(b->r, input, recvbuf, static_cast<int>(b->total), comm,
                           coll::AllreduceArgs::Shape::kReduceScatter, 0,
                           b->block * static_cast<uint64_t>(b->P),
                           platform::is_device_pointer(recvbuf), static_cast<uint64_t>(me) * b->block,
                           b->block, "MPI_Ireduce_scatter_block", request);
}

// MPI_Ireduce between nodes: as reduce_between_nodes, non-blocking.
std::optional<int> ireduce_between_nodes(const void* sendbuf, void* recvbuf, int count,
                                         MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                                         Sink request) {
  if (comm == MPI_COMM_NULL || count <= 0) return std::nullopt;
  const bool within_node = request.within_node();
  auto r = route(count, type, op, comm, within_node);
  if (!r || !(between_nodes(*r) || within_node) || root < 0 || root >= r->state->size)
    return std::nullopt;
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const uint64_t scratch = me == root ? 0 : static_cast<uint64_t>(count) * format::elem_bytes(r->dtype);
  return start_nonblocking(*r, input, recvbuf, count, comm, coll::AllreduceArgs::Shape::kReduce,
                           root, scratch, platform::is_device_pointer(sendbuf), 0, 0, "MPI_Ireduce",
                           request);
}

// A rank's own block of an allgather between nodes into its place in the output: copied where the
// send datatype is the contiguous run of the block's bytes, else packed (MPI_Pack's order is the
// signature's, the bytes MPI's allgather delivers; a device buffer through a host copy of its
// span). A send of another size than the block is MPI_ERR_TRUNCATE, as the MPI library's
// allgather reports it.
Status place_own_block(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* mine,
                       uint64_t block, MPI_Comm comm) {
  const uint64_t size = type_size(sendtype);
  if (sendcount < 0 || static_cast<uint64_t>(sendcount) * size != block) {
    return Status::mpi(MPI_ERR_TRUNCATE);
  }
  if (contiguous(sendtype)) return copy_any(mine, sendbuf, block);
  p2p::Layout l;
  l.buf = const_cast<void*>(sendbuf);
  l.count = sendcount;
  l.type = sendtype;
  l.comm = comm;
  l.device = platform::is_device_pointer(sendbuf);
  l.elems = size;
  l.elem_bytes = 1;
  platform::HostBuffer packed;
  MPIZIP_CHECK(p2p::pack(l, &packed));
  return copy_any(mine, packed.data(), block);
}

// MPI_Iallgather between nodes: the two-shot's all-gather phase as MPIZip's operation (the flat
// form), where allgather_between_nodes would take the call. Decided from the receive arguments
// alone, which every rank shares, so no agreement round: a rank's own block goes into the output
// first whatever its send datatype (place_own_block), and a rank whose block could not be placed
// takes part failing, so that the call ends with an error on every rank.
std::optional<int> iallgather_between_nodes(const void* sendbuf, int sendcount,
                                            MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                            MPI_Datatype recvtype, MPI_Comm comm,
                                            Sink request) {
  if (comm == MPI_COMM_NULL || recvcount <= 0) return std::nullopt;
  const int P = comm_size(comm);
  const uint64_t block = static_cast<uint64_t>(recvcount) * type_size(recvtype);
  const uint64_t total = static_cast<uint64_t>(recvcount) * static_cast<uint64_t>(P);
  if (P < 2 || block % 16 != 0 || total > INT_MAX) return std::nullopt;
  const bool within_node = request.within_node();
  auto r = route(static_cast<int>(total), recvtype, MPI_SUM, comm, within_node);
  if (!r || !(between_nodes(*r) || within_node)) return std::nullopt;
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  Status local = Status::kOk;
  if (sendbuf != MPI_IN_PLACE) {
    char* mine = static_cast<char*>(recvbuf) + static_cast<uint64_t>(me) * block;
    local = place_own_block(sendbuf, sendcount, sendtype, mine, block, comm);
    if (!ok(local)) MPIZIP_WARN("MPI_Iallgather: this rank's block not placed (%s)", status_string(local));
  }
  return start_nonblocking(*r, recvbuf, recvbuf, static_cast<int>(total), comm,
                           coll::AllreduceArgs::Shape::kAllgather, 0, 0, false, 0, 0,
                           "MPI_Iallgather", request, local);
}

// The shape of an alltoall between nodes where the two-shot's engine takes it (its route, the
// block's and the whole buffer's bytes), else none: the two-shot would take an allreduce of the
// whole output, and each block is a multiple of 16 bytes (so that the engine's shards are the
// blocks).
struct AlltoallRoute {
  Route r;
  int P = 0;
  uint64_t total = 0;  // elements of the output
  uint64_t block = 0;  // bytes of one block
};
std::optional<AlltoallRoute> alltoall_route(int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                            bool within_node = false) {
  if (comm == MPI_COMM_NULL || recvcount <= 0) return std::nullopt;
  const int P = comm_size(comm);
  const uint64_t block = static_cast<uint64_t>(recvcount) * type_size(recvtype);
  const uint64_t total = static_cast<uint64_t>(recvcount) * static_cast<uint64_t>(P);
  if (P < 2 || block % 16 != 0 || total > INT_MAX) return std::nullopt;
  auto r = route(static_cast<int>(total), recvtype, MPI_SUM, comm, within_node);
  if (!r || !(between_nodes(*r) || within_node)) return std::nullopt;
  return AlltoallRoute{std::move(*r), P, total, block};
}

// An alltoall's input as the engine needs it: a buffer of its own in the output's memory, the
// blocks back to back. The send buffer itself where it is that; else (MPI_IN_PLACE, a
// non-contiguous send datatype, a send buffer in the other memory) a copy, packed, in `scratch`.
// A send of another size than the receive is MPI_ERR_TRUNCATE.
Status place_alltoall_input(const AlltoallRoute& a, const void* sendbuf, int sendcount,
                            MPI_Datatype sendtype, void* recvbuf, MPI_Comm comm, Scratch* scratch,
                            const void** input) {
  const uint64_t bytes = a.block * static_cast<uint64_t>(a.P);
  const bool device = platform::is_device_pointer(recvbuf);
  *input = sendbuf;
  if (sendbuf == MPI_IN_PLACE) {
    MPIZIP_CHECK(scratch->take(bytes, device));
    *input = scratch->data;
    return copy_any(scratch->data, recvbuf, bytes);
  }
  if (static_cast<uint64_t>(sendcount) * type_size(sendtype) != a.block ||
      static_cast<uint64_t>(sendcount) * static_cast<uint64_t>(a.P) > INT_MAX) {
    return Status::mpi(MPI_ERR_TRUNCATE);
  }
  if (contiguous(sendtype) && platform::is_device_pointer(sendbuf) == device) return Status::kOk;
  MPIZIP_CHECK(scratch->take(bytes, device));
  *input = scratch->data;
  return place_own_block(sendbuf, sendcount * a.P, sendtype, scratch->data, bytes, comm);
}

// MPI_Alltoall across nodes: the two-shot's reduce-scatter phase with each contribution placed
// instead of folded (AllreduceArgs::Shape::kAlltoall), each block crossing to its rank once,
// compressed, where alltoall_route() takes the call. A rank whose input could not be placed says
// so in one small allreduce, and every rank then passes the call on.
std::optional<int> alltoall_between_nodes(const void* sendbuf, int sendcount,
                                          MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                          MPI_Datatype recvtype, MPI_Comm comm) {
  auto a = alltoall_route(recvcount, recvtype, comm);
  if (!a) return std::nullopt;
  Scratch scratch;
  const void* input = nullptr;
  const Status s =
      place_alltoall_input(*a, sendbuf, sendcount, sendtype, recvbuf, comm, &scratch, &input);
  if (!ok(s)) {
    MPIZIP_INFO("MPI_Alltoall: this rank's input could not be placed (%s); the MPI library's "
                "alltoall runs instead", status_string(s));
  }
  if (!every_rank(ok(s), comm)) return std::nullopt;
  return run_twoshot(a->r, input, recvbuf, static_cast<int>(a->total), comm,
                     coll::AllreduceArgs::Shape::kAlltoall, 0, "MPI_Alltoall");
}

// MPI_Ialltoall across nodes: the same as MPIZip's own operation (the flat form), decided from the
// receive arguments alone, without the agreement round: a rank whose input could not be placed
// takes part failing, so that the call ends with an error on every rank.
std::optional<int> ialltoall_between_nodes(const void* sendbuf, int sendcount,
                                           MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                           MPI_Datatype recvtype, MPI_Comm comm,
                                           Sink request) {
  auto a = alltoall_route(recvcount, recvtype, comm, request.within_node());
  if (!a) return std::nullopt;
  auto scratch = std::make_unique<Scratch>();
  const void* input = nullptr;
  const Status local =
      place_alltoall_input(*a, sendbuf, sendcount, sendtype, recvbuf, comm, scratch.get(), &input);
  if (!ok(local)) {
    MPIZIP_WARN("MPI_Ialltoall: this rank's input could not be placed (%s)", status_string(local));
    input = recvbuf;  // (touched by no one: the rank takes part failing)
  }
  return start_nonblocking(a->r, input, recvbuf, static_cast<int>(a->total), comm,
                           coll::AllreduceArgs::Shape::kAlltoall, 0, 0, false, 0, 0,
                           "MPI_Ialltoall", request, local, std::move(scratch));
}

// A non-blocking call within one node that the two-shot's engine would take there (`takes`, from
// what every rank shares) but none took as the call was made: deferred (coll_deferred.h), this
// rank saying whether `buffers` suit; then `fast` (the call's "between nodes" function, which
// takes it within the node through the sink) where every rank said yes, else `library` (the MPI
// library's non-blocking call, device buffers staged) on the deferred calls' duplicate. None where
// the call is not deferred.
using FastStart = std::function<std::optional<int>(Sink)>;
using LibraryStart = std::function<Status(MPI_Comm, std::unique_ptr<platform::Operation>*)>;
std::optional<int> defer_within_node(MPI_Comm comm, bool takes,
                                     std::initializer_list<const void*> buffers, FastStart fast,
                                     LibraryStart library, const char* what, MPI_Request* request) {
  CommContext* c = takes ? deferring_context(comm) : nullptr;
  if (c == nullptr) return std::nullopt;
  DeferredStarter start = [fast = std::move(fast), library = std::move(library)](
                              const DeferredStart& how, std::unique_ptr<platform::Operation>* op) {
    if (!how.all) return library(how.library, op);
    const std::optional<int> rc = fast(Sink(op, how.seq));
    if (!rc) return Status(Status::kInternal);  // the route is the call's facts: it cannot change
    return *rc == MPI_SUCCESS ? Status(Status::kOk) : Status::mpi(*rc);
  };
  return defer(comm, *c, buffers_suit_node(comm, buffers), true, std::move(start), what, request);
}

// Whether the two-shot's all-gather phase would take an allgather of `recvcount` x `recvtype` a
// rank within one node (iallgather_between_nodes's conditions, every rank's alike).
bool allgather_takes_within_node(int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || recvcount <= 0) return false;
  const int P = comm_size(comm);
  const uint64_t block = static_cast<uint64_t>(recvcount) * type_size(recvtype);
  const uint64_t total = static_cast<uint64_t>(recvcount) * static_cast<uint64_t>(P);
  return P >= 2 && block % 16 == 0 && total <= INT_MAX &&
         route(static_cast<int>(total), recvtype, MPI_SUM, comm, true).has_value();
}

}  // namespace

int routed_iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (!small_passes_on(bytes_of_call(recvcount, recvtype) * static_cast<uint64_t>(comm_size(comm)),
                       recvtype, comm)) {
    if (auto rc = iallgather_between_nodes(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, comm, request))
      return *rc;
    auto kept = std::make_shared<KeptType>(sendtype);
    if (auto rc = defer_within_node(
            comm, allgather_takes_within_node(recvcount, recvtype, comm), {sendbuf, recvbuf},
            [=](Sink sink) {
              return iallgather_between_nodes(sendbuf, sendcount, kept->get(), recvbuf, recvcount,
                                              recvtype, comm, sink);
            },
            [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op) {
              return iallgather.operation_on(on, op, sendbuf, sendcount, kept->get(), recvbuf,
                                             recvcount, recvtype, comm);
            },
            "MPI_Iallgather", request))
      return *rc;
  }
  return iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

int routed_ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  if (!small_passes_on(bytes_of_call(recvcount, recvtype) * static_cast<uint64_t>(comm_size(comm)),
                       recvtype, comm)) {
    if (auto rc = ialltoall_between_nodes(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm, request))
      return *rc;
    auto kept = std::make_shared<KeptType>(sendtype);
    if (auto rc = defer_within_node(
            comm, alltoall_route(recvcount, recvtype, comm, true).has_value(), {sendbuf, recvbuf},
            [=](Sink sink) {
              return ialltoall_between_nodes(sendbuf, sendcount, kept->get(), recvbuf, recvcount,
                                             recvtype, comm, sink);
            },
            [=](MPI_Comm on, std::unique_ptr<platform::Operation>* op) {
              return ialltoall.operation_on(on, op, sendbuf, sendcount, kept->get(), recvbuf,
                                            recvcount, recvtype, comm);
            },
            "MPI_Ialltoall", request))
      return *rc;
  }
  return ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

int routed_ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                 MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                 MPI_Request* request) {
  if (!small_passes_on(bytes_of_call(recvcount, type) * static_cast<uint64_t>(comm_size(comm)),
                       type, comm)) {
    if (auto rc = ireduce_scatter_between_nodes(sendbuf, recvbuf, recvcount, type, op, comm, request))
      return *rc;
    if (auto rc = defer_within_node(
            comm, reduce_scatter_route(recvcount, type, op, comm, true).has_value(),
            {sendbuf, recvbuf},
            [=](Sink sink) {
              return ireduce_scatter_between_nodes(sendbuf, recvbuf, recvcount, type, op, comm, sink);
            },
            [=](MPI_Comm on, std::unique_ptr<platform::Operation>* o) {
              return ireduce_scatter_block.operation_on(on, o, sendbuf, recvbuf, recvcount, type, op,
                                                        comm);
            },
            "MPI_Ireduce_scatter_block", request))
      return *rc;
  }
  return ireduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm, request);
}

int routed_ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                           MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  // Equal counts (the same array on every rank, as MPI requires) between nodes: the non-blocking
  // reduce-scatter-block's engine.
  const int P = comm != MPI_COMM_NULL ? comm_size(comm) : 0;
  if (recvcounts != nullptr && P > 0 && recvcounts[0] > 0 &&
      !small_passes_on(bytes_of_call(recvcounts[0], type) * static_cast<uint64_t>(P), type, comm)) {
    bool equal = true;
    for (int q = 1; q < P; ++q) equal = equal && recvcounts[q] == recvcounts[0];
    if (equal) {
      if (auto rc = ireduce_scatter_between_nodes(sendbuf, recvbuf, recvcounts[0], type, op, comm,
                                                  request))
        return *rc;
      const int recvcount = recvcounts[0];
      if (auto rc = defer_within_node(
              comm, reduce_scatter_route(recvcount, type, op, comm, true).has_value(),
              {sendbuf, recvbuf},
              [=](Sink sink) {
                return ireduce_scatter_between_nodes(sendbuf, recvbuf, recvcount, type, op, comm,
                                                     sink);
              },
              [=](MPI_Comm on, std::unique_ptr<platform::Operation>* o) {
                return ireduce_scatter.operation_on(on, o, sendbuf, recvbuf, recvcounts, type, op,
                                                    comm);
              },
              "MPI_Ireduce_scatter", request))
        return *rc;
    }
  }
  return ireduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm, request);
}

int routed_ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   int root, MPI_Comm comm, MPI_Request* request) {
  if (!small_passes_on(bytes_of_call(count, type), type, comm)) {
    if (auto rc = ireduce_between_nodes(sendbuf, recvbuf, count, type, op, root, comm, request))
      return *rc;
    const auto r = count > 0 ? route(count, type, op, comm, true) : std::nullopt;
    int me = -1;
    if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &me);
    if (auto rc = defer_within_node(
            comm, r && root >= 0 && root < r->state->size,
            {sendbuf, me == root ? recvbuf : nullptr},
            [=](Sink sink) {
              return ireduce_between_nodes(sendbuf, recvbuf, count, type, op, root, comm, sink);
            },
            [=](MPI_Comm on, std::unique_ptr<platform::Operation>* o) {
              return ireduce.operation_on(on, o, sendbuf, recvbuf, count, type, op, root, comm);
            },
            "MPI_Ireduce", request))
      return *rc;
  }
  return ireduce(sendbuf, recvbuf, count, type, op, root, comm, request);
}

int routed_reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (small_passes_on(bytes_of_call(recvcount, type) * static_cast<uint64_t>(comm_size(comm)), type,
                      comm))
    return reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  if (auto a = reduction_args(Kind::kReduceScatterBlock, sendbuf, recvbuf, recvcount, type, op)) {
    if (auto rc = on_engine(comm, *a, "MPI_Reduce_scatter_block (intra-node)", a->type)) return *rc;
  }
  if (auto rc = reduce_scatter_between_nodes(sendbuf, recvbuf, recvcount, type, op, comm))
    return *rc;
  bool handled = false;
  int rc = narrow_reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm, &handled);
  if (handled) return rc;
  return reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
}

int routed_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  int root, MPI_Comm comm) {
  if (small_passes_on(bytes_of_call(count, type), type, comm))
    return reduce(sendbuf, recvbuf, count, type, op, root, comm);
  if (auto a = reduction_args(Kind::kReduce, sendbuf, recvbuf, count, type, op)) {
    a->call.root = root;
    if (auto rc = on_engine(comm, *a, "MPI_Reduce (intra-node)", a->type)) return *rc;
  }
  if (auto rc = reduce_between_nodes(sendbuf, recvbuf, count, type, op, root, comm)) return *rc;
  return reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

namespace {

// MPI_Scan and MPI_Exscan (`exclusive`) between nodes: the two-shot's prefix shape
// (AllreduceArgs::Shape::kScan, kExscan), where the engine would take an allreduce of the same
// call; blocking where `request` is null, else non-blocking (within one node too, where deferred).
std::optional<int> scan_between_nodes(bool exclusive, const void* sendbuf, void* recvbuf, int count,
                                      MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                                      std::optional<Sink> request) {
  if (comm == MPI_COMM_NULL || count <= 0) return std::nullopt;
  const bool within_node = request && request->within_node();
  auto r = route(count, type, op, comm, within_node);
  if (!r || !(between_nodes(*r) || within_node)) return std::nullopt;
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const auto shape = exclusive ? coll::AllreduceArgs::Shape::kExscan : coll::AllreduceArgs::Shape::kScan;
  if (!request) return run_twoshot(*r, input, recvbuf, count, comm, shape, 0, exclusive ? "MPI_Exscan" : "MPI_Scan");
  return start_nonblocking(*r, input, recvbuf, count, comm, shape, 0, 0, false, 0, 0,
                           exclusive ? "MPI_Iexscan" : "MPI_Iscan", *request);
}

// The blocking forms: the intra-node engine, else the two-shot between nodes, else `library`
// (the MPI library's call, device buffers staged).
template <typename Library>
int route_scan(bool exclusive, const Library& library, const void* sendbuf, void* recvbuf,
               int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (small_passes_on(bytes_of_call(count, type), type, comm))
    return library(sendbuf, recvbuf, count, type, op, comm);
  if (auto a = reduction_args(exclusive ? Kind::kExscan : Kind::kScan, sendbuf, recvbuf, count,
                              type, op)) {
    if (auto rc = on_engine(comm, *a, exclusive ? "MPI_Exscan (intra-node)" : "MPI_Scan (intra-node)",
                            a->type))
      return *rc;
  }
  if (auto rc = scan_between_nodes(exclusive, sendbuf, recvbuf, count, type, op, comm, std::nullopt))
    return *rc;
  return library(sendbuf, recvbuf, count, type, op, comm);
}

// The non-blocking forms: the two-shot between nodes, or deferred within one node, else `library`.
template <typename Library>
int route_iscan(bool exclusive, const Library& library, const void* sendbuf, void* recvbuf,
                int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  if (!small_passes_on(bytes_of_call(count, type), type, comm)) {
    if (auto rc = scan_between_nodes(exclusive, sendbuf, recvbuf, count, type, op, comm, Sink(request)))
      return *rc;
    const auto r = count > 0 ? route(count, type, op, comm, true) : std::nullopt;
    if (auto rc = defer_within_node(
            comm, r.has_value(), {sendbuf, recvbuf},
            [=](Sink sink) {
              return scan_between_nodes(exclusive, sendbuf, recvbuf, count, type, op, comm, sink);
            },
            [=, &library](MPI_Comm on, std::unique_ptr<platform::Operation>* o) {
              return library.operation_on(on, o, sendbuf, recvbuf, count, type, op, comm);
            },
            exclusive ? "MPI_Iexscan" : "MPI_Iscan", request))
      return *rc;
  }
  return library(sendbuf, recvbuf, count, type, op, comm, request);
}

}  // namespace

int routed_scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                MPI_Comm comm) {
  return route_scan(false, scan, sendbuf, recvbuf, count, type, op, comm);
}

int routed_exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  return route_scan(true, exscan, sendbuf, recvbuf, count, type, op, comm);
}

int routed_iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                 MPI_Comm comm, MPI_Request* request) {
  return route_iscan(false, iscan, sendbuf, recvbuf, count, type, op, comm, request);
}

int routed_iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  return route_iscan(true, iexscan, sendbuf, recvbuf, count, type, op, comm, request);
}

int routed_reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                          MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const int P = comm != MPI_COMM_NULL ? comm_size(comm) : 0;
  if (recvcounts != nullptr && P > 0 && P <= coll::tma::kMaxRanks) {
    uint64_t counts[coll::tma::kMaxRanks] = {};
    bool valid = true;
    for (int q = 0; q < P; ++q) {
      valid = valid && recvcounts[q] >= 0;
      counts[q] = static_cast<uint64_t>(recvcounts[q] > 0 ? recvcounts[q] : 0);
    }
    if (auto a = reduction_args(Kind::kReduceScatter, sendbuf, recvbuf, 1, type, op); a && valid) {
      a->call.counts = counts;
      if (auto rc = on_engine(comm, *a, "MPI_Reduce_scatter (intra-node)", a->type)) return *rc;
    }
  }
  // Equal counts (the same array on every rank, as MPI requires) between nodes: the
  // reduce-scatter-block's engines, flat or in stages.
  if (recvcounts != nullptr && P > 0 && recvcounts[0] > 0) {
    bool equal = true;
    for (int q = 1; q < P; ++q) equal = equal && recvcounts[q] == recvcounts[0];
    if (equal) {
      if (auto rc = reduce_scatter_between_nodes(sendbuf, recvbuf, recvcounts[0], type, op, comm))
        return *rc;
    }
  }
  return reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
}

int routed_bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (small_passes_on(bytes_of_call(count, type), type, comm))
    return bcast(buf, count, type, root, comm);
  if (count > 0) {
    coll::tma::Args a;
    a.call.kind = Kind::kBcast;
    a.call.root = root;
    a.call.count = static_cast<uint64_t>(count) * type_size(type);
    a.in = buf;
    a.out = buf;
    a.can = contiguous(type);
    if (auto rc = on_engine(comm, a, "MPI_Bcast (intra-node)", std::nullopt)) return *rc;
  }
  // Across nodes: the two-shot's scatter-allgather broadcast, float types compressed on the wire,
  // where the two-shot would take an allreduce of the same count and type (route(), from what
  // every rank shares).
  if (count > 0 && comm != MPI_COMM_NULL) {
    auto r = route(count, type, MPI_SUM, comm);
    if (r && root >= 0 && root < r->state->size && between_nodes(*r)) {
      if (auto rc = bcast_hierarchical(*r, buf, count, type, root, comm)) return *rc;
      return run_twoshot(*r, buf, buf, count, comm, coll::AllreduceArgs::Shape::kBcast, root,
                         "MPI_Bcast");
    }
  }
  return bcast(buf, count, type, root, comm);
}

int routed_ibcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                  MPI_Request* request) {
  if (small_passes_on(bytes_of_call(count, type), type, comm))
    return ibcast(buf, count, type, root, comm, request);
  // The decision routed_bcast makes between nodes, from what every rank shares; no agreement
  // round (a non-blocking call waits for no other rank), and no scratch memory to agree on.
  if (count > 0 && comm != MPI_COMM_NULL) {
    auto r = route(count, type, MPI_SUM, comm);
    if (r && root >= 0 && root < r->state->size && between_nodes(*r)) {
      return start_nonblocking(*r, buf, buf, count, comm, coll::AllreduceArgs::Shape::kBcast, root,
                               0, false, 0, 0, "MPI_Ibcast", request);
    }
    // Within one node, deferred (coll_deferred.h).
    const auto w = route(count, type, MPI_SUM, comm, true);
    if (auto rc = defer_within_node(
            comm, w && root >= 0 && root < w->state->size && !between_nodes(*w), {buf},
            [=](Sink sink) -> std::optional<int> {
              auto again = route(count, type, MPI_SUM, comm, true);
              if (!again) return std::nullopt;
              return start_nonblocking(*again, buf, buf, count, comm,
                                       coll::AllreduceArgs::Shape::kBcast, root, 0, false, 0, 0,
                                       "MPI_Ibcast", sink);
            },
            [=](MPI_Comm on, std::unique_ptr<platform::Operation>* o) {
              return ibcast.operation_on(on, o, buf, count, type, root, comm);
            },
            "MPI_Ibcast", request))
      return *rc;
  }
  return ibcast(buf, count, type, root, comm, request);
}

int routed_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int me = -1;
  if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &me);
  const bool in_place = sendbuf == MPI_IN_PLACE;  // the root's only
  const uint64_t block = in_place ? static_cast<uint64_t>(recvcount) * type_size(recvtype)
                                  : static_cast<uint64_t>(sendcount) * type_size(sendtype);
  if (small_passes_on(block * static_cast<uint64_t>(comm_size(comm)), MPI_DATATYPE_NULL, comm))
    return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  if (block > 0 && (in_place ? recvcount : sendcount) > 0) {
    coll::tma::Args a;
    a.call.kind = Kind::kGather;
    a.call.root = root;
    a.call.count = block;
    a.in_place = in_place;
    a.in = sendbuf;
    a.out = recvbuf;
    a.can = (in_place || contiguous(sendtype)) && (me != root || contiguous(recvtype));
    if (auto rc = on_engine(comm, a, "MPI_Gather (intra-node)", std::nullopt)) return *rc;
  }
  if (auto rc = pairwise_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                comm, nullptr))
    return *rc;
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int routed_scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  int me = -1;
  if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &me);
  const bool at_root = me == root;
  const bool in_place = at_root && recvbuf == MPI_IN_PLACE;
  const uint64_t block = at_root ? static_cast<uint64_t>(sendcount) * type_size(sendtype)
                                 : static_cast<uint64_t>(recvcount) * type_size(recvtype);
  if (small_passes_on(block * static_cast<uint64_t>(comm_size(comm)), MPI_DATATYPE_NULL, comm))
    return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  if (block > 0 && (at_root ? sendcount : recvcount) > 0) {
    coll::tma::Args a;
    a.call.kind = Kind::kScatter;
    a.call.root = root;
    a.call.count = block;
    a.in_place = in_place;
    a.in = sendbuf;
    a.out = in_place ? nullptr : recvbuf;
    a.can = (!at_root || contiguous(sendtype)) && (in_place || contiguous(recvtype));
    if (auto rc = on_engine(comm, a, "MPI_Scatter (intra-node)", std::nullopt)) return *rc;
  }
  if (auto rc = pairwise_scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                 comm, nullptr))
    return *rc;
  return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int routed_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (small_passes_on(bytes_of_call(recvcount, recvtype) * static_cast<uint64_t>(comm_size(comm)),
                      recvtype, comm))
    return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  if (auto a = block_args(Kind::kAlltoall, sendbuf, sendtype, recvbuf, recvcount, recvtype)) {
    if (auto rc = on_engine(comm, *a, "MPI_Alltoall (intra-node)", std::nullopt)) return *rc;
  }
  if (auto rc = alltoall_between_nodes(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                       comm))
    return *rc;
  return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

// Across nodes: an allgather of a float type on the two-shot's engine (its all-gather phase alone,
// AllreduceArgs::Shape::kAllgather), where the two-shot would take an allreduce of the whole output
// and each rank's block is a multiple of 16 bytes (so that the engine's shards are the blocks). Each
// rank first puts its input into its block of the output; a rank whose send datatype is not the
// contiguous run of the receive type's elements says so in one small allreduce, and every rank then
// passes the call on. None where the engine does not take the call.
std::optional<int> allgather_between_nodes(const void* sendbuf, int sendcount,
                                           MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                           MPI_Datatype recvtype, MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || recvcount <= 0) return std::nullopt;
  const int P = comm_size(comm);
  const uint64_t block = static_cast<uint64_t>(recvcount) * type_size(recvtype);
  const uint64_t total = static_cast<uint64_t>(recvcount) * static_cast<uint64_t>(P);
  if (P < 2 || block % 16 != 0 || total > INT_MAX) return std::nullopt;
  auto r = route(static_cast<int>(total), recvtype, MPI_SUM, comm);
  if (!r || !between_nodes(*r)) return std::nullopt;
  if (auto rc = allgather_hierarchical(*r, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                       recvtype, comm))
    return rc;
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  char* mine = static_cast<char*>(recvbuf) + static_cast<uint64_t>(me) * block;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  bool can = in_place || (contiguous(sendtype) &&
                         static_cast<uint64_t>(sendcount) * type_size(sendtype) == block);
  if (can && !in_place) {
    // The input into its block of the output (which the MPI library's allgather writes the same
    // bytes into, should another rank pass the call on).
    const Status c = copy_any(mine, sendbuf, block);
    if (!ok(c)) {
      MPIZIP_INFO("MPI_Allgather: the input's copy into the output failed (%s); the MPI library's "
                  "allgather runs instead", status_string(c));
      can = false;
    }
  }
  if (!every_rank(can, comm)) return std::nullopt;
  return run_twoshot(*r, recvbuf, recvbuf, static_cast<int>(total), comm,
                     coll::AllreduceArgs::Shape::kAllgather, 0, "MPI_Allgather");
}

int routed_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  if (small_passes_on(bytes_of_call(recvcount, recvtype) * static_cast<uint64_t>(comm_size(comm)),
                      recvtype, comm))
    return allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  if (auto a = block_args(Kind::kAllgather, sendbuf, sendtype, recvbuf, recvcount, recvtype)) {
    if (auto rc = on_engine(comm, *a, "MPI_Allgather (intra-node)", std::nullopt)) return *rc;
  }
  if (auto rc = allgather_between_nodes(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                        comm))
    return *rc;
  return allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int routed_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                      MPI_Comm comm) {
  const int P = comm != MPI_COMM_NULL ? comm_size(comm) : 0;
  const uint64_t size = type_size(recvtype);
  MPI_Aint lb = 0, extent = 0;
  if (recvcounts != nullptr && displs != nullptr && P > 0 && P <= coll::tma::kMaxRanks &&
      size > 0 && PMPI_Type_get_extent(recvtype, &lb, &extent) == MPI_SUCCESS) {
    uint64_t counts[coll::tma::kMaxRanks] = {}, offsets[coll::tma::kMaxRanks] = {};
    bool valid = true;
    for (int q = 0; q < P; ++q) {
      valid = valid && recvcounts[q] >= 0 && displs[q] >= 0;
      counts[q] = valid ? static_cast<uint64_t>(recvcounts[q]) * size : 0;
      offsets[q] = valid ? static_cast<uint64_t>(displs[q]) * static_cast<uint64_t>(extent) : 0;
    }
    if (valid) {
      coll::tma::Args a;
      a.call.kind = Kind::kAllgatherv;
      a.call.counts = counts;
      a.call.displs = offsets;
      a.in_place = sendbuf == MPI_IN_PLACE;
      a.in = sendbuf;
      a.out = recvbuf;
      a.can = (a.in_place || contiguous(sendtype)) && contiguous(recvtype);
      if (auto rc = on_engine(comm, a, "MPI_Allgatherv (intra-node)", std::nullopt)) return *rc;
    }
  }
  if (auto rc = pairwise_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                    recvtype, comm, nullptr))
    return *rc;
  return allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

// The same buffer as input and output without MPI_IN_PLACE, which MPI calls erroneous: the MPI
// library's own call reports it (MPI_ERR_BUFFER from Open MPI and MPICH) before it reads either.
static bool aliased(const void* sendbuf, const void* recvbuf, int count) {
  return sendbuf == recvbuf && sendbuf != MPI_IN_PLACE && count > 0;
}

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm) {
  if (aliased(sendbuf, recvbuf, count)) {
    return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  }
  if (small_passes_on(bytes_of_call(count, type), type, comm))
    return staged_allreduce(sendbuf, recvbuf, count, type, op, comm);
  // Ranks of one node: the intra-node collectives, unless MPIZIP_ALLREDUCE (or the communicator's
  // mpizip_allreduce) asks for another.
  if (comm != MPI_COMM_NULL && comm_settings(comm_state_find(comm)).allreduce == kAllreduceAuto) {
    if (auto a = reduction_args(Kind::kAllreduce, sendbuf, recvbuf, count, type, op)) {
      if (auto rc = on_engine(comm, *a, "MPI_Allreduce (intra-node)", a->type)) return *rc;
    }
  }
  auto r = route(count, type, op, comm);
  // The MPI library's allreduce, device buffers staged through host memory.
  if (!r) return staged_allreduce(sendbuf, recvbuf, count, type, op, comm);
  // Several ranks on each of several nodes: in stages (coll/hierarchical.h).
  if (auto rc = allreduce_hierarchical(*r, sendbuf, recvbuf, count, type, op, comm)) return *rc;
  std::unique_ptr<platform::Operation> o;
  Status s = start_twoshot(*r, sendbuf, recvbuf, count, comm, &o);
  if (ok(s)) s = drive(*o);
  return raise(comm, s, "MPI_Allreduce");
}

static int narrow_reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                MPI_Datatype type, MPI_Op op, MPI_Comm comm, bool* handled) {
  *handled = false;
  const auto red = reduction_of(type, op);
  const auto t = red ? std::optional<kernels::reduce::Type>(red->type) : std::nullopt;
  if (!t || library_reduces(*t) || recvcount <= 0 ||
      comm == MPI_COMM_NULL) {
    return MPI_SUCCESS;
  }
  const int P = comm_size(comm);
  const int64_t total = static_cast<int64_t>(recvcount) * P;
  if (P < 1 || total > INT_MAX || !route(static_cast<int>(total), type, op, comm)) return MPI_SUCCESS;
  *handled = true;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  const uint64_t block = static_cast<uint64_t>(recvcount) * kernels::reduce::type_bytes(*t);
  const bool device = platform::is_device_pointer(recvbuf);
  platform::DeviceBuffer dscratch;
  platform::HostBuffer hscratch;
  const Status got = device ? dscratch.resize(block * static_cast<uint64_t>(P))
                            : hscratch.resize(block * static_cast<uint64_t>(P));
  if (got != Status::kOk) return raise(comm, got, "scratch of a narrow reduce-scatter");
  uint8_t* scratch = device ? dscratch.data() : hscratch.data();
  // MPI_IN_PLACE: the input is the receive buffer's recvcount x P elements.
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  int rc = allreduce(input, scratch, static_cast<int>(total), type, op, comm);
  if (rc != MPI_SUCCESS) return rc;  // raised by allreduce
  const uint8_t* mine = scratch + block * static_cast<uint64_t>(rank);
  if (device) {
    const Status copied = platform::copy_device_to_device(recvbuf, mine, block);
    if (copied != Status::kOk) return raise(comm, copied, "copy of a reduce-scatter's block");
  } else {
    std::memcpy(recvbuf, mine, block);
  }
  return MPI_SUCCESS;
}

int iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, MPI_Request* request) {
  if (aliased(sendbuf, recvbuf, count)) {
    return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
  }
  auto r = route(count, type, op, comm);
  if (!r) {
    // Within one node, deferred (coll_deferred.h).
    if (auto rc = defer_within_node(
            comm, route(count, type, op, comm, true).has_value(), {sendbuf, recvbuf},
            [=](Sink sink) -> std::optional<int> {
              auto w = route(count, type, op, comm, true);
              if (!w) return std::nullopt;
              return start_nonblocking(*w, sendbuf, recvbuf, count, comm,
                                       coll::AllreduceArgs::Shape::kAllreduce, 0, 0, false, 0, 0,
                                       "MPI_Iallreduce", sink);
            },
            [=](MPI_Comm on, std::unique_ptr<platform::Operation>* o) {
              return staged_iallreduce.operation_on(on, o, sendbuf, recvbuf, count, type, op, comm);
            },
            "MPI_Iallreduce", request))
      return *rc;
    return staged_iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
  }
  return start_nonblocking(*r, sendbuf, recvbuf, count, comm,
                           coll::AllreduceArgs::Shape::kAllreduce, 0, 0, false, 0, 0,
                           "MPI_Iallreduce", request);
}

bool coll_wanted(const Settings& st) { return st.allreduce != kAllreduceOff; }

}  // namespace mpizip::core
