#include "p2p/recv.h"

#include <chrono>
#include <algorithm>
#include <cstring>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/codec_cpu.h"
#include "p2p/gpu_codec.h"
#include "p2p/send.h"
#include "src/platform/device.h"
#include "src/platform/log.h"
#include "src/transport/transport.h"

namespace mpizip::p2p {
namespace {

using transport::Memory;

uint64_t capacity_of(const UserBuffer& b) {
  return static_cast<uint64_t>(b.count) * format::elem_bytes(b.dtype);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Range {
  const LandingGuard* guard;
  uintptr_t lo, hi;
  bool landing;  // its match message lands there and is not read yet
};
struct LandingRanges {
  std::mutex mutex;
  std::vector<Range> ranges;
};
std::atomic<int> g_held{0};  // receives in Phase::kHeld

LandingRanges& landing_ranges() {
  static auto* r = new LandingRanges();  // never destroyed: receives may end after exit begins
  return *r;
}

}  // namespace

std::unique_ptr<LandingGuard> LandingGuard::land(const void* p, uint64_t bytes) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
  LandingRanges& r = landing_ranges();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const Range& x : r.ranges)
    if (lo < x.hi && x.lo < hi) return nullptr;
  std::unique_ptr<LandingGuard> g(new LandingGuard());
  r.ranges.push_back(Range{g.get(), lo, hi, true});
  return g;
}

std::unique_ptr<LandingGuard> LandingGuard::write(const void* p, uint64_t bytes) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  LandingRanges& r = landing_ranges();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::unique_ptr<LandingGuard> g(new LandingGuard());
  r.ranges.push_back(Range{g.get(), lo, lo + bytes, false});
  return g;
}

void LandingGuard::parsed() {
  LandingRanges& r = landing_ranges();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (Range& x : r.ranges)
    if (x.guard == this) x.landing = false;
}

LandingGuard::~LandingGuard() {
  LandingRanges& r = landing_ranges();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    if (r.ranges[i].guard == this) {
      r.ranges[i] = r.ranges.back();
      r.ranges.pop_back();
      return;
    }
  }
}

bool landing_waited_for() { return g_held.load(std::memory_order_relaxed) > 0; }

bool landing_unread(const void* p, uint64_t bytes) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
  LandingRanges& r = landing_ranges();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const Range& x : r.ranges)
    if (x.landing && lo < x.hi && x.lo < hi) return true;
  return false;
}

RecvOp::RecvOp(const Channel& ch, const UserBuffer& b, int source, int tag) : ch_(ch), b_(b) {
  if (ch_.probed != nullptr && !ch_.probed->empty()) {
    if (auto m = ch_.probed->take(source, tag)) {
      probed_ = std::move(m);
      on_match(probed_->bytes.data(), probed_->bytes.size(), probed_->source, probed_->tag,
               probed_->protocol);
      return;
    }
  }
  // The message lands where either form fits (wire.h): a plain one of up to the buffer's size,
  // or a match message of up to match_capacity_ (the largest any rank sends: core makes
  // eager_bytes and bare_bytes the same on every rank), which is never larger than the message it
  // carries. A host buffer that holds any match message is that place itself, so a plain
  // message arrives with no copy of MPIZip's; a smaller one, or a device buffer, receives into
  // host memory of MPIZip's. So a match message longer than the buffer is a truncation this
  // operation finds itself, not one the MPI library raises inside MPIZip's own MPI_Test: MPICH
  // raises that on MPI_COMM_WORLD's error handler, not the communicator's, and a blocking receive
  // that returns MPI_ERR_TRUNCATE without MPIZip would abort. (A receive that is the MPI library's
  // own, core's plain landing, truncates as the MPI library does without MPIZip.)
  match_capacity_ = kHeaderBytes + std::max(ch_.policy.eager_bytes, ch_.policy.bare_bytes);
  const uint64_t capacity = capacity_of(b_);
  if (!b_.device && capacity >= match_capacity_ &&
      (landing_guard_ = LandingGuard::land(b_.ptr, capacity)) != nullptr) {
    landing_ = static_cast<uint8_t*>(b_.ptr);
    landing_capacity_ = capacity;
  } else {
    if (!b_.device && capacity > 0) landing_guard_ = LandingGuard::write(b_.ptr, capacity);
    landing_capacity_ = std::max<uint64_t>(capacity, match_capacity_);
    // Not zero-filled: MPI writes what it receives, and untouched pages of a large buffer that
    // a match message leaves empty cost nothing.
    landing_buf_.reset(new (std::nothrow) uint8_t[landing_capacity_]);
    if (!landing_buf_) {
      post_error_ = Status::kOutOfMemory;
      finish(post_error_);
      return;
    }
    landing_ = landing_buf_.get();
  }
  post_error_ = post_landing(source, tag);
  if (!ok(post_error_)) finish(post_error_);
}

