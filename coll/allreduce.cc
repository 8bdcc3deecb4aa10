#include "coll/allreduce.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "coll/plan.h"
#include "coll/wire.h"
#include "kernels/codec_cpu.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

namespace mpizip::coll {
namespace {

using transport::Memory;
using transport::Transfer;

constexpr uint64_t kNone = ~uint64_t{0};
constexpr int kSpinPolls = 64;
constexpr uint64_t kArenaAlign = 256;

// The offsets of one slot's buffers in the backend's arenas (work: the backend's memory; staging:
// pinned host memory), kNone where the collective does not need the buffer. Slot s's buffers are at
// s times the slot's stride.
struct PeerLayout {
  uint64_t rs_out = kNone;    // work: the stream of the piece sent to this peer
  uint64_t rs_land = kNone;   // work, or staging when staged: this peer's reduce-scatter piece lands
  uint64_t rs_dev = kNone;    // work (staged): the landed piece, copied to the device
  uint64_t rs_temp = kNone;   // work: the landed stream, decoded
  uint64_t rs_stage = kNone;  // staging: the piece sent to this peer
  uint64_t ag_land = kNone;   // work, or staging when staged: this peer's all-gather stream lands
  uint64_t ag_dev = kNone;    // work (staged): the landed stream, copied to the device
  uint64_t ag_stage = kNone;  // staging: this peer's raw all-gather piece lands
};

struct SlotLayout {
  std::vector<PeerLayout> peer;
  uint64_t ag_out = kNone;      // work: this rank's reduced piece, compressed
  uint64_t ag_stage_c = kNone;  // staging: that stream
  uint64_t ag_stage_r = kNone;  // staging: the reduced piece, raw
  uint64_t work = 0;            // stride of a slot in each arena
  uint64_t staging = 0;
};

uint64_t take(uint64_t* arena, uint64_t bytes) {
  const uint64_t off = *arena;
  *arena += format::align_up(bytes, kArenaAlign);
  return off;
}

// The Result entries of one slot: per peer, the reduce-scatter compression, the reduce-scatter
// decoding and the all-gather decoding, then the all-gather compression.
enum ResultGroup { kRsEncode = 0, kRsDecode = 1, kAgDecode = 2, kAgEncode = 3 };

// Where a piece's batch of sends (reduce-scatter, or all-gather) stands: waiting for its compression
// (all-gather: for the fold), for its copy to pinned memory, or posted.
enum class SendStep { kEncoding, kStaging, kPosted };

const uint8_t kEmptyMessage = 0;

// Elements per piece: the policy's piece size, raised where a buffer would need more than kMaxPieces
// pieces (by 16 elements more than needed, since the plan rounds it down to its unit).
uint64_t piece_elems(const AllreduceArgs& a, const Policy& policy) {
  const uint64_t wanted = policy.piece_bytes / format::elem_bytes(a.dtype);
  const uint64_t least = (a.count + kMaxPieces - 1) / kMaxPieces + 16;
  return std::max(wanted, least);
}

class TwoShot : public platform::Operation {
 public:
  TwoShot(const Channel& ch, const AllreduceArgs& a, uint64_t seq);
  ~TwoShot() override;
  // Prepares (prepare()) and posts the hellos: saying that this rank fails the collective when it
  // could not prepare, so that every rank reports the error instead of waiting for it. Returns an
  // MPI error code (only when the hellos cannot be posted).
  int start();
  bool progress() override;

