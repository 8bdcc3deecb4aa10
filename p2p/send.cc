#include "p2p/send.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

#include "cost/model.h"
#include "kernels/codec_cpu.h"
#include "p2p/chunked.h"
#include "p2p/gpu_codec.h"
#include "p2p/stream_ratios.h"
#include "p2p/wire.h"
#include "src/platform/buffers.h"
#include "src/platform/device.h"
#include "src/platform/log.h"
#include "src/transport/transport.h"

namespace mpizip::p2p {
namespace {

using transport::Memory;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class SendOp : public platform::Operation {
 public:
  SendOp(const Channel& ch, const UserBuffer& b, int dest, int tag, SendMode mode,
         std::function<void(const Traffic&)> on_done)
      : ch_(ch), b_(b), dest_(dest), tag_(tag), synchronous_(mode == SendMode::kSynchronous),
        buffered_(mode == SendMode::kBuffered),
        on_done_(std::move(on_done)) {
    app_bytes_ = static_cast<uint64_t>(b.count) * format::elem_bytes(b.dtype);
    status_.bytes = app_bytes_;
    traffic_.app_bytes = app_bytes_;
  }

  // Once the match message is posted the receiver expects the payload: a failure after that point
  // is the operation's (abandon()), which still completes, and whose receiver is told. An
  // operation whose start failed has posted nothing and may be dropped.
  ~SendOp() override {
    leave();
    if (match_req_ == MPI_REQUEST_NULL) return;
    // Not reached by the request engine, which drops operations only once complete.
    MPIZIP_WARN("send to rank %d dropped before its match message completed; cancelling it", dest_);
    PMPI_Cancel(&match_req_);
    PMPI_Wait(&match_req_, MPI_STATUS_IGNORE);
  }

  // Decides the path and posts what can leave now. An error only when nothing was posted.
  Status start() {
    using Compress = SendPolicy::Compress;
    const Compress mode = ch_.policy.compress;
    bool wants_compression =
        mode != Compress::kNever && app_bytes_ > 0 &&
        (mode == Compress::kAlways ||
         app_bytes_ >= (b_.device ? ch_.policy.gpu_min_bytes : ch_.policy.min_bytes)) &&
        (b_.device ? ch_.policy.pipeline != Pipeline::kOff : ch_.policy.host_compress) &&
        b_.compressible;
    // Device buffers are not compressed between ranks of one node: CUDA IPC moves them at memory
    // speed. Host buffers follow MPIZIP_HOST_COMPRESS wherever the peer is.
    const bool same_node = ch_.transport != nullptr && ch_.transport->same_node(dest_);
    // A stream that does not compress travels raw but for its retries (StreamRatios).
    if (wants_compression && mode == Compress::kAuto && ch_.ratios != nullptr &&
        (!b_.device || !same_node)) {
      wants_compression = ch_.ratios->worth_trying(dest_, tag_, b_.dtype);
    }
    // The cost model (cost/model.h) decides, where the stream is worth a try, whether this
    // message is faster compressed on its peer's link; the size thresholds above are its floor.
    // Host buffers, which compress only where the user asked (MPIZIP_HOST_COMPRESS), keep that
    // ask unless the transport knows the link's rate (the emulated link): the CPU codec's speed
    // against a link measured on the fly is the user's call.
    // What it takes goes back to the model once it completes (release()); until then it counts
    // among the peer's messages in flight, which the model's prediction spreads a compressed
    // message's fixed costs over.
    observed_ = ch_.cost != nullptr && (!b_.device || !same_node) &&
                app_bytes_ >= cost::Model::kLearnBytes;
    uint32_t in_flight = 0;
    if (observed_) {
      in_flight = ch_.cost->enter(dest_);
      entered_ = true;
    }
    if (wants_compression && mode == Compress::kAuto && ch_.cost != nullptr &&
        (b_.device ? !same_node : ch_.cost->knows_link(dest_))) {
      const double ratio =
          ch_.ratios != nullptr
              ? ch_.ratios->expected_ratio(dest_, tag_, b_.dtype, cost::Model::typical_ratio(b_.dtype))
              : cost::Model::typical_ratio(b_.dtype);
      wants_compression =
          ch_.cost->decide(dest_, b_.dtype, side(), app_bytes_, ratio, in_flight).compress;
    }
    posted_at_ = std::chrono::steady_clock::now();
    tried_compression_ = wants_compression && (!b_.device || !same_node);
    bool gpu_failed = false;
    if (wants_compression && b_.device && !same_node && ch_.policy.pipeline == Pipeline::kChunked &&
        ch_.policy.chunk_bytes > 0 && app_bytes_ > ch_.policy.chunk_bytes) {
      const auto chunks = static_cast<uint32_t>(chunk_count(app_bytes_, ch_.policy.chunk_bytes));
      bulk_tag_ = ch_.bulk_tags->fetch_add(chunks, std::memory_order_relaxed);
      auto sender = std::make_unique<ChunkedDeviceSender>(ch_, b_, dest_, bulk_tag_,
                                                          ch_.policy.chunk_bytes);
      Status s = sender->start();
      if (s == Status::kOk) return start_chunked_device(std::move(sender));
      if (s != Status::kUnsupported) {
        MPIZIP_LOG_ONCE(kWarn, "GPU compression unavailable (%s); sending uncompressed",
                        status_string(s));
        gpu_failed = true;
      }
    }
    if (!gpu_failed && wants_compression && b_.device && !same_node &&
        gpu_split_bytes(b_.dtype, static_cast<uint64_t>(b_.count)) > 0) {
      Status s = gpu_start_compress(b_.dtype, b_.ptr, static_cast<uint64_t>(b_.count),
                                    ch_.policy.checksum,
                                    ch_.policy.pipeline == Pipeline::kSplit, &job_);
      if (s == Status::kOk) return start_split();
      if (s != Status::kUnsupported) {
        MPIZIP_LOG_ONCE(kWarn, "GPU compression unavailable (%s); sending uncompressed",
                        status_string(s));
        gpu_failed = true;  // no second attempt below
      }
    }
    if (wants_compression && !b_.device && ch_.policy.chunk_bytes > 0 &&
        app_bytes_ > ch_.policy.chunk_bytes) {
      return start_chunked();
    }
    Status s = make_payload(wants_compression && !gpu_failed && (!b_.device || !same_node));
    if (s != Status::kOk) {
      MPIZIP_INFO("cannot prepare a send of %llu elements: %s",
                  static_cast<unsigned long long>(b_.count), status_string(s));
      return s;
    }
    return post_whole();
  }

  bool progress() override {
    if (done_) return true;
    if (failed_) return settle();
    if (job_active_ && !ok(error_)) {  // abandoned: only the end of the encoding is awaited
      bool finished = false;
      if (!ok(job_.done(&finished)) || finished) job_active_ = false;
    } else if (job_active_) {
      Status s = advance_job();
      if (s != Status::kOk) return fail(s);
    }
    if (chunked_ && !chunks_done_) {
      Status s = chunked_->advance(&chunks_done_);
      if (s != Status::kOk) return fail(s);
      if (chunks_done_) {
        traffic_.wire_bytes = chunked_->wire_bytes();
        traffic_.codec_seconds = chunked_->codec_seconds();
      }
    }
    if (chunked_device_ && !chunks_done_) {
      const bool compressing = !chunked_device_->all_posted();
      Status s = chunked_device_->advance(&chunks_done_);
      if (s != Status::kOk) return fail(s);
      if (compressing && chunked_device_->all_posted()) {
        traffic_.codec_seconds += seconds_since(codec_start_);
      }
      if (chunks_done_) traffic_.wire_bytes = chunked_device_->wire_bytes();
    }
    if (match_req_ != MPI_REQUEST_NULL) {
      int flag = 0;
      int rc = PMPI_Test(&match_req_, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return fail(Status::mpi(rc));
    }
    bool all = !job_active_ && match_req_ == MPI_REQUEST_NULL &&
               ((!chunked_ && !chunked_device_) || chunks_done_);
    for (auto& t : transfers_) {
      if (!t) continue;
      bool finished = false;
      Status s = t->test(&finished);
      if (s != Status::kOk) return fail(s);
      all = all && finished;
    }
    if (!all) return false;
    done_ = true;
    release();
    return true;
  }

  // Something was posted, but the payload cannot follow: the error is the operation's, and every
  // part the match message promised leaves empty, so that the receiver reports a corrupt payload
  // instead of waiting for it. The operation completes once what was posted has left.
  void abandon(Status s) {
    MPIZIP_INFO("send of %llu elements to rank %d failed after its match message: %s",
                static_cast<unsigned long long>(b_.count), dest_, status_string(s));
    error_ = s;
    // A GPU job still encoding runs to its end (progress() waits for it without posting).
    for (int i = 0; i < 2; ++i) {
      if (!promised_[i] || transfers_[i]) continue;
      static const uint8_t kNothing = 0;
      if (!ok(ch_.transport->isend(&kNothing, 0, Memory::kHost, dest_, uint64_t{bulk_tag_} + i,
                                   &transfers_[i]))) {
        transfers_[i].reset();
      }
    }
    if (chunked_) chunked_->abandon();
    if (chunked_device_) chunked_device_->abandon();
  }

  // Encoding, chunks still to post, or a transfer whose pieces still go to MPI from this side.
  bool awaits_own_calls() const override {
    if (done_ || failed_ || !ok(error_)) return false;
    if (job_active_ || (chunked_ && !chunked_->all_posted()) ||
        (chunked_device_ && !chunked_device_->all_posted())) {
      return true;
    }
    for (const auto& t : transfers_) {
      if (t && t->needs_sender()) return true;
    }
    return false;
  }

  // The match message is MPIZip's own copy: only a synchronous send waits for it to be matched.
  bool detachable() const override {
    const bool owned = owned_ || (chunked_ && chunked_->all_posted()) ||
                       (chunked_device_ && chunked_device_->all_posted());
    return !done_ && owned && !awaits_own_calls() &&
           (!synchronous_ || match_req_ == MPI_REQUEST_NULL) &&
           ok(error_);
  }

 private:
  // The payload as it will travel when it is ready now: inline in the match message or one bulk
  // transfer, raw or compressed. Compresses on the CPU (host buffers) or, for small device
  // buffers, on the GPU synchronously.
  Status make_payload(bool compress) {
    payload_ = static_cast<const uint8_t*>(b_.ptr);
    payload_bytes_ = app_bytes_;
    payload_where_ = b_.device ? Memory::kDevice : Memory::kHost;
    encoding_ = Encoding::kRaw;
    if (!compress) return Status::kOk;
    auto t0 = std::chrono::steady_clock::now();
    const uint8_t* src = static_cast<const uint8_t*>(b_.ptr);
    if (b_.device) {
      // A device buffer too small to split: compress on the GPU, copy the stream to the host.
      GpuJob job;
      Status s = gpu_start_compress(b_.dtype, b_.ptr, static_cast<uint64_t>(b_.count),
                                    ch_.policy.checksum, false, &job);
      bool finished = false;
      while (s == Status::kOk && (s = job.done(&finished)) == Status::kOk && !finished) {
      }
      if (s == Status::kOk) s = job.result();
      if (s == Status::kOk) note_ratio(worth_sending(job.size()) ? job.size() : app_bytes_);
      if (s == Status::kOk && worth_sending(job.size())) {
        MPIZIP_CHECK(storage_.resize(job.size()));
        MPIZIP_CHECK(platform::copy_to_host(storage_.data(), job.stream().data(), job.size()));
        use_storage(Encoding::kCompressed, Memory::kHost);
      } else if (s != Status::kOk && s != Status::kUnsupported) {
        MPIZIP_LOG_ONCE(kWarn, "GPU compression failed (%s); sending uncompressed",
                        status_string(s));
      }
      if (s != Status::kUnsupported) {
        traffic_.codec_seconds += seconds_since(t0);
        return Status::kOk;
      }
      // No GPU codec in this build: stage the data and use the CPU codec.
      MPIZIP_CHECK(staged_.resize(app_bytes_));
      MPIZIP_CHECK(platform::copy_to_host(staged_.data(), b_.ptr, app_bytes_));
      src = staged_.data();
      traffic_.staging_seconds += seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
    }
    MPIZIP_CHECK(storage_.resize(kernels::cpu::max_compressed_size(b_.dtype, b_.count)));
    uint64_t written = 0;
    kernels::cpu::EncodeOptions opt;
    opt.checksum = ch_.policy.checksum;
    Status s = kernels::cpu::compress(b_.dtype, src, static_cast<uint64_t>(b_.count),
                                      storage_.data(), storage_.size(), &written, opt);
    traffic_.codec_seconds += seconds_since(t0);
    if (s != Status::kOk) {
      MPIZIP_LOG_ONCE(kWarn, "compression failed (%s); sending uncompressed", status_string(s));
    } else if (worth_sending(written)) {
      MPIZIP_CHECK(storage_.resize(written));
      use_storage(Encoding::kCompressed, Memory::kHost);
      note_ratio(written);
      return Status::kOk;
    }
    if (ok(s)) note_ratio(app_bytes_);
    if (!staged_.empty()) {  // the CPU codec did not help: send the staged copy
      payload_ = staged_.data();
      payload_where_ = Memory::kHost;
      owned_ = true;
    }
    return Status::kOk;
  }

  // What an attempt to compress came to, in the stream's ratios (StreamRatios): `wire` bytes for
  // the message's, raw ones where the codec found nothing to save. Once a message, as soon as it is
  // known (a send that completes in the background would tell its stream too late otherwise).
  void note_ratio(uint64_t wire) {
    if (!tried_compression_ || ch_.ratios == nullptr) return;
    ch_.ratios->record(dest_, tag_, b_.dtype, app_bytes_, wire);
    tried_compression_ = false;
  }

  // Whether a stream of `stream_bytes` travels instead of the raw bytes: only if it and a header
  // together are no larger than they (wire.h: a match message is never larger than its message,
  // so a receive that holds the message holds its match message too).
  bool worth_sending(uint64_t stream_bytes) const {
    return stream_bytes + kHeaderBytes <= app_bytes_;
  }

  void use_storage(Encoding e, Memory where) {
    encoding_ = e;
    payload_ = storage_.data();
    payload_bytes_ = storage_.size();
    payload_where_ = where;
    owned_ = true;
  }

  // A raw payload that travels apart from the match message: a copy in MPIZip's memory (and
  // memory allows), so that the send need not wait for the receiver. Device payloads are copied
  // into host memory (the transports carry host bytes to a device receiver as well), except
  // towards a rank of this node, which pulls them through CUDA IPC, or from a copy the transport
  // makes itself if it does not come soon (src/transport/node_flags.h); a buffered send copies
  // them for every peer.
  void own_raw_payload() {
    if (owned_ || payload_bytes_ <= ch_.policy.eager_bytes) return;
    const bool host = payload_where_ == Memory::kHost;
    const bool ipc = !host && ch_.transport != nullptr && ch_.transport->device_sends_settle(dest_);
    if (!buffered_ && ipc) return;
    if (storage_.resize(payload_bytes_) != Status::kOk) return;  // then it waits for the receiver
    if (host) {
      std::memcpy(storage_.data(), payload_, payload_bytes_);
    } else if (platform::copy_to_host(storage_.data(), payload_, payload_bytes_) != Status::kOk) {
      storage_.clear();
      return;
    }
    use_storage(encoding_, Memory::kHost);
  }

  // Inline or one bulk transfer: the payload is ready.
  Status post_whole() {
    own_raw_payload();
    traffic_.wire_bytes = payload_bytes_;
    traffic_.compressed = encoding_ == Encoding::kCompressed;
    const bool inline_payload = payload_bytes_ <= ch_.policy.eager_bytes;
    if (!inline_payload) bulk_tag_ = ch_.bulk_tags->fetch_add(1, std::memory_order_relaxed);
    const Payload kind = inline_payload                      ? Payload::kInline
                         : payload_where_ == Memory::kDevice ? Payload::kBulkDevice
                                                             : Payload::kBulk;
    size_t header_bytes = kHeaderBytes;
    if (kind == Payload::kInline && encoding_ == Encoding::kRaw) {
      header_bytes = 0;  // plain: the application's bytes alone (wire.h)
      bare_ = true;
      match_.resize(payload_bytes_);
    } else {
      const MatchHeader h = make_header(kind, encoding_, b_.dtype, bulk_tag_,
                                        static_cast<uint64_t>(b_.count), payload_bytes_);
      match_.resize(header_bytes + (inline_payload ? payload_bytes_ : 0));
      std::memcpy(match_.data(), &h, header_bytes);
    }
    if (inline_payload && payload_bytes_ > 0) {
      uint8_t* dst = match_.data() + header_bytes;
      if (payload_where_ == Memory::kDevice) {
        MPIZIP_CHECK(platform::copy_to_pageable_host(dst, payload_, payload_bytes_));
      } else {
        std::memcpy(dst, payload_, payload_bytes_);
      }
    }
    MPIZIP_CHECK(post_match());
    if (inline_payload) {
      owned_ = true;  // the match message holds the payload
      release();
      return Status::kOk;
    }
    promised_[0] = true;
    const Status s = ch_.transport->isend(payload_, payload_bytes_, payload_where_, dest_,
                                          bulk_tag_, &transfers_[0]);
    if (!ok(s)) abandon(s);
    return Status::kOk;
  }

  // Chunked from device memory: every chunk's compression is queued (by the caller); the match
  // message now, each chunk as soon as its job ends.
  Status start_chunked_device(std::unique_ptr<ChunkedDeviceSender> sender) {
    const MatchHeader h = make_header(Payload::kChunkedDevice, Encoding::kCompressed, b_.dtype,
                                      bulk_tag_, static_cast<uint64_t>(b_.count),
                                      ch_.policy.chunk_bytes);
    match_.resize(kHeaderBytes);
    std::memcpy(match_.data(), &h, kHeaderBytes);
    traffic_.compressed = true;
    codec_start_ = std::chrono::steady_clock::now();
    chunked_device_ = std::move(sender);
    MPIZIP_CHECK(post_match());
    Status s = ch_.policy.fault_after_match ? Status::kInternal
                                            : chunked_device_->advance(&chunks_done_);
    if (!ok(s)) abandon(s);
    return Status::kOk;
  }

  // Chunked (p2p/chunked.h): the match message now, then chunk after chunk, each compressed while
  // the ones before it are on the wire.
  Status start_chunked() {
    const uint64_t chunk = ch_.policy.chunk_bytes;
    const auto chunks = static_cast<uint32_t>(chunk_count(app_bytes_, chunk));
    bulk_tag_ = ch_.bulk_tags->fetch_add(chunks, std::memory_order_relaxed);
    const MatchHeader h = make_header(Payload::kChunked, Encoding::kCompressed, b_.dtype, bulk_tag_,
                                      static_cast<uint64_t>(b_.count), chunk);
    match_.resize(kHeaderBytes);
    std::memcpy(match_.data(), &h, kHeaderBytes);
    traffic_.compressed = true;
    MPIZIP_CHECK(post_match());
    chunked_ = std::make_unique<ChunkedSender>(ch_, b_, dest_, bulk_tag_, chunk);
    Status s = ch_.policy.fault_after_match ? Status::kInternal : chunked_->start();
    if (ok(s)) s = chunked_->advance(&chunks_done_);
    if (!ok(s)) abandon(s);
    return Status::kOk;
  }

  // Split-send: the match message now, each part of the stream as soon as the GPU has it.
  Status start_split() {
    job_active_ = true;
    owned_ = true;  // the stream is MPIZip's; the application's buffer is free once it is encoded
    split_bytes_ = gpu_split_bytes(b_.dtype, static_cast<uint64_t>(b_.count));
    const uint64_t max_bytes = job_.stream().size();
    bulk_tag_ = ch_.bulk_tags->fetch_add(2, std::memory_order_relaxed);
    MatchHeader h = make_header(Payload::kSplit, Encoding::kCompressed, b_.dtype, bulk_tag_,
                                static_cast<uint64_t>(b_.count), max_bytes);
    match_.resize(kHeaderBytes);
    std::memcpy(match_.data(), &h, kHeaderBytes);
    traffic_.compressed = true;
    codec_start_ = std::chrono::steady_clock::now();
    Status s = post_match();
    if (!ok(s)) return s;  // the job's destructor waits for its kernels
    promised_[0] = promised_[1] = true;
    s = ch_.policy.fault_after_match ? Status::kInternal : advance_job();
    if (!ok(s)) abandon(s);
    return Status::kOk;
  }

  // Posts the parts of the stream the GPU has finished.
  Status advance_job() {
    if (!transfers_[0]) {
      bool ready = false;
      MPIZIP_CHECK(job_.raw_ready(&ready));
      if (!ready) return Status::kOk;
      if (ch_.policy.pipeline == Pipeline::kSplit) {
        MPIZIP_CHECK(post_part(0, job_.stream().data(), split_bytes_, bulk_tag_));
      }
    }
    bool finished = false;
    MPIZIP_CHECK(job_.done(&finished));
    if (!finished) return Status::kOk;
    traffic_.codec_seconds += seconds_since(codec_start_);
    Status s = job_.result();
    uint64_t size = job_.size();
    if (s != Status::kOk || size < split_bytes_ || size > job_.stream().size()) {
      // The header promised a stream: send the raw part alone, which the receiver rejects as a
      // corrupt stream, and report the failure here.
      error_ = ok(s) ? Status::kInternal : s;
      MPIZIP_INFO("GPU compression of %llu elements failed: %s",
                  static_cast<unsigned long long>(b_.count), status_string(error_));
      size = split_bytes_;
    }
    if (!transfers_[0]) MPIZIP_CHECK(post_part(0, job_.stream().data(), split_bytes_, bulk_tag_));
    MPIZIP_CHECK(post_part(1, job_.stream().data() + split_bytes_, size - split_bytes_,
                             uint64_t{bulk_tag_} + 1));
    traffic_.wire_bytes = size;
    job_active_ = false;
    if (ok(error_)) note_ratio(size);  // a split stream is sent even where it saves nothing
    return Status::kOk;
  }

  Status post_match() {
    // Every match message but a bare one is longer than bare_bytes (wire.h: match_size).
    if (!bare_) match_.resize(match_size(match_.size(), ch_.policy.bare_bytes), 0);
    const int n = static_cast<int>(match_.size());
    return Status::mpi(
        synchronous_ ? PMPI_Issend(match_.data(), n, MPI_BYTE, dest_, tag_, ch_.comm, &match_req_)
                     : PMPI_Isend(match_.data(), n, MPI_BYTE, dest_, tag_, ch_.comm, &match_req_));
  }

  Status post_part(int i, const void* p, uint64_t bytes, uint64_t tag) {
    return ch_.transport->isend(p, bytes, Memory::kDevice, dest_, tag, &transfers_[i]);
  }

  // A part failed to leave: the operation ends with the error once its match message is done
  // (its memory is MPI's until then).
  bool fail(Status s) {
    MPIZIP_INFO("send of %llu elements to rank %d failed: %s",
                static_cast<unsigned long long>(b_.count), dest_, status_string(s));
    error_ = s;
    failed_ = true;
    return settle();
  }

  bool settle() {
    if (match_req_ != MPI_REQUEST_NULL) {
      int flag = 0;
      if (PMPI_Test(&match_req_, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) return false;
      match_req_ = MPI_REQUEST_NULL;
    }
    transfers_[0].reset();
    transfers_[1].reset();
    done_ = true;
    release();
    return true;
  }

  // When its GPU encode job was queued (steady clock, seconds), or -1 where it had none.
  double codec_queued_at() const {
    if (!b_.device || codec_start_ == std::chrono::steady_clock::time_point{}) return -1;
    return std::chrono::duration<double>(codec_start_.time_since_epoch()).count();
  }

  // The message no longer counts among its peer's in flight (once).
  void leave() {
    if (!entered_) return;
    entered_ = false;
    ch_.cost->leave(dest_);
  }

  // MPIZip's memory goes back to its pools as soon as nothing of the message needs it.
  void release() {
    status_.error = error_;
    storage_.clear();
    staged_.clear();
    if (ok(error_)) note_ratio(traffic_.compressed ? traffic_.wire_bytes : traffic_.app_bytes);
    if (ok(error_) && observed_) {
      ch_.cost->observe(dest_, b_.dtype, side(), traffic_.app_bytes,
                        traffic_.wire_bytes > 0 ? traffic_.wire_bytes : traffic_.app_bytes,
                        traffic_.compressed, traffic_.codec_seconds, seconds_since(posted_at_),
                        -1, codec_queued_at());
      observed_ = false;
    }
    leave();
    if (on_done_) {
      on_done_(traffic_);
      on_done_ = nullptr;
    }
  }

  Channel ch_;
  UserBuffer b_;
  int dest_, tag_;
  bool synchronous_;
  bool buffered_;
  std::function<void(const Traffic&)> on_done_;
  bool tried_compression_ = false;  // the outcome goes to the stream's ratios (note_ratio)
  bool observed_ = false;           // what it took goes to the cost model (release())
  bool entered_ = false;            // counted among its peer's messages in flight (leave())
  std::chrono::steady_clock::time_point posted_at_;
  // Where this message's codec runs, for the cost model.
  cost::Side side() const { return b_.device ? cost::Side::kGpu : cost::Side::kCpu; }
  uint64_t app_bytes_ = 0;
  Traffic traffic_;

  const uint8_t* payload_ = nullptr;
  uint64_t payload_bytes_ = 0;
  Memory payload_where_ = Memory::kHost;
  Encoding encoding_ = Encoding::kRaw;
  platform::HostBuffer storage_;  // compressed payload (host)
  platform::HostBuffer staged_;   // host copy of a device buffer for the CPU codec

  GpuJob job_;
  bool job_active_ = false;
  uint64_t split_bytes_ = 0;
  std::chrono::steady_clock::time_point codec_start_;

  uint32_t bulk_tag_ = 0;
  std::vector<uint8_t> match_;
  bool bare_ = false;  // the match message is the application's bytes alone (wire.h)
  MPI_Request match_req_ = MPI_REQUEST_NULL;
  std::unique_ptr<transport::Transfer> transfers_[2];
  bool promised_[2] = {false, false};  // the match message announced this transfer
  Status error_;
  bool done_ = false;
  bool failed_ = false;  // a part failed: only the match message is awaited (settle())
  bool owned_ = false;  // every byte that still travels is in MPIZip's memory (or the match message)
  std::unique_ptr<ChunkedSender> chunked_;               // Payload::kChunked
  std::unique_ptr<ChunkedDeviceSender> chunked_device_;  // Payload::kChunkedDevice
  bool chunks_done_ = false;
};

}  // namespace

Status start_send(const Channel& ch, const UserBuffer& b, int dest, int tag, SendMode mode,
                  std::unique_ptr<platform::Operation>* op,
                  std::function<void(const Traffic&)> on_done) {
  auto send = std::make_unique<SendOp>(ch, b, dest, tag, mode, std::move(on_done));
  MPIZIP_CHECK(send->start());
  *op = std::move(send);
  return Status::kOk;
}

}  // namespace mpizip::p2p