// MPI's counts are ints: a landing place of more than INT_MAX bytes is received as blocks of a
// power-of-two size that divides it (a contiguous datatype of MPIZip's, freed once posted).
Status RecvOp::post_landing(int source, int tag) {
  constexpr uint64_t kIntMax = 0x7fffffff;
  if (landing_capacity_ <= kIntMax) {
    return Status::mpi(PMPI_Irecv(landing_, static_cast<int>(landing_capacity_), MPI_BYTE, source,
                                  tag, ch_.comm, &match_req_));
  }
  uint64_t block = 1;
  while (landing_capacity_ / block > kIntMax && landing_capacity_ % (block * 2) == 0) block *= 2;
  const uint64_t blocks = std::min(landing_capacity_ / block, kIntMax);
  MPI_Datatype t;
  int rc = PMPI_Type_contiguous(static_cast<int>(block), MPI_BYTE, &t);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_commit(&t);
  if (rc != MPI_SUCCESS) return Status::mpi(rc);
  if (blocks * block < landing_capacity_) {
    MPIZIP_LOG_ONCE(kWarn, "a receive of %llu bytes takes at most %llu of them (MPI's counts)",
                    static_cast<unsigned long long>(landing_capacity_),
                    static_cast<unsigned long long>(blocks * block));
  }
  rc = PMPI_Irecv(landing_, static_cast<int>(blocks), t, source, tag, ch_.comm, &match_req_);
  PMPI_Type_free(&t);
  return Status::mpi(rc);
}

