#include "coll/allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "coll/twoshot.h"
#include "cost/model.h"
#include "kernels/codec_cpu.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

namespace mpizip::coll {

using transport::Memory;
using transport::Transfer;

namespace {

constexpr int kSpinPolls = 64;
constexpr double kStallSeconds = 10;
const uint8_t kEmptyMessage = 0;

// Reserves `bytes` at the end of an arena, kArenaAlign-aligned; returns their offset.
uint64_t take(uint64_t* arena, uint64_t bytes) {
  const uint64_t off = *arena;
  *arena += format::align_up(bytes, kArenaAlign);
  return off;
}

// Elements per piece: the policy's piece size, or when it is left open (0) auto_piece_bytes
// (coll/plan.h) for the kDepth x (4 (P - 1) + 1) pieces a collective keeps in flight; raised where a
// buffer would need more than kMaxPieces pieces (by 16 elements more than needed, since the plan
// rounds it down to its unit).
uint64_t piece_elems(const AllreduceArgs& a, const Policy& policy, int nranks) {
  const uint64_t in_flight = uint64_t{kDepth} * (4 * static_cast<uint64_t>(nranks - 1) + 1);
  const uint64_t bytes =
      policy.piece_bytes != 0
          ? policy.piece_bytes
          : auto_piece_bytes(a.count * format::elem_bytes(a.dtype), in_flight, policy.memory_bytes);
  const uint64_t wanted = std::max<uint64_t>(1, bytes / format::elem_bytes(a.dtype));
  const uint64_t least = (a.count + kMaxPieces - 1) / kMaxPieces + 16;
  return std::max(wanted, least);
}

}  // namespace

TwoShot::TwoShot(const Channel& ch, const AllreduceArgs& a, uint64_t seq)
    : ch_(ch),
      a_(a),
      seq_(seq),
      plan_(a.count, format::elem_bytes(a.dtype), ch.nranks, piece_elems(a, ch.policy, ch.nranks)),
      me_(ch.rank),
      nranks_(ch.nranks),
      eb_(format::elem_bytes(a.dtype)),
      staged_(a.device && !ch.transport->reaches_device_memory()),
      space_(a.device ? Memory::kDevice : Memory::kHost) {
  largest_ = std::min(plan_.piece_elems(), plan_.shard(0).size());
  cap_ = kernels::cpu::max_compressed_size(a.dtype, largest_);
  status_.bytes = a.count * eb_;
  const size_t n = static_cast<size_t>(nranks_);
  compress_to_.assign(n, 0);
  hello_out_.resize(n);
  hello_in_.resize(n);
  hello_send_.resize(n);
  hello_recv_.resize(n);
  hello_bytes_.assign(n, 0);
  const bool codec = a.device || ch.policy.host_compress;
  bool any = false;
  for (int q = 0; q < nranks_; ++q) {
    if (q != me_) compress_to_[q] = ch.policy.compress && codec && !ch.transport->same_node(q);
    any = any || compress_to_[q];
  }
  // Whether compressing pays for calls of this size, from what they measured (cost/model.h).
  if (any && ch.cost != nullptr) {
    observe_ = true;
    model_compress_ = ch.cost->collective_compress(status_.bytes);
    if (!model_compress_) std::fill(compress_to_.begin(), compress_to_.end(), 0);
    started_ = std::chrono::steady_clock::now();
  }
}

TwoShot::~TwoShot() {
  std::lock_guard<std::mutex> lock(ch_.resources->transport_mutex());
  active_.clear();  // cancels or waits for the transfers still posted
  hello_send_.clear();
  hello_recv_.clear();
  lanes_.clear();
  drain_sends_.clear();
  if (backend_ != nullptr && !backend_failed_ && ok(backend_->drain()))
    ch_.resources->release(std::move(backend_));
}

Status TwoShot::start() {
  Status s = ok(a_.local_error) ? prepare() : a_.local_error;
  if (!ok(s)) {
    MPIZIP_WARN(
        "MPI_Allreduce: this rank cannot take part (%s); the collective fails on every rank",
        status_string(s));
    failed_ = true;
    failure_ = s;
  }
  const auto shape = static_cast<uint8_t>(a_.shape);
  const uint64_t root = static_cast<uint64_t>(a_.root);
  hello_out_[me_] = make_hello(a_.dtype, a_.op, a_.count, plan_.piece_elems(), seq_, 0, 0, shape, root);
  const uint64_t tag = make_tag(seq_, Kind::kHello, 0);
  std::lock_guard<std::mutex> lock(ch_.resources->transport_mutex());
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    const uint8_t flags = failed_ ? kHelloFailed : compress_to_[q] ? kHelloCompress : 0;
    hello_out_[q] = make_hello(a_.dtype, a_.op, a_.count, plan_.piece_elems(), seq_, flags,
                               ch_.policy.min_compress_bytes, shape, root);
    s = post_recv(&hello_in_[q], kHelloBytes, Memory::kHost, q, tag, &hello_recv_[q]);
    if (ok(s))
      s = ch_.transport->isend(&hello_out_[q], kHelloBytes, Memory::kHost, q, tag, &hello_send_[q]);
    if (!ok(s)) {
      MPIZIP_INFO("MPI_Allreduce: cannot post the collective's headers (%s)", status_string(s));
      return s;
    }
  }
  return Status::kOk;
}

