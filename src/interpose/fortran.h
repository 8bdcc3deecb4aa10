// The Fortran side of the interposer: what the generated Fortran entry points (fortran_entries.cc,
// written by fortran_gen.cc from mpi_calls.def) use to turn a Fortran call into the C call of the
// same name (interpose::call_<name>) and its results back.
//
// A Fortran MPI procedure receives every argument by reference: INTEGERs and handles as MPI_Fint,
// choice buffers as addresses, statuses as MPI_Fint arrays, and an IERROR that the mpi_f08
// bindings may leave out (a null pointer). Handles go through the MPI library's MPI_<kind>_f2c and
// _c2f (MPIZip's own message handles through a table here), statuses through MPI_Status_f2c and
// _c2f, and the Fortran sentinels MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE and
// MPI_STATUSES_IGNORE, which are addresses of the library's Fortran variables, become the C ones.
// docs/DESIGN.md ("The Fortran entry points") says which libraries' Fortran layers need this and
// why.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

// Which Fortran entry points libmpizip defines: those the MPI library's own Fortran layer keeps
// from the C entry points, by calling the C library's PMPI_ functions itself (tests/fortran/
// layers.sh shows which).
// - Open MPI: all of mpif.h's and use mpi's (MPIZIP_FORTRAN_F77: mpi_send_ and the other
//   manglings) and use mpi_f08's (MPIZIP_FORTRAN_F08: mpi_send_f08_, whose arguments are laid out
//   as mpif.h's: handles as one INTEGER, TYPE(MPI_Status) as INTEGER(MPI_STATUS_SIZE), buffers by
//   address, IERROR optional; checked for 4.x).
// - MPICH: its mpif.h and use mpi call the C MPI_ functions, and so do its mpi_f08 procedures
//   that take a buffer (mpi_send_f08ts_, with an array descriptor); its other mpi_f08 procedures
//   (mpi_wait_f08_, ...) call PMPI_: those, the calls without a buffer, are defined
//   (MPIZIP_FORTRAN_F08 alone; their TYPE(MPI_Status) is MPICH's C status, their
//   MPI_STATUS_IGNORE its MPI_F08_STATUS_IGNORE).
// MPIZIP_FORTRAN_PRIMARY(f77, f08) names the symbol an entry point is defined under.
#if defined(OPEN_MPI)
#define MPIZIP_FORTRAN_ENTRIES 1
#define MPIZIP_FORTRAN_F77 1
#define MPIZIP_FORTRAN_F08 (OMPI_MAJOR_VERSION == 4)
#define MPIZIP_FORTRAN_PRIMARY(f77, f08) f77
#elif defined(MPICH_VERSION)
#define MPIZIP_FORTRAN_ENTRIES 1
#define MPIZIP_FORTRAN_F77 0
#define MPIZIP_FORTRAN_F08 1
#define MPIZIP_FORTRAN_PRIMARY(f77, f08) f08
#else
#define MPIZIP_FORTRAN_ENTRIES 0
#endif

namespace mpizip::interpose::fortran {

static_assert(sizeof(MPI_Fint) == sizeof(int),
              "INTEGER arrays (counts, displacements, indices) are passed to C unchanged");

// The addresses of the MPI library's Fortran constants, found once (Open MPI's common blocks,
// under each name mangling a compiler may give them; MPICH's mpi_f08 MPI_STATUS(ES)_IGNORE).
struct Sentinels {
  const void* in_place[4] = {};
  const void* bottom[4] = {};
  const MPI_Fint* status_ignore = nullptr;
  const MPI_Fint* statuses_ignore = nullptr;
};
const Sentinels& sentinels();

// A Fortran choice buffer as C sees it: MPI_BOTTOM for the library's Fortran MPI_BOTTOM, and, where
// the call takes it (collectives), MPI_IN_PLACE for its Fortran MPI_IN_PLACE; else the address.
void* buffer(void* f, bool in_place_allowed);
inline void* buffer(const void* f, bool in_place_allowed) {
  return buffer(const_cast<void*>(f), in_place_allowed);
}

// A Fortran LOGICAL result (1 and 0: gfortran's .TRUE. and .FALSE., as the MPI libraries built
// with it use).
inline MPI_Fint logical(int c) { return c ? 1 : 0; }

// A C index (MPI_Waitany, MPI_Testany) as Fortran counts it: from 1; MPI_UNDEFINED stays.
inline MPI_Fint index_c2f(int c) { return c == MPI_UNDEFINED || c < 0 ? c : c + 1; }

// A few elements on the stack, more on the heap; a negative count (an MPI error the call itself
// reports) holds none.
template <typename T, int kInline = 16>
class Array {
 public:
  explicit Array(int n) : n_(n > 0 ? n : 0) {
    if (n_ > kInline) heap_.reset(new T[static_cast<size_t>(n_)]);
  }
  T* data() { return heap_ ? heap_.get() : inline_; }
  int size() const { return n_; }
  T& operator[](int i) { return data()[i]; }

