#include "p2p/recv.h"

#include <chrono>
#include <cstring>

#include "kernels/codec_cpu.h"
#include "p2p/gpu_codec.h"
#include "p2p/send.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

namespace mpizip::p2p {
namespace {

uint64_t capacity_of(const UserBuffer& b) {
  return static_cast<uint64_t>(b.count) * format::elem_bytes(b.dtype);
}

}  // namespace

RecvOp::RecvOp(const Channel& ch, const UserBuffer& b, int source, int tag) : ch_(ch), b_(b) {
  if (ch_.probed != nullptr && !ch_.probed->empty()) {
    if (auto m = ch_.probed->take(source, tag)) {
      probed_ = std::move(m);
      on_match(probed_->bytes.data(), probed_->bytes.size(), probed_->source, probed_->tag,
               probed_->protocol);
      return;
    }
  }
  // The largest match message any rank sends: core makes eager_bytes the same on every rank.
  match_capacity_ = kHeaderBytes + ch_.policy.eager_bytes;
  match_buf_.reset(new uint8_t[match_capacity_]);
  post_error_ = PMPI_Irecv(match_buf_.get(), static_cast<int>(match_capacity_), MPI_BYTE, source,
                           tag, ch_.comm, &match_req_);
  if (post_error_ != MPI_SUCCESS) finish(post_error_);
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
}

bool RecvOp::progress() { return advance(); }

bool RecvOp::advance() {
  if (phase_ == Phase::kMatch) {
    MPI_Status st;
    int flag = 1;
    int rc = PMPI_Test(&match_req_, &flag, &st);
    if (rc != MPI_SUCCESS) {
      finish(rc);
      return true;
    }
    if (!flag) return false;
    int bytes = 0;
    PMPI_Get_count(&st, MPI_BYTE, &bytes);
    on_match(match_buf_.get(), static_cast<uint64_t>(bytes), st.MPI_SOURCE, st.MPI_TAG, true);
  }
  if (phase_ == Phase::kBulk) {
    int flag = 1;
    int n = static_cast<int>(bulk_reqs_.size());
    int rc = PMPI_Testall(n, bulk_reqs_.data(), &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      finish(rc);
      return true;
    }
    if (!flag) return false;
    deliver(bulk_in_place_ ? nullptr : bulk_buf_.data());
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
    int bytes = 0;
    PMPI_Get_count(&st, MPI_BYTE, &bytes);
    on_match(match_buf_.get(), static_cast<uint64_t>(bytes), st.MPI_SOURCE, st.MPI_TAG, true);
    return false;
  }
  status_.cancelled = true;
  finish(MPI_SUCCESS);
  return true;
}

void RecvOp::on_match(const uint8_t* msg, uint64_t bytes, int source, int tag, bool protocol) {
  status_.source = source;
  status_.tag = tag;
  if (!protocol || !parse_header(msg, bytes, &header_)) {
    MPIZIP_ERROR("receive of a protocol datatype matched a message of %llu bytes that is not an "
                 "MPIZip message (from rank %d, tag %d): the sender used another datatype",
                 static_cast<unsigned long long>(bytes), source, tag);
    finish(MPI_ERR_TYPE);
    return;
  }
  if (header_.dtype != b_.dtype) {
    MPIZIP_ERROR("datatype mismatch: rank %d sent element type %d, this receive expects %d (tag %d)",
                 source, static_cast<int>(header_.dtype), static_cast<int>(b_.dtype), tag);
    // The bulk payload, if any, must still be drained from the shadow communicator.
    std::vector<MPI_Request> reqs;
    if (header_.payload == Payload::kBulk && header_.payload_bytes > 0) {
      bulk_buf_.resize(header_.payload_bytes);
      post_bulk(bulk_buf_.data(), header_.payload_bytes, source, static_cast<int>(header_.bulk_tag),
                ch_.shadow, false, &reqs);
      PMPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    }
    finish(MPI_ERR_TYPE);
    return;
  }
  traffic_.app_bytes = header_.app_bytes;
  traffic_.wire_bytes = header_.payload_bytes;
  traffic_.compressed = header_.encoding == Encoding::kCompressed;
  if (header_.payload == Payload::kInline || header_.payload_bytes == 0) {
    deliver(msg + kHeaderBytes);
    return;
  }
  bulk_in_place_ = header_.encoding == Encoding::kRaw && !b_.device &&
                   header_.app_bytes <= capacity_of(b_);
  void* dst = b_.ptr;
  if (!bulk_in_place_) {
    bulk_buf_.resize(header_.payload_bytes);
    dst = bulk_buf_.data();
  }
  int rc = post_bulk(dst, header_.payload_bytes, source, static_cast<int>(header_.bulk_tag),
                     ch_.shadow, false, &bulk_reqs_);
  if (rc != MPI_SUCCESS) {
    finish(rc);
    return;
  }
  phase_ = Phase::kBulk;
}

void RecvOp::deliver(const uint8_t* payload) {
  uint64_t capacity = capacity_of(b_);
  uint64_t n = header_.app_bytes < capacity ? header_.app_bytes : capacity;
  int error = header_.app_bytes > capacity ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
  status_.bytes = n;
  if (payload == nullptr || n == 0) {  // already in place, or nothing to deliver
    finish(error);
    return;
  }
  // Raw bytes, or the decoded stream, land in the user's buffer; through a host copy when the
  // buffer is on the device or too small (truncation delivers the first `capacity` bytes, as MPI).
  const uint8_t* plain = payload;
  std::vector<uint8_t> decoded;
  if (header_.encoding == Encoding::kCompressed && b_.device) {
    // Decode on the GPU straight into the user's device buffer.
    auto t0 = std::chrono::steady_clock::now();
    uint64_t count = 0;
    Status s = gpu_decompress(b_.dtype, payload, header_.payload_bytes, b_.ptr, capacity, &count);
    traffic_.codec_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s == Status::kOk || s == Status::kTruncated) {
      finish(error);
      return;
    }
    if (s == Status::kCorruptStream || s == Status::kTypeMismatch) {
      MPIZIP_ERROR("corrupt compressed payload from rank %d (tag %d): %s", status_.source,
                   status_.tag, status_string(s));
      finish(ch_.err_corrupt);
      return;
    }
    if (s != Status::kUnsupported) {  // out of device memory or a runtime error: decode on the CPU
      MPIZIP_LOG_ONCE(kWarn, "GPU decompression unavailable (%s); decoding on the CPU",
                      status_string(s));
    }
  }
  if (header_.encoding == Encoding::kCompressed) {
    auto t0 = std::chrono::steady_clock::now();
    bool direct = !b_.device && header_.app_bytes <= capacity;
    uint8_t* dst = static_cast<uint8_t*>(b_.ptr);
    if (!direct) {
      decoded.resize(header_.app_bytes);
      dst = decoded.data();
    }
    uint64_t count = 0;
    Status s = kernels::cpu::decompress(payload, header_.payload_bytes, dst, header_.app_bytes,
                                        &count);
    traffic_.codec_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s != Status::kOk || count != header_.count) {
      MPIZIP_ERROR("corrupt compressed payload from rank %d (tag %d): %s", status_.source,
                   status_.tag, status_string(s == Status::kOk ? Status::kCorruptStream : s));
      finish(ch_.err_corrupt);
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
    Status s = platform::copy_to_device(b_.ptr, plain, n);
    traffic_.staging_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s != Status::kOk) error = MPI_ERR_OTHER;
  } else {
    std::memcpy(b_.ptr, plain, n);
  }
  finish(error);
}

void RecvOp::finish(int error) {
  status_.error = error;
  phase_ = Phase::kDone;
  if (on_complete_ && traffic_.app_bytes > 0) on_complete_(traffic_);
  match_buf_.reset();
  bulk_buf_.clear();
  bulk_buf_.shrink_to_fit();
  probed_.reset();
}

}  // namespace mpizip::p2p
