#include "p2p/send.h"

#include <chrono>
#include <cstring>

#include "kernels/codec_cpu.h"
#include "p2p/gpu_codec.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

namespace mpizip::p2p {
namespace {

constexpr uint64_t kBulkChunk = uint64_t{1} << 30;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The bytes of the payload as they will travel: the user's (host) buffer, a staged copy of a device
// buffer, or a compressed stream. Sets `encoding`.
Status make_payload(const Channel& ch, const UserBuffer& b, uint64_t app_bytes, Outgoing* out,
                    const uint8_t** payload, uint64_t* payload_bytes, Encoding* encoding) {
  bool compress = app_bytes > 0 && app_bytes >= ch.policy.min_bytes &&
                  (b.device || ch.policy.host_compress);
  if (compress && b.device) {
    // Device buffers compress on the GPU; only the compressed stream crosses to the host.
    auto t0 = std::chrono::steady_clock::now();
    Status s = gpu_compress(b.dtype, b.ptr, static_cast<uint64_t>(b.count), ch.policy.checksum,
                            &out->storage);
    out->traffic.codec_seconds += seconds_since(t0);
    if (s == Status::kOk && out->storage.size() < app_bytes) {
      *encoding = Encoding::kCompressed;
      *payload = out->storage.data();
      *payload_bytes = out->storage.size();
      return Status::kOk;
    }
    if (s != Status::kOk && s != Status::kUnsupported) {
      MPIZIP_LOG_ONCE(kWarn, "GPU compression failed (%s); sending uncompressed",
                      status_string(s));
    }
    out->storage.clear();
    compress = s == Status::kUnsupported;  // no GPU codec in this build: the CPU codec below
  }
  const uint8_t* src = static_cast<const uint8_t*>(b.ptr);
  std::vector<uint8_t> staged;
  if (b.device && app_bytes > 0) {
    auto t0 = std::chrono::steady_clock::now();
    staged.resize(app_bytes);
    MPIZIP_CHECK(platform::copy_to_host(staged.data(), b.ptr, app_bytes));
    out->traffic.staging_seconds += seconds_since(t0);
    src = staged.data();
  }
  *encoding = Encoding::kRaw;
  *payload = src;
  *payload_bytes = app_bytes;
  if (compress) {
    auto t0 = std::chrono::steady_clock::now();
    out->storage.resize(kernels::cpu::max_compressed_size(b.dtype, b.count));
    uint64_t written = 0;
    kernels::cpu::EncodeOptions opt;
    opt.checksum = ch.policy.checksum;
    Status s = kernels::cpu::compress(b.dtype, src, b.count, out->storage.data(),
                                      out->storage.size(), &written, opt);
    out->traffic.codec_seconds += seconds_since(t0);
    if (s != Status::kOk) {
      MPIZIP_LOG_ONCE(kWarn, "compression failed (%s); sending uncompressed", status_string(s));
    } else if (written < app_bytes) {
      out->storage.resize(written);
      *encoding = Encoding::kCompressed;
      *payload = out->storage.data();
      *payload_bytes = written;
      return Status::kOk;
    }
  }
  if (!staged.empty()) {
    out->storage = std::move(staged);
    *payload = out->storage.data();
  }
  return Status::kOk;
}

}  // namespace

Status prepare_send(const Channel& ch, const UserBuffer& b, Outgoing* out) {
  uint64_t app_bytes = static_cast<uint64_t>(b.count) * format::elem_bytes(b.dtype);
  const uint8_t* payload = nullptr;
  uint64_t payload_bytes = 0;
  Encoding encoding = Encoding::kRaw;
  MPIZIP_CHECK(make_payload(ch, b, app_bytes, out, &payload, &payload_bytes, &encoding));

  bool inline_payload = payload_bytes <= ch.policy.eager_bytes;
  if (!inline_payload) {
    out->bulk_tag = static_cast<int>(ch.bulk_tags->fetch_add(1, std::memory_order_relaxed) %
                                     static_cast<uint32_t>(ch.tag_ub));
  }
  MatchHeader h = make_header(inline_payload ? Payload::kInline : Payload::kBulk, encoding, b.dtype,
                              static_cast<uint32_t>(out->bulk_tag), b.count, payload_bytes);
  out->match.resize(kHeaderBytes + (inline_payload ? payload_bytes : 0));
  std::memcpy(out->match.data(), &h, kHeaderBytes);
  if (inline_payload) {
    if (payload_bytes > 0) std::memcpy(out->match.data() + kHeaderBytes, payload, payload_bytes);
    out->storage.clear();
  } else {
    out->bulk = payload;
    out->bulk_bytes = payload_bytes;
  }
  out->traffic.app_bytes = app_bytes;
  out->traffic.wire_bytes = payload_bytes;
  out->traffic.compressed = encoding == Encoding::kCompressed;
  return Status::kOk;
}

int post_bulk(const void* buf, uint64_t bytes, int peer, int tag, MPI_Comm comm, bool send,
              std::vector<MPI_Request>* reqs) {
  const uint8_t* p = static_cast<const uint8_t*>(buf);
  do {
    int n = static_cast<int>(bytes < kBulkChunk ? bytes : kBulkChunk);
    MPI_Request r;
    int rc = send ? PMPI_Isend(p, n, MPI_BYTE, peer, tag, comm, &r)
                  : PMPI_Irecv(const_cast<uint8_t*>(p), n, MPI_BYTE, peer, tag, comm, &r);
    if (rc != MPI_SUCCESS) return rc;
    reqs->push_back(r);
    p += n;
    bytes -= static_cast<uint64_t>(n);
  } while (bytes > 0);
  return MPI_SUCCESS;
}

namespace {

// Keeps the prepared message alive until MPI has completed every request.
class SendOp : public platform::Operation {
 public:
  explicit SendOp(Outgoing out) : out_(std::move(out)) { status_.bytes = out_.traffic.app_bytes; }
  int post(const Channel& ch, int dest, int tag, bool synchronous) {
    MPI_Request r;
    int n = static_cast<int>(out_.match.size());
    int rc = synchronous ? PMPI_Issend(out_.match.data(), n, MPI_BYTE, dest, tag, ch.comm, &r)
                         : PMPI_Isend(out_.match.data(), n, MPI_BYTE, dest, tag, ch.comm, &r);
    if (rc != MPI_SUCCESS) return rc;
    reqs_.push_back(r);
    if (out_.bulk_bytes > 0) return post_bulk(out_.bulk, out_.bulk_bytes, dest, out_.bulk_tag, ch.shadow, true, &reqs_);
    return MPI_SUCCESS;
  }
  bool progress() override {
    if (done_) return true;
    int flag = 0;
    int rc = PMPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag,
                          MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      status_.error = rc;
      flag = 1;
    }
    done_ = flag != 0;
    return done_;
  }

