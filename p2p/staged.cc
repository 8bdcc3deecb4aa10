#include "p2p/staged.h"

#include <algorithm>

#include "src/platform/device.h"
#include "src/platform/buffers.h"
#include "src/platform/log.h"

namespace mpizip::p2p {

Status HostCopy::prepare(void* device, int count, MPI_Datatype type) {
  MPI_Aint lb, extent, true_lb, true_extent;
  MPI_Count size = 0;
  int rc = PMPI_Type_get_extent(type, &lb, &extent);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_size_x(type, &size);
  if (rc != MPI_SUCCESS) return Status::mpi(rc);
  device_ = device;
  lb_ = true_lb;
  bytes_ = count > 0 ? static_cast<uint64_t>((count - 1) * extent + true_extent) : 0;
  contiguous_ = static_cast<uint64_t>(size) * static_cast<uint64_t>(count) == bytes_;
  return host_.resize(bytes_);
}

Status HostCopy::load() const {
  return platform::copy_to_host(host_.data(), static_cast<const char*>(device_) + lb_, bytes_);
}

Status HostCopy::store(uint64_t bytes) const {
  const uint64_t n = contiguous_ ? std::min(bytes, bytes_) : bytes_;
  char* dst = static_cast<char*>(device_) + lb_;
  return host_.pinned() ? platform::copy_pinned_to_device(dst, host_.data(), n)
                        : platform::copy_to_device(dst, host_.data(), n);
}

namespace {

class StagedOp : public platform::Operation {
 public:
  explicit StagedOp(bool receive) : receive_(receive) {}
  HostCopy& copy() { return copy_; }
  MPI_Request* request() { return &req_; }
  bool progress() override {
    if (done_) return true;
    int flag = 0;
    MPI_Status st;
    int rc = PMPI_Test(&req_, &flag, receive_ ? &st : MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return finish(Status::mpi(rc));
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
      if (!cancelled) {
        const Status s = copy_.store(status_.bytes);
        if (!ok(s)) return finish(s);
      }
      return finish(Status::mpi(st.MPI_ERROR == MPI_ERR_TRUNCATE ? MPI_ERR_TRUNCATE : MPI_SUCCESS));
    }
    return finish(Status::kOk);
  }
  bool cancel() override {
    if (done_ || !receive_) return false;
    PMPI_Cancel(&req_);
    return false;  // completes through progress(), cancelled or not
  }

 private:
  bool finish(Status error) {
    status_.error = error;
    done_ = true;
    copy_.release();
    return true;
  }
  bool receive_;
  HostCopy copy_;
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

}  // namespace

Status start_staged_send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                         MPI_Comm comm, bool synchronous, std::unique_ptr<platform::Operation>* op) {
  auto staged = std::make_unique<StagedOp>(false);
  MPIZIP_CHECK(staged->copy().prepare(const_cast<void*>(buf), count, type));
  MPIZIP_CHECK(staged->copy().load());
  void* base = staged->copy().base();
  const int rc = synchronous ? PMPI_Issend(base, count, type, dest, tag, comm, staged->request())
                   : PMPI_Isend(base, count, type, dest, tag, comm, staged->request());
  if (rc == MPI_SUCCESS) *op = std::move(staged);
  return Status::mpi(rc);
}

Status start_staged_recv(void* buf, int count, MPI_Datatype type, int source, int tag,
                         MPI_Comm comm, std::unique_ptr<platform::Operation>* op) {
  auto staged = std::make_unique<StagedOp>(true);
  MPIZIP_CHECK(staged->copy().prepare(buf, count, type));
  if (!staged->copy().contiguous()) MPIZIP_CHECK(staged->copy().load());
  const int rc = PMPI_Irecv(staged->copy().base(), count, type, source, tag, comm, staged->request());
  if (rc == MPI_SUCCESS) *op = std::move(staged);
  return Status::mpi(rc);
}

}  // namespace mpizip::p2p
