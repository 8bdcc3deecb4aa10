#include "src/transport/ucx_worker.h"

#include <chrono>
#include <cstdlib>

#include "src/platform/log.h"
#include "src/platform/topology.h"
#include "src/platform/device.h"

namespace mpizip::transport::ucx {
namespace {

// How long closing endpoints may take before they are left to UCX. A close completes once the
// peer's worker has answered, so only a peer that is gone or not progressing reaches this bound.
constexpr std::chrono::seconds kCloseWait{1};

// The process's worker and the mutex that guards the pointer (not the worker: Worker::mutex()).
// Allocated once and never destroyed, so that no static destructor runs UCX code at exit.
struct Registry {
  std::mutex mutex;
  std::shared_ptr<Worker> worker;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

Status convert(ucs_status_t s, const char* what) {
  switch (s) {
    case UCS_OK:
      return Status::kOk;
    case UCS_ERR_MESSAGE_TRUNCATED:
      // The application's error (a receive smaller than the message); the caller reports it.
      MPIZIP_INFO("UCX %s: %s", what, ucs_status_string(s));
      return Status::kTruncated;
    case UCS_ERR_NO_MEMORY:
      MPIZIP_WARN("UCX %s: %s", what, ucs_status_string(s));
      return Status::kOutOfMemory;
    default:
      MPIZIP_WARN("UCX %s: %s", what, ucs_status_string(s));
      return Status::kTransportError;
  }
}

Status Worker::get(std::shared_ptr<Worker>* out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.worker == nullptr) {
    auto w = std::make_shared<Worker>();
    std::lock_guard<std::mutex> worker_lock(w->mutex_);
    Status s = w->start();
    if (s != Status::kOk) {
      w->stop();
      return s;
    }
    r.worker = std::move(w);
  }
  *out = r.worker;
  return Status::kOk;
}

void Worker::shutdown() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.worker == nullptr) return;
  std::shared_ptr<Worker> w = std::move(r.worker);
  std::lock_guard<std::mutex> worker_lock(w->mutex_);
  w->stop();
}

