#include "osu-bench/common/p2p.h"

#include <span>

#include "osu-bench/common/validate.h"

namespace osub {

namespace {
constexpr int kDataTag = 1;
constexpr int kAckTag = 2;
}  // namespace

double time_steps(const Context& ctx, size_t bytes, const std::function<void()>& step) {
  int warmup = ctx.opts.warmup_for(bytes), iterations = ctx.opts.iterations_for(bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < warmup; ++i) step();
  double start = MPI_Wtime();
  for (int i = 0; i < iterations; ++i) step();
  return MPI_Wtime() - start;
}

PeerLink::PeerLink(const Context& ctx, size_t max_bytes)
    : ctx_(ctx), send_(ctx.data_buffer(max_bytes / ctx.elem_size)), recv_(ctx.buffer(max_bytes)) {
  if (ctx.opts.validate) expected_ = ctx.data_of(peer(), max_bytes / ctx.elem_size);
}

void PeerLink::send(size_t bytes) {
  MPI_Send(send_->send_view(bytes), count(bytes), ctx_.mpi.datatype, peer(), kDataTag,
           MPI_COMM_WORLD);
}

void PeerLink::recv(size_t bytes) {
  MPI_Recv(recv_->recv_view(), count(bytes), ctx_.mpi.datatype, peer(), kDataTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  recv_->received(bytes);
}

// A staged device buffer is copied to host memory once per message, as a sender of distinct
// messages would; the copies rewrite identical bytes, so a send still in flight reads the same
// content.
void PeerLink::isend(size_t bytes, MPI_Request* request) {
  MPI_Isend(send_->send_view(bytes), count(bytes), ctx_.mpi.datatype, peer(), kDataTag,
            MPI_COMM_WORLD, request);
}

void PeerLink::irecv(size_t bytes, MPI_Request* request) {
  MPI_Irecv(recv_->recv_view(), count(bytes), ctx_.mpi.datatype, peer(), kDataTag, MPI_COMM_WORLD,
            request);
}

void PeerLink::received(size_t bytes) { recv_->received(bytes); }

void PeerLink::send_ack() { MPI_Send(&ack_, 1, MPI_INT, peer(), kAckTag, MPI_COMM_WORLD); }

void PeerLink::recv_ack() {
  MPI_Recv(&ack_, 1, MPI_INT, peer(), kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void PeerLink::poison(size_t bytes) { osub::poison(ctx_, *recv_, bytes); }

bool PeerLink::received_ok(size_t bytes) const {
  if (!ctx_.opts.validate) return true;
  return equals_bytes(*recv_, std::span(expected_).first(bytes));
}

}  // namespace osub