Status TwoShot::prepare() {
  const uint64_t bytes = a_.count * eb_;
  if (a_.input != a_.output && bytes > 0 && a_.input_device != a_.device) {
    MPIZIP_CHECK(a_.device ? platform::copy_to_device(a_.output, a_.input, bytes)
                           : platform::copy_to_host(a_.output, a_.input, bytes));
    a_.input = a_.output;
  }
  Status s = ch_.resources->acquire(a_.device, &backend_);
  if (!ok(s) && a_.device) s = stage_to_host(s);
  return s;
}

bool TwoShot::progress() {
  if (phase_ == Phase::kDone) return true;
  const uint64_t before = events_;
  {
    std::lock_guard<std::mutex> lock(ch_.resources->transport_mutex());
    ch_.transport->progress();
    Status s = phase_ == Phase::kHello    ? advance_hello()
               : phase_ == Phase::kPieces ? advance_pieces()
                                          : advance_drain();
    if (!ok(s)) abort(s);
  }
  if (events_ == before)
    idle();
  else
    idle_polls_ = 0;
  return phase_ == Phase::kDone;
}

void TwoShot::idle() {
  if (++idle_polls_ == 1) idle_since_ = std::chrono::steady_clock::now();
  if (idle_polls_ <= kSpinPolls) return;
  std::this_thread::yield();
  if (!stall_reported_ && idle_polls_ % 4096 == 0 && log::enabled(log::Level::kInfo) &&
      std::chrono::steady_clock::now() - idle_since_ > std::chrono::duration<double>(kStallSeconds)) {
    stall_reported_ = true;
    report_stall();
  }
}

