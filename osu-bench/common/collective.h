// The buffers of a collective test: this rank's data to send, a receive buffer, and under -c
// every rank's data, from which the expected result is computed on the host.
#pragma once

#include <memory>
#include <vector>

#include "osu-bench/common/harness.h"

namespace osub {

class CollectiveBuffers {
 public:
  // Send buffers of up to max_send_bytes, receive buffers of up to max_recv_bytes.
  CollectiveBuffers(const Context& ctx, size_t max_send_bytes, size_t max_recv_bytes);

  Buffer& send() { return *send_; }
  Buffer& recv() { return *recv_; }
  // inputs()[r]: the data rank r sends (only under -c).
  const std::vector<std::vector<std::byte>>& inputs() const { return inputs_; }

  // Under -c: fills the first bytes of the receive buffer with a byte no sender uses.
  void poison(size_t bytes);
  // The first bytes of the receive buffer, on the host.
  std::vector<std::byte> result(size_t bytes) const;

 private:
  const Context& ctx_;
  std::unique_ptr<Buffer> send_;
  std::unique_ptr<Buffer> recv_;
  std::vector<std::vector<std::byte>> inputs_;
};

}  // namespace osub
