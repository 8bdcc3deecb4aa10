#include "coll/resources.h"

namespace mpizip::coll {

Status Resources::acquire(bool device, std::unique_ptr<Backend>* out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if ((*it)->device() == device) {
        *out = std::move(*it);
        idle_.erase(it);
        return Status::kOk;
      }
    }
  }
  return device ? make_device_backend(out) : make_host_backend(out);
}

void Resources::release(std::unique_ptr<Backend> backend) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(backend));
}

}  // namespace mpizip::coll
