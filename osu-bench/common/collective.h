// The buffers of a collective test: this rank's data to send, a receive buffer, and under -c
// every rank's data, from which the expected result is computed on the host; and where the blocks
// of a v-collective lie.
#pragma once

#include <memory>
#include <string>
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

// The blocks of a v-collective's buffer (MPI_Gatherv, MPI_Scatterv, MPI_Allgatherv, MPI_Alltoallv),
// one per rank, in elements: the counts and displacements MPI is given.
struct VLayout {
  std::vector<int> counts;
  std::vector<int> displs;
  size_t extent = 0;  // elements from the buffer's start to the end of its last block
};

// The block of rank r for a message of `bytes`. OSU's, by default: every rank `bytes`. Under
// --uneven: bytes * (r + 1) / nranks, rounded down to whole elements, and none for rank 1 when
// there are more than two ranks.
size_t v_count(const Context& ctx, size_t bytes, int r);

// Block k holds v_count of rank (k + shift) % nranks (shift 0: block k is rank k's; osu_alltoallv's
// rank i sends and receives with shift i, so the block from rank j to rank i has the count of
// rank (i + j) % nranks on both sides). By default each block follows the one before, OSU's prefix
// sums; under --uneven the blocks lie in reverse order, each one element after the end of the next
// (the buffer starts with one element's gap), so the displacements are no prefix sum.
VLayout v_layout(const Context& ctx, size_t bytes, int shift = 0);

// The bytes the blocks of the largest message size span: a v-collective's buffer.
size_t v_buffer_bytes(const Context& ctx);

// A v-collective test: collective_spec's, taking --uneven.
BenchSpec v_collective_spec(const char* title, BenchmarkFactory make);
// The same built in both forms (collective_spec's two-title form): the non-blocking one where the
// build defines OSUB_NONBLOCKING.
inline BenchSpec v_collective_spec(const char* title, const char* nonblocking_title,
                                   BenchmarkFactory make) {
  BenchSpec spec = collective_spec(title, nonblocking_title, std::move(make));
  spec.traits.uneven_counts = true;
  return spec;
}

// The header line that says how the blocks are laid out.
std::string v_layout_description(const Context& ctx);

}  // namespace osub
