// create(): finds which ranks share a node, then builds one transport per route and a composite
// that sends each peer's transfers to its route: peers on this rank's node to the node-local PMPI
// transport (device buffers pulled through CUDA IPC where every side can), the others to the
// network transport the options ask for (UCX, PMPI or the emulated link). The route of a peer
// depends only on facts both sides share (node, options agreed collectively), never on where a
// buffer lives, so the two sides of a transfer always use the same transport.
#include "src/transport/transport.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "src/platform/log.h"
#include "src/transport/device_ops.h"
#include "src/transport/emulated.h"
#include "src/transport/mpi_calls.h"
#include "src/transport/pmpi.h"
#include "src/transport/segments.h"
#include "src/transport/ucx.h"

namespace mpizip::transport {
namespace {

// Two transports' unsent bytes as one operation (Transport::take_unsent).
class BothUnsent final : public platform::Operation {
 public:
  BothUnsent(std::unique_ptr<platform::Operation> a, std::unique_ptr<platform::Operation> b)
      : a_(std::move(a)), b_(std::move(b)) {}
  bool progress() override {
    const bool a = a_->progress();
    return b_->progress() && a;
  }

 private:
  std::unique_ptr<platform::Operation> a_, b_;
};

// Sends each peer's transfers to the transport of its route.
class Composite final : public Transport {
 public:
  Composite(std::unique_ptr<Transport> local, std::unique_ptr<Transport> network,
            std::vector<uint8_t> same_node)
      : local_(std::move(local)), network_(std::move(network)), same_node_(std::move(same_node)),
        name_(std::string(local_->name()) == network_->name()
                  ? std::string(local_->name())
                  : std::string(local_->name()) + "+" + network_->name()) {}