// Reads the UCX_* environment (UCX_TLS, UCX_NET_DEVICES, ... tune this worker as they tune any UCX
// program), then creates the context, the worker and its address. Undone by stop().
Status Worker::start() {
  ucp_config_t* config = nullptr;
  MPIZIP_CHECK(convert(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read"));
  // Several InfiniBand devices and no choice of the user's: the one nearest this rank's GPU
  // (hwloc), whose traffic then crosses the fewest PCIe links to and from that GPU's memory.
  if (std::getenv("UCX_NET_DEVICES") == nullptr) {
    const std::string nic = platform::nearest_infiniband_device(platform::current_gpu_pci_bus_id());
    if (!nic.empty() && ucp_config_modify(config, "NET_DEVICES", (nic + ":1").c_str()) == UCS_OK) {
      MPIZIP_INFO("UCX: network device %s:1, the nearest to the GPU", nic.c_str());
    }
  }
  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG;
  params.name = "mpizip";
  ucs_status_t s = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  MPIZIP_CHECK(convert(s, "ucp_init"));

  ucp_context_attr_t attr = {};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  MPIZIP_CHECK(convert(ucp_context_query(context_, &attr), "ucp_context_query"));
  device_memory_ = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;

  ucp_worker_params_t wparams = {};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  MPIZIP_CHECK(convert(ucp_worker_create(context_, &wparams, &worker_), "ucp_worker_create"));

  ucp_address_t* address = nullptr;
  size_t length = 0;
  MPIZIP_CHECK(
      convert(ucp_worker_get_address(worker_, &address, &length), "ucp_worker_get_address"));
  const auto* bytes = reinterpret_cast<const uint8_t*>(address);
  address_.assign(bytes, bytes + length);
  ucp_worker_release_address(worker_, address);
  MPIZIP_INFO("UCX %s started (%s device memory)", ucp_get_version_string(),
              device_memory_ ? "reaches" : "stages");
  return Status::kOk;
}

// Tears down what start() built, in reverse order; safe on a partly started worker.
void Worker::stop() {
  if (worker_ != nullptr) {
    std::vector<Peer*> open;
    for (auto& [address, peer] : peers_) {
      if (peer->ep != nullptr) open.push_back(peer.get());
    }
    close_eps(open);
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
  }
  if (context_ != nullptr) {
    ucp_cleanup(context_);
    context_ = nullptr;
  }
}

uint32_t Worker::first_free_id(uint32_t from) const {
  for (uint32_t id = from; id < kContextIds; ++id) {
    if (!ids_used_[id]) return id;
  }
  return kContextIds;
}

bool Worker::reserve_id(uint32_t id) {
  if (id >= kContextIds || ids_used_[id]) return false;
  ids_used_[id] = true;
  return true;
}

void Worker::release_id(uint32_t id) {
  if (id < kContextIds) ids_used_[id] = false;
}

Status Worker::connect(const std::string& address, Peer** out) {
  std::unique_ptr<Peer>& slot = peers_[address];
  if (slot == nullptr) slot = std::make_unique<Peer>();
  Peer* peer = slot.get();
  if (peer->ep == nullptr && !peer->failed) {
    ucp_ep_params_t params = {};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(address.data());
    // A lost peer fails its endpoint's requests and calls on_ep_error, instead of hanging them.
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &Worker::on_ep_error;
    params.err_handler.arg = peer;
    MPIZIP_CHECK(convert(ucp_ep_create(worker_, &params, &peer->ep), "ucp_ep_create"));
  }
  ++peer->users;
  *out = peer;
  return Status::kOk;
}

void Worker::disconnect(const std::vector<Peer*>& peers) {
  std::vector<Peer*> unused;
  for (Peer* p : peers) {
    if (--p->users == 0 && p->ep != nullptr) unused.push_back(p);
  }
  if (!closed()) close_eps(unused);
}

// Closes the endpoints of `peers` together: a flush for healthy ones, a forced close for failed
// ones (UCX requires it after an error), then progress until all are closed or kCloseWait passes.
// Closes still pending then are left to UCX, which finishes them or drops them with the worker.
void Worker::close_eps(const std::vector<Peer*>& peers) {
  std::vector<void*> pending;
  for (Peer* p : peers) {
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = p->failed ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t r = ucp_ep_close_nbx(p->ep, &param);
    p->ep = nullptr;
    if (UCS_PTR_IS_PTR(r)) {
      pending.push_back(r);
    } else if (UCS_PTR_IS_ERR(r) && !p->failed) {
      (void)convert(UCS_PTR_STATUS(r), "ucp_ep_close_nbx");
    }
  }
  auto deadline = std::chrono::steady_clock::now() + kCloseWait;
  while (!pending.empty() && std::chrono::steady_clock::now() < deadline) {
    ucp_worker_progress(worker_);
    for (size_t i = 0; i < pending.size();) {
      if (ucp_request_check_status(pending[i]) == UCS_INPROGRESS) {
        ++i;
        continue;
      }
      ucp_request_free(pending[i]);
      pending[i] = pending.back();
      pending.pop_back();
    }
  }
  if (!pending.empty()) {
    MPIZIP_WARN("UCX: %zu endpoint(s) still closing after %lld s; leaving them to UCX",
                pending.size(), static_cast<long long>(kCloseWait.count()));
    for (void* r : pending) ucp_request_free(r);
  }
}

// Called by UCX, inside ucp_worker_progress() (so under mutex()), when the connection to a peer is
// lost. Requests on the endpoint complete with errors; receives from the peer, which UCX does not
// tie to an endpoint, see `failed` (src/transport/ucx.cc).
void Worker::on_ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  if (!peer->failed) MPIZIP_WARN("UCX: connection to a peer lost: %s", ucs_status_string(status));
  peer->failed = true;
}

}  // namespace mpizip::transport::ucx
