// The two-shot allreduce's engine (coll/allreduce.h), as one operation: its per-piece state, the
// layout of its buffers in the backend's memory, and the steps. Private to coll/: allreduce.cc
// holds the operation's life (hellos, slots, fallbacks, completion), twoshot_pieces.cc the steps of
// one piece (reduce-scatter, fold, all-gather).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "coll/allreduce.h"
#include "coll/backend.h"
#include "coll/plan.h"
#include "coll/wire.h"
#include "src/platform/buffers.h"
#include "src/platform/operation.h"
#include "src/platform/status.h"
#include "src/transport/transport.h"

namespace mpizip::coll {

inline constexpr uint64_t kNone = ~uint64_t{0};
inline constexpr uint64_t kArenaAlign = 256;

// The offsets of one slot's buffers in the backend's arenas (work: the backend's memory; staging:
// pinned host memory), kNone where the collective does not need the buffer. Slot s's buffers are at
// s times the slot's stride.
struct PeerLayout {
  uint64_t rs_out = kNone;   // work: the stream of the piece sent to this peer
  uint64_t rs_land = kNone;  // work, or staging when staged: this peer's reduce-scatter piece lands
  uint64_t rs_dev = kNone;   // work (staged): the landed piece, copied to the device
  uint64_t rs_temp = kNone;  // work: the landed stream, decoded
  uint64_t rs_stage = kNone;  // staging: the piece sent to this peer
  uint64_t ag_land = kNone;   // work, or staging when staged: this peer's all-gather stream lands
  uint64_t ag_dev = kNone;    // work (staged): the landed stream, copied to the device
  uint64_t ag_stage = kNone;  // staging: this peer's raw all-gather piece lands
  // Prefix reductions (AllreduceArgs::Shape::kScan, kExscan): this peer's own prefix of this rank's
  // piece, raw and compressed, and its copy in pinned memory when staged.
  uint64_t scan_res = kNone;    // work
  uint64_t scan_out = kNone;    // work
  uint64_t scan_stage = kNone;  // staging
};

struct SlotLayout {
  std::vector<PeerLayout> peer;
  uint64_t ag_out = kNone;      // work: this rank's reduced piece, compressed
  uint64_t ag_stage_c = kNone;  // staging: that stream
  uint64_t ag_stage_r = kNone;  // staging: the reduced piece, raw
  uint64_t work = 0;            // stride of a slot in each arena
  uint64_t staging = 0;
};

// The Result entries of one slot, per peer: the reduce-scatter compression, the reduce-scatter
// decoding, the all-gather decoding, and the all-gather compression (the first entry alone, but for
// a prefix reduction, which compresses a piece of its own for each peer).
enum ResultGroup { kRsEncode = 0, kRsDecode = 1, kAgDecode = 2, kAgEncode = 3 };
inline constexpr int kResultGroups = 4;

// Where a piece's batch of sends (reduce-scatter, or all-gather) stands: waiting for its
// compression (all-gather: for the fold), for its copy to pinned memory, or posted.
enum class SendStep { kEncoding, kStaging, kPosted };

class TwoShot : public platform::Operation {
 public:
  TwoShot(const Channel& ch, const AllreduceArgs& a, uint64_t seq);
  ~TwoShot() override;
  // Prepares (prepare()) and posts the hellos: saying that this rank fails the collective when it
  // could not prepare, so that every rank reports the error instead of waiting for it. An error
  // only when the hellos cannot be posted.
  Status start();
  bool progress() override;

 private:
  // One piece index in flight: its transfers (one slot per peer, null once done), fences and steps.
  struct Piece {
    uint64_t j = 0;
    int slot = 0;
    std::vector<std::unique_ptr<transport::Transfer>> rs_send, rs_recv, ag_send, ag_recv;
    // Reduce-scatter, sending side.
    SendStep rs_step = SendStep::kPosted;
    std::vector<int> rs_encoded_peers;  // job order of the batched compression
    std::vector<uint64_t> rs_sizes;     // per peer: stream bytes (staged sends)
    std::unique_ptr<Fence> rs_fence;
    // Reduce-scatter, owner side.
    int rs_pending = 0;
    std::vector<const void*> inputs;  // the fold's inputs, in rank order
    std::vector<uint64_t> streams;    // per rank: bytes of a stream the fold decodes, else 0
    int rs_decodes = 0;               // Result entries of kRsDecode used
    bool folded = false;              // decoding, fold and all-gather compression enqueued
    std::unique_ptr<Fence> fold_fence;
    bool poisoned = false;  // a contribution failed: the all-gather sends nothing
    // All-gather, owner side.
    SendStep ag_step = SendStep::kPosted;
    uint64_t ag_bytes = 0;  // the compressed piece's size
    std::unique_ptr<Fence> ag_fence;
    std::vector<uint64_t> ag_sizes;  // prefix reductions, per peer: stream bytes (staged sends)
    // All-gather, receiving side.
    int ag_pending = 0;
    int ag_decodes = 0;  // Result entries of kAgDecode used
    struct Decode {
      std::unique_ptr<Fence> fence;
      int first = 0, n = 0;          // its Result entries
      std::vector<uint64_t> counts;  // the elements each must deliver
    };
    std::vector<Decode> decodes;
    // Per peer, the messages of this piece posted so far (PostedBits): what a drain still owes.
    std::vector<uint8_t> posted;
  };
  enum PostedBits : uint8_t { kRsOut = 1, kRsIn = 2, kAgOut = 4, kAgIn = 8 };

