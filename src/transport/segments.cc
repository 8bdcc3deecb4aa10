#include "src/transport/segments.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "src/platform/log.h"
#include "src/transport/device_ops.h"
#include "src/transport/mpi_calls.h"

namespace mpizip::transport {
namespace {

uint64_t segment_count(uint64_t bytes) { return (bytes + kSegmentBytes - 1) / kSegmentBytes; }

// Bytes of segment k of a `bytes`-byte transfer.
int segment_length(uint64_t k, uint64_t bytes) {
  return static_cast<int>(std::min(kSegmentBytes, bytes - k * kSegmentBytes));
}

// Bytes of segment k that fit in a buffer of `capacity` bytes.
int segment_fit(uint64_t k, uint64_t bytes, uint64_t capacity) {
  const uint64_t offset = k * kSegmentBytes;
  if (offset >= capacity) return 0;
  return static_cast<int>(std::min<uint64_t>(segment_length(k, bytes), capacity - offset));
}

// Host memory, sent straight from the caller's buffer.
class HostSend final : public Segments {
 public:
  HostSend(const SegmentRoute& route, const char* data, uint64_t bytes)
      : route_(route), data_(data), bytes_(bytes), reqs_(segment_count(bytes)) {}

  Status advance(bool* done) override {
    while (posted_ < reqs_.size()) {
      MPIZIP_CHECK(mpi_status(PMPI_Isend(data_ + posted_ * kSegmentBytes,
                                         segment_length(posted_, bytes_), MPI_BYTE, route_.peer,
                                         route_.mpi_tag, route_.comm, &reqs_[posted_]),
                              "PMPI_Isend"));
      ++posted_;
    }
    int flag = 0;
    MPIZIP_CHECK(mpi_status(
        PMPI_Testall(static_cast<int>(posted_), reqs_.data(), &flag, MPI_STATUSES_IGNORE),
        "PMPI_Testall"));
    *done = flag != 0 && posted_ == reqs_.size();
    return Status::kOk;
  }

  void abandon() override {
    for (uint64_t k = 0; k < posted_; ++k) cancel_and_wait(&reqs_[k], false);
  }
  bool needs_sender() const override { return posted_ < reqs_.size(); }

 private:
  SegmentRoute route_;
  const char* data_;
  uint64_t bytes_;
  std::vector<MPI_Request> reqs_;  // one per segment; the first posted_ are on the wire
  uint64_t posted_ = 0;
};

// Host memory, received straight into the caller's buffer. Segments that do not fit whole are
// received whole into scratch memory: the one that straddles the buffer's end is copied in up to
// the end, the ones beyond it are dropped (one at a time, through one scratch segment). A clipped
// MPI receive would do the same in principle, but some MPI libraries (Open MPI 4.1's shared-memory
// single copy, seen) write a truncated message past the receive buffer's end.
class HostRecv final : public Segments {
 public:
  HostRecv(const SegmentRoute& route, char* data, uint64_t capacity, uint64_t sent)
      : route_(route), data_(data), capacity_(capacity), sent_(sent), n_(segment_count(sent)) {}

  // Posts the segments that land in the buffer and the first of those that do not.
  Status start() {
    while (next_ < n_ && segment_fit(next_, sent_, capacity_) == segment_length(next_, sent_)) {
      whole_.push_back(MPI_REQUEST_NULL);
      MPIZIP_CHECK(post(data_ + next_ * kSegmentBytes, next_, &whole_.back()));
      ++next_;
    }
    return post_clipped();
  }

  Status advance(bool* done) override {
    int flag = 0;
    MPIZIP_CHECK(mpi_status(PMPI_Testall(static_cast<int>(whole_.size()), whole_.data(), &flag,
                                         MPI_STATUSES_IGNORE),
                            "PMPI_Testall"));
    while (clipped_ != MPI_REQUEST_NULL) {
      int arrived = 0;
      MPIZIP_CHECK(mpi_status(PMPI_Test(&clipped_, &arrived, MPI_STATUS_IGNORE), "PMPI_Test"));
      if (!arrived) break;
      const int fit = segment_fit(clipped_segment_, sent_, capacity_);
      if (fit > 0) std::memcpy(data_ + clipped_segment_ * kSegmentBytes, scratch_.data(), fit);
      MPIZIP_CHECK(post_clipped());
    }
    *done = flag != 0 && clipped_ == MPI_REQUEST_NULL;
    return *done && sent_ > capacity_ ? Status::kTruncated : Status::kOk;
  }

