// The UCX transport (src/transport/ucx.h): the Transport over a communicator's Channel (data path
// and wire layout in src/transport/ucx_transfer.h), and its collective set-up: UCX started on
// every rank, a context id, the worker addresses, the node's ranks.
//
// Endpoints are created on first use of a peer, by sends and receives alike: a receive needs the
// endpoint so that UCX reports the peer's failure (error handling mode peer), which then fails the
// receive with kTransportError instead of leaving it posted forever. UCX 1.13 moves data only over
// transports that detect a peer's failure in that mode (TCP, InfiniBand), not over its
// shared-memory ones: same-node peers are better served by CUDA IPC.
#include "src/transport/ucx.h"

#include <climits>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "src/platform/device.h"
#include "src/platform/log.h"
#include "src/transport/mpi_calls.h"
#include "src/transport/ucx_transfer.h"
#include "src/transport/ucx_worker.h"

namespace mpizip::transport {
namespace {

using ucx::Channel;
using ucx::PieceTransfer;

class UcxTransport final : public Transport {
 public:
  UcxTransport(std::shared_ptr<Channel> channel, bool device_memory)
      : channel_(std::move(channel)), device_memory_(device_memory) {}

  const char* name() const override { return "ucx"; }
  bool reaches_device_memory() const override { return device_memory_; }

  Status isend(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override {
    return start(false, const_cast<void*>(buf), bytes, where, peer, tag, out);
  }
  Status irecv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override {
    return start(true, buf, bytes, where, peer, tag, out);
  }

  void progress() override {
    ucx::Worker& w = channel_->worker();
    std::lock_guard<std::mutex> lock(w.mutex());
    if (w.closed()) return;
    w.progress();
    channel_->advance_all();
  }
  // UCX alone: the same as progress().
  void progress_without_mpi() override { progress(); }

  bool same_node(int peer) const override {
    return peer >= 0 && peer < channel_->size() && channel_->same_node(peer);
  }

 private:
  // Posts a send or a receive and starts its first pieces, so that the data starts moving before
  // the caller's first test().
  Status start(bool receive, void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) {
    if (peer < 0 || peer >= channel_->size() || (buf == nullptr && bytes > 0) || out == nullptr) {
      return Status::kInvalidArgument;
    }
    bool device = where == Memory::kDevice && bytes > 0;
    if (device && !platform::has_gpu()) return Status::kNoDevice;
    bool staged = device && !device_memory_;
    ucx::Worker& w = channel_->worker();
    std::lock_guard<std::mutex> lock(w.mutex());
    if (w.closed()) {
      MPIZIP_LOG_ONCE(kWarn, "UCX transfer requested after the UCX shutdown");
      return Status::kTransportError;
    }
    ucx::Peer* p = nullptr;
    MPIZIP_CHECK(channel_->connect(peer, &p));
    if (staged) MPIZIP_CHECK(channel_->prepare_streams(receive));
    auto t = std::make_unique<PieceTransfer>(
        channel_, p, channel_->wire_tag(receive ? peer : channel_->rank(), tag), receive,
        static_cast<char*>(buf), bytes,
        device && !staged ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST, staged);
    t->advance();
    *out = std::move(t);
    return Status::kOk;
  }

  std::shared_ptr<Channel> channel_;
  bool device_memory_;
};

// Whether every rank of `comm` started UCX: the local status where it failed here, kTransportError
// where it failed elsewhere.
Status agree_started(MPI_Comm comm, Status local) {
  int ok = local == Status::kOk;
  MPIZIP_CHECK(mpi_status(PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm),
                         "MPI_Allreduce"));
  if (ok) return Status::kOk;
  if (local != Status::kOk) return local;
  MPIZIP_INFO("UCX did not start on every rank of the communicator");
  return Status::kTransportError;
}

// Agrees on a context id that no member process holds: each proposes its lowest free id at or
// above a floor, the highest proposal is tried, and the round repeats above it until every member
// could reserve it (usually one round). On success this rank holds *id in `worker`.
Status agree_context_id(MPI_Comm comm, ucx::Worker& worker, uint32_t* id) {
  int floor = 0;
  for (;;) {
    int candidate;
    {
      std::lock_guard<std::mutex> lock(worker.mutex());
      candidate = static_cast<int>(worker.first_free_id(static_cast<uint32_t>(floor)));
    }
    MPIZIP_CHECK(mpi_status(PMPI_Allreduce(MPI_IN_PLACE, &candidate, 1, MPI_INT, MPI_MAX, comm),
                           "MPI_Allreduce"));
    if (candidate >= static_cast<int>(ucx::Worker::kContextIds)) {
      MPIZIP_WARN("UCX transport: all %u context ids are in use", ucx::Worker::kContextIds);
      return Status::kUnsupported;
    }
    int reserved;
    {
      std::lock_guard<std::mutex> lock(worker.mutex());
      reserved = worker.reserve_id(static_cast<uint32_t>(candidate));
    }
    int everywhere = reserved;
    Status s = mpi_status(PMPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, comm),
                         "MPI_Allreduce");
    if (s == Status::kOk && everywhere) {
      *id = static_cast<uint32_t>(candidate);
      return Status::kOk;
    }
    if (reserved) {
      std::lock_guard<std::mutex> lock(worker.mutex());
      worker.release_id(static_cast<uint32_t>(candidate));
    }
    MPIZIP_CHECK(s);
    floor = candidate + 1;
  }
}

// Gathers every rank's worker address: their sizes first, then the addresses themselves.
Status exchange_addresses(MPI_Comm comm, ucx::Worker& worker, Channel* channel) {
  std::vector<uint8_t> mine;
  {
    std::lock_guard<std::mutex> lock(worker.mutex());
    mine = worker.address();
  }
  int n = channel->size();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(n), offsets(n);
  MPIZIP_CHECK(mpi_status(PMPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm),
                         "MPI_Allgather"));
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
    if (total > INT_MAX) {
      MPIZIP_WARN("UCX transport: worker addresses exceed 2 GiB in all");
      return Status::kUnsupported;
    }
  }
  std::vector<uint8_t> all(static_cast<size_t>(total));
  MPIZIP_CHECK(mpi_status(PMPI_Allgatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(),
                                         offsets.data(), MPI_BYTE, comm),
                         "MPI_Allgatherv"));
  for (int r = 0; r < n; ++r) {
    channel->set_address(r, std::string(reinterpret_cast<const char*>(all.data()) + offsets[r],
                                        static_cast<size_t>(lengths[r])));
  }
  return Status::kOk;
}

}  // namespace

