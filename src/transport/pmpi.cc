#include "src/transport/pmpi.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "src/platform/device.h"
#include "src/platform/log.h"
#include "src/transport/device_ops.h"
#include "src/transport/ipc.h"
#include "src/transport/node_flags.h"
#include "src/transport/mpi_calls.h"
#include "src/transport/segments.h"
#include "src/transport/staging.h"

namespace mpizip::transport {
namespace {

enum Role : int { kHeaderRole = 0, kSegmentRole = 1, kFinRole = 2, kRoles = 3 };

constexpr uint32_t kMagic = 0x4d5a5450;  // "MZTP"
constexpr uint32_t kVersion = 2;
constexpr uint32_t kNoClaim = UINT32_MAX;
// How long an IPC sender waits for its receiver to claim the buffer before it copies the buffer
// into memory of its own and completes (node_flags.h): at least kClaimWaitNs, and as long as that
// copy itself would take (bytes over kMoveBytesPerNs: 10 GB/s, an estimate of the
// device-to-pageable-host rate, not measured). So a receiver that sits in a wait takes the buffer (one copy), one that is busy pulling
// the messages posted before it (a window of large sends) still takes it before copying aside
// would have paid off, and a sender whose receiver is elsewhere (inside a call MPIZip passes
// through) completes within twice what the copy alone costs.
constexpr int64_t kClaimWaitNs = 50'000;
constexpr int64_t kMoveBytesPerNs = 10;

int64_t claim_wait_ns(uint64_t bytes) {
  return std::max<int64_t>(kClaimWaitNs, static_cast<int64_t>(bytes / kMoveBytesPerNs));
}

enum class Mode : uint32_t { kInline = 1, kIpc = 2 };
enum class Fin : uint32_t { kPulled = 1, kSendInline = 2, kFailed = 3 };

// The first message of every transfer, S -> R.
struct Header {
  uint32_t magic = kMagic;
  uint32_t version = kVersion;
  Mode mode = Mode::kInline;
  uint64_t bytes = 0;
  int64_t posted_ns = 0;  // S's CLOCK_MONOTONIC when it posted the transfer
  LinkSlot slot;          // the transfer's time on the emulated link, if paced
  IpcDescriptor ipc;      // S's buffer, for Mode::kIpc
  uint32_t claim = kNoClaim;  // Mode::kIpc: S's claim slot (node_flags.h), or none
};

// R -> S, the answer to an IPC header.
struct FinMessage {
  uint32_t magic = kMagic;
  Fin code = Fin::kPulled;
};

class PmpiTransfer;

// Senders' copies of IPC buffers their receivers had not claimed in time (node_flags.h), each kept
// with the segments posted from it until MPI has sent them all. The claim slot is the receiver's to
// free, once it has seen it kMoved (MPI may finish an eager send long before the receiver reads the
// header that names the slot: a slot freed then would leave that receiver waiting for a move that
// it can no longer see, or would let the slot's next transfer be taken for this one). An operation
// of its own, so that the copies outlive the transport when the communicator is freed before the
// receivers took them (Transport::take_unsent).
class MovedCopies final : public platform::Operation {
 public:
  struct Copy {
    std::vector<char> bytes;
    std::unique_ptr<Segments> segments;
    std::shared_ptr<NodeFlags> flags;
    uint32_t slot;
  };
  ~MovedCopies() override {
    if (!copies_.empty()) {
      MPIZIP_WARN("%zu moved IPC send(s) abandoned before their receivers took them",
                  copies_.size());
    }
    for (Copy& c : copies_) c.segments->abandon();
  }
  void add(Copy c) { copies_.push_back(std::move(c)); }
  bool empty() const { return copies_.empty(); }
  // Releases the copies MPI has sent (or whose segments failed: their receivers report it).
  bool progress() override {
    for (size_t i = 0; i < copies_.size();) {
      Copy& c = copies_[i];
      bool sent = false;
      if (c.segments->advance(&sent) != Status::kOk || sent) {
        copies_[i] = std::move(copies_.back());
        copies_.pop_back();
      } else {
        ++i;
      }
    }
    return copies_.empty();
  }