void TwoShot::report_stall() const {
  std::lock_guard<std::mutex> lock(ch_.resources->transport_mutex());
  std::string what;
  auto add = [&what](const char* name, int peer,
                     const std::unique_ptr<transport::Transfer>& t) {
    if (t == nullptr) return;
    what += " ";
    what += name;
    what += "[" + std::to_string(peer) + "]=(" + t->describe() + ")";
  };
  auto step = [](SendStep s) {
    return s == SendStep::kEncoding ? "encoding" : s == SendStep::kStaging ? "staging" : "posted";
  };
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    add("hello-out", q, hello_send_[q]);
    add("hello-in", q, hello_recv_[q]);
  }
  for (const Piece& p : active_) {
    char head[200];
    std::snprintf(head, sizeof head,
                  "; piece %llu: rs %s, %d to land%s, %s, ag %s, %d to land, %zu decodes",
                  static_cast<unsigned long long>(p.j), step(p.rs_step), p.rs_pending,
                  p.rs_fence != nullptr ? " (fence)" : "", p.folded ? "folded" : "not folded",
                  step(p.ag_step), p.ag_pending, p.decodes.size());
    what += head;
    for (int q = 0; q < nranks_; ++q) {
      add("rs-out", q, p.rs_send[q]);
      add("rs-in", q, p.rs_recv[q]);
      add("ag-out", q, p.ag_send[q]);
      add("ag-in", q, p.ag_recv[q]);
    }
  }
  for (const DrainLane& l : lanes_) add("drain-in", l.peer, l.t);
  for (const auto& t : drain_sends_) add("drain-out", -1, t);
  MPIZIP_INFO("MPI_Allreduce (collective %llu, %llu elements): nothing completed for %.0f s; "
              "phase %s, %llu of %llu pieces started:%s",
              static_cast<unsigned long long>(seq_), static_cast<unsigned long long>(a_.count),
              kStallSeconds,
              phase_ == Phase::kHello    ? "hellos"
              : phase_ == Phase::kPieces ? "pieces"
              : phase_ == Phase::kDrain  ? "drain"
                                         : "done",
              static_cast<unsigned long long>(next_piece_),
              static_cast<unsigned long long>(plan_.pieces()), what.c_str());
}

// Hellos: every rank's, checked against this rank's own. A disagreement ends the collective here
// on every rank, once this rank's own hellos have left.
Status TwoShot::advance_hello() {
  bool pending = false;
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    bool done = true;
    if (hello_recv_[q] != nullptr) {
      MPIZIP_CHECK(ready(*hello_recv_[q], &done));
      if (done) {
        hello_bytes_[q] = hello_recv_[q]->received_bytes();
        hello_recv_[q].reset();
      }
    }
    pending = pending || !done;
    if (hello_send_[q] != nullptr) {
      MPIZIP_CHECK(ready(*hello_send_[q], &done));
      if (done) hello_send_[q].reset();
      pending = pending || !done;
    }
  }
  if (pending) return Status::kOk;
  Disagreement worst = Disagreement::kNone;
  int who = -1;
  const Hello& mine = hello_out_[me_];  // the fields every rank must share
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    Hello theirs{};
    Disagreement d = parse_hello(&hello_in_[q], hello_bytes_[q], &theirs)
                         ? compare_hello(mine, theirs)
                         : Disagreement::kMalformed;
    hello_in_[q] = theirs;
    if (d != Disagreement::kNone && (worst == Disagreement::kNone || d < worst)) worst = d, who = q;
  }
  if (failed_) {
    hello_error_ = failure_;  // why this rank could not take part
    finish();
    return Status::kOk;
  }
  if (worst != Disagreement::kNone) {
    MPIZIP_WARN("MPI_Allreduce: the ranks' arguments disagree: %s (this rank and rank %d)",
                disagreement_string(worst), who);
    switch (worst) {
      case Disagreement::kType:
        hello_error_ = Status::kTypeMismatch;
        break;
      case Disagreement::kOp:
        hello_error_ = Status::mpi(MPI_ERR_OP);
        break;
      case Disagreement::kRoot:
        hello_error_ = Status::mpi(MPI_ERR_ROOT);
        break;
      case Disagreement::kCount:
        hello_error_ = Status::mpi(MPI_ERR_COUNT);
        break;
      case Disagreement::kFailed:
        hello_error_ = Status::kPeerFailed;
        break;
      default:
        hello_error_ = Status::kInvalidArgument;
        break;
    }
    finish();
    return Status::kOk;
  }
  return begin_pieces();
}

// The slots, sized from what every peer's hello says it sends; then the first pieces. Without
// device memory for them, the rank stages its buffers through host memory and sizes host slots.
Status TwoShot::begin_pieces() {
  phase_ = Phase::kPieces;
  if (plan_.pieces() == 0) {
    finish();
    return Status::kOk;
  }
  Status s = reserve_slots();
  if (!ok(s) && backend_->device()) {
    MPIZIP_CHECK(stage_to_host(s));
    s = reserve_slots();
  }
  MPIZIP_CHECK(s);
  return advance_pieces();
}