Status create_ucx(MPI_Comm comm, const Options& options, std::unique_ptr<Transport>* out) {
  NodeMap nodes;
  MPIZIP_CHECK(find_node_map(comm, &nodes));
  return create_ucx(comm, options, nodes, out);
}

Status create_ucx(MPI_Comm comm, const Options& options, const NodeMap& nodes,
                  std::unique_ptr<Transport>* out) {
  int rank = 0, size = 0;
  MPIZIP_CHECK(mpi_status(PMPI_Comm_rank(comm, &rank), "MPI_Comm_rank"));
  MPIZIP_CHECK(mpi_status(PMPI_Comm_size(comm, &size), "MPI_Comm_size"));
  if (size > (1 << ucx::kRankBits)) {
    MPIZIP_INFO("UCX transport: %d ranks exceed the %d that its tags can name", size,
                1 << ucx::kRankBits);
    return Status::kUnsupported;
  }
  std::shared_ptr<ucx::Worker> worker;
  MPIZIP_CHECK(agree_started(
      comm, options.fail_ucx_start ? Status::kTransportError : ucx::Worker::get(&worker)));
  uint32_t id = 0;
  MPIZIP_CHECK(agree_context_id(comm, *worker, &id));
  bool device_memory;
  {
    std::lock_guard<std::mutex> lock(worker->mutex());
    device_memory = worker->reaches_device_memory();
  }
  auto channel =
      std::make_shared<Channel>(std::move(worker), id, rank, size, options.staging_bytes);
  MPIZIP_CHECK(exchange_addresses(comm, channel->worker(), channel.get()));
  // The ranks that share this rank's node (none under force_internode: each rank its own node).
  for (int r = 0; r < size && !options.force_internode; ++r) {
    if (nodes.same_host[r]) channel->set_same_node(r);
  }
  *out = std::make_unique<UcxTransport>(std::move(channel), device_memory);
  return Status::kOk;
}

void shutdown_ucx() { ucx::Worker::shutdown(); }

}  // namespace mpizip::transport