 private:
  std::vector<Copy> copies_;
};

class PmpiTransport final : public Transport {
 public:
  PmpiTransport(MPI_Comm comm, int size, int tag_ub, PmpiConfig config)
      : comm_(comm),
        size_(size),
        tags_((static_cast<uint64_t>(tag_ub) + 1) / kRoles),
        config_(std::move(config)),
        pool_(StagingPool::shared(config_.staging_bytes)),
        ipc_cache_(IpcCache::shared()),
        own_flags_(std::count(config_.ipc.begin(), config_.ipc.end(), 1) > 0 ? NodeFlags::own()
                                                                             : nullptr) {}

  const char* name() const override { return config_.name.c_str(); }
  double link_rate(int peer) const override {
    return config_.link != nullptr ? config_.link->rate(peer) : 0;
  }
  bool reaches_device_memory() const override { return config_.device_direct; }
  Status isend(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override;
  Status irecv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override;
  void progress() override;
  bool same_node(int peer) const override {
    return peer >= 0 && peer < size_ && config_.same_node[peer] != 0;
  }
  bool device_sends_settle(int peer) const override {
    return peer >= 0 && peer < size_ && config_.ipc[peer] != 0 && own_flags_ != nullptr;
  }

  // What transfers use.
  MPI_Comm comm() const { return comm_; }
  int mpi_tag(uint64_t tag, Role role) const {
    return static_cast<int>(tag % tags_) * kRoles + role;
  }
  bool ipc_to(int peer) const { return config_.ipc[peer] != 0; }
  LinkSlot reserve(int peer, uint64_t bytes) {
    return config_.link != nullptr ? config_.link->reserve(peer, bytes) : LinkSlot{};
  }
  IpcCache& ipc_cache() { return *ipc_cache_; }
  // The stream of this transport's GPU copies, created on first use.
  Status stream(platform::Stream** out);
  // Where the segments of transfer `tag` with `peer` go.
  Status segment_route(int peer, uint64_t tag, bool device, SegmentRoute* out);
  void attach(PmpiTransfer* t) { live_.push_back(t); }
  void detach(PmpiTransfer* t) { live_.erase(std::find(live_.begin(), live_.end(), t)); }
  // Keeps a sender's host copy of a buffer it moved (node_flags.h) and the segments posted from it
  // until MPI has sent them all; then the claim slot is free again.
  void keep_moved(std::vector<char> copy, std::unique_ptr<Segments> segments,
                  std::shared_ptr<NodeFlags> flags, uint32_t slot) {
    moved_->add(MovedCopies::Copy{std::move(copy), std::move(segments), std::move(flags), slot});
  }
  void count_moved() { ++moved_count_; }
  std::unique_ptr<platform::Operation> take_unsent() override {
    if (moved_->empty()) return nullptr;
    return std::exchange(moved_, std::make_unique<MovedCopies>());
  }
  // IPC pulls under way (GPU copies and claim flags only) and moved copies already pulled.
  void progress_without_mpi() override;
  ~PmpiTransport() override;

 private:
  Status check(const void* buf, uint64_t bytes, Memory where, int peer) const;

  MPI_Comm comm_;
  int size_;
  uint64_t tags_;  // distinct 64-bit tags the MPI tag space holds: (MPI_TAG_UB + 1) / kRoles
  PmpiConfig config_;
  std::shared_ptr<StagingPool> pool_;
  std::shared_ptr<IpcCache> ipc_cache_;
  std::shared_ptr<NodeFlags> own_flags_;  // this process's claim flags, where IPC is possible
  platform::Stream stream_;
  bool stream_ready_ = false;
  std::vector<PmpiTransfer*> live_;  // transfers not yet destroyed, for progress()
  // Senders' copies whose segments MPI has not sent yet.
  std::unique_ptr<MovedCopies> moved_ = std::make_unique<MovedCopies>();
  uint64_t moved_count_ = 0;  // IPC sends copied aside (for the log)
};

// What send and receive transfers share: registration for the transport's progress(), and the
// outcome, kept once the transfer has ended.
class PmpiTransfer : public Transfer {
 public:
  explicit PmpiTransfer(PmpiTransport* t) : transport_(t) { t->attach(this); }
  ~PmpiTransfer() override { transport_->detach(this); }