  // One stream of messages a draining rank still receives from one peer (a reduce-scatter or an
  // all-gather message per piece), into a buffer of its own, one piece at a time in piece order
  // (the order the peer sends them in). A piece whose receive was posted before the drain is
  // skipped.
  struct DrainLane {
    int peer = 0;
    Kind kind = Kind::kReduceScatter;
    uint64_t next = 0;  // the next piece to look at
    uint64_t piece = 0;  // the piece `t` receives
    platform::HostBuffer sink;  // the largest piece's size
    std::unique_ptr<transport::Transfer> t;
  };

  // Puts the input in the output's memory, and takes a backend.
  Status prepare();
  // The phases: the hellos until all have arrived and agree; then the slots and the pieces.
  Status advance_hello();
  Status begin_pieces();
  // Lays out the slots' buffers for this rank's memory and what its peers send, and reserves them.
  Status reserve_slots();
  Status advance_pieces();
  // The steps of one piece (twoshot_pieces.cc).
  Status start_piece(Piece& p);
  Status rs_sends(Piece& p);
  Status rs_receives(Piece& p);
  Status fold(Piece& p);
  Status ag_sends(Piece& p);
  // A prefix reduction's fold and all-gather sends: a piece of its own for each peer.
  Status fold_prefixes(Piece& p);
  Status ag_sends_prefixes(Piece& p);
  // Whether the piece's decoded reduce-scatter streams all decoded (else the piece is poisoned).
  void check_rs_decodes(Piece& p);
  Status ag_receives(Piece& p);
  // Records which of the piece's messages have been posted (Piece::posted).
  void note_posted(Piece& p);
  // Drops the sends that have completed.
  Status poll_sends(std::vector<std::unique_ptr<transport::Transfer>>& sends);
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
  // After kStallSeconds without a completion: one line at info level saying what the collective
  // waits for (every piece's steps and transfers still pending), to tell a slow peer from a hang.
  void report_stall() const;
  // Every transfer, fence and step of the piece is done: its slot is free.
  bool piece_done(const Piece& p) const;

  // Whether rank `from` sends rank `to` its reduce-scatter (all-gather) message of a piece: always
  // in an allreduce; in a broadcast the reduce-scatter comes from the root alone and the
  // all-gather goes to every rank but the root; an allgather has no reduce-scatter, a
  // reduce-scatter and an alltoall no all-gather (AllreduceArgs::shape).
  bool prefixes() const {
    return a_.shape == AllreduceArgs::Shape::kScan || a_.shape == AllreduceArgs::Shape::kExscan;
  }
  bool rs_flows(int from, int to) const {
    using S = AllreduceArgs::Shape;
    switch (a_.shape) {
      case S::kBcast: return from != to && from == a_.root;
      case S::kAllgather: return false;
      default: return from != to;
    }
  }
  bool ag_flows(int from, int to) const {
    using S = AllreduceArgs::Shape;
    switch (a_.shape) {
      case S::kReduceScatter: case S::kAlltoall: return false;
      case S::kReduce: return from != to && to == a_.root;
      case S::kBcast: return from != to && to != a_.root;
      case S::kExscan: return from != to && to != 0;
      default: return from != to;
    }
  }
  // Whether this rank folds its shard: not where its shard is in its output already (a broadcast's
  // root, every rank of an allgather).
  bool folds() const {
    using S = AllreduceArgs::Shape;
    return a_.shape != S::kAllgather && (a_.shape != S::kBcast || me_ != a_.root);
  }
  // Whether a piece of `n` elements travels compressed from this rank to `peer`, or from `peer`.
  bool compressed_to(int peer, uint64_t n) const;
  bool compressed_from(int peer, uint64_t n) const;

  // A buffer of piece p's slot, from its offset in the layout.
  uint8_t* work(const Piece& p, uint64_t off) const {
    return backend_->work() + p.slot * layout_.work + off;
  }
  uint8_t* staging(const Piece& p, uint64_t off) const {
    return backend_->staging() + p.slot * layout_.staging + off;
  }
  // Where a peer's piece lands: pinned host memory when staged, else the backend's memory.
  uint8_t* landing(const Piece& p, uint64_t off) const {
    return staged_ ? staging(p, off) : work(p, off);
  }
  Result* results(const Piece& p, ResultGroup g) const {
    return backend_->results() + p.slot * kResultGroups * nranks_ + g * nranks_;
  }
  // Element `elem` of the application's input and output.
  const uint8_t* in_at(uint64_t elem) const {
    return static_cast<const uint8_t*>(a_.input) + elem * eb_;
  }
  uint8_t* out_at(uint64_t elem) const { return static_cast<uint8_t*>(a_.output) + elem * eb_; }

