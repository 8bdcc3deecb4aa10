// The CPU backend of coll/backend.h: host memory, the CPU codec and the CPU reduce. Every call
// completes before it returns, so fences are always done.
#include <cstring>
#include <new>
#include <vector>

#include "coll/backend.h"
#include "kernels/codec_cpu.h"
#include "kernels/reduce_cpu.h"

namespace mpizip::coll {
namespace {

constexpr std::align_val_t kAlign{256};

struct AlignedDelete {
  void operator()(uint8_t* p) const { ::operator delete[](p, kAlign); }
};
using Aligned = std::unique_ptr<uint8_t[], AlignedDelete>;

class DoneFence : public Fence {
 public:
  Status test(bool* done) override {
    *done = true;
    return Status::kOk;
  }
};

class HostBackend : public Backend {
 public:
  bool device() const override { return false; }

  Status reserve(const Needs& n) override {
    if (n.work_bytes > work_bytes_) {
      work_.reset(static_cast<uint8_t*>(::operator new[](n.work_bytes, kAlign, std::nothrow)));
      work_bytes_ = work_ ? n.work_bytes : 0;
      if (!work_) return Status::kOutOfMemory;
    }
    if (static_cast<size_t>(n.results) > results_.size()) results_.resize(n.results);
    return Status::kOk;
  }
  uint8_t* work() override { return work_.get(); }
  uint8_t* staging() override { return nullptr; }
  Result* results() override { return results_.data(); }

  Status compress(format::DType t, const Job* jobs, int n, Result* results,
                  bool checksum) override {
    kernels::cpu::EncodeOptions opt;
    opt.checksum = checksum;
    for (int i = 0; i < n; ++i) {
      uint64_t written = 0;
      Status s = kernels::cpu::compress(t, jobs[i].src, jobs[i].count, jobs[i].dst,
                                        jobs[i].dst_capacity, &written, opt);
      results[i].size = ok(s) ? written : 0;
      results[i].status = s.code();
    }
    return Status::kOk;
  }

  Status decompress(format::DType t, const Job* jobs, int n, Result* results) override {
    for (int i = 0; i < n; ++i) {
      uint64_t count = 0;
      kernels::cpu::StreamInfo info;
      Status s = kernels::cpu::read_header(jobs[i].src, jobs[i].count, &info);
      if (ok(s) && info.dtype != t) s = Status::kTypeMismatch;
      if (ok(s)) {
        s = kernels::cpu::decompress(jobs[i].src, jobs[i].count, jobs[i].dst, jobs[i].dst_capacity,
                                     &count);
      }
      results[i].size = ok(s) ? count : 0;
      results[i].status = s.code();
    }
    return Status::kOk;
  }

  Status reduce(format::DType t, kernels::reduce::Op op, const void* const* inputs, int n,
                void* out, uint64_t count) override {
    return kernels::cpu::reduce(kernels::reduce::type_of(t), op, inputs, n, out, count);
  }

  Status copy(void* dst, const void* src, uint64_t bytes) override {
    if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
    return Status::kOk;
  }

  Status fence(std::unique_ptr<Fence>* out) override {
    *out = std::make_unique<DoneFence>();
    return Status::kOk;
  }

  Status drain() override { return Status::kOk; }

 private:
  Aligned work_;
  uint64_t work_bytes_ = 0;
  std::vector<Result> results_;
};

}  // namespace

Status make_host_backend(std::unique_ptr<Backend>* out) {
  *out = std::make_unique<HostBackend>();
  return Status::kOk;
}

}  // namespace mpizip::coll