 private:
  // One piece index in flight: its transfers (one slot per peer, null once done), fences and steps.
  struct Piece {
    uint64_t j = 0;
    int slot = 0;
    std::vector<std::unique_ptr<Transfer>> rs_send, rs_recv, ag_send, ag_recv;
    // Reduce-scatter, sending side.
    SendStep rs_step = SendStep::kPosted;
    std::vector<int> rs_encoded_peers;  // job order of the batched compression
    std::vector<uint64_t> rs_sizes;     // per peer: stream bytes (staged sends)
    std::unique_ptr<Fence> rs_fence;
    // Reduce-scatter, owner side.
    int rs_pending = 0;
    std::vector<const void*> inputs;    // the fold's inputs, in rank order
    int rs_decodes = 0;                 // Result entries of kRsDecode used
    bool folded = false;                // decoding, fold and all-gather compression enqueued
    std::unique_ptr<Fence> fold_fence;
    bool poisoned = false;              // a contribution failed: the all-gather sends nothing
    // All-gather, owner side.
    SendStep ag_step = SendStep::kPosted;
    uint64_t ag_bytes = 0;              // the compressed piece's size
    std::unique_ptr<Fence> ag_fence;
    // All-gather, receiving side.
    int ag_pending = 0;
    int ag_decodes = 0;                 // Result entries of kAgDecode used
    struct Decode {
      std::unique_ptr<Fence> fence;
      int first = 0, n = 0;             // its Result entries
      std::vector<uint64_t> counts;     // the elements each must deliver
    };
    std::vector<Decode> decodes;
  };

  // Puts the input in the output's memory, and takes a backend.
  Status prepare();
  // Phases.
  Status advance_hello();
  Status begin_pieces();
  // Lays out the slots' buffers for this rank's memory and what its peers send, and reserves them.
  Status reserve_slots();
  Status advance_pieces();
  // Steps of one piece.
  Status start_piece(Piece& p);
  Status rs_sends(Piece& p);
  Status rs_receives(Piece& p);
  Status fold(Piece& p);
  Status ag_sends(Piece& p);
  Status ag_receives(Piece& p);
  // Drops the sends that have completed.
  Status poll_sends(std::vector<std::unique_ptr<Transfer>>& sends);
  // Tests a transfer or a fence, counting completions (see idle()).
  template <typename T>
  Status ready(T& t, bool* done) {
    MPIZIP_CHECK(t.test(done));
    if (*done) ++events_;
    return Status::kOk;
  }
  // Called after a progress() that completed nothing: after kSpinPolls such calls in a row, each
  // further one yields the processor, so that ranks sharing cores (oversubscribed, or a progress
  // thread beside the application) let the peers they wait for run.
  void idle();
  bool piece_done(const Piece& p) const;

  // Whether a piece of `n` elements travels compressed from this rank to `peer`, or from `peer`.
  bool compressed_to(int peer, uint64_t n) const;
  bool compressed_from(int peer, uint64_t n) const;

  uint8_t* work(const Piece& p, uint64_t off) const { return backend_->work() + p.slot * layout_.work + off; }
  uint8_t* staging(const Piece& p, uint64_t off) const {
    return backend_->staging() + p.slot * layout_.staging + off;
  }
  // Where a peer's piece lands: pinned host memory when staged, else the backend's memory.
  uint8_t* landing(const Piece& p, uint64_t off) const { return staged_ ? staging(p, off) : work(p, off); }
  Result* results(const Piece& p, ResultGroup g) const {
    return backend_->results() + p.slot * (3 * nranks_ + 1) + g * nranks_;
  }
  const uint8_t* in_at(uint64_t elem) const { return static_cast<const uint8_t*>(a_.input) + elem * eb_; }
  uint8_t* out_at(uint64_t elem) const { return static_cast<uint8_t*>(a_.output) + elem * eb_; }

  Status post_send(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
                   uint64_t app_bytes, bool compressed, std::unique_ptr<Transfer>* out);
  Status post_empty(int peer, uint64_t tag, std::unique_ptr<Transfer>* out);
  Status post_recv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
                   std::unique_ptr<Transfer>* out);
  void data_error(const char* what, int peer, uint64_t j);
  // The device path cannot run (`why`: no stream, no device memory): this rank continues on host
  // copies of its buffers with the CPU backend, which its peers cannot tell apart (one wire format,
  // and the CPU codec honours the hellos), and copies the result back when done.
  Status stage_to_host(Status why);
  void abort(Status s);
  void finish();

  Channel ch_;
  AllreduceArgs a_;
  uint64_t seq_;
  std::unique_ptr<Backend> backend_;
  Plan plan_;
  int me_, nranks_;
  uint64_t eb_;
  bool staged_;       // device buffers over a transport that cannot reach device memory
  Memory space_;      // where the buffers live
  uint64_t largest_;  // elements of the largest piece
  uint64_t cap_;      // bytes of the largest piece's stream, at most