  // Posts a transfer; post_send counts it in the traffic, post_empty sends an empty message in
  // place of a piece that could not be produced.
  Status post_send(const void* buf, uint64_t bytes, transport::Memory where, int peer, uint64_t tag,
                   uint64_t app_bytes, bool compressed, std::unique_ptr<transport::Transfer>* out);
  Status post_empty(int peer, uint64_t tag, std::unique_ptr<transport::Transfer>* out);
  // The last step of staged sends (the reduce-scatter's, the prefixes' all-gather's): once the
  // copies into pinned memory are done (`fence`), each peer with a stream (`sizes`, at its
  // PeerLayout offset `stage`) is sent it; app(q): its application bytes. Then `*step` is kPosted.
  template <class AppBytes>
  Status post_staged(Piece& p, uint64_t tag, std::unique_ptr<Fence>& fence,
                     const std::vector<uint64_t>& sizes, uint64_t PeerLayout::*stage, AppBytes app,
                     std::vector<std::unique_ptr<transport::Transfer>>& sends, SendStep* step);
  Status post_recv(void* buf, uint64_t bytes, transport::Memory where, int peer, uint64_t tag,
                   std::unique_ptr<transport::Transfer>* out);
  // A piece that failed (`peer`: where it came from, -1 for this rank): logs it and keeps the first
  // such error, MPIZip's corrupt-payload error, for the collective's status.
  void data_error(const char* what, int peer, uint64_t j);
  // The device path cannot run (`why`: no stream, no device memory): this rank continues on host
  // copies of its buffers with the CPU backend, which its peers cannot tell apart (one wire format,
  // and the CPU codec honours the hellos), and copies the result back when done.
  Status stage_to_host(Status why);
  // A failure: ends the collective with that status on this rank. A transport failure (nothing
  // more can be exchanged) ends it at once; any other (a device error, memory exhausted, a broken
  // invariant) drains it first (drain()).
  void abort(Status s);
  // Ends the collective at once with status `s`: what is posted is cancelled or waited for.
  void end_now(Status s);
  // This rank's part failed after the hellos: it stops computing, sends every message it still
  // owes empty (so that each peer reports the failure instead of waiting for it) and receives,
  // discarding them, every message it is still owed (so that no peer waits on a send and no
  // message is left to the next collective); the collective ends when all have completed.
  void drain(Status s);
  Status advance_drain();
  // Whether piece j's message `bit` (PostedBits) for `peer` was posted before the drain.
  bool posted_before_drain(uint64_t j, int peer, uint8_t bit) const;
  // A piece this rank depends on came empty from `peer`: that rank's part failed.
  void peer_failed(int peer, uint64_t j);
  // Completes the operation: the result copied back when staged, the status, the backend back to
  // the pool, the statistics.
  void finish();

  Channel ch_;
  AllreduceArgs a_;
  uint64_t seq_;
  std::unique_ptr<Backend> backend_;
  Plan plan_;
  int me_, nranks_;
  uint64_t eb_;
  bool staged_;              // device buffers over a transport that cannot reach device memory
  transport::Memory space_;  // where the buffers live
  uint64_t largest_;         // elements of the largest piece
  uint64_t cap_;             // bytes of the largest piece's stream, at most

  enum class Phase { kHello, kPieces, kDrain, kDone } phase_ = Phase::kHello;
  std::vector<uint8_t> compress_to_;  // per peer: this rank's hello says it compresses for the peer
  // The cost model asked whether this call compresses (Channel::cost): its answer, and the
  // call's start, so that the model learns what the call took.
  bool observe_ = false;
  bool model_compress_ = false;
  std::chrono::steady_clock::time_point started_;
  std::vector<Hello> hello_out_, hello_in_;  // per peer; hello_out_[me_]: this rank's arguments
  std::vector<std::unique_ptr<transport::Transfer>> hello_send_, hello_recv_;
  std::vector<uint64_t> hello_bytes_;
  Status hello_error_;  // the ranks' arguments disagree
  bool failed_ = false;  // this rank could not prepare: its hellos say so
  Status failure_ = Status::kInternal;  // why (its own collective fails with it)

  SlotLayout layout_;
  int slots_ = 0;
  std::vector<uint8_t> slot_busy_;
  uint64_t next_piece_ = 0;
  std::deque<Piece> active_;
  Status error_;  // first error of the pieces
  uint64_t drain_from_ = 0;       // Phase::kDrain: the first piece not started before it
  std::vector<DrainLane> lanes_;  // and what this rank still receives
  std::vector<std::unique_ptr<transport::Transfer>> drain_sends_;  // and the empty sends it owes
  bool backend_failed_ = false;  // a device error: the backend is not reused
  Traffic traffic_;
  std::vector<uint8_t> host_in_, host_out_;  // host copies of device buffers (stage_to_host)
  void* device_output_ = nullptr;            // the output they stand for
  uint64_t events_ = 0;                      // transfers and fences seen complete
  int idle_polls_ = 0;                       // progress() calls in a row that completed nothing
  std::chrono::steady_clock::time_point idle_since_;  // the first of them
  bool stall_reported_ = false;              // report_stall() has written its line
};

}  // namespace mpizip::coll
