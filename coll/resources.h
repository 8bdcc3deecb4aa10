// The per-communicator resources of MPIZip's collectives: idle backends (coll/backend.h) with their
// memory, stream and codec workspace, kept between collectives so that each is allocated and sized
// once. A collective takes one for its duration and gives it back when done, so collectives that
// run concurrently on one communicator (several MPI_Iallreduce in flight) never share one.
// Thread-safe. Owned by src/core's state of the communicator.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "coll/backend.h"
#include "src/platform/status.h"

namespace mpizip::coll {

class Resources {
 public:
  Resources() = default;
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;

  // An idle backend of the kind asked for, or a new one (make_device_backend's errors when a device
  // backend cannot be made).
  Status acquire(bool device, std::unique_ptr<Backend>* out);
  // Gives back a backend with no work in flight.
  void release(std::unique_ptr<Backend> backend);

  // Held by a collective while it uses the communicator's transport: a blocking collective, driven
  // on the application's thread, and non-blocking ones, which a progress thread may advance at the
  // same time, take turns.
  std::mutex& transport_mutex() { return transport_mutex_; }

 private:
  std::mutex transport_mutex_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Backend>> idle_;
};

}  // namespace mpizip::coll