  Status test(bool* done) final {
    poke();
    *done = done_ || status_ != Status::kOk;
    return status_;
  }

  // Advances once if the transfer is still running.
  void poke() {
    if (status_ == Status::kOk && !done_) status_ = advance(&done_);
  }
  // Advances what needs no MPI call (an IPC pull's GPU copies and claim flag), from any thread
  // that holds the transport.
  virtual void poke_without_mpi() {}
  bool needs_sender() const override { return segments_ != nullptr && segments_->needs_sender(); }

 protected:
  // Advances without blocking; *done once the bytes have left (send) or landed (receive).
  virtual Status advance(bool* done) = 0;
  // After a failure: cancels the receives MPI has not matched and waits for everything else under
  // way, so that nothing touches the buffer afterwards.
  virtual void abandon() = 0;

  // Brings an unfinished transfer to its end before it is destroyed: drives it to completion, or
  // abandons it after a failure. The final class's destructor calls it.
  void settle() {
    while (status_ == Status::kOk && !done_) status_ = advance(&done_);
    if (status_ != Status::kOk && status_ != Status::kTruncated) abandon();
  }

  PmpiTransport* transport_;
  Status status_ = Status::kOk;
  bool done_ = false;
  std::unique_ptr<Segments> segments_;  // inline bytes, either way
};

class SendTransfer final : public PmpiTransfer {
 public:
  SendTransfer(PmpiTransport* t, const void* buf, uint64_t bytes, bool device, int peer,
               uint64_t tag)
      : PmpiTransfer(t), buf_(buf), bytes_(bytes), device_(device), peer_(peer), tag_(tag) {}
  ~SendTransfer() override { settle(); }

  std::string describe() const override {
    char line[160];
    std::snprintf(line, sizeof line, "send %llu B %s: header %s, %s%s%s",
                  static_cast<unsigned long long>(bytes_),
                  header_.mode == Mode::kIpc ? "ipc" : "inline",
                  header_req_ == MPI_REQUEST_NULL ? "sent" : "pending",
                  pulled_ ? "pulled" : fin_req_ != MPI_REQUEST_NULL ? "awaiting answer" : "no answer",
                  flags_ != nullptr ? ", claim slot held" : "",
                  segments_ != nullptr ? ", segments" : "");
    return line;
  }

  // Posts the header, and the fin receive (IPC) or the segments (inline).
  Status start() {
    status_ = post();
    poke();
    return status_;
  }

 private:
  Status post() {
    header_.bytes = bytes_;
    header_.posted_ns = monotonic_ns();
    header_.slot = transport_->reserve(peer_, bytes_);
    if (device_ && bytes_ > 0 && transport_->ipc_to(peer_)) {
      // The receiver reads the buffer from another process, outside every stream order of this
      // one: the application's last writes to it (a cudaMemcpy from pageable memory returns before
      // its DMA lands) must have finished first.
      if (platform::synchronize_default_stream() == Status::kOk &&
          ipc_describe(buf_, bytes_, &header_.ipc) == Status::kOk) {
        header_.mode = Mode::kIpc;
        // A claim slot, so that the send completes without its receiver (node_flags.h).
        if ((flags_ = NodeFlags::own()) != nullptr && flags_->take(&header_.claim) != Status::kOk) {
          header_.claim = kNoClaim;
          flags_.reset();
        }
      } else {
        MPIZIP_LOG_ONCE(kInfo, "CUDA IPC cannot share a device buffer (memory not from "
                               "cudaMalloc?); staging it through host memory");
      }
    }
    MPI_Comm comm = transport_->comm();
    MPIZIP_CHECK(mpi_status(PMPI_Isend(&header_, sizeof header_, MPI_BYTE, peer_,
                                       transport_->mpi_tag(tag_, kHeaderRole), comm, &header_req_),
                            "PMPI_Isend"));
    if (header_.mode == Mode::kIpc) {
      return mpi_status(PMPI_Irecv(&fin_, sizeof fin_, MPI_BYTE, peer_,
                                   transport_->mpi_tag(tag_, kFinRole), comm, &fin_req_),
                        "PMPI_Irecv");
    }
    return send_inline();
  }