  enum class Phase { kHello, kPieces, kDone } phase_ = Phase::kHello;
  std::vector<uint8_t> compress_to_;  // per peer: this rank's hello says it compresses for the peer
  std::vector<Hello> hello_out_, hello_in_;  // per peer; hello_out_[me_]: this rank's arguments
  std::vector<std::unique_ptr<Transfer>> hello_send_, hello_recv_;
  std::vector<uint64_t> hello_bytes_;
  int hello_error_ = MPI_SUCCESS;
  bool failed_ = false;  // this rank could not prepare: its hellos say so

  SlotLayout layout_;
  int slots_ = 0;
  std::vector<uint8_t> slot_busy_;
  uint64_t next_piece_ = 0;
  std::deque<Piece> active_;
  int error_ = MPI_SUCCESS;  // first data error
  Traffic traffic_;
  std::vector<uint8_t> host_in_, host_out_;  // host copies of device buffers (stage_to_host)
  void* device_output_ = nullptr;             // the output they stand for
  uint64_t events_ = 0;      // transfers and fences seen complete
  int idle_polls_ = 0;       // progress() calls in a row that completed nothing
};

TwoShot::TwoShot(const Channel& ch, const AllreduceArgs& a, uint64_t seq)
    : ch_(ch),
      a_(a),
      seq_(seq),
      plan_(a.count, format::elem_bytes(a.dtype), ch.nranks, piece_elems(a, ch.policy)),
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
  for (int q = 0; q < nranks_; ++q) {
    if (q != me_) compress_to_[q] = ch.policy.compress && codec && !ch.transport->same_node(q);
  }
}

TwoShot::~TwoShot() {
  std::lock_guard<std::mutex> lock(ch_.resources->transport_mutex());
  active_.clear();  // cancels or waits for the transfers still posted
  hello_send_.clear();
  hello_recv_.clear();
  if (backend_ != nullptr && ok(backend_->drain())) ch_.resources->release(std::move(backend_));
}

int TwoShot::start() {
  Status s = prepare();
  if (!ok(s)) {
    MPIZIP_WARN("MPI_Allreduce: this rank cannot take part (%s); the collective fails on every rank",
                status_string(s));
    failed_ = true;
  }
  hello_out_[me_] = make_hello(a_.dtype, a_.op, a_.count, plan_.piece_elems(), seq_, 0, 0);
  const uint64_t tag = make_tag(seq_, Kind::kHello, 0);
  std::lock_guard<std::mutex> lock(ch_.resources->transport_mutex());
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    const uint8_t flags = failed_ ? kHelloFailed : compress_to_[q] ? kHelloCompress : 0;
    hello_out_[q] = make_hello(a_.dtype, a_.op, a_.count, plan_.piece_elems(), seq_, flags,
                               ch_.policy.min_compress_bytes);
    s = post_recv(&hello_in_[q], kHelloBytes, Memory::kHost, q, tag, &hello_recv_[q]);
    if (ok(s)) s = ch_.transport->isend(&hello_out_[q], kHelloBytes, Memory::kHost, q, tag, &hello_send_[q]);
    if (!ok(s)) {
      MPIZIP_WARN("MPI_Allreduce: cannot post the collective's headers (%s)", status_string(s));
      return MPI_ERR_OTHER;
    }
  }
  return MPI_SUCCESS;
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
    Status s = phase_ == Phase::kHello ? advance_hello() : advance_pieces();
    if (!ok(s)) abort(s);
  }
  if (events_ == before) idle();
  else idle_polls_ = 0;
  return phase_ == Phase::kDone;
}