  void abandon() override {
    for (MPI_Request& req : whole_) cancel_and_wait(&req, true);
    cancel_and_wait(&clipped_, true);
  }

 private:
  Status post(char* at, uint64_t k, MPI_Request* req) {
    return mpi_status(PMPI_Irecv(at, segment_length(k, sent_), MPI_BYTE, route_.peer,
                                 route_.mpi_tag, route_.comm, req),
                      "PMPI_Irecv");
  }

  // The next segment that does not fit whole, into the scratch segment (after the one before it
  // has landed: segments match in order, and the scratch holds one).
  Status post_clipped() {
    if (next_ == n_) return Status::kOk;
    if (scratch_.empty()) scratch_.resize(kSegmentBytes);
    clipped_segment_ = next_++;
    return post(scratch_.data(), clipped_segment_, &clipped_);
  }

  SegmentRoute route_;
  char* data_;
  uint64_t capacity_;
  uint64_t sent_;
  uint64_t n_;
  uint64_t next_ = 0;  // the next segment to post
  std::vector<MPI_Request> whole_;
  MPI_Request clipped_ = MPI_REQUEST_NULL;  // the segment in scratch_, if any
  uint64_t clipped_segment_ = 0;
  std::vector<char> scratch_;
};

// One staging piece of a device transfer and the segment it holds.
struct Slot {
  enum class State { kIdle, kCopying, kOnWire };
  StagingPiece pinned;
  std::vector<char> pageable;  // used when the pool had no piece
  char* data = nullptr;
  platform::Event fence;
  MPI_Request req = MPI_REQUEST_NULL;
  State state = State::kIdle;
  uint64_t segment = 0;
};

// `n` staging pieces: pinned from the pool, else pageable (the copies then run at pageable speed,
// the transfer still moves).
std::vector<Slot> make_slots(StagingPool* pool, uint64_t n) {
  std::vector<Slot> slots(n);
  for (Slot& s : slots) {
    if (pool->acquire(&s.pinned) == Status::kOk) {
      s.data = static_cast<char*>(s.pinned.data());
    } else {
      MPIZIP_LOG_ONCE(kWarn, "pinned staging memory exhausted (MPIZIP_STAGING_BYTES): staging "
                             "device buffers through pageable memory");
      s.pageable.resize(kSegmentBytes);
      s.data = s.pageable.data();
    }
  }
  return slots;
}

// Device memory out: device-to-host copy into a piece, then the piece on the wire. Every segment
// has a piece of its own, so that every copy is queued at once and each segment goes on the wire
// as soon as its copy lands, without waiting for the receiver to take the earlier ones: the send
// then needs its sender only until the last segment is posted (needs_sender()), and MPI moves the
// rest. Copies run in stream order, so they finish in segment order, and segments go on the wire
// in order.
class StagedSend final : public Segments {
 public:
  StagedSend(const SegmentRoute& route, const char* device, uint64_t bytes)
      : route_(route), device_(device), bytes_(bytes), n_(segment_count(bytes)),
        slots_(make_slots(route.pool, n_)) {}
  bool needs_sender() const override { return next_send_ < n_; }

  Status advance(bool* done) override {
    for (Slot& s : slots_) {
      if (s.state != Slot::State::kOnWire) continue;
      int flag = 0;
      MPIZIP_CHECK(mpi_status(PMPI_Test(&s.req, &flag, MPI_STATUS_IGNORE), "PMPI_Test"));
      if (flag) {
        s.state = Slot::State::kIdle;
        ++sent_;
      }
    }
    for (Slot& s : slots_) {
      if (s.state != Slot::State::kIdle || next_copy_ == n_) continue;
      s.segment = next_copy_++;
      MPIZIP_CHECK(platform::copy_async(s.data, device_ + s.segment * kSegmentBytes,
                              segment_length(s.segment, bytes_), *route_.stream));
      MPIZIP_CHECK(s.fence.record(*route_.stream));
      s.state = Slot::State::kCopying;
    }
    for (bool moved = true; moved;) {
      moved = false;
      for (Slot& s : slots_) {
        if (s.state != Slot::State::kCopying || s.segment != next_send_) continue;
        bool copied = false;
        MPIZIP_CHECK(s.fence.query(&copied));
        if (!copied) break;
        MPIZIP_CHECK(mpi_status(PMPI_Isend(s.data, segment_length(s.segment, bytes_), MPI_BYTE,
                                           route_.peer, route_.mpi_tag, route_.comm, &s.req),
                                "PMPI_Isend"));
        s.state = Slot::State::kOnWire;
        ++next_send_;
        moved = true;
      }
    }
    *done = sent_ == n_;
    return Status::kOk;
  }