  Status send_inline() {
    SegmentRoute route;
    MPIZIP_CHECK(transport_->segment_route(peer_, tag_, device_, &route));
    return send_segments(route, buf_, bytes_, device_, &segments_);
  }

  Status advance(bool* done) override {
    int flag = 0;
    MPIZIP_CHECK(mpi_status(PMPI_Test(&header_req_, &flag, MPI_STATUS_IGNORE), "PMPI_Test"));
    if (fin_req_ != MPI_REQUEST_NULL) {
      MPIZIP_CHECK(mpi_status(PMPI_Test(&fin_req_, &flag, MPI_STATUS_IGNORE), "PMPI_Test"));
      if (flag) MPIZIP_CHECK(on_fin());
    }
    if (flags_ != nullptr && !pulled_ && segments_ == nullptr) MPIZIP_CHECK(settle_claim());
    bool sent = pulled_;
    if (segments_ != nullptr) MPIZIP_CHECK(segments_->advance(&sent));
    *done = sent && header_req_ == MPI_REQUEST_NULL &&
            (!header_.slot.paced || monotonic_ns() >= header_.slot.end_ns);
    return Status::kOk;
  }

  // The claim slot of an IPC transfer: the receiver pulled (the buffer is free), or has not claimed
  // it for claim_wait_ns() (the buffer is copied into memory of this rank's, which the receiver pulls
  // from later, and the transfer completes).
  Status settle_claim() {
    const Claim c = flags_->state(header_.claim);
    if (c == Claim::kPulled) return claimed_done(true);
    // Waited for from the post, or from the last time a receiver claimed or pulled one of this
    // process's slots, whichever is later (node_flags.h: a receiver busy with earlier messages).
    // On the emulated link, not before the transfer's slot starts: the bytes could not move sooner.
    int64_t since = std::max(header_.posted_ns, flags_->touched_ns());
    if (header_.slot.paced) since = std::max(since, header_.slot.start_ns);
    if (c != Claim::kWaiting || monotonic_ns() - since < claim_wait_ns(bytes_)) {
      return Status::kOk;
    }
    if (!flags_->claim(header_.claim, Claim::kWaiting, Claim::kMoving)) return Status::kOk;
    // The bytes go to host memory of this rank's and from there to MPI, which moves them whatever
    // either side does next; the receiver takes them as segments (pmpi.h, "IPC").
    std::vector<char> copy;
    std::unique_ptr<Segments> segments;
    Status s = Status::kOk;
    try {
      copy.resize(bytes_);
    } catch (const std::bad_alloc&) {
      s = Status::kOutOfMemory;
    }
    if (ok(s)) s = platform::copy_to_host(copy.data(), buf_, bytes_);
    SegmentRoute route;
    if (ok(s)) s = transport_->segment_route(peer_, tag_, false, &route);
    // Every segment is posted now (send_segments), so that MPI moves them whatever this rank
    // does next.
    if (ok(s)) s = send_segments(route, copy.data(), bytes_, false, &segments);
    bool sent = false;
    if (ok(s)) s = segments->advance(&sent);  // posts every segment
    if (!ok(s)) {
      if (segments != nullptr) segments->abandon();
      // No memory to move the bytes to: wait for the receiver after all.
      flags_->set(header_.claim, Claim::kWaiting);
      MPIZIP_LOG_ONCE(kInfo, "an IPC send cannot copy its buffer aside (%s); it waits for its "
                             "receiver", status_string(s));
      header_.posted_ns = INT64_MAX / 2;  // no second attempt
      return Status::kOk;
    }
    flags_->set(header_.claim, Claim::kMoved);
    transport_->count_moved();
    transport_->keep_moved(std::move(copy), std::move(segments), flags_, header_.claim);
    return claimed_done(false);
  }

  // The application's buffer is free: the receiver pulled from it (the slot is free again) or the
  // transport keeps a copy (keep_moved). The answer the receiver sends only on a failure is not
  // awaited.
  Status claimed_done(bool pulled) {
    if (pulled) flags_->give_back(header_.claim);
    flags_.reset();
    pulled_ = true;
    cancel_and_wait(&fin_req_, true);
    return Status::kOk;
  }