void TwoShot::idle() {
  if (++idle_polls_ > kSpinPolls) std::this_thread::yield();
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
    Disagreement d = parse_hello(&hello_in_[q], hello_bytes_[q], &theirs) ? compare_hello(mine, theirs)
                                                                          : Disagreement::kMalformed;
    hello_in_[q] = theirs;
    if (d != Disagreement::kNone && (worst == Disagreement::kNone || d < worst)) worst = d, who = q;
  }
  if (failed_) {
    hello_error_ = MPI_ERR_OTHER;
    finish();
    return Status::kOk;
  }
  if (worst != Disagreement::kNone) {
    MPIZIP_WARN("MPI_Allreduce: the ranks' arguments disagree: %s (this rank and rank %d)",
                disagreement_string(worst), who);
    switch (worst) {
      case Disagreement::kType: hello_error_ = MPI_ERR_TYPE; break;
      case Disagreement::kOp: hello_error_ = MPI_ERR_OP; break;
      case Disagreement::kCount: hello_error_ = MPI_ERR_COUNT; break;
      default: hello_error_ = MPI_ERR_OTHER; break;
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
  }
  if (any_to) L.ag_out = take(&L.work, cap_);
  if (any_to && staged_) L.ag_stage_c = take(&L.staging, cap_);
  if (staged_) L.ag_stage_r = take(&L.staging, raw);
  slots_ = static_cast<int>(std::min<uint64_t>(kDepth, plan_.pieces()));
  slot_busy_.assign(static_cast<size_t>(slots_), 0);
  Needs needs;
  needs.work_bytes = std::max<uint64_t>(L.work * slots_, kArenaAlign);
  needs.staging_bytes = L.staging * slots_;
  needs.results = slots_ * (3 * nranks_ + 1);
  needs.dtype = a_.dtype;
  needs.codec_elems = largest_ * static_cast<uint64_t>(nranks_ - 1);
  return backend_->reserve(needs);
}

