// The two ends of a point-to-point test. Each rank sends its own data and receives its peer's,
// so -c can compare what arrived with what the peer generated; device buffers are staged when MPI
// does not take device pointers (see Buffer).
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <vector>

#include "osu-bench/common/harness.h"

namespace osub {

// OSU's point-to-point timing: a barrier, warm-up steps, then timed steps; returns the seconds the
// timed steps took (ctx.opts.iterations_for(bytes) of them).
double time_steps(const Context& ctx, size_t bytes, const std::function<void()>& step);

class PeerLink {
 public:
  // Buffers for messages of up to max_bytes, in this rank's location.
  PeerLink(const Context& ctx, size_t max_bytes);

  void send(size_t bytes);
  void recv(size_t bytes);
  // Non-blocking forms; after an irecv completes, call received(bytes) once per message.
  void isend(size_t bytes, MPI_Request* request);
  void irecv(size_t bytes, MPI_Request* request);
  void received(size_t bytes);
  // The bandwidth tests' per-window acknowledgement.
  void send_ack();
  void recv_ack();

  // Under -c: fills the receive buffer with a byte no sender uses, so stale data cannot pass.
  void poison(size_t bytes);
  // Under -c: whether the first bytes of the receive buffer are the peer's data; true otherwise.
  bool received_ok(size_t bytes) const;

 private:
  int peer() const { return 1 - ctx_.rank; }
  int count(size_t bytes) const { return int(bytes / ctx_.elem_size); }

  const Context& ctx_;
  std::unique_ptr<Buffer> send_;
  std::unique_ptr<Buffer> recv_;
  std::vector<std::byte> expected_;  // the peer's data, only under -c
  int ack_ = 0;
};

}  // namespace osub