  // The receiver's answer to an IPC header.
  Status on_fin() {
    if (fin_.magic != kMagic) {
      MPIZIP_WARN("transport %s: malformed answer from rank %d", transport_->name(), peer_);
      return Status::kTransportError;
    }
    if (fin_.code != Fin::kPulled && flags_ != nullptr) {
      flags_->give_back(header_.claim);  // the receiver claimed it and leaves it
      flags_.reset();
    }
    switch (fin_.code) {
      case Fin::kPulled:
        pulled_ = true;
        return Status::kOk;
      case Fin::kSendInline:
        return send_inline();
      case Fin::kFailed:
        break;
    }
    MPIZIP_WARN("transport %s: rank %d failed to copy a device buffer out of this rank",
                transport_->name(), peer_);
    return Status::kTransportError;
  }

  void abandon() override {
    if (segments_ != nullptr) segments_->abandon();
    cancel_and_wait(&fin_req_, true);
    cancel_and_wait(&header_req_, false);
    // A slot the receiver has not claimed is taken back; one it claimed is left to it.
    if (flags_ != nullptr && flags_->claim(header_.claim, Claim::kWaiting, Claim::kFree)) {
      flags_.reset();
    }
  }

  const void* buf_;
  uint64_t bytes_;
  bool device_;
  int peer_;
  uint64_t tag_;
  Header header_;
  FinMessage fin_;
  MPI_Request header_req_ = MPI_REQUEST_NULL;
  MPI_Request fin_req_ = MPI_REQUEST_NULL;
  bool pulled_ = false;  // the receiver copied the bytes through IPC (or the transport keeps them)
  std::shared_ptr<NodeFlags> flags_;  // the claim slot's segment, while the slot is this send's
};

class RecvTransfer final : public PmpiTransfer {
 public:
  RecvTransfer(PmpiTransport* t, void* buf, uint64_t capacity, bool device, int peer, uint64_t tag)
      : PmpiTransfer(t), buf_(buf), capacity_(capacity), device_(device), peer_(peer), tag_(tag) {}

  // A receive whose header has not come is cancelled; any other is brought to its end.
  ~RecvTransfer() override {
    if (status_ == Status::kOk && !have_header_) {
      (void)PMPI_Cancel(&header_req_);
      MPI_Status st;
      if (PMPI_Wait(&header_req_, &st) != MPI_SUCCESS) return;
      int cancelled = 0;
      PMPI_Test_cancelled(&st, &cancelled);
      if (cancelled) return;
      status_ = on_header(st);
    }
    settle();
  }

  Status start() {
    status_ = mpi_status(PMPI_Irecv(&header_, sizeof header_, MPI_BYTE, peer_,
                                    transport_->mpi_tag(tag_, kHeaderRole), transport_->comm(),
                                    &header_req_),
                         "PMPI_Irecv");
    return status_;
  }

  uint64_t received_bytes() const override { return received_; }

  std::string describe() const override {
    char line[200];
    const int64_t left = complete_ns_ == 0 ? 0 : complete_ns_ - monotonic_ns();
    std::snprintf(line, sizeof line,
                  "recv %llu B: %s%s%s%s%s, copied %llu, answer %s, link %lld us left",
                  static_cast<unsigned long long>(capacity_),
                  have_header_ ? (header_.mode == Mode::kIpc ? "ipc header" : "inline header")
                               : "no header",
                  pulling_ ? ", pulling" : "", pulled_ ? ", pulled" : "",
                  awaiting_move_ ? ", awaiting move" : "", segments_ != nullptr ? ", segments" : "",
                  static_cast<unsigned long long>(copied_),
                  fin_req_ != MPI_REQUEST_NULL ? "pending" : pending_answer_ ? "queued" : "none",
                  static_cast<long long>(left / 1000));
    return line;
  }