// Starts pieces while slots are free, advances every piece in flight, retires finished ones.
Status TwoShot::advance_pieces() {
  while (next_piece_ < plan_.pieces()) {
    const int slot = static_cast<int>(next_piece_ % static_cast<uint64_t>(slots_));
    if (slot_busy_[slot]) break;
    Piece& p = active_.emplace_back();
    p.j = next_piece_++;
    p.slot = slot;
    slot_busy_[slot] = 1;
    MPIZIP_CHECK(start_piece(p));
  }
  for (Piece& p : active_) {
    MPIZIP_CHECK(rs_sends(p));
    MPIZIP_CHECK(rs_receives(p));
    MPIZIP_CHECK(fold(p));
    MPIZIP_CHECK(ag_sends(p));
    MPIZIP_CHECK(ag_receives(p));
    MPIZIP_CHECK(poll_sends(p.rs_send));
    MPIZIP_CHECK(poll_sends(p.ag_send));
  }
  for (auto it = active_.begin(); it != active_.end();) {
    if (piece_done(*it)) {
      slot_busy_[it->slot] = 0;
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
  if (active_.empty() && next_piece_ == plan_.pieces()) finish();
  return Status::kOk;
}

// Posts the piece's receives (so that data finds its buffer), then its reduce-scatter sends: raw
// pieces at once (or once staged), compressed ones after one batched compression.
Status TwoShot::start_piece(Piece& p) {
  const size_t n = static_cast<size_t>(nranks_);
  p.rs_send.resize(n);
  p.rs_recv.resize(n);
  p.ag_send.resize(n);
  p.ag_recv.resize(n);
  p.inputs.assign(n, nullptr);
  p.rs_sizes.assign(n, 0);
  const uint64_t rs_tag = make_tag(seq_, Kind::kReduceScatter, p.j);
  const uint64_t ag_tag = make_tag(seq_, Kind::kAllgather, p.j);
  const Memory land_space = staged_ ? Memory::kHost : space_;
  const Range mine = plan_.piece(me_, p.j);
  if (!mine.empty()) {
    p.inputs[me_] = in_at(mine.begin);
    p.folded = false;
  } else {
    p.folded = true;  // nothing to reduce or broadcast
  }
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    const PeerLayout& pl = layout_.peer[q];
    if (!mine.empty()) {
      const uint64_t bytes = compressed_from(q, mine.size()) ? cap_ : mine.size() * eb_;
      MPIZIP_CHECK(post_recv(landing(p, pl.rs_land), bytes, land_space, q, rs_tag, &p.rs_recv[q]));
      ++p.rs_pending;
    }
    const Range theirs = plan_.piece(q, p.j);
    if (theirs.empty()) continue;
    if (compressed_from(q, theirs.size())) {
      MPIZIP_CHECK(post_recv(landing(p, pl.ag_land), cap_, land_space, q, ag_tag, &p.ag_recv[q]));
    } else if (staged_) {
      MPIZIP_CHECK(post_recv(staging(p, pl.ag_stage), theirs.size() * eb_, Memory::kHost, q, ag_tag,
                             &p.ag_recv[q]));
    } else {
      MPIZIP_CHECK(post_recv(out_at(theirs.begin), theirs.size() * eb_, space_, q, ag_tag, &p.ag_recv[q]));
    }
    ++p.ag_pending;
  }
  Job jobs[kMaxRanks];
  int njobs = 0;
  bool enqueued = false;
  for (int q = 0; q < nranks_; ++q) {
    const Range r = plan_.piece(q, p.j);
    if (q == me_ || r.empty()) continue;
    const PeerLayout& pl = layout_.peer[q];
    if (compressed_to(q, r.size())) {
      jobs[njobs++] = Job{in_at(r.begin), r.size(), work(p, pl.rs_out), cap_};
      p.rs_encoded_peers.push_back(q);
    } else if (staged_) {
      MPIZIP_CHECK(backend_->copy(staging(p, pl.rs_stage), in_at(r.begin), r.size() * eb_));
      enqueued = true;
    } else {
      MPIZIP_CHECK(post_send(in_at(r.begin), r.size() * eb_, space_, q, rs_tag, r.size() * eb_, false,
                             &p.rs_send[q]));
    }
  }
  if (njobs > 0) {
    MPIZIP_CHECK(backend_->compress(a_.dtype, jobs, njobs, results(p, kRsEncode), ch_.policy.checksum));
  }
  if (njobs > 0 || enqueued) {
    MPIZIP_CHECK(backend_->fence(&p.rs_fence));
    p.rs_step = SendStep::kEncoding;
  }
  return Status::kOk;
}

// Reduce-scatter sends that waited for the batched compression (and, when staged, for the copy of
// each stream or raw piece to pinned memory).
Status TwoShot::rs_sends(Piece& p) {
  const uint64_t tag = make_tag(seq_, Kind::kReduceScatter, p.j);
  bool done = false;
  if (p.rs_step == SendStep::kEncoding) {
    MPIZIP_CHECK(ready(*p.rs_fence, &done));
    if (!done) return Status::kOk;
    p.rs_fence.reset();
    const Result* res = results(p, kRsEncode);
    bool stage = false;
    for (size_t i = 0; i < p.rs_encoded_peers.size(); ++i) {
      const int q = p.rs_encoded_peers[i];
      const uint64_t n = plan_.piece(q, p.j).size();
      if (res[i].status != static_cast<int32_t>(Status::kOk) || res[i].size > cap_) {
        MPIZIP_WARN("MPI_Allreduce: compressing piece %llu for rank %d failed (%s)",
                    static_cast<unsigned long long>(p.j), q, status_string(static_cast<Status>(res[i].status)));
        MPIZIP_CHECK(post_empty(q, tag, &p.rs_send[q]));
      } else if (staged_) {
        MPIZIP_CHECK(backend_->copy(staging(p, layout_.peer[q].rs_stage), work(p, layout_.peer[q].rs_out),
                                    res[i].size));
        p.rs_sizes[q] = res[i].size;
        stage = true;
      } else {
        MPIZIP_CHECK(post_send(work(p, layout_.peer[q].rs_out), res[i].size, space_, q, tag, n * eb_, true,
                               &p.rs_send[q]));
      }
    }
    for (int q = 0; q < nranks_ && staged_; ++q) {
      const Range r = plan_.piece(q, p.j);
      if (q == me_ || r.empty() || compressed_to(q, r.size())) continue;
      MPIZIP_CHECK(post_send(staging(p, layout_.peer[q].rs_stage), r.size() * eb_, Memory::kHost, q, tag,
                             r.size() * eb_, false, &p.rs_send[q]));
    }
    if (!stage) {
      p.rs_step = SendStep::kPosted;
      return Status::kOk;
    }
    MPIZIP_CHECK(backend_->fence(&p.rs_fence));
    p.rs_step = SendStep::kStaging;
  }
  if (p.rs_step == SendStep::kStaging) {
    MPIZIP_CHECK(ready(*p.rs_fence, &done));
    if (!done) return Status::kOk;
    p.rs_fence.reset();
    for (int q = 0; q < nranks_; ++q) {
      if (p.rs_sizes[q] == 0) continue;
      const uint64_t n = plan_.piece(q, p.j).size();
      MPIZIP_CHECK(post_send(staging(p, layout_.peer[q].rs_stage), p.rs_sizes[q], Memory::kHost, q, tag,
                             n * eb_, true, &p.rs_send[q]));
    }
    p.rs_step = SendStep::kPosted;
  }
  return Status::kOk;
}

// The owner's side: each landed piece is decoded (or, when raw, used where it landed) as soon as
// it is there; the pieces that landed since the last call are decoded in one batched call.
Status TwoShot::rs_receives(Piece& p) {
  if (p.rs_pending == 0) return Status::kOk;
  const Range mine = plan_.piece(me_, p.j);
  const uint64_t bytes = mine.size() * eb_;
  Job jobs[kMaxRanks];
  int njobs = 0;
  for (int q = 0; q < nranks_; ++q) {
    if (p.rs_recv[q] == nullptr) continue;
    bool done = false;
    MPIZIP_CHECK(ready(*p.rs_recv[q], &done));
    if (!done) continue;
    const uint64_t got = p.rs_recv[q]->received_bytes();
    p.rs_recv[q].reset();
    --p.rs_pending;
    const PeerLayout& pl = layout_.peer[q];
    const uint8_t* src = landing(p, pl.rs_land);
    if (staged_) {
      MPIZIP_CHECK(backend_->copy(work(p, pl.rs_dev), src, got));
      src = work(p, pl.rs_dev);
    }
    if (compressed_from(q, mine.size())) {
      jobs[njobs++] = Job{src, got, work(p, pl.rs_temp), bytes};
      p.inputs[q] = work(p, pl.rs_temp);
    } else {
      if (got != bytes) {
        data_error("a reduce-scatter piece arrived with the wrong size", q, p.j);
        p.poisoned = true;
      }
      p.inputs[q] = src;
    }
  }
  if (njobs > 0) {
    MPIZIP_CHECK(backend_->decompress(a_.dtype, jobs, njobs, results(p, kRsDecode) + p.rs_decodes));
    p.rs_decodes += njobs;
  }
  return Status::kOk;
}

// Once every contribution has landed: the fold in rank order into this rank's shard of the output,
// then the all-gather's compression of the result (once, for every peer that takes it compressed)
// and, when staged, its copy to pinned memory.
Status TwoShot::fold(Piece& p) {
  if (p.folded || p.rs_pending > 0) return Status::kOk;
  const Range mine = plan_.piece(me_, p.j);
  uint8_t* out = out_at(mine.begin);
  MPIZIP_CHECK(backend_->reduce(a_.dtype, a_.op, p.inputs.data(), nranks_, out, mine.size()));
  bool any_to = false, any_raw = false;
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    if (compressed_to(q, mine.size())) any_to = true;
    else any_raw = true;
  }
  if (any_to) {
    const Job job{out, mine.size(), work(p, layout_.ag_out), cap_};
    MPIZIP_CHECK(backend_->compress(a_.dtype, &job, 1, results(p, kAgEncode), ch_.policy.checksum));
  }
  if (any_raw && staged_) {
    MPIZIP_CHECK(backend_->copy(staging(p, layout_.ag_stage_r), out, mine.size() * eb_));
  }
  MPIZIP_CHECK(backend_->fence(&p.fold_fence));
  p.folded = true;
  p.ag_step = SendStep::kEncoding;
  return Status::kOk;
}