Status TwoShot::reserve_slots() {
  const uint64_t raw = largest_ * eb_;
  SlotLayout& L = layout_;
  L = SlotLayout{};
  L.peer.assign(static_cast<size_t>(nranks_), PeerLayout{});
  bool any_to = false;
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    PeerLayout& pl = L.peer[q];
    const bool to = compressed_to(q, largest_), from = compressed_from(q, largest_);
    any_to = any_to || to;
    const uint64_t land = from ? cap_ : raw;
    if (to) pl.rs_out = take(&L.work, cap_);
    pl.rs_land = take(staged_ ? &L.staging : &L.work, land);
    if (staged_) pl.rs_dev = take(&L.work, land);
    if (from) pl.rs_temp = take(&L.work, raw);
    if (staged_) pl.rs_stage = take(&L.staging, to ? cap_ : raw);
    if (from) pl.ag_land = take(staged_ ? &L.staging : &L.work, cap_);
    if (from && staged_) pl.ag_dev = take(&L.work, cap_);
    if (staged_) pl.ag_stage = take(&L.staging, raw);
    if (prefixes() && ag_flows(me_, q)) {
      pl.scan_res = take(&L.work, raw);
      if (to) pl.scan_out = take(&L.work, cap_);
      if (staged_) pl.scan_stage = take(&L.staging, std::max(cap_, raw));
    }
  }
  if (any_to) L.ag_out = take(&L.work, cap_);
  if (any_to && staged_) L.ag_stage_c = take(&L.staging, cap_);
  if (staged_) L.ag_stage_r = take(&L.staging, raw);
  slots_ = static_cast<int>(std::min<uint64_t>(kDepth, plan_.pieces()));
  slot_busy_.assign(static_cast<size_t>(slots_), 0);
  Needs needs;
  needs.work_bytes = std::max<uint64_t>(L.work * slots_, kArenaAlign);
  needs.staging_bytes = L.staging * slots_;
  needs.results = slots_ * kResultGroups * nranks_;
  needs.dtype = a_.dtype;
  needs.codec_elems = largest_ * static_cast<uint64_t>(nranks_ - 1);
  return backend_->reserve(needs);
}

bool TwoShot::compressed_to(int peer, uint64_t n) const {
  return compress_to_[peer] && n > 0 && n * eb_ >= ch_.policy.min_compress_bytes;
}

bool TwoShot::compressed_from(int peer, uint64_t n) const {
  const Hello& h = hello_in_[peer];
  return (h.flags & kHelloCompress) && n > 0 && n * eb_ >= h.min_compress_bytes;
}

Status TwoShot::post_send(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
                          uint64_t app_bytes, bool compressed, std::unique_ptr<Transfer>* out) {
  ++traffic_.messages;
  if (compressed) ++traffic_.compressed;
  traffic_.app_bytes += app_bytes;
  traffic_.wire_bytes += bytes;
  return ch_.transport->isend(buf, bytes, where, peer, tag, out);
}

Status TwoShot::post_empty(int peer, uint64_t tag, std::unique_ptr<Transfer>* out) {
  return ch_.transport->isend(&kEmptyMessage, 0, Memory::kHost, peer, tag, out);
}

Status TwoShot::post_recv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
                          std::unique_ptr<Transfer>* out) {
  return ch_.transport->irecv(buf, bytes, where, peer, tag, out);
}

void TwoShot::data_error(const char* what, int peer, uint64_t j) {
  // One warning, for the first; the rest at info level.
  const log::Level level = ok(error_) ? log::Level::kWarn : log::Level::kInfo;
  if (!log::enabled(level)) {
  } else if (peer >= 0) {
    log::write(level, "MPI_Allreduce: %s (piece %llu, from rank %d)", what,
               static_cast<unsigned long long>(j), peer);
  } else {
    log::write(level, "MPI_Allreduce: %s (piece %llu)", what, static_cast<unsigned long long>(j));
  }
  if (ok(error_)) error_ = Status::kCorruptStream;
}

