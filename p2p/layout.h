// Datatypes whose elements do not lie back to back: a vector, indexed, struct, subarray or resized
// datatype of a protocol element type. The protocol moves elements back to back in signature order,
// as MPI_FLOAT does (the other side may use any datatype of the same signature), so such a buffer
// is packed into MPIZip's memory before a send and unpacked from it after a receive, on the host
// (MPI_Pack / MPI_Unpack: on homogeneous systems their format is the elements in signature order).
// A device buffer is packed and unpacked through a host copy of its span (p2p/staged.h).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "src/platform/buffers.h"
#include "src/platform/operation.h"

namespace mpizip::p2p {

// A datatype held for as long as an operation of MPIZip's needs it. MPI lets the application free
// a datatype as soon as an operation using it has started (MPI_Type_free only marks it), and
// MPIZip uses it later: a receive unpacks at completion, a persistent request packs or posts at
// every MPI_Start. So a derived datatype is duplicated (MPI_Type_dup, which keeps its cached
// signature, type_signature.h) and the duplicate freed with the last copy of its holder;
// predefined datatypes are used as they are. Converts to and from MPI_Datatype.
class HeldType {
 public:
  HeldType() = default;
  HeldType(MPI_Datatype type);  // NOLINT: a held type stands wherever the handle did
  operator MPI_Datatype() const { return dup_ ? dup_->type : type_; }  // NOLINT

 private:
  struct Dup {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    ~Dup();
  };
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  std::shared_ptr<const Dup> dup_;
};

// Where the application's elements are: `count` items of `type` at `buf` (GPU memory when
// `device`), each holding `elems` elements of `elem_bytes` bytes.
struct Layout {
  void* buf = nullptr;
  int count = 0;
  HeldType type;
  MPI_Comm comm = MPI_COMM_NULL;
  bool device = false;
  uint64_t elems = 0;
  uint64_t elem_bytes = 0;
  uint64_t total_elems() const { return static_cast<uint64_t>(count) * elems; }
};

// Packs every element of `l` into `out` (total_elems() x elem_bytes bytes).
Status pack(const Layout& l, platform::HostBuffer* out);

// Unpacks the first `bytes` bytes of `packed` (whole elements, in signature order) into `l`'s
// buffer, leaving every other byte of it as it was (a partly filled last item included).
Status unpack(const Layout& l, const uint8_t* packed, uint64_t bytes);

// A send of packed elements: keeps `packed` alive for as long as `inner` (which sends from it)
// runs, in the background too.
std::unique_ptr<platform::Operation> keep_packed(std::unique_ptr<platform::Operation> inner,
                                                 platform::HostBuffer packed);

// A receive into packed scratch: once `inner` (which receives into `scratch`) completes, unpacks
// what it delivered into `l`'s buffer. Its status is `inner`'s.
std::unique_ptr<platform::Operation> unpack_after(std::unique_ptr<platform::Operation> inner,
                                                  platform::HostBuffer scratch, const Layout& l);

}  // namespace mpizip::p2p