// The all-gather's sends of this rank's reduced piece, once it is folded (and compressed); empty
// messages in its place when a contribution failed, so that every receiver reports the error.
Status TwoShot::ag_sends(Piece& p) {
  const uint64_t tag = make_tag(seq_, Kind::kAllgather, p.j);
  const Range mine = plan_.piece(me_, p.j);
  const uint64_t bytes = mine.size() * eb_;
  bool done = false;
  if (p.ag_step == SendStep::kEncoding) {
    MPIZIP_CHECK(ready(*p.fold_fence, &done));
    if (!done) return Status::kOk;
    p.fold_fence.reset();
    const Result* dec = results(p, kRsDecode);
    for (int i = 0; i < p.rs_decodes && !p.poisoned; ++i) {
      if (dec[i].status != static_cast<int32_t>(Status::kOk) || dec[i].size != mine.size()) {
        data_error("a compressed reduce-scatter piece did not decode", -1, p.j);
        p.poisoned = true;
      }
    }
    const Result& enc = *results(p, kAgEncode);
    bool stage = false;
    for (int q = 0; q < nranks_; ++q) {
      if (q == me_) continue;
      if (p.poisoned) {
        MPIZIP_CHECK(post_empty(q, tag, &p.ag_send[q]));
      } else if (compressed_to(q, mine.size())) {
        if (enc.status != static_cast<int32_t>(Status::kOk) || enc.size > cap_) {
          data_error("compressing the reduced piece failed", -1, p.j);
          MPIZIP_CHECK(post_empty(q, tag, &p.ag_send[q]));
        } else if (staged_) {
          stage = true;
        } else {
          MPIZIP_CHECK(post_send(work(p, layout_.ag_out), enc.size, space_, q, tag, bytes, true, &p.ag_send[q]));
        }
      } else if (staged_) {
        MPIZIP_CHECK(post_send(staging(p, layout_.ag_stage_r), bytes, Memory::kHost, q, tag, bytes, false,
                               &p.ag_send[q]));
      } else {
        MPIZIP_CHECK(post_send(out_at(mine.begin), bytes, space_, q, tag, bytes, false, &p.ag_send[q]));
      }
    }
    if (!stage) {
      p.ag_step = SendStep::kPosted;
      return Status::kOk;
    }
    p.ag_bytes = enc.size;
    MPIZIP_CHECK(backend_->copy(staging(p, layout_.ag_stage_c), work(p, layout_.ag_out), enc.size));
    MPIZIP_CHECK(backend_->fence(&p.ag_fence));
    p.ag_step = SendStep::kStaging;
  }
  if (p.ag_step == SendStep::kStaging) {
    MPIZIP_CHECK(ready(*p.ag_fence, &done));
    if (!done) return Status::kOk;
    p.ag_fence.reset();
    for (int q = 0; q < nranks_; ++q) {
      if (q == me_ || !compressed_to(q, mine.size())) continue;
      MPIZIP_CHECK(post_send(staging(p, layout_.ag_stage_c), p.ag_bytes, Memory::kHost, q, tag, bytes, true,
                             &p.ag_send[q]));
    }
    p.ag_step = SendStep::kPosted;
  }
  return Status::kOk;
}