 private:
  Status advance(bool* done) override {
    *done = false;
    if (!have_header_) {
      int flag = 0;
      MPI_Status st;
      MPIZIP_CHECK(mpi_status(PMPI_Test(&header_req_, &flag, &st), "PMPI_Test"));
      if (!flag) return Status::kOk;
      MPIZIP_CHECK(on_header(st));
    }
    if (awaiting_move_) MPIZIP_CHECK(take_moved());
    if (pulling_) MPIZIP_CHECK(pull());
    if (pending_answer_) {
      pending_answer_ = false;
      MPIZIP_CHECK(answer(answer_code_));
    }
    int flag = 0;
    MPIZIP_CHECK(mpi_status(PMPI_Test(&fin_req_, &flag, MPI_STATUS_IGNORE), "PMPI_Test"));
    bool landed = pulled_;
    Status data = Status::kOk;
    if (segments_ != nullptr) {
      data = segments_->advance(&landed);
      if (data != Status::kOk && data != Status::kTruncated) return data;
    }
    *done = landed && fin_req_ == MPI_REQUEST_NULL &&
            (complete_ns_ == 0 || monotonic_ns() >= complete_ns_);
    return *done && header_.bytes > capacity_ ? Status::kTruncated : Status::kOk;
  }

  // The header has arrived: check it, then take the bytes the way it says.
  Status on_header(const MPI_Status& st) {
    have_header_ = true;
    int count = 0;
    PMPI_Get_count(&st, MPI_BYTE, &count);
    if (count != static_cast<int>(sizeof header_) || header_.magic != kMagic ||
        header_.version != kVersion ||
        (header_.mode != Mode::kInline && header_.mode != Mode::kIpc)) {
      MPIZIP_WARN("transport %s: malformed header from rank %d", transport_->name(), peer_);
      return Status::kTransportError;
    }
    received_ = std::min(header_.bytes, capacity_);
    if (header_.slot.paced) {
      // Not complete before the bytes arrive on the emulated link. The sender's clock is ours on
      // one machine; the second bound keeps a receiver on another machine from waiting longer
      // than the transfer's own duration on the link.
      const int64_t now = monotonic_ns();
      complete_ns_ =
          std::min(header_.slot.arrive_ns, now + header_.slot.arrive_ns - header_.posted_ns);
    }
    if (header_.mode == Mode::kIpc && header_.claim != kNoClaim) {
      // The sender may complete without this rank (node_flags.h): claim its buffer first.
      flags_ = NodeFlags::peer(header_.ipc.process);
      if (flags_ == nullptr) {
        MPIZIP_WARN("transport %s: cannot open rank %d's claim flags", transport_->name(), peer_);
        (void)answer(Fin::kFailed);
        return Status::kTransportError;
      }
      if (flags_->claim(header_.claim, Claim::kWaiting, Claim::kPulling)) {
        flags_->touch();
        if (transport_->ipc_cache().map(header_.ipc, &mapping_) == Status::kOk) {
          pulling_ = true;
          return pull();
        }
        flags_.reset();  // the sender sends the bytes inline instead, and takes the slot back
        MPIZIP_CHECK(answer(Fin::kSendInline));
      } else {
        awaiting_move_ = true;  // the sender is copying its buffer aside, or has
        return take_moved();
      }
    } else if (header_.mode == Mode::kIpc) {
      if (transport_->ipc_cache().map(header_.ipc, &mapping_) == Status::kOk) {
        pulling_ = true;
        return pull();
      }
      MPIZIP_CHECK(answer(Fin::kSendInline));
    }
    SegmentRoute route;
    MPIZIP_CHECK(transport_->segment_route(peer_, tag_, device_, &route));
    return recv_segments(route, buf_, capacity_, header_.bytes, device_, &segments_);
  }