void TwoShot::peer_failed(int peer, uint64_t j) {
  const log::Level level = ok(error_) ? log::Level::kWarn : log::Level::kInfo;
  if (log::enabled(level)) {
    log::write(level, "MPI_Allreduce: rank %d sent piece %llu empty: a rank's part of the "
               "collective failed", peer, static_cast<unsigned long long>(j));
  }
  if (ok(error_)) error_ = Status::kPeerFailed;
}

Status TwoShot::stage_to_host(Status why) {
  MPIZIP_LOG_ONCE(kWarn,
                  "MPI_Allreduce: the GPU path is unavailable (%s); staging device buffers "
                  "through host memory",
                  status_string(why));
  if (backend_ != nullptr && ok(backend_->drain())) ch_.resources->release(std::move(backend_));
  backend_.reset();
  const uint64_t bytes = a_.count * eb_;
  host_out_.resize(bytes);
  if (a_.input == a_.output) {
    MPIZIP_CHECK(platform::copy_to_host(host_out_.data(), a_.output, bytes));
    a_.input = host_out_.data();
  } else {
    host_in_.resize(bytes);
    MPIZIP_CHECK(platform::copy_to_host(host_in_.data(), a_.input, bytes));
    a_.input = host_in_.data();
  }
  device_output_ = a_.output;
  a_.output = host_out_.data();
  a_.device = false;
  staged_ = false;
  space_ = Memory::kHost;
  return ch_.resources->acquire(false, &backend_);
}

void TwoShot::abort(Status s) {
  if (s == Status::kDeviceError) backend_failed_ = true;
  const bool transport = s == Status::kTransportError || s == Status::kMpiError ||
                         s == Status::kPeerFailed || s == Status::kTimedOut;
  if (phase_ == Phase::kPieces && !transport) {
    drain(s);
    return;
  }
  end_now(s);
}

void TwoShot::end_now(Status s) {
  // Transfers still posted are cancelled or waited for as they are destroyed.
  MPIZIP_WARN("MPI_Allreduce: the collective failed (%s)", status_string(s));
  active_.clear();
  hello_send_.clear();
  hello_recv_.clear();
  lanes_.clear();
  drain_sends_.clear();
  error_ = s;
  finish();
}

void TwoShot::drain(Status s) {
  MPIZIP_WARN("MPI_Allreduce: this rank's part failed (%s); its peers are sent its pieces empty "
              "and the collective fails on every rank", status_string(s));
  error_ = s;
  phase_ = Phase::kDrain;
  drain_from_ = next_piece_;
  for (Piece& p : active_) {
    note_posted(p);
    // What the device was still doing for the piece is no longer waited for (the backend drains
    // before it is reused); its transfers already posted complete.
    p.rs_fence.reset();
    p.fold_fence.reset();
    p.ag_fence.reset();
    p.decodes.clear();
  }
  const uint64_t sink = std::max(cap_, largest_ * eb_);
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    for (Kind k : {Kind::kReduceScatter, Kind::kAllgather}) {
      DrainLane& l = lanes_.emplace_back();
      l.peer = q;
      l.kind = k;
      Status st = l.sink.resize(sink);
      if (!ok(st)) {
        MPIZIP_WARN("MPI_Allreduce: no host memory to drain the collective (%s); its peers may "
                    "wait for this rank", status_string(st));
        return end_now(s);
      }
    }
  }
  for (uint64_t j = 0; j < plan_.pieces(); ++j) {
    const bool mine = !plan_.piece(me_, j).empty();
    for (int q = 0; q < nranks_; ++q) {
      if (q == me_) continue;
      if (!plan_.piece(q, j).empty() && rs_flows(me_, q) && !posted_before_drain(j, q, kRsOut)) {
        Status st = post_empty(q, make_tag(seq_, Kind::kReduceScatter, j),
                               &drain_sends_.emplace_back());
        if (!ok(st)) return abort(st);
      }
      if (mine && ag_flows(me_, q) && !posted_before_drain(j, q, kAgOut)) {
        Status st = post_empty(q, make_tag(seq_, Kind::kAllgather, j), &drain_sends_.emplace_back());
        if (!ok(st)) return abort(st);
      }
    }
  }
}