// The all-gather's receiving side: each landed piece is decoded straight into the output (raw
// pieces landed there already, or are copied there from pinned memory).
Status TwoShot::ag_receives(Piece& p) {
  Job jobs[kMaxRanks];
  Piece::Decode d;
  bool enqueued = false;
  for (int q = 0; q < nranks_ && p.ag_pending > 0; ++q) {
    if (p.ag_recv[q] == nullptr) continue;
    bool done = false;
    MPIZIP_CHECK(ready(*p.ag_recv[q], &done));
    if (!done) continue;
    const uint64_t got = p.ag_recv[q]->received_bytes();
    p.ag_recv[q].reset();
    --p.ag_pending;
    const Range r = plan_.piece(q, p.j);
    const uint64_t bytes = r.size() * eb_;
    const PeerLayout& pl = layout_.peer[q];
    if (compressed_from(q, r.size())) {
      const uint8_t* src = landing(p, pl.ag_land);
      if (staged_) {
        MPIZIP_CHECK(backend_->copy(work(p, pl.ag_dev), src, got));
        src = work(p, pl.ag_dev);
      }
      jobs[d.n++] = Job{src, got, out_at(r.begin), bytes};
      d.counts.push_back(r.size());
    } else if (got != bytes) {
      data_error("an all-gather piece arrived with the wrong size", q, p.j);
    } else if (staged_) {
      MPIZIP_CHECK(backend_->copy(out_at(r.begin), staging(p, pl.ag_stage), bytes));
      enqueued = true;
    }
  }
  if (d.n > 0) {
    d.first = p.ag_decodes;
    MPIZIP_CHECK(backend_->decompress(a_.dtype, jobs, d.n, results(p, kAgDecode) + d.first));
    p.ag_decodes += d.n;
  }
  if (d.n > 0 || enqueued) {
    MPIZIP_CHECK(backend_->fence(&d.fence));
    p.decodes.push_back(std::move(d));
  }
  for (auto it = p.decodes.begin(); it != p.decodes.end();) {
    bool done = false;
    MPIZIP_CHECK(ready(*it->fence, &done));
    if (!done) {
      ++it;
      continue;
    }
    const Result* res = results(p, kAgDecode) + it->first;
    for (int i = 0; i < it->n; ++i) {
      if (res[i].status != static_cast<int32_t>(Status::kOk) || res[i].size != it->counts[i]) {
        data_error("a compressed all-gather piece did not decode", -1, p.j);
      }
    }
    it = p.decodes.erase(it);
  }
  return Status::kOk;
}