  // Copies out of the sender's mapped buffer: at once, or chunk by chunk as the chunks' slots on
  // the emulated link start. Answers the sender once the copies have finished (or failed).
  Status pull() {
    platform::Stream* stream = nullptr;
    Status s = transport_->stream(&stream);
    const char* src = static_cast<const char*>(mapping_.address());
    char* dst = static_cast<char*>(buf_);
    while (s == Status::kOk && copied_ < received_) {
      if (header_.slot.paced && header_.slot.release_ns(copied_, header_.bytes) > monotonic_ns()) {
        return Status::kOk;
      }
      const uint64_t n = header_.slot.paced ? std::min(kSegmentBytes, received_ - copied_)
                                            : received_ - copied_;
      s = platform::copy_async(dst + copied_, src + copied_, n, *stream);
      copied_ += n;
    }
    if (s == Status::kOk && !fenced_) {
      s = fence_.record(*stream);
      fenced_ = s == Status::kOk;
    }
    bool finished = false;
    if (s == Status::kOk) s = fence_.query(&finished);
    if (s != Status::kOk) {
      (void)answer(Fin::kFailed);
      return s;
    }
    if (!finished) return Status::kOk;
    pulling_ = false;
    pulled_ = true;
    mapping_ = IpcMapping();
    if (flags_ != nullptr) {  // the claim slot tells the sender; no answer
      flags_->touch();
      flags_->set(header_.claim, Claim::kPulled);
      flags_.reset();
      return Status::kOk;
    }
    return answer(Fin::kPulled);
  }

  // The sender claimed the slot first and sends the bytes to MPI from a copy of its own: once the
  // slot says so, they are taken as segments, and the slot is free again (this side frees it: the
  // sender may have finished long before, MovedCopies).
  Status take_moved() {
    if (flags_->state(header_.claim) != Claim::kMoved) return Status::kOk;  // still copying
    if (no_mpi_) return Status::kOk;  // posting the receives is the application's thread's
    awaiting_move_ = false;
    flags_->give_back(header_.claim);
    flags_.reset();
    SegmentRoute route;
    MPIZIP_CHECK(transport_->segment_route(peer_, tag_, device_, &route));
    return recv_segments(route, buf_, capacity_, header_.bytes, device_, &segments_);
  }

 public:
  // The pull's GPU copies and its claim flag, from the helper thread too (no MPI: an answer that a
  // failure needs waits for the application's thread).
  void poke_without_mpi() override {
    if (status_ != Status::kOk || done_ || !have_header_ || flags_ == nullptr) return;
    if (awaiting_move_) status_ = take_moved_quiet();
    if (status_ == Status::kOk && pulling_) status_ = pull_quiet();
  }

 private:
  Status take_moved_quiet() {
    no_mpi_ = true;
    const Status s = take_moved();
    no_mpi_ = false;
    return s;
  }
  Status pull_quiet() {
    no_mpi_ = true;
    const Status s = pull();
    no_mpi_ = false;
    return s;
  }

  Status answer(Fin code) {
    if (no_mpi_) {  // on the helper thread: sent by the application's thread's next advance()
      pending_answer_ = true;
      answer_code_ = code;
      return Status::kOk;
    }
    fin_.code = code;
    const int mpi_tag = transport_->mpi_tag(tag_, kFinRole);
    return mpi_status(
        PMPI_Isend(&fin_, sizeof fin_, MPI_BYTE, peer_, mpi_tag, transport_->comm(), &fin_req_),
        "PMPI_Isend");
  }

  void abandon() override {
    cancel_and_wait(&header_req_, true);
    platform::Stream* stream = nullptr;
    if (pulling_ && copied_ > 0 && transport_->stream(&stream) == Status::kOk) {
      (void)stream->synchronize();  // the copies out of the sender's buffer have stopped
    }
    if (segments_ != nullptr) segments_->abandon();
    cancel_and_wait(&fin_req_, false);
    if (flags_ != nullptr && pulling_) {  // a claimed slot is released: the sender must not wait
      flags_->set(header_.claim, Claim::kPulled);
    }
    flags_.reset();
  }

