#include "p2p/layout.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "p2p/staged.h"
#include "src/platform/log.h"

namespace mpizip::p2p {

HeldType::HeldType(MPI_Datatype type) : type_(type) {
  int ints = 0, addrs = 0, types = 0, combiner = MPI_COMBINER_NAMED;
  if (type == MPI_DATATYPE_NULL ||
      PMPI_Type_get_envelope(type, &ints, &addrs, &types, &combiner) != MPI_SUCCESS ||
      combiner == MPI_COMBINER_NAMED) {
    return;  // predefined (or invalid: MPI reports that where the handle is used)
  }
  auto dup = std::make_shared<Dup>();
  if (PMPI_Type_dup(type, &dup->type) == MPI_SUCCESS) dup_ = std::move(dup);
}

HeldType::Dup::~Dup() {
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (!finalized && type != MPI_DATATYPE_NULL) PMPI_Type_free(&type);
}

namespace {

// MPI_Pack and MPI_Unpack take int sizes: large buffers go in runs of whole items.
constexpr uint64_t kRunBytes = uint64_t{1} << 30;

MPI_Aint extent_of(MPI_Datatype t) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(t, &lb, &extent);
  return extent;
}

uint64_t items_per_run(const Layout& l) {
  const uint64_t item = l.elems * l.elem_bytes;
  return std::max<uint64_t>(1, std::min<uint64_t>(kRunBytes / item, INT_MAX));
}

// Runs `fn(host_base)` on the host form of l's buffer: the buffer itself, or a host copy of a
// device buffer's span (loaded first; stored back after when `store`).
template <typename Fn>
Status on_host(const Layout& l, bool store, Fn fn) {
  if (!l.device) return fn(static_cast<uint8_t*>(l.buf));
  HostCopy copy;
  MPIZIP_CHECK(copy.prepare(l.buf, l.count, l.type));
  MPIZIP_CHECK(copy.load());
  MPIZIP_CHECK(fn(static_cast<uint8_t*>(copy.base())));
  return store ? copy.store() : Status::kOk;
}

enum class Direction { kPack, kUnpack };

// Items [first, first + n) of l's buffer (host form at `base`) to or from `packed`, which holds
// them back to back from item `first`.
Status move_items(Direction d, const Layout& l, uint8_t* base, uint8_t* packed, uint64_t first,
               uint64_t n) {
  const uint64_t item = l.elems * l.elem_bytes;
  const MPI_Aint extent = extent_of(l.type);
  const uint64_t run = items_per_run(l);
  for (uint64_t i = first; i < first + n; i += run) {
    const int k = static_cast<int>(std::min(run, first + n - i));
    const int bytes = static_cast<int>(static_cast<uint64_t>(k) * item);
    uint8_t* items = base + static_cast<MPI_Aint>(i) * extent;
    uint8_t* at = packed + (i - first) * item;
    int position = 0;
    const int rc = d == Direction::kPack
                       ? PMPI_Pack(items, k, l.type, at, bytes, &position, l.comm)
                       : PMPI_Unpack(at, bytes, &position, items, k, l.type, l.comm);
    if (rc != MPI_SUCCESS) return Status::mpi(rc);
    if (position != bytes) {
      MPIZIP_INFO("MPI_%s of %d items moved %d bytes, not %d: not a homogeneous system",
                  d == Direction::kPack ? "Pack" : "Unpack", k, position, bytes);
      return Status::kInternal;
    }
  }
  return Status::kOk;
}

class KeepPacked : public platform::Operation {
 public:
  KeepPacked(std::unique_ptr<platform::Operation> inner, platform::HostBuffer packed)
      : inner_(std::move(inner)), packed_(std::move(packed)) {}
  bool progress() override {
    const bool done = inner_->progress();
    status_ = inner_->status();
    return done;
  }
  bool cancel() override {
    const bool cancelled = inner_->cancel();
    status_ = inner_->status();
    return cancelled;
  }
  bool detachable() const override { return inner_->detachable(); }
  bool awaits_own_calls() const override { return inner_->awaits_own_calls(); }

 private:
  std::unique_ptr<platform::Operation> inner_;
  platform::HostBuffer packed_;
};

class UnpackAfter : public platform::Operation {
 public:
  UnpackAfter(std::unique_ptr<platform::Operation> inner, platform::HostBuffer scratch,
              const Layout& l)
      : inner_(std::move(inner)), scratch_(std::move(scratch)), layout_(l) {}
  bool progress() override {
    if (done_) return true;
    if (!inner_->progress()) return false;
    finish();
    return true;
  }
  bool cancel() override {
    if (done_) return false;
    const bool cancelled = inner_->cancel();
    if (inner_->progress()) finish();
    return cancelled;
  }

 private:
  void finish() {
    status_ = inner_->status();
    done_ = true;
    if (!status_.cancelled && status_.bytes > 0 &&
        (ok(status_.error) || status_.error == Status::kTruncated)) {
      const Status s = unpack(layout_, scratch_.data(), status_.bytes);
      if (!ok(s)) status_.error = s;
    }
    scratch_.clear();
  }
  std::unique_ptr<platform::Operation> inner_;
  platform::HostBuffer scratch_;
  Layout layout_;
  bool done_ = false;
};

}  // namespace

Status pack(const Layout& l, platform::HostBuffer* out) {
  const uint64_t bytes = l.total_elems() * l.elem_bytes;
  MPIZIP_CHECK(out->resize(bytes));
  if (bytes == 0) return Status::kOk;
  return on_host(l, false, [&](uint8_t* base) {
    return move_items(Direction::kPack, l, base, out->data(), 0, static_cast<uint64_t>(l.count));
  });
}

Status unpack(const Layout& l, const uint8_t* packed, uint64_t bytes) {
  const uint64_t item = l.elems * l.elem_bytes;
  if (item == 0 || bytes == 0) return Status::kOk;
  const uint64_t whole = std::min<uint64_t>(bytes / item, static_cast<uint64_t>(l.count));
  const uint64_t rest = bytes / l.elem_bytes * l.elem_bytes - whole * item;
  return on_host(l, true, [&](uint8_t* base) {
    Status s = move_items(Direction::kUnpack, l, base, const_cast<uint8_t*>(packed), 0, whole);
    if (!ok(s) || rest == 0 || whole >= static_cast<uint64_t>(l.count)) return s;
    // A partly filled last item: its current elements, packed, with the received ones laid over
    // the first of them, unpacked again, so that its other elements keep their bytes.
    platform::HostBuffer last;
    MPIZIP_CHECK(last.resize(item));
    MPIZIP_CHECK(move_items(Direction::kPack, l, base, last.data(), whole, 1));
    std::memcpy(last.data(), packed + whole * item, rest);
    return move_items(Direction::kUnpack, l, base, last.data(), whole, 1);
  });
}

std::unique_ptr<platform::Operation> keep_packed(std::unique_ptr<platform::Operation> inner,
                                                 platform::HostBuffer packed) {
  return std::make_unique<KeepPacked>(std::move(inner), std::move(packed));
}

std::unique_ptr<platform::Operation> unpack_after(std::unique_ptr<platform::Operation> inner,
                                                  platform::HostBuffer scratch, const Layout& l) {
  return std::make_unique<UnpackAfter>(std::move(inner), std::move(scratch), l);
}

}  // namespace mpizip::p2p
