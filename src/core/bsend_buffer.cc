#include "src/core/bsend_buffer.h"

#include <atomic>
#include <mutex>

#include "src/core/requests.h"

namespace mpizip::core {
namespace {

std::mutex g_mutex;
uint64_t g_attached = 0;  // bytes of the attached buffer, 0 when none
uint64_t g_reserved = 0;  // bytes reserved by MPIZip's buffered sends still running
std::atomic<uint64_t> g_sends{0};  // MPIZip's buffered sends still running

struct Reservation {
  uint64_t bytes;
  ~Reservation() {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_reserved -= bytes;
    g_sends.fetch_sub(1, std::memory_order_release);
  }
};

class Holding : public platform::Operation {
 public:
  Holding(std::unique_ptr<platform::Operation> op, std::shared_ptr<const void> held)
      : op_(std::move(op)), held_(std::move(held)) {}
  bool progress() override {
    const bool done = op_->progress();
    status_ = op_->status();
    return done;
  }
  bool cancel() override {
    const bool cancelled = op_->cancel();
    status_ = op_->status();
    return cancelled;
  }
  bool detachable() const override { return op_->detachable(); }
  bool awaits_own_calls() const override { return op_->awaits_own_calls(); }

 private:
  std::unique_ptr<platform::Operation> op_;
  std::shared_ptr<const void> held_;
};

}  // namespace

int buffer_attach(void* buffer, int size) {
  const int rc = PMPI_Buffer_attach(buffer, size);
  if (rc == MPI_SUCCESS) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_attached = size > 0 ? static_cast<uint64_t>(size) : 0;
  }
  return rc;
}

int buffer_detach(void* buffer_addr, int* size) {
  // MPI_Buffer_detach returns once every buffered send from the buffer has left: MPIZip's too.
  while (g_sends.load(std::memory_order_acquire) != 0) progress();
  const int rc = PMPI_Buffer_detach(buffer_addr, size);
  if (rc == MPI_SUCCESS) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_attached = 0;
  }
  return rc;
}

int bsend_reserve(uint64_t bytes, std::shared_ptr<const void>* held) {
  const uint64_t need = bytes + MPI_BSEND_OVERHEAD;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_reserved + need > g_attached) return MPI_ERR_BUFFER;
  g_reserved += need;
  g_sends.fetch_add(1, std::memory_order_relaxed);
  *held = std::shared_ptr<const Reservation>(new Reservation{need});
  return MPI_SUCCESS;
}

std::unique_ptr<platform::Operation> hold_while_running(std::unique_ptr<platform::Operation> op,
                                                        std::shared_ptr<const void> held) {
  return std::make_unique<Holding>(std::move(op), std::move(held));
}

}  // namespace mpizip::core
