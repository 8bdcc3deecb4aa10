// Benchmark buffers in host or device memory, and how they are handed to MPI.
//
// When the MPI library does not accept device pointers, a device buffer is staged through pinned
// host memory the way an application on such an MPI has to: copy device-to-host before a send,
// receive into host memory and copy host-to-device after, all inside the timed region.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace osub {

enum class Location { kHost, kDevice };

const char* location_name(Location l);  // "host" or "device"

// Whether this build can allocate device buffers.
bool device_buffers_built();
// Whether MPI accepts device pointers: asked at run time (MPIX_Query_cuda_support where the MPI
// has it), so an interposer that answers 1 gets device pointers passed to it directly.
bool mpi_accepts_device_pointers();

class Buffer {
 public:
  // Allocates bytes in loc. stage: route device memory through a pinned host copy for MPI.
  // Errors (no device, out of memory) end the program with a message: a benchmark cannot go on.
  Buffer(Location loc, size_t bytes, bool stage);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Location location() const { return loc_; }
  size_t size() const { return bytes_; }

  // Copies n bytes of host memory into the buffer, or the buffer's first n bytes to host memory.
  void upload(const std::byte* host, size_t n);
  void download(std::byte* host, size_t n) const;
  // Sets the first n bytes to value (used to poison a receive buffer before a checked run).
  void fill(uint8_t value, size_t n);

  // The pointer MPI reads n bytes from: the buffer itself, or its staging copy after a
  // device-to-host copy of those n bytes.
  void* send_view(size_t n);
  // The pointer MPI writes into; after the receive completes, call received(n).
  void* recv_view();
  // Moves n received bytes from the staging copy to the device (nothing when not staged).
  void received(size_t n);

 private:
  Location loc_;
  size_t bytes_;
  bool staged_;
  std::byte* data_ = nullptr;
  std::byte* staging_ = nullptr;  // pinned host memory, only when staged_
};

// Ends the program on every rank with a message on stderr: for errors that leave a benchmark
// nothing sensible to measure.
[[noreturn]] void fatal(const std::string& message);

}  // namespace osub