  void* buf_;
  uint64_t capacity_;
  bool device_;
  int peer_;
  uint64_t tag_;
  Header header_;
  FinMessage fin_;
  MPI_Request header_req_ = MPI_REQUEST_NULL;
  MPI_Request fin_req_ = MPI_REQUEST_NULL;
  bool have_header_ = false;
  uint64_t received_ = 0;   // min(bytes sent, capacity), once the header came
  int64_t complete_ns_ = 0;  // paced: not complete before this time
  IpcMapping mapping_;      // IPC: the sender's buffer
  bool pulling_ = false;
  uint64_t copied_ = 0;     // IPC: bytes whose copy is queued
  platform::Event fence_;             // IPC: after the last copy
  bool fenced_ = false;
  bool pulled_ = false;     // IPC: every copy finished
  std::shared_ptr<NodeFlags> flags_;  // IPC with a claim slot: the sender's flags, until pulled
  bool awaiting_move_ = false;  // the sender claimed the slot: wait for its copy
  bool no_mpi_ = false;         // inside poke_without_mpi()
  bool pending_answer_ = false;  // an answer to send from the application's thread
  Fin answer_code_ = Fin::kFailed;
};

Status PmpiTransport::check(const void* buf, uint64_t bytes, Memory where, int peer) const {
  if (peer < 0 || peer >= size_ || (bytes > 0 && buf == nullptr)) return Status::kInvalidArgument;
  if (where == Memory::kDevice && !platform::has_gpu()) return Status::kNoDevice;
  return Status::kOk;
}

Status PmpiTransport::isend(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
                            std::unique_ptr<Transfer>* out) {
  MPIZIP_CHECK(check(buf, bytes, where, peer));
  auto t = std::make_unique<SendTransfer>(this, buf, bytes, where == Memory::kDevice, peer, tag);
  MPIZIP_CHECK(t->start());
  *out = std::move(t);
  return Status::kOk;
}

Status PmpiTransport::irecv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
                            std::unique_ptr<Transfer>* out) {
  MPIZIP_CHECK(check(buf, bytes, where, peer));
  auto t = std::make_unique<RecvTransfer>(this, buf, bytes, where == Memory::kDevice, peer, tag);
  MPIZIP_CHECK(t->start());
  *out = std::move(t);
  return Status::kOk;
}

void PmpiTransport::progress() {
  for (PmpiTransfer* t : live_) t->poke();
  moved_->progress();
}

void PmpiTransport::progress_without_mpi() {
  for (PmpiTransfer* t : live_) t->poke_without_mpi();
}

PmpiTransport::~PmpiTransport() {
  if (moved_count_ > 0) {
    MPIZIP_INFO("transport %s: %llu IPC send(s) copied aside, their receivers not there in time",
                name(), static_cast<unsigned long long>(moved_count_));
  }
  // Copies nobody took over (take_unsent): the transports of MPI_COMM_WORLD and MPI_COMM_SELF,
  // closed after MPI_Finalize's drain, when every correct receive has completed or is about to. A
  // bounded wait for the last ones, then they are abandoned (MovedCopies logs it).
  const int64_t until = monotonic_ns() + 2'000'000'000;
  while (!moved_->progress() && monotonic_ns() < until) {
  }
}

Status PmpiTransport::stream(platform::Stream** out) {
  if (!stream_ready_) {
    MPIZIP_CHECK(stream_.create());
    stream_ready_ = true;
  }
  *out = &stream_;
  return Status::kOk;
}

Status PmpiTransport::segment_route(int peer, uint64_t tag, bool device, SegmentRoute* out) {
  out->comm = comm_;
  out->peer = peer;
  out->mpi_tag = mpi_tag(tag, kSegmentRole);
  out->pool = pool_.get();
  if (device) {
    platform::Stream* s = nullptr;
    MPIZIP_CHECK(stream(&s));
    out->stream = s;
  }
  return Status::kOk;
}

}  // namespace

Status create_pmpi(MPI_Comm comm, PmpiConfig config, std::unique_ptr<Transport>* out) {
  int size = 0;
  MPIZIP_CHECK(mpi_status(PMPI_Comm_size(comm, &size), "PMPI_Comm_size"));
  if (config.same_node.size() != static_cast<size_t>(size) ||
      config.ipc.size() != static_cast<size_t>(size)) {
    return Status::kInvalidArgument;
  }
  int* tag_ub = nullptr;
  int flag = 0;
  MPIZIP_CHECK(mpi_status(PMPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &flag),
                          "PMPI_Comm_get_attr(MPI_TAG_UB)"));
  const int ub = flag ? *tag_ub : 32767;  // 32767: the least MPI_TAG_UB the standard allows
  *out = std::make_unique<PmpiTransport>(comm, size, ub, std::move(config));
  return Status::kOk;
}

}  // namespace mpizip::transport