  void abandon() override {
    for (Slot& s : slots_) {
      if (s.state == Slot::State::kCopying) (void)s.fence.wait();
      cancel_and_wait(&s.req, false);
    }
  }

 private:
  SegmentRoute route_;
  const char* device_;
  uint64_t bytes_;
  uint64_t n_;
  std::vector<Slot> slots_;
  uint64_t next_copy_ = 0;  // next segment to copy into a piece
  uint64_t next_send_ = 0;  // next segment to put on the wire
  uint64_t sent_ = 0;       // segments whose send completed
};

// Device memory in: a piece receives segment k, then a host-to-device copy empties it; with two
// pieces segment k+1 arrives while segment k is copied. Receives are posted in segment order.
class StagedRecv final : public Segments {
 public:
  StagedRecv(const SegmentRoute& route, char* device, uint64_t capacity, uint64_t sent)
      : route_(route), device_(device), capacity_(capacity), sent_(sent),
        n_(segment_count(sent)), slots_(make_slots(route.pool, std::min<uint64_t>(2, n_))) {}

  Status advance(bool* done) override {
    for (Slot& s : slots_) {
      if (s.state == Slot::State::kOnWire) {
        int flag = 0;
        MPIZIP_CHECK(mpi_status(PMPI_Test(&s.req, &flag, MPI_STATUS_IGNORE), "PMPI_Test"));
        if (!flag) continue;
        MPIZIP_CHECK(platform::copy_async(device_ + s.segment * kSegmentBytes, s.data,
                                segment_fit(s.segment, sent_, capacity_), *route_.stream));
        MPIZIP_CHECK(s.fence.record(*route_.stream));
        s.state = Slot::State::kCopying;
      }
      if (s.state == Slot::State::kCopying) {
        bool copied = false;
        MPIZIP_CHECK(s.fence.query(&copied));
        if (!copied) continue;
        s.state = Slot::State::kIdle;
        ++landed_;
      }
    }
    for (Slot& s : slots_) {
      if (s.state != Slot::State::kIdle || next_recv_ == n_) continue;
      s.segment = next_recv_++;
      MPIZIP_CHECK(mpi_status(PMPI_Irecv(s.data, segment_length(s.segment, sent_), MPI_BYTE,
                                         route_.peer, route_.mpi_tag, route_.comm, &s.req),
                              "PMPI_Irecv"));
      s.state = Slot::State::kOnWire;
    }
    *done = landed_ == n_;
    return *done && sent_ > capacity_ ? Status::kTruncated : Status::kOk;
  }

  void abandon() override {
    for (Slot& s : slots_) {
      cancel_and_wait(&s.req, true);
      if (s.state == Slot::State::kCopying) (void)s.fence.wait();
    }
  }

 private:
  SegmentRoute route_;
  char* device_;
  uint64_t capacity_;
  uint64_t sent_;
  uint64_t n_;
  std::vector<Slot> slots_;
  uint64_t next_recv_ = 0;  // next segment to post a receive for
  uint64_t landed_ = 0;     // segments copied to the device
};

}  // namespace

Status send_segments(const SegmentRoute& route, const void* buf, uint64_t bytes, bool device,
                     std::unique_ptr<Segments>* out) {
  const char* data = static_cast<const char*>(buf);
  if (device && bytes > 0) {
    *out = std::make_unique<StagedSend>(route, data, bytes);
  } else {
    *out = std::make_unique<HostSend>(route, data, bytes);
  }
  return Status::kOk;
}

Status recv_segments(const SegmentRoute& route, void* buf, uint64_t capacity, uint64_t sent,
                     bool device, std::unique_ptr<Segments>* out) {
  char* data = static_cast<char*>(buf);
  if (device && sent > 0) {
    *out = std::make_unique<StagedRecv>(route, data, capacity, sent);
    return Status::kOk;
  }
  auto host = std::make_unique<HostRecv>(route, data, capacity, sent);
  MPIZIP_CHECK(host->start());
  *out = std::move(host);
  return Status::kOk;
}

}  // namespace mpizip::transport