// The landing place received `bytes` bytes: a match message (copied out of the application's
// buffer first, where the payload will land) or a plain message.
void RecvOp::landed_match(const MPI_Status& st, uint64_t bytes) {
  if (landing_ == b_.ptr) {
    if (bytes > ch_.policy.bare_bytes && bytes <= match_capacity_) {
      MatchHeader h;
      if (parse_header(landing_, bytes, ch_.policy.bare_bytes, &h)) {
        match_buf_.reset(new uint8_t[bytes]);
        std::memcpy(match_buf_.get(), landing_, bytes);
        landing_guard_->parsed();
        on_match(match_buf_.get(), bytes, st.MPI_SOURCE, st.MPI_TAG, true);
        return;
      }
    }
    landing_guard_->parsed();
  } else if (landing_guard_ != nullptr && landing_unread(b_.ptr, capacity_of(b_))) {
    // Another receive's match message sits unread in this buffer (LandingGuard): hold this one.
    held_ = Held{st.MPI_SOURCE, st.MPI_TAG, bytes, std::chrono::steady_clock::now()};
    phase_ = Phase::kHeld;
    g_held.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  on_match(landing_, bytes, st.MPI_SOURCE, st.MPI_TAG, true);
}

RecvOp::RecvOp(const Channel& ch, const UserBuffer& b, std::unique_ptr<ProbedMessage> m)
    : ch_(ch), b_(b), probed_(std::move(m)) {
  on_match(probed_->bytes.data(), probed_->bytes.size(), probed_->source, probed_->tag,
           probed_->protocol);
}

RecvOp::RecvOp(const Channel& ch, const UserBuffer& b, const uint8_t* msg, uint64_t bytes,
               int source, int tag)
    : ch_(ch), b_(b) {
  on_match(msg, bytes, source, tag, true);
}

RecvOp::~RecvOp() {
  // An operation is destroyed only once complete; nothing of ours is left posted in MPI.
  if (phase_ == Phase::kHeld) g_held.fetch_sub(1, std::memory_order_relaxed);
}

bool RecvOp::progress() { return advance(); }

bool RecvOp::advance() {
  if (phase_ == Phase::kMatch) {
    MPI_Status st;
    int flag = 1;
    int rc = PMPI_Test(&match_req_, &flag, &st);
    if (rc != MPI_SUCCESS) {
      int cls = rc;
      PMPI_Error_class(rc, &cls);
      if (cls == MPI_ERR_TRUNCATE) {
        // A message longer than the landing place, so longer than the buffer: MPI's own
        // truncation. A plain message counts the size MPI reports; a match message (one no larger
        // than its message, so that message is longer still) the message's, from its header.
        MPI_Count bytes = 0;
        PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
        status_.source = st.MPI_SOURCE;
        status_.tag = st.MPI_TAG;
        MatchHeader h;
        const bool header = landing_ == b_.ptr &&
                            parse_truncated_header(landing_, capacity_of(b_),
                                                   ch_.policy.bare_bytes, &h);
        header_.app_bytes = std::max<uint64_t>(header ? h.app_bytes : static_cast<uint64_t>(bytes),
                                               capacity_of(b_) + 1);
        status_.bytes = landing_ == b_.ptr ? capacity_of(b_) : 0;
        finish(Status::kTruncated);
        return true;
      }
      finish(Status::mpi(rc));
      return true;
    }
    if (!flag) return false;
    MPI_Count bytes = 0;
    PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
    landed_match(st, static_cast<uint64_t>(bytes));
  }
  if (phase_ == Phase::kHeld) {
    // Read when the application waits for that receive too (MPI_Waitall, as OSU's osu_bw does);
    // one that waits for this one alone first gets it after a second, the other's header lost.
    if (landing_unread(b_.ptr, capacity_of(b_))) {
      if (std::chrono::steady_clock::now() - held_.since < std::chrono::seconds(1)) return false;
      MPIZIP_LOG_ONCE(kWarn, "receives into overlapping buffers completed out of order: a "
                             "message may be lost to the earlier one");
    }
    g_held.fetch_sub(1, std::memory_order_relaxed);
    phase_ = Phase::kMatch;  // on_match moves it on
    on_match(landing_, held_.bytes, held_.source, held_.tag, true);
  }
  if (phase_ == Phase::kBulk) {
    for (auto& t : transfers_) {
      if (!t) continue;
      bool finished = false;
      Status s = t->test(&finished);
      if (s != Status::kOk) {
        MPIZIP_INFO("payload from rank %d (tag %d) failed in transport: %s", status_.source,
                    status_.tag, status_string(s));
        finish(s);
        return true;
      }
      if (!finished) return false;
    }
    landed();
  }
  if (phase_ == Phase::kChunks) {
    bool finished = false;
    Status s = chunked_->advance(&finished);
    if (s == Status::kOk && !finished) return false;
    traffic_.wire_bytes = chunked_->wire_bytes();
    traffic_.codec_seconds += chunked_->codec_seconds();
    if (s == Status::kCorruptStream) {
      corrupt(s);
    } else if (s != Status::kOk) {
      MPIZIP_INFO("chunked payload from rank %d (tag %d) failed in transport: %s", status_.source,
                  status_.tag, status_string(s));
      finish(s);
    } else {
      finish(truncation());
    }
    chunked_.reset();
  }
  if (phase_ == Phase::kDecode) {
    bool finished = false;
    Status s = job_.done(&finished);
    if (s == Status::kOk && !finished) return false;
    traffic_.codec_seconds += seconds_since(decode_start_);
    if (s == Status::kOk) s = job_.result();
    if (s == Status::kOk && job_.size() != header_.count) s = Status::kCorruptStream;
    if (s == Status::kOk || s == Status::kTruncated) {
      finish(truncation());
    } else {
      corrupt(s);
    }
  }
  return phase_ == Phase::kDone;
}

bool RecvOp::cancel() {
  if (phase_ != Phase::kMatch || match_req_ == MPI_REQUEST_NULL) return false;
  PMPI_Cancel(&match_req_);
  MPI_Status st;
  PMPI_Wait(&match_req_, &st);
  int cancelled = 0;
  PMPI_Test_cancelled(&st, &cancelled);
  if (!cancelled) {
    // The match message arrived meanwhile: complete the receive normally.
    MPI_Count bytes = 0;
    PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
    landed_match(st, static_cast<uint64_t>(bytes));
    return false;
  }
  status_.cancelled = true;
  finish(Status::kOk);
  return true;
}

void RecvOp::on_match(const uint8_t* msg, uint64_t bytes, int source, int tag, bool protocol) {
  status_.source = source;
  status_.tag = tag;
  size_t payload_at = kHeaderBytes;
  const bool headered = bytes > ch_.policy.bare_bytes && protocol &&
                        parse_header(msg, bytes, ch_.policy.bare_bytes, &header_, &payload_at);
  if (!headered) {
    // A bare message (wire.h), or the MPI library's own message of a sender that did not take the
    // protocol for it (the whole message is here: a longer one failed the match receive as a
    // truncation): the application's bytes, of whatever element type.
    if (bytes > ch_.policy.bare_bytes) {
      MPIZIP_DEBUG("a receive matched a plain message of %llu bytes from rank %d (tag %d)",
                   static_cast<unsigned long long>(bytes), source, tag);
    }
    header_ = make_header(Payload::kInline, Encoding::kRaw, b_.dtype, 0,
                          bytes / format::elem_bytes(b_.dtype), bytes);
    header_.app_bytes = bytes;
    status_.bytes = std::min<uint64_t>(bytes, capacity_of(b_));
    traffic_.app_bytes = traffic_.wire_bytes = bytes;
    if (msg == b_.ptr) {  // it landed in the application's buffer
      finish(truncation());
      return;
    }
    deliver_host(msg);
    return;
  }
  // The receive takes the message's bytes whatever element type its datatype names, as the MPI
  // library delivers them: MPI_UINT16_T, MPIZIP_BF16 and MPIZIP_FP16 share one signature (likewise
  // the 8-bit types), and applications receive floats as bytes, a C integer type as its
  // fixed-width twin or a packed message as its elements (docs/PROTOCOL.md, "Datatype pairings").
  // Its buffer is taken as elements of the sender's type: whole elements of them are delivered
  // where the message is larger than the buffer.
  if (header_.dtype != b_.dtype) {
    const uint64_t capacity = capacity_of(b_);
    b_.dtype = header_.dtype;
    b_.count = capacity / format::elem_bytes(header_.dtype);
  }
  status_.bytes = std::min(header_.app_bytes, capacity_of(b_));
  traffic_.app_bytes = header_.app_bytes;
  traffic_.wire_bytes = header_.payload_bytes;
  traffic_.compressed = header_.encoding == Encoding::kCompressed;
  if (header_.payload == Payload::kInline || header_.payload_bytes == 0) {
    deliver_host(msg + payload_at);
    return;
  }
  if (header_.payload == Payload::kChunked || header_.payload == Payload::kChunkedDevice) {
    chunked_ = std::make_unique<ChunkedReceiver>(ch_, b_, header_, source, false);
    phase_ = Phase::kChunks;
    return;
  }
  // The payload lands in memory of the kind the sender sent from (wire.h): the user's buffer when
  // that is of this kind and the raw bytes fit, else scratch of this kind.
  bool device = header_.payload != Payload::kBulk;
  in_place_ = header_.dtype == b_.dtype && header_.encoding == Encoding::kRaw &&
              device == b_.device && header_.app_bytes <= capacity_of(b_);
  uint8_t* dst = static_cast<uint8_t*>(b_.ptr);
  if (!in_place_) {
    Status s = device ? device_buf_.resize(header_.payload_bytes)
                      : bulk_buf_.resize(header_.payload_bytes);
    if (s != Status::kOk && device) {
      // No device memory for the payload: receive it into host memory and decode on the CPU (the
      // transports carry device-to-host transfers too).
      MPIZIP_LOG_ONCE(kWarn, "no device memory for a %llu-byte payload (%s); receiving through "
                      "host memory", static_cast<unsigned long long>(header_.payload_bytes),
                      status_string(s));
      device = false;
      host_fallback_ = true;
      s = bulk_buf_.resize(header_.payload_bytes);
    }
    if (s != Status::kOk) {
      MPIZIP_INFO("no %s memory for a payload of %llu bytes from rank %d: %s",
                  device ? "device" : "host", static_cast<unsigned long long>(header_.payload_bytes),
                  source, status_string(s));
      finish(s);
      return;
    }
    dst = device ? device_buf_.data() : bulk_buf_.data();
  }
  const Memory where = device ? Memory::kDevice : Memory::kHost;
  Status s;
  if (header_.payload == Payload::kSplit) {
    const uint64_t part0 = format::coded_offset(header_.dtype, header_.count);
    s = ch_.transport->irecv(dst, part0, where, source, header_.bulk_tag, &transfers_[0]);
    if (s == Status::kOk) {
      s = ch_.transport->irecv(dst + part0, header_.payload_bytes - part0, where, source,
                               uint64_t{header_.bulk_tag} + 1, &transfers_[1]);
    }
  } else {
    s = ch_.transport->irecv(dst, header_.payload_bytes, where, source, header_.bulk_tag,
                             &transfers_[0]);
  }
  if (s != Status::kOk) {
    MPIZIP_INFO("transport %s cannot receive %llu bytes from rank %d: %s", ch_.transport->name(),
                static_cast<unsigned long long>(header_.payload_bytes), source, status_string(s));
    finish(s);
    return;
  }
  phase_ = Phase::kBulk;
}

void RecvOp::corrupt(Status s) {
  MPIZIP_INFO("corrupt compressed payload from rank %d (tag %d): %s", status_.source, status_.tag,
              status_string(s));
  finish(Status::kCorruptStream);
}

// Every transfer of the payload has landed: deliver it.
void RecvOp::landed() {
  // A sender that failed after its match message sends its parts empty (p2p/send.cc): every part
  // but a split stream's second (whose length the match message bounds) has its announced size.
  uint64_t stream_bytes = header_.payload_bytes;
  bool whole = transfers_[0]->received_bytes() == header_.payload_bytes;
  if (header_.payload == Payload::kSplit) {
    const uint64_t part0 = format::coded_offset(header_.dtype, header_.count);
    whole = transfers_[0]->received_bytes() == part0;
    stream_bytes = part0 + transfers_[1]->received_bytes();
  }
  transfers_[0].reset();
  transfers_[1].reset();
  if (!whole) {
    corrupt(Status::kCorruptStream);
    return;
  }
  traffic_.wire_bytes = stream_bytes;
  if (in_place_) {
    finish(Status::kOk);
    return;
  }
  const uint64_t capacity = capacity_of(b_);
  const uint64_t n = header_.app_bytes < capacity ? header_.app_bytes : capacity;
  const Status error = truncation();
  if (header_.payload == Payload::kBulk || host_fallback_) {  // host memory
    header_.payload_bytes = stream_bytes;
    deliver_host(bulk_buf_.data());
    return;
  }
  // Device memory.
  if (header_.encoding == Encoding::kRaw) {
    Status s = b_.device ? platform::copy_device_to_device(b_.ptr, device_buf_.data(), n)
                         : platform::copy_to_host(b_.ptr, device_buf_.data(), n);
    finish(ok(s) ? error : s);
    return;
  }
  if (b_.device) {
    decode_start_ = std::chrono::steady_clock::now();
    Status s = gpu_start_decompress(b_.dtype, device_buf_.data(), stream_bytes, header_.count,
                                    b_.ptr, capacity, &job_);
    if (s == Status::kOk) {
      phase_ = Phase::kDecode;
      return;
    }
    MPIZIP_LOG_ONCE(kWarn, "GPU decompression unavailable (%s); decoding on the CPU",
                    status_string(s));
  }
  // A host buffer (or no GPU decoder): bring the stream to the host and decode it there.
  Status s = bulk_buf_.resize(stream_bytes);
  if (ok(s)) s = platform::copy_to_host(bulk_buf_.data(), device_buf_.data(), stream_bytes);
  if (!ok(s)) {
    finish(s);
    return;
  }
  device_buf_.clear();
  header_.payload_bytes = stream_bytes;
  deliver_host(bulk_buf_.data());
}

// The payload is in host memory at `payload` (header_.payload_bytes bytes): raw bytes or a stream.
void RecvOp::deliver_host(const uint8_t* payload) {
  uint64_t capacity = capacity_of(b_);
  uint64_t n = header_.app_bytes < capacity ? header_.app_bytes : capacity;
  Status error = truncation();
  status_.bytes = n;
  if (n == 0) {
    finish(error);
    return;
  }
  // Raw bytes, or the decoded stream, land in the user's buffer; through a host copy when the
  // buffer is on the device or too small (truncation delivers the first `capacity` bytes, as MPI).
  const uint8_t* plain = payload;
  platform::HostBuffer decoded;
  if (header_.encoding == Encoding::kCompressed) {
    auto t0 = std::chrono::steady_clock::now();
    bool direct = !b_.device && header_.app_bytes <= capacity;
    uint8_t* dst = static_cast<uint8_t*>(b_.ptr);
    if (!direct) {
      Status s = decoded.resize(header_.app_bytes);
      if (!ok(s)) {
        finish(s);
        return;
      }
      dst = decoded.data();
    }
    uint64_t count = 0;
    // A stream of another element type may hold as many elements in fewer bytes.
    kernels::cpu::StreamInfo info;
    Status s = kernels::cpu::read_header(payload, header_.payload_bytes, &info);
    if (s == Status::kOk && info.dtype != header_.dtype) s = Status::kTypeMismatch;
    if (s == Status::kOk) {
      s = kernels::cpu::decompress(payload, header_.payload_bytes, dst, header_.app_bytes, &count);
    }
    traffic_.codec_seconds += seconds_since(t0);
    if (s != Status::kOk || count != header_.count) {
      corrupt(s == Status::kOk ? Status::kCorruptStream : s);
      return;
    }
    if (direct) {
      finish(error);
      return;
    }
    plain = decoded.data();
  }
  if (b_.device) {
    auto t0 = std::chrono::steady_clock::now();
    Status s = platform::copy_from_pageable_host(b_.ptr, plain, n);
    traffic_.staging_seconds += seconds_since(t0);
    if (!ok(s)) error = s;
  } else {
    std::memcpy(b_.ptr, plain, n);
  }
  finish(error);
}

Status RecvOp::truncation() const {
  return header_.app_bytes > capacity_of(b_) ? Status::kTruncated : Status::kOk;
}

void RecvOp::finish(Status error) {
  status_.error = error;
  status_.message_bytes = header_.app_bytes;
  phase_ = Phase::kDone;
  if (on_complete_ && traffic_.app_bytes > 0) on_complete_(traffic_);
  match_buf_.reset();
  landing_buf_.reset();
  bulk_buf_.clear();
  probed_.reset();
}

}  // namespace mpizip::p2p
