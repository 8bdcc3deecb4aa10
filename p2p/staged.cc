#include "p2p/staged.h"

#include <vector>

#include "src/platform/device.h"
#include "src/platform/buffers.h"
#include "src/platform/log.h"

namespace mpizip::p2p {
namespace {

// The bytes `count` elements of `type` occupy: [true_lb, true_lb + span).
struct Span {
  MPI_Aint lb = 0;
  uint64_t bytes = 0;
};

int span_of(int count, MPI_Datatype type, Span* s) {
  MPI_Aint lb, extent, true_lb, true_extent;
  int rc = PMPI_Type_get_extent(type, &lb, &extent);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
  if (rc != MPI_SUCCESS) return rc;
  s->lb = true_lb;
  s->bytes = count > 0 ? static_cast<uint64_t>((count - 1) * extent + true_extent) : 0;
  return MPI_SUCCESS;
}

class StagedOp : public platform::Operation {
 public:
  StagedOp(void* device, Span span, bool receive) : device_(device), span_(span), receive_(receive) {
    alloc_ = host_.resize(span.bytes);
  }
  // kOk unless host memory ran out.
  Status allocated() const { return alloc_; }
  // The host address that stands for the device buffer's base address.
  void* base() { return reinterpret_cast<char*>(host_.data()) - span_.lb; }
  Status load() {  // device span -> host
    return platform::copy_to_host(host_.data(), static_cast<char*>(device_) + span_.lb, span_.bytes);
  }
  MPI_Request* request() { return &req_; }
  bool progress() override {
    if (done_) return true;
    int flag = 0;
    MPI_Status st;
    int rc = PMPI_Test(&req_, &flag, receive_ ? &st : MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return finish(rc);
    if (!flag) return false;
    if (receive_) {
      status_.source = st.MPI_SOURCE;
      status_.tag = st.MPI_TAG;
      int cancelled = 0;
      PMPI_Test_cancelled(&st, &cancelled);
      status_.cancelled = cancelled != 0;
      MPI_Count bytes = 0;
      PMPI_Get_elements_x(&st, MPI_BYTE, &bytes);
      status_.bytes = static_cast<uint64_t>(bytes);
      if (!cancelled &&
          platform::copy_to_device(static_cast<char*>(device_) + span_.lb, host_.data(),
                                   span_.bytes) != Status::kOk) {
        return finish(MPI_ERR_OTHER);
      }
      return finish(st.MPI_ERROR == MPI_ERR_TRUNCATE ? MPI_ERR_TRUNCATE : MPI_SUCCESS);
    }
    return finish(MPI_SUCCESS);
  }
  bool cancel() override {
    if (done_ || !receive_) return false;
    PMPI_Cancel(&req_);
    return false;  // completes through progress(), cancelled or not
  }

 private:
  bool finish(int error) {
    status_.error = error;
    done_ = true;
    host_.clear();
    return true;
  }
  void* device_;
  Span span_;
  bool receive_;
  platform::HostBuffer host_;  // pooled, pinned where possible
  Status alloc_ = Status::kOk;
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

}  // namespace

int start_staged_send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm comm, bool synchronous, std::unique_ptr<platform::Operation>* op) {
  Span span;
  int rc = span_of(count, type, &span);
  if (rc != MPI_SUCCESS) return rc;
  auto staged = std::make_unique<StagedOp>(const_cast<void*>(buf), span, false);
  if (staged->allocated() != Status::kOk) return MPI_ERR_NO_MEM;
  if (staged->load() != Status::kOk) return MPI_ERR_OTHER;
  rc = synchronous ? PMPI_Issend(staged->base(), count, type, dest, tag, comm, staged->request())
                   : PMPI_Isend(staged->base(), count, type, dest, tag, comm, staged->request());
  if (rc == MPI_SUCCESS) *op = std::move(staged);
  return rc;
}

int start_staged_recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      std::unique_ptr<platform::Operation>* op) {
  Span span;
  int rc = span_of(count, type, &span);
  if (rc != MPI_SUCCESS) return rc;
  auto staged = std::make_unique<StagedOp>(buf, span, true);
  if (staged->allocated() != Status::kOk) return MPI_ERR_NO_MEM;
  if (staged->load() != Status::kOk) return MPI_ERR_OTHER;
  rc = PMPI_Irecv(staged->base(), count, type, source, tag, comm, staged->request());
  if (rc == MPI_SUCCESS) *op = std::move(staged);
  return rc;
}

}  // namespace mpizip::p2p
