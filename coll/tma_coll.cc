#include "coll/tma_coll.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "coll/tma_tuning.h"
#include "kernels/tma_engine.h"
#include "src/platform/device.h"
#include "src/platform/gpu_timing.h"
#include "src/platform/log.h"
#include "src/transport/device_ops.h"
#include "src/transport/ipc.h"

namespace mpizip::coll::tma {
namespace {

namespace k = kernels::tma;
using transport::IpcCache;
using transport::IpcDescriptor;
using transport::IpcMapping;

// Buffers in allocations below this size are always staged: the runtime carves small allocations
// out of shared blocks, and CUDA IPC refuses to map a second allocation of a block a process
// already maps (cudaErrorAlreadyMapped). What counts is the allocation's size, not the call's: an
// application allocates its buffers once at the largest size it sends (OSU's programs do), and a
// 64 KiB call in such a buffer staged through the group's memory paid two copies and two stream
// synchronisations more than a 1 MiB one (osu-bench/results/README.md, "Small collectives on the
// engine ..., 2026-12-08"). The group's own memory comes in whole blocks of kBlock.
constexpr uint64_t kStageBelow = 1 << 20;
constexpr uint64_t kBlock = 2 << 20;

// A rank's buffers of one call, as its peers map them (zero where no peer needs the buffer).
struct Shared {
  IpcDescriptor in;
  IpcDescriptor out;
};

bool same(const IpcDescriptor& a, const IpcDescriptor& b) {
  return a.process == b.process && a.base == b.base && a.bytes == b.bytes && a.id == b.id &&
         a.offset == b.offset;
}

}  // namespace

struct Group {
  bool on = false;
  int rank = 0;
  int size = 0;
  bool tma = false;  // this rank's GPU takes the TMA path
  platform::DeviceMemory signal;
  platform::PinnedMemory result;  // where the kernel reports a barrier it gave up (tma_engine.h)
  std::shared_ptr<IpcCache> cache;
  std::vector<IpcMapping> signal_maps;
  uint64_t* peer_signal[kMaxRanks] = {};
  uint64_t seq = 0;
  platform::DeviceMemory stage_in, stage_out;
  // The buffers of the last call whose descriptors were gathered, and their mappings.
  bool have_last = false;
  Kind last_kind = Kind::kAllreduce;
  int last_root = 0;
  Shared last{};
  std::vector<IpcMapping> maps;
  const void* in[kMaxRanks] = {};
  void* out[kMaxRanks] = {};
};

namespace {

// Sets up `g` collectively over `comm` (see the header). Leaves g->on false, with a log line on
// rank 0, when any rank cannot take part.
void setup(MPI_Comm comm, bool one_node, Group* g, const Options& o) {
  PMPI_Comm_rank(comm, &g->rank);
  PMPI_Comm_size(comm, &g->size);
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter || g->size < 2 || g->size > kMaxRanks) return;  // the same on every rank
  const char* why = nullptr;
  IpcDescriptor mine{};
  if (!one_node) {
    why = "its ranks are on several nodes";
  } else if (!platform::has_gpu()) {
    why = "a rank has no GPU";
  } else if (!transport::ipc_supported()) {
    why = "a rank has no CUDA IPC";
  } else if (!ok(g->signal.allocate(kBlock))) {
    why = "a rank has no device memory for its signal area";
  } else if (!ok(g->result.allocate(sizeof(uint64_t)))) {
    why = "a rank has no pinned memory for its kernel's result";
  } else {
    *static_cast<volatile uint64_t*>(g->result.get()) = 0;
    std::vector<unsigned char> zeros(k::kSignalBytes, 0);
    if (!ok(platform::copy_to_device(g->signal.get(), zeros.data(), k::kSignalBytes)) ||
        !ok(transport::ipc_describe(g->signal.get(), k::kSignalBytes, &mine)))
      why = "a rank cannot export its signal area";
  }
  int local_bad = why != nullptr, any_bad = 1;
  PMPI_Allreduce(&local_bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
  if (any_bad) {
    if (why != nullptr) MPIZIP_INFO("TMA collectives off on this communicator: %s", why);
    return;
  }
  // Ranks that share a GPU need its kernels to run side by side: the engine's kernels wait on their
  // peers' kernels, which a time-slicing driver runs a slice (milliseconds) later or after this
  // one ends. Every rank decides from the same gathered facts.
  struct Gpu {
    char id[48];
    int concurrent;
  } me{};
  const std::string id = platform::current_gpu_identity();
  std::snprintf(me.id, sizeof me.id, "%s", id.c_str());
  me.concurrent = o.sharing == 1 || (o.sharing == 0 && platform::gpu_processes_concurrent());
  std::vector<Gpu> gpus(g->size);
  PMPI_Allgather(&me, sizeof me, MPI_BYTE, gpus.data(), sizeof me, MPI_BYTE, comm);
  for (int a = 0; a < g->size && why == nullptr; ++a) {
    for (int b = a + 1; b < g->size; ++b) {
      if (std::strncmp(gpus[a].id, gpus[b].id, sizeof me.id) == 0 &&
          (!gpus[a].concurrent || !gpus[b].concurrent)) {
        why = "ranks share a GPU whose kernels are time-sliced (no MPS; MPIZIP_GPU_SHARING)";
        break;
      }
    }
  }
  if (why != nullptr) {
    if (g->rank == 0) MPIZIP_INFO("TMA collectives off on this communicator: %s", why);
    return;
  }
  std::vector<IpcDescriptor> all(g->size);
  PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm);
  g->cache = IpcCache::shared();
  g->signal_maps.resize(g->size);
  local_bad = 0;
  for (int q = 0; q < g->size; ++q) {
    if (!ok(g->cache->map(all[q], &g->signal_maps[q]))) {
      local_bad = 1;
      break;
    }
    g->peer_signal[q] = static_cast<uint64_t*>(const_cast<void*>(g->signal_maps[q].address()));
  }
  PMPI_Allreduce(&local_bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
  if (any_bad) {
    if (local_bad) MPIZIP_WARN("TMA collectives off on this communicator: a peer's signal area cannot be mapped");
    return;
  }
  g->tma = k::tma_capable();
  g->on = true;
  if (g->rank == 0)
    MPIZIP_INFO("TMA collectives on for %d ranks of one node (%s path)", g->size,
                g->tma ? "TMA" : "SM load/store");
}

// `p` is device memory of this process, in an allocation of at least kStageBelow that CUDA IPC can
// share; *d describes it.
bool shareable(const void* p, uint64_t bytes, IpcDescriptor* d) {
  return platform::is_device_pointer(p) && ok(transport::ipc_describe(p, bytes, d)) &&
         d->bytes >= kStageBelow;
}

bool reserve(platform::DeviceMemory* mem, uint64_t bytes) {
  return ok(mem->reserve((bytes + kBlock - 1) / kBlock * kBlock));
}

// Stages `bytes` of `src` (host or device) into `mem`, on `stream`.
bool stage(platform::DeviceMemory* mem, const void* src, uint64_t bytes, void* stream) {
  return reserve(mem, bytes) && ok(k::copy_async(mem->get(), src, bytes, stream));
}

// Ring parameters every rank derives alike: at least three slots of nsrc stages, within the
// engine's shared-memory bound. (Measured at 8 CTAs, 1 GiB, MPS: a CTA's rate follows the size of
// one bulk copy, 32 KiB stages moving 1.3x (2-rank allreduce) to 1.45x (allgather) what 16 KiB
// ones do; but a 4-rank allreduce lost 20% when its ring held two slots of 16 KiB instead of three.)
void ring(const Options& o, int nsrc, k::Launch* l) {
  l->chunk_bytes = o.chunk_bytes;
  l->stages = o.stages < 3 * nsrc ? 3 * nsrc : o.stages;
  while (static_cast<uint64_t>(l->stages) * l->chunk_bytes > 192 * 1024 && l->chunk_bytes > 1024)
    l->chunk_bytes /= 2;
}

// Runs `c` on this rank: `in_user` and `out_user` are the application's input and output (the
// output buffer's own address where the input is MPI_IN_PLACE; either unused where extents() gives
// it no bytes). `can` is this rank's own fact that it can take part (contiguous datatypes, say);
// a rank takes part only with its buffers in device memory, since host buffers are the MPI
// library's (moving them through the GPU made host allgathers of 128 KiB-4 MiB 1.1-3x slower than
// the library's, osu-bench/results/README.md, "No harm" of 2026-12-05). Where any rank cannot,
// every rank passes the call on (*handled false).
Status run(Group* g, const Call& c, bool in_place, const void* in_user, void* out_user,
           kernels::reduce::Type t, kernels::reduce::Op op, MPI_Comm comm, const Options& o,
           bool can, bool* handled, Outcome* outcome) {
  *handled = false;
  if (!g->on) return Status::kOk;
  int rc = MPI_SUCCESS;
  const int P = g->size, r = g->rank;
  const Extents e = extents(c, P, r, in_place);
  // Bytes of the output the collective leaves alone, which a staged output must keep: an in-place
  // input that stays where it is, and an allgatherv's gaps.
  const bool out_keeps = e.in_inside_out || c.kind == Kind::kAllgatherv;
  can = can && (e.in_bytes == 0 || e.in_inside_out || platform::is_device_pointer(in_user)) &&
        (e.out_bytes == 0 || platform::is_device_pointer(out_user));

  void* stream = nullptr;
  if (!ok(k::engine_stream(&stream))) stream = nullptr;
  void* out_dev = out_user;
  const void* in_dev = nullptr;
  bool stage_out = false, in_staged = false;
  // Two attempts: the second, after a peer could not map a buffer, stages every buffer.
  for (int attempt = 0;; ++attempt) {
    const bool force = attempt > 0;
    bool local_ok = can && stream != nullptr;
    bool staged = false;
    Shared mine{};
    // The output: the user's buffer, or the group's memory (copied in where the call keeps some of
    // its bytes).
    out_dev = e.out_bytes > 0 ? out_user : nullptr;
    stage_out = false;
    if (local_ok && e.out_bytes > 0 &&
        (force || (e.share_out ? !shareable(out_user, e.out_bytes, &mine.out)
                               : !platform::is_device_pointer(out_user)))) {
      stage_out = true;
      local_ok = out_keeps ? stage(&g->stage_out, out_user, e.out_bytes, stream)
                           : reserve(&g->stage_out, e.out_bytes);
      staged = staged || out_keeps;
      out_dev = g->stage_out.get();
      mine.out = IpcDescriptor{};
      if (local_ok && e.share_out)
        local_ok = ok(transport::ipc_describe(out_dev, e.out_bytes, &mine.out));
    }
    // The input.
    in_dev = nullptr;
    in_staged = false;
    if (!local_ok || e.in_bytes == 0) {
    } else if (e.in_inside_out) {
      in_dev = static_cast<const char*>(out_dev) + e.in_offset;
      if (e.share_in) mine.in = mine.out;  // at offset 0 (allreduce, reduce)
    } else {
      const bool must_stage = force || e.stage_in ||
                              (e.share_in ? !shareable(in_user, e.in_bytes, &mine.in)
                                          : !platform::is_device_pointer(in_user));
      in_dev = in_user;
      if (must_stage) {
        in_staged = true;
        local_ok = stage(&g->stage_in, in_user, e.in_bytes, stream);
        staged = true;
        in_dev = g->stage_in.get();
        mine.in = IpcDescriptor{};
        if (local_ok && e.share_in)
          local_ok = ok(transport::ipc_describe(in_dev, e.in_bytes, &mine.in));
      }
    }
    // Buffers shared as they are: the application's work on them must be done before any peer
    // reads or writes them, and the peers' kernels start right after the entry below (the engine's
    // only barrier is at its end). A copy from pageable memory returns before its DMA lands (on 4
    // ranks a peer's result written into an output was overwritten by the fill the application had
    // copied there before the call: tests/gpu/tma_coll.cc --slab), so the default stream is
    // synchronised. Staged buffers are copied on the engine's stream, which is ordered after the
    // default stream's work; staged inputs must be in place before any peer reads them.
    const bool as_is = (e.out_bytes > 0 && !stage_out) ||
                       (e.in_bytes > 0 && !e.in_inside_out && !in_staged);
    if (local_ok && as_is) local_ok = ok(platform::synchronize_default_stream());
    if (local_ok && staged) local_ok = ok(k::sync(stream));

    // Entry: every rank ready? Did any rank's buffers change?
    const bool changed = !g->have_last || g->last_kind != c.kind || g->last_root != c.root ||
                         !same(mine.in, g->last.in) || !same(mine.out, g->last.out);
    int flags[2] = {local_ok ? 0 : 1, changed ? 1 : 0}, all[2] = {1, 1};
    rc = PMPI_Allreduce(flags, all, 2, MPI_INT, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) return Status::mpi(rc);
    if (all[0]) {
      MPIZIP_LOG_ONCE(kInfo, "TMA collective passed to the MPI library: a rank could not take part or stage its buffers");
      return Status::kOk;
    }
    if (!all[1]) break;
    g->have_last = false;
    std::vector<Shared> peers(P);
    rc = PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, peers.data(), sizeof mine, MPI_BYTE, comm);
    if (rc != MPI_SUCCESS) return Status::mpi(rc);
    g->maps.assign(2 * P, IpcMapping());
    int bad = 0;
    for (int q = 0; q < P && !bad; ++q) {
      g->in[q] = nullptr;
      g->out[q] = nullptr;
      if (q == r) continue;
      if (peers[q].in.bytes > 0) {
        bad = !ok(g->cache->map(peers[q].in, &g->maps[2 * q]));
        if (!bad) g->in[q] = g->maps[2 * q].address();
      }
      if (peers[q].out.bytes > 0 && !bad) {
        bad = !ok(g->cache->map(peers[q].out, &g->maps[2 * q + 1]));
        if (!bad) g->out[q] = const_cast<void*>(g->maps[2 * q + 1].address());
      }
    }
    int any_bad = 1;
    rc = PMPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) return Status::mpi(rc);
    if (!any_bad) {
      g->have_last = true;
      g->last_kind = c.kind;
      g->last_root = c.root;
      g->last = mine;
      break;
    }
    g->maps.clear();
    if (attempt > 0) {
      MPIZIP_LOG_ONCE(kWarn, "TMA collective passed to the MPI library: a peer's buffer cannot be mapped");
      return Status::kOk;
    }
    MPIZIP_LOG_ONCE(kInfo, "TMA collectives: a peer's buffer cannot be mapped; staging every buffer");
  }