bool TwoShot::posted_before_drain(uint64_t j, int peer, uint8_t bit) const {
  if (j >= drain_from_) return false;  // not started
  for (const Piece& p : active_) {
    if (p.j == j) return (p.posted[peer] & bit) != 0;
  }
  return true;  // done before the drain
}

Status TwoShot::advance_drain() {
  bool pending = false;
  auto poll = [&](std::unique_ptr<Transfer>& t) -> Status {
    if (t == nullptr) return Status::kOk;
    bool done = false;
    MPIZIP_CHECK(ready(*t, &done));
    if (done)
      t.reset();
    else
      pending = true;
    return Status::kOk;
  };
  for (Piece& p : active_) {
    for (auto* v : {&p.rs_send, &p.rs_recv, &p.ag_send, &p.ag_recv}) {
      for (auto& t : *v) MPIZIP_CHECK(poll(t));
    }
  }
  for (auto& t : drain_sends_) MPIZIP_CHECK(poll(t));
  for (DrainLane& l : lanes_) {
    for (;;) {
      MPIZIP_CHECK(poll(l.t));
      if (l.t != nullptr) break;
      const uint8_t bit = l.kind == Kind::kReduceScatter ? kRsIn : kAgIn;
      while (l.next < plan_.pieces() && l.t == nullptr) {
        const uint64_t j = l.next++;
        const int owner = l.kind == Kind::kReduceScatter ? me_ : l.peer;
        const bool flows = l.kind == Kind::kReduceScatter ? rs_flows(l.peer, me_)
                                                          : ag_flows(l.peer, me_);
        if (plan_.piece(owner, j).empty() || !flows || posted_before_drain(j, l.peer, bit)) continue;
        MPIZIP_CHECK(post_recv(l.sink.data(), l.sink.size(), Memory::kHost, l.peer,
                               make_tag(seq_, l.kind, j), &l.t));
      }
      if (l.t == nullptr) break;  // every piece received
    }
    pending = pending || l.t != nullptr;
  }
  if (!pending) {
    active_.clear();
    lanes_.clear();
    drain_sends_.clear();
    finish();
  }
  return Status::kOk;
}

void TwoShot::finish() {
  phase_ = Phase::kDone;
  if (device_output_ != nullptr &&
      !ok(platform::copy_to_device(device_output_, host_out_.data(), host_out_.size()))) {
    error_ = Status::kDeviceError;
  }
  status_.error = !ok(hello_error_) ? hello_error_ : error_;
  if (backend_ != nullptr && !backend_failed_ && ok(backend_->drain()))
    ch_.resources->release(std::move(backend_));
  backend_.reset();
  if (observe_ && ok(status_.error)) {
    ch_.cost->collective_observe(
        status_.bytes, model_compress_,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  }
  if (a_.on_complete) a_.on_complete(traffic_);
}

Status start_allreduce(const Channel& ch, const AllreduceArgs& args, uint64_t seq,
                       std::unique_ptr<platform::Operation>* op) {
  if (ch.transport == nullptr || ch.resources == nullptr || ch.nranks < 2 ||
      ch.nranks > kMaxRanks || !kernels::reduce::dtype_reducible(args.dtype) ||
      ((args.shape == AllreduceArgs::Shape::kBcast || args.shape == AllreduceArgs::Shape::kReduce) &&
       (args.root < 0 || args.root >= ch.nranks))) {
    return Status::kInvalidArgument;
  }
  auto two = std::make_unique<TwoShot>(ch, args, seq);
  MPIZIP_CHECK(two->start());
  *op = std::move(two);
  return Status::kOk;
}

}  // namespace mpizip::coll