  const char* name() const override { return name_.c_str(); }
  bool reaches_device_memory() const override {
    return local_->reaches_device_memory() && network_->reaches_device_memory();
  }
  Status isend(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override {
    if (peer < 0 || peer >= static_cast<int>(same_node_.size())) return Status::kInvalidArgument;
    return route(peer).isend(buf, bytes, where, peer, tag, out);
  }
  Status irecv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override {
    if (peer < 0 || peer >= static_cast<int>(same_node_.size())) return Status::kInvalidArgument;
    return route(peer).irecv(buf, bytes, where, peer, tag, out);
  }
  bool device_sends_settle(int peer) const override {
    if (peer < 0 || peer >= static_cast<int>(same_node_.size())) return false;
    return same_node_[peer] ? local_->device_sends_settle(peer)
                            : network_->device_sends_settle(peer);
  }
  void progress() override {
    local_->progress();
    network_->progress();
  }
  void progress_without_mpi() override {
    local_->progress_without_mpi();
    network_->progress_without_mpi();
  }
  // Both may keep copies: the emulated link moves device bytes over CUDA IPC too.
  std::unique_ptr<platform::Operation> take_unsent() override {
    std::unique_ptr<platform::Operation> a = local_->take_unsent();
    std::unique_ptr<platform::Operation> b = network_->take_unsent();
    if (a == nullptr) return b;
    if (b == nullptr) return a;
    return std::make_unique<BothUnsent>(std::move(a), std::move(b));
  }
  bool same_node(int peer) const override {
    return peer >= 0 && peer < static_cast<int>(same_node_.size()) && same_node_[peer] != 0;
  }
  double link_rate(int peer) const override {
    if (peer < 0 || peer >= static_cast<int>(same_node_.size())) return 0;
    return same_node_[peer] ? local_->link_rate(peer) : network_->link_rate(peer);
  }

 private:
  Transport& route(int peer) { return same_node_[peer] ? *local_ : *network_; }

  std::unique_ptr<Transport> local_;
  std::unique_ptr<Transport> network_;
  std::vector<uint8_t> same_node_;
  std::string name_;
};


// Collective: the UCX transport when it starts on every rank. create_ucx() promises one outcome
// on every rank; the reduction makes the choice collective whatever made one rank fail.
Status try_ucx(MPI_Comm comm, const Options& options, const NodeMap& nodes,
               std::unique_ptr<Transport>* out) {
  std::unique_ptr<Transport> ucx;
  const Status s = create_ucx(comm, options, nodes, &ucx);
  int started = s == Status::kOk;
  MPIZIP_CHECK(mpi_status(PMPI_Allreduce(MPI_IN_PLACE, &started, 1, MPI_INT, MPI_MIN, comm),
                          "PMPI_Allreduce"));
  if (started) {
    *out = std::move(ucx);
    return Status::kOk;
  }
#if defined(MPIZIP_HAVE_UCX)
  if (s == Status::kOk) {
    MPIZIP_LOG_ONCE(kWarn, "UCX transport did not start on another rank; inter-node transfers "
                           "use PMPI");
  } else {
    MPIZIP_LOG_ONCE(kWarn, "UCX transport did not start (%s); inter-node transfers use PMPI",
                    status_string(s));
  }
#else
  if (options.kind == Kind::kUcx) {
    MPIZIP_LOG_ONCE(kWarn, "MPIZIP_TRANSPORT=ucx, but this build has no UCX; inter-node "
                           "transfers use PMPI");
  } else {
    MPIZIP_LOG_ONCE(kInfo, "built without UCX: inter-node transfers use PMPI");
  }
#endif
  return Status::kUnsupported;
}

// The transport of peers on other nodes, of the kind the options ask for (PMPI when UCX cannot
// start).
Status create_network(MPI_Comm comm, const Options& options, const NodeMap& peers,
                      const std::vector<uint8_t>& same_node, std::unique_ptr<Transport>* out) {
  PmpiConfig config;
  config.same_node = same_node;
  config.ipc.assign(peers.size, 0);
  config.staging_bytes = options.staging_bytes;
  switch (options.kind) {
    case Kind::kEmulated:
      // Device buffers cross the emulated link through CUDA IPC where the ranks share a machine.
      config.name = "emulated";
      config.ipc = peers.ipc;
      {
        std::vector<uint8_t> paced(static_cast<size_t>(peers.size));
        for (int p = 0; p < peers.size; ++p) paced[static_cast<size_t>(p)] = !same_node[p];
        config.link = std::make_shared<EmulatedLink>(
            options.emu_gbps, options.emu_latency_us, std::move(paced),
            options.emu_link_per_rank ? Links::kRank : Links::kPair);
      }
      config.device_direct = true;
      for (int p = 0; p < peers.size; ++p) {
        config.device_direct = config.device_direct && (same_node[p] || peers.ipc[p]);
      }
      break;
    case Kind::kAuto:
    case Kind::kUcx:
      if (try_ucx(comm, options, peers, out) == Status::kOk) return Status::kOk;
      break;
    case Kind::kPmpi:
      break;
  }
  return create_pmpi(comm, std::move(config), out);
}

}  // namespace

class Serialized;

namespace {
// The live transports create() made, for progress_all_without_mpi().
std::mutex g_live_mutex;
std::set<Serialized*> g_live;
}  // namespace

// Makes one transport safe to call from several threads (the application's and MPIZip's helper
// thread): every call into it and into its transfers holds one mutex. The transports themselves
// assume one caller at a time.
class Serialized : public Transport {
 public:
  explicit Serialized(std::unique_ptr<Transport> inner)
      : inner_(std::move(inner)), mutex_(std::make_shared<std::mutex>()) {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    g_live.insert(this);
  }
  ~Serialized() override {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    g_live.erase(this);
  }
  // Skipped while another thread holds the transport: that thread advances it meanwhile.
  void try_progress_without_mpi() {
    std::unique_lock<std::mutex> lock(*mutex_, std::try_to_lock);
    if (lock.owns_lock()) inner_->progress_without_mpi();
  }
  const char* name() const override { return inner_->name(); }
  bool reaches_device_memory() const override { return inner_->reaches_device_memory(); }
  bool same_node(int peer) const override { return inner_->same_node(peer); }
  double link_rate(int peer) const override { return inner_->link_rate(peer); }
  bool device_sends_settle(int peer) const override { return inner_->device_sends_settle(peer); }
  Status isend(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override {
    std::lock_guard<std::mutex> lock(*mutex_);
    return wrap(inner_->isend(buf, bytes, where, peer, tag, out), out);
  }
  Status irecv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override {
    std::lock_guard<std::mutex> lock(*mutex_);
    return wrap(inner_->irecv(buf, bytes, where, peer, tag, out), out);
  }
  void progress() override {
    std::lock_guard<std::mutex> lock(*mutex_);
    inner_->progress();
  }
  void progress_without_mpi() override {
    std::lock_guard<std::mutex> lock(*mutex_);
    inner_->progress_without_mpi();
  }
  std::unique_ptr<platform::Operation> take_unsent() override {
    std::lock_guard<std::mutex> lock(*mutex_);
    return inner_->take_unsent();
  }

 private:
  class Locked : public Transfer {
   public:
    Locked(std::unique_ptr<Transfer> inner, std::shared_ptr<std::mutex> mutex)
        : inner_(std::move(inner)), mutex_(std::move(mutex)) {}
    ~Locked() override {
      std::lock_guard<std::mutex> lock(*mutex_);
      inner_.reset();
    }
    Status test(bool* done) override {
      std::lock_guard<std::mutex> lock(*mutex_);
      return inner_->test(done);
    }
    uint64_t received_bytes() const override {
      std::lock_guard<std::mutex> lock(*mutex_);
      return inner_->received_bytes();
    }
    bool needs_sender() const override {
      std::lock_guard<std::mutex> lock(*mutex_);
      return inner_->needs_sender();
    }
    std::string describe() const override {
      std::lock_guard<std::mutex> lock(*mutex_);
      return inner_->describe();
    }

   private:
    std::unique_ptr<Transfer> inner_;
    std::shared_ptr<std::mutex> mutex_;
  };

  Status wrap(Status s, std::unique_ptr<Transfer>* out) {
    if (s == Status::kOk && *out) *out = std::make_unique<Locked>(std::move(*out), mutex_);
    return s;
  }

  // Destroyed last: the transfers hold the mutex too, and may outlive nothing but the transport.
  std::unique_ptr<Transport> inner_;
  std::shared_ptr<std::mutex> mutex_;
};

void progress_all_without_mpi() {
  std::lock_guard<std::mutex> lock(g_live_mutex);
  for (Serialized* t : g_live) t->try_progress_without_mpi();
}

Status create(MPI_Comm comm, const Options& options, std::unique_ptr<Transport>* out) {
  MPIZIP_CHECK(mpi_status(PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
                          "PMPI_Comm_set_errhandler"));
  NodeMap nodes;
  MPIZIP_CHECK(find_node_map(comm, &nodes));
  return create(comm, options, nodes, out);
}

Status create(MPI_Comm comm, const Options& options, const NodeMap& peers,
              std::unique_ptr<Transport>* out) {
  Options opts = options;
  if (opts.kind == Kind::kEmulated && !(opts.emu_gbps > 0 && opts.emu_latency_us >= 0)) {
    MPIZIP_LOG_ONCE(kWarn, "emulated link: rate %g GB/s, latency %g us is not valid; using PMPI",
                    opts.emu_gbps, opts.emu_latency_us);
    opts.kind = Kind::kPmpi;  // same wire protocol: ranks that disagree still understand each other
  }
  MPIZIP_CHECK(mpi_status(PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
                          "PMPI_Comm_set_errhandler"));
  std::vector<uint8_t> same_node(peers.size, 0);
  bool ipc_all = true;       // IPC with every rank of this node
  bool others_local = false;  // ... and there is another rank on this node
  for (int p = 0; p < peers.size; ++p) {
    same_node[p] = opts.force_internode ? p == peers.rank : peers.same_host[p];
    if (!same_node[p]) continue;
    ipc_all = ipc_all && peers.ipc[p];
    others_local = others_local || p != peers.rank;
  }
  // Every rank sees the same node map, so every rank agrees whether any rank has remote peers.
  const bool remote = std::count(same_node.begin(), same_node.end(), 0) > 0;
  if (opts.kind == Kind::kEmulated && !remote && peers.size > 1) {
    MPIZIP_LOG_ONCE(kWarn, "MPIZIP_TRANSPORT=emulated paces inter-node transfers, and every rank "
                           "shares this node: set MPIZIP_FORCE_INTERNODE=1 to emulate a cluster");
  }

  PmpiConfig local;
  local.name = others_local && ipc_all ? "cuda-ipc" : "pmpi";
  local.same_node = same_node;
  local.ipc = peers.ipc;
  local.device_direct = ipc_all;
  local.staging_bytes = opts.staging_bytes;
  std::unique_ptr<Transport> node_transport;
  MPIZIP_CHECK(create_pmpi(comm, std::move(local), &node_transport));
  if (!remote) {
    *out = std::make_unique<Serialized>(std::move(node_transport));
    return Status::kOk;
  }
  std::unique_ptr<Transport> network;
  MPIZIP_CHECK(create_network(comm, opts, peers, same_node, &network));
  *out = std::make_unique<Serialized>(std::make_unique<Composite>(
      std::move(node_transport), std::move(network), std::move(same_node)));
  return Status::kOk;
}

}  // namespace mpizip::transport