  Buffers b;
  for (int q = 0; q < P; ++q) {
    b.in[q] = q == r ? in_dev : g->in[q];
    b.out[q] = q == r ? out_dev : g->out[q];
  }
  k::Launch l;
  const Status planned = plan(c, P, r, b, &l);
  l.type = t;
  l.op = op;
  const uint64_t bytes = collective_bytes(c, P);
  l.ctas = o.ctas > 0 ? o.ctas : choose_ctas(tuned_kind(c.kind), P, bytes, o.max_ctas);
  if (l.ctas > k::kMaxCtas) l.ctas = k::kMaxCtas;
  ring(o, l.nseg > 0 ? static_cast<int>(l.seg[0].nsrc) : 1, &l);
  l.path = o.sm_path || !g->tma ? k::Path::kSm : k::Path::kTma;
  l.rank = r;
  l.nranks = P;
  if (!o.host_sync) {
    l.signals = static_cast<uint64_t*>(g->signal.get());
    for (int q = 0; q < P; ++q) l.peer_signals[q] = g->peer_signal[q];
    l.seq = ++g->seq;
    l.timeout_ns = o.timeout_ms * 1000000;
    l.result = static_cast<uint64_t*>(g->result.get());
  }
  // A large plan of copies alone, each to one destination (runtime_copies, coll/tma_plan.h): the
  // runtime's copies move the bytes, queued before the kernel, which then only ends the collective
  // at its barrier (stream order makes the copies complete, and so visible to every peer, before
  // this rank signals).
  const bool copies = ok(planned) && tma::runtime_copies(l, bytes, o.copy_engine_bytes);
  outcome->runtime_copies = copies;
  outcome->staged = in_staged || stage_out;
  *handled = true;
  // Every rank is past the entry: from here a rank whose part fails tells the others (the header's
  // "Failures after the entry").
  Status s = planned;
  if (ok(s) && o.fault == 1) s = Status::kDeviceError;  // as a failed launch
  if (ok(s) && o.fault != 2) {
    platform::GpuTimer timer(platform::GpuCall::kEngineLaunch);
    if (copies) {
      for (int i = 0; ok(s) && i < l.nseg; ++i) {
        const k::Segment& seg = l.seg[i];
        for (uint32_t d = 0; ok(s) && d < seg.ndst; ++d)
          s = k::copy_async(seg.dst[d], seg.src[0], seg.bytes, stream);
      }
      l.nseg = 0;
    }
    if (ok(s)) s = k::run(l, stream);
  }
  if (ok(s) && o.fault != 2) {
    platform::GpuTimer timer(platform::GpuCall::kEngineSync);
    s = k::sync(stream);
  }
  const bool silent = o.fault == 2;
  k::BarrierOutcome barrier = k::kBarrierPassed;
  if (ok(s) && !silent && !o.host_sync) barrier = k::barrier_outcome(l.result, l.seq);
  if (!ok(s) && !o.host_sync) {
    // The peers' kernels stop waiting for this rank (best effort: a broken device may refuse).
    for (int q = 0; q < P; ++q) {
      if (q == r) continue;
      platform::copy_to_device(g->peer_signal[q] + k::kFaultSlot + r, &l.seq, sizeof l.seq);
    }
  }
  bool failed = !ok(s) || silent || barrier != k::kBarrierPassed;
  if (o.host_sync) {
    // The end barrier on the host, which also tells every rank whether every part succeeded.
    int mine_failed = failed ? 1 : 0, any_failed = 1;
    if ((rc = PMPI_Allreduce(&mine_failed, &any_failed, 1, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS)
      return Status::mpi(rc);
    if (any_failed && !failed) return Status::kPeerFailed;
  }
  if (failed) {
    // The caller reports the status (one line); this says which rank's part it was.
    if (silent) {
      MPIZIP_INFO("TMA collective: this rank skipped its part (MPIZIP_FAULT=tma-silent)");
      return Status::kInternal;
    }
    if (!ok(s)) {
      MPIZIP_INFO("TMA collective: this rank's part failed on the GPU%s",
                  o.fault == 1 ? " (MPIZIP_FAULT=tma-fail)" : "");
      return s;
    }
    if (barrier == k::kBarrierPeerFailed) return Status::kPeerFailed;
    MPIZIP_INFO("TMA collective: a peer did not reach the end barrier within "
                "MPIZIP_TMA_TIMEOUT_MS=%llu", static_cast<unsigned long long>(o.timeout_ms));
    return Status::kTimedOut;
  }
  if (stage_out) {
    s = k::copy_async(out_user, out_dev, e.out_bytes, stream);
    if (ok(s)) s = k::sync(stream);
    MPIZIP_CHECK(s);
  }
  return Status::kOk;
}

}  // namespace

std::shared_ptr<Group> make_group(MPI_Comm comm, bool one_node, const Options& o) {
  auto g = std::make_shared<Group>();
  setup(comm, one_node, g.get(), o);
  return g;
}

Status collective(Group* g, const Args& a, MPI_Comm comm, const Options& o, bool* handled,
                  Outcome* outcome) {
  Outcome ignored;
  if (outcome == nullptr) outcome = &ignored;
  *outcome = Outcome{};
  return run(g, a.call, a.in_place, a.in_place ? a.out : a.in, a.out, a.type, a.op, comm, o,
             a.can, handled, outcome);
}

}  // namespace mpizip::coll::tma