Status TwoShot::poll_sends(std::vector<std::unique_ptr<Transfer>>& sends) {
  for (auto& t : sends) {
    if (t == nullptr) continue;
    bool done = false;
    MPIZIP_CHECK(ready(*t, &done));
    if (done) t.reset();
  }
  return Status::kOk;
}

bool TwoShot::piece_done(const Piece& p) const {
  auto idle = [](const std::vector<std::unique_ptr<Transfer>>& v) {
    return std::all_of(v.begin(), v.end(), [](const auto& t) { return t == nullptr; });
  };
  return p.rs_step == SendStep::kPosted && p.rs_pending == 0 && p.folded &&
         p.ag_step == SendStep::kPosted && p.ag_pending == 0 && p.decodes.empty() && idle(p.rs_send) &&
         idle(p.ag_send);
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
  if (peer >= 0) {
    MPIZIP_WARN("MPI_Allreduce: %s (piece %llu, from rank %d)", what, static_cast<unsigned long long>(j), peer);
  } else {
    MPIZIP_WARN("MPI_Allreduce: %s (piece %llu)", what, static_cast<unsigned long long>(j));
  }
  if (error_ == MPI_SUCCESS) error_ = ch_.policy.err_corrupt;
}

Status TwoShot::stage_to_host(Status why) {
  MPIZIP_LOG_ONCE(kWarn, "MPI_Allreduce: the GPU path is unavailable (%s); staging device buffers "
                         "through host memory", status_string(why));
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

// A transport or device failure: nothing more can be exchanged. Transfers still posted are
// cancelled or waited for as they are destroyed; a backend that failed is not reused.
void TwoShot::abort(Status s) {
  MPIZIP_WARN("MPI_Allreduce: the collective failed (%s)", status_string(s));
  active_.clear();
  hello_send_.clear();
  hello_recv_.clear();
  if (backend_ != nullptr && s == Status::kDeviceError) backend_.reset();
  error_ = MPI_ERR_OTHER;
  finish();
}

void TwoShot::finish() {
  phase_ = Phase::kDone;
  if (device_output_ != nullptr &&
      !ok(platform::copy_to_device(device_output_, host_out_.data(), host_out_.size()))) {
    error_ = MPI_ERR_OTHER;
  }
  status_.error = hello_error_ != MPI_SUCCESS ? hello_error_ : error_;
  if (backend_ != nullptr && ok(backend_->drain())) ch_.resources->release(std::move(backend_));
  backend_.reset();
  if (a_.on_complete) a_.on_complete(traffic_);
}

}  // namespace

int start_allreduce(const Channel& ch, const AllreduceArgs& args, uint64_t seq,
                    std::unique_ptr<platform::Operation>* op) {
  if (ch.transport == nullptr || ch.resources == nullptr || ch.nranks < 2 || ch.nranks > kMaxRanks ||
      !kernels::reduce::dtype_reducible(args.dtype)) {
    return MPI_ERR_ARG;
  }
  auto two = std::make_unique<TwoShot>(ch, args, seq);
  int rc = two->start();
  if (rc != MPI_SUCCESS) return rc;
  *op = std::move(two);
  return MPI_SUCCESS;
}

}  // namespace mpizip::coll