 private:
  Outgoing out_;
  std::vector<MPI_Request> reqs_;
  bool done_ = false;
};

}  // namespace

int start_send(const Channel& ch, const UserBuffer& b, int dest, int tag, bool synchronous,
               std::unique_ptr<platform::Operation>* op, Traffic* traffic) {
  Outgoing out;
  Status s = prepare_send(ch, b, &out);
  if (s != Status::kOk) {
    MPIZIP_ERROR("cannot prepare a send of %d elements: %s", b.count, status_string(s));
    return MPI_ERR_OTHER;
  }
  *traffic = out.traffic;
  auto send_op = std::make_unique<SendOp>(std::move(out));
  int rc = send_op->post(ch, dest, tag, synchronous);
  if (rc != MPI_SUCCESS) return rc;
  *op = std::move(send_op);
  return MPI_SUCCESS;
}

int send_blocking(const Channel& ch, const UserBuffer& b, int dest, int tag, bool synchronous,
                  Traffic* traffic) {
  Outgoing out;
  Status s = prepare_send(ch, b, &out);
  if (s != Status::kOk) {
    MPIZIP_ERROR("cannot prepare a send of %d elements: %s", b.count, status_string(s));
    return MPI_ERR_OTHER;
  }
  *traffic = out.traffic;
  int n = static_cast<int>(out.match.size());
  int rc = synchronous ? PMPI_Ssend(out.match.data(), n, MPI_BYTE, dest, tag, ch.comm)
                       : PMPI_Send(out.match.data(), n, MPI_BYTE, dest, tag, ch.comm);
  if (rc != MPI_SUCCESS || out.bulk_bytes == 0) return rc;
  std::vector<MPI_Request> reqs;
  rc = post_bulk(out.bulk, out.bulk_bytes, dest, out.bulk_tag, ch.shadow, true, &reqs);
  if (rc != MPI_SUCCESS) return rc;
  return PMPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
}

}  // namespace mpizip::p2p
