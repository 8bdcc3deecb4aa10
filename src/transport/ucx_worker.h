// The process-wide UCX state behind every UCX transport: one ucp context and one worker, shared by
// all communicators (a process keeps one endpoint per peer process, whatever the number of
// communicators), the endpoints, and the context ids that keep communicators' tags apart.
//
// Threads: the worker runs in UCS_THREAD_MODE_SINGLE and one mutex, mutex(), serializes every call
// into UCX together with the transfers' own state. MPIZip drives transfers from the application
// thread and from its progress thread; a mutex of our own covers both UCX and that state in one
// acquisition, and does not depend on UCX having been built with --enable-mt.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/platform/status.h"

namespace mpizip::transport::ucx {

// Converts a UCX status where it first appears: kOk for UCS_OK, otherwise the matching MPIZip
// status, with one log line naming `what` and UCX's error string.
Status convert(ucs_status_t s, const char* what);

// An endpoint to one peer worker, shared by every communicator that reaches that worker.
struct Peer {
  ucp_ep_h ep = nullptr;
  int users = 0;           // communicators that connected to it
  bool failed = false;     // UCX reported the connection lost (error handling mode peer)
};

class Worker {
 public:
  static constexpr uint32_t kContextIds = 1u << 16;

  // The process's worker, started on first use (ucp context with the tag feature, one worker).
  static Status get(std::shared_ptr<Worker>* out);
  // Closes every endpoint and destroys the worker and the context; holders of the Worker see
  // closed() from then on. The next get() starts a new one.
  static void shutdown();

  Worker() = default;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  // Calls no UCX function: shutdown() closes UCX, and the process's registry keeps the worker
  // until then. A process that exits without MPI_Finalize leaves UCX to the operating system
  // rather than run UCX code from a static destructor, possibly after UCX's own.
  ~Worker() = default;

  std::mutex& mutex() { return mutex_; }

  // Everything below requires mutex() held.
  bool closed() const { return worker_ == nullptr; }
  ucp_worker_h handle() const { return worker_; }
  // Whether UCX moves CUDA memory itself (a UCX built with CUDA transports).
  bool reaches_device_memory() const { return device_memory_; }
  // This worker's address, as peers pass it to connect().
  const std::vector<uint8_t>& address() const { return address_; }
  // Advances UCX once (completions, wire-up, error callbacks).
  void progress() { ucp_worker_progress(worker_); }

  // Context ids: the lowest id at or above `from` that no live transport of this process holds
  // (kContextIds when none); reserve_id() takes `id` if it is still free.
  uint32_t first_free_id(uint32_t from) const;
  bool reserve_id(uint32_t id);
  void release_id(uint32_t id);

  // The endpoint to the worker at `address` (created on first use, with error handling mode peer),
  // counted as one more user.
  Status connect(const std::string& address, Peer** out);
  // Drops one use of each of `peers`; endpoints left without users are closed (see close_eps()).
  void disconnect(const std::vector<Peer*>& peers);

 private:
  Status start();
  void stop();
  void close_eps(const std::vector<Peer*>& peers);
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);

  std::mutex mutex_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  bool device_memory_ = false;
  std::vector<uint8_t> address_;
  std::vector<bool> ids_used_ = std::vector<bool>(kContextIds, false);
  // Keyed by the peer worker's address. Peers stay allocated (with ep == nullptr once closed) until
  // the Worker goes, because transports hold pointers to them.
  std::map<std::string, std::unique_ptr<Peer>> peers_;
};

}  // namespace mpizip::transport::ucx
