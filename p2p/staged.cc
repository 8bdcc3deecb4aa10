#include "p2p/staged.h"

#include "src/platform/device.h"
#include "src/platform/buffers.h"
#include "src/platform/log.h"

namespace mpizip::p2p {

int HostCopy::prepare(void* device, int count, MPI_Datatype type) {
  MPI_Aint lb, extent, true_lb, true_extent;
  int rc = PMPI_Type_get_extent(type, &lb, &extent);
  if (rc == MPI_SUCCESS) rc = PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
  if (rc != MPI_SUCCESS) return rc;
  device_ = device;
  lb_ = true_lb;
  bytes_ = count > 0 ? static_cast<uint64_t>((count - 1) * extent + true_extent) : 0;
  return host_.resize(bytes_) == Status::kOk ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

Status HostCopy::load() const {
  return platform::copy_to_host(host_.data(), static_cast<const char*>(device_) + lb_, bytes_);
}

Status HostCopy::store() const {
  return platform::copy_to_device(static_cast<char*>(device_) + lb_, host_.data(), bytes_);
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
      if (!cancelled && copy_.store() != Status::kOk) {
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
    copy_.release();
    return true;
  }
  bool receive_;
  HostCopy copy_;
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

}  // namespace

int start_staged_send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm comm, bool synchronous, std::unique_ptr<platform::Operation>* op) {
  auto staged = std::make_unique<StagedOp>(false);
  int rc = staged->copy().prepare(const_cast<void*>(buf), count, type);
  if (rc != MPI_SUCCESS) return rc;
  if (staged->copy().load() != Status::kOk) return MPI_ERR_OTHER;
  void* base = staged->copy().base();
  rc = synchronous ? PMPI_Issend(base, count, type, dest, tag, comm, staged->request())
                   : PMPI_Isend(base, count, type, dest, tag, comm, staged->request());
  if (rc == MPI_SUCCESS) *op = std::move(staged);
  return rc;
}

int start_staged_recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      std::unique_ptr<platform::Operation>* op) {
  auto staged = std::make_unique<StagedOp>(true);
  int rc = staged->copy().prepare(buf, count, type);
  if (rc != MPI_SUCCESS) return rc;
  if (staged->copy().load() != Status::kOk) return MPI_ERR_OTHER;
  rc = PMPI_Irecv(staged->copy().base(), count, type, source, tag, comm, staged->request());
  if (rc == MPI_SUCCESS) *op = std::move(staged);
  return rc;
}

}  // namespace mpizip::p2p