 private:
  int n_;
  T inline_[kInline];
  std::unique_ptr<T[]> heap_;
};

// One MPI_Status argument: the C status the call fills, MPI_STATUS_IGNORE for the Fortran
// MPI_STATUS_IGNORE. The C status starts as the Fortran one and is copied back whatever the call
// returns, so the Fortran status holds exactly what a C caller's would.
class Status {
 public:
  explicit Status(MPI_Fint* f) : f_(f == sentinels().status_ignore ? nullptr : f) {
    if (f_ != nullptr) MPI_Status_f2c(f_, &c_);
  }
  MPI_Status* c() { return f_ != nullptr ? &c_ : MPI_STATUS_IGNORE; }
  void back() {
    if (f_ != nullptr) MPI_Status_c2f(&c_, f_);
  }

 private:
  MPI_Fint* f_;
  MPI_Status c_;
};

// An array of `n` statuses (MPI_STATUSES_IGNORE for the Fortran MPI_STATUSES_IGNORE); the
// Fortran statuses are MPI_STATUS_SIZE integers apart.
class Statuses {
 public:
  Statuses(MPI_Fint* f, int n);
  MPI_Status* c() { return f_ != nullptr ? c_.data() : MPI_STATUSES_IGNORE; }
  void back();

 private:
  MPI_Fint* f_;
  Array<MPI_Status> c_;
};

// MPI_Message handles: the library's, or MPIZip's own for messages a matched probe took on a
// protocol communicator (core::held_message), which Open MPI's MPI_Message_c2f cannot take (it
// reads the handle as its own object): these get Fortran handles from a table here. (MPICH's
// handles are integers, its Fortran handles the same integers, MPIZip's own included.)
// message_c2f forgets `previous`, a Fortran handle of MPIZip's now consumed (MPI_Mrecv).
MPI_Message message_f2c(MPI_Fint f);
MPI_Fint message_c2f(MPI_Message c, MPI_Fint previous);

// How many datatypes the sendtypes or recvtypes array of an MPI_Alltoallw-family call holds: the
// communicator's size (the remote group's, on an intercommunicator), or for the neighbourhood
// forms the number of its topology's neighbours it sends to or receives from. 0 where the
// communicator is invalid (the call itself then reports the error).
int types_count(MPI_Comm comm, bool neighbor, bool send);

// The MPI library's own Fortran entry point of a call (its pmpi_ form, whichever mangling it was
// built with; MPICH's mpi_f08 pmpir_<name>_f08_), found once: where MPIZip has nothing to do in
// the process, a Fortran call goes to it untouched. Null where the library has none (then the call
// is converted as usual).
class LibraryEntry {
 public:
  LibraryEntry(const char* lower, const char* upper);
  template <typename Fn>
  Fn* get() const {
    return reinterpret_cast<Fn*>(fn_);
  }

 private:
  void* fn_ = nullptr;
};

inline void set_error(MPI_Fint* ierror, int rc) {
  if (ierror != nullptr) *ierror = rc;
}

}  // namespace mpizip::interpose::fortran
