// The Fortran entry points' conversions: the library's Fortran sentinels, statuses, MPIZip's own
// message handles, the datatype arrays of the MPI_Alltoallw family, the library's own entry points.
// Built where the Fortran entry points are (MPIZIP_FORTRAN_ENTRIES, fortran.h).
#include "src/interpose/fortran.h"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "src/core/p2p_route.h"
#include "src/platform/log.h"

#if MPIZIP_FORTRAN_ENTRIES

namespace mpizip::interpose::fortran {
namespace {

// Integers of one Fortran status (MPI_STATUS_SIZE): MPI-4 names it in C; Open MPI 4 does not, and
// its Fortran status is its C one seen as integers.
#ifdef MPI_F_STATUS_SIZE
constexpr int kStatusSize = MPI_F_STATUS_SIZE;
#else
constexpr int kStatusSize = static_cast<int>(sizeof(MPI_Status) / sizeof(MPI_Fint));
#endif
static_assert(sizeof(MPI_Status) == kStatusSize * sizeof(MPI_Fint),
              "a Fortran status holds the C status's integers");

#if MPIZIP_FORTRAN_F77
// The four manglings a Fortran compiler may give the symbol of a common block or procedure.
void find_mangled(const char* lower, const char* upper, const void* out[4]) {
  const std::string l(lower);
  const std::string names[4] = {l + "_", l, l + "__", upper};
  for (int i = 0; i < 4; ++i) out[i] = dlsym(RTLD_DEFAULT, names[i].c_str());
}
#endif

// Open MPI's Fortran constants are common blocks that its C library (libmpi) exports under the
// compiler's mangling, and that the program's own copy replaces where it has one: the address the
// library compares with, and the one dlsym finds first. MPI_STATUS(ES)_IGNORE: the C constants
// MPI-2.2 defines for them. MPICH's entry points are its mpi_f08 ones without a buffer, whose
// MPI_STATUS(ES)_IGNORE are the C constants MPI-3 defines for those.
Sentinels find_sentinels() {
  Sentinels s;
#if MPIZIP_FORTRAN_F77
  find_mangled("mpi_fortran_in_place", "MPI_FORTRAN_IN_PLACE", s.in_place);
  find_mangled("mpi_fortran_bottom", "MPI_FORTRAN_BOTTOM", s.bottom);
  s.status_ignore = MPI_F_STATUS_IGNORE;
  s.statuses_ignore = MPI_F_STATUSES_IGNORE;
#else
  s.status_ignore = reinterpret_cast<const MPI_Fint*>(MPI_F08_STATUS_IGNORE);
  s.statuses_ignore = reinterpret_cast<const MPI_Fint*>(MPI_F08_STATUSES_IGNORE);
#endif
  return s;
}

bool is_one_of(const void* p, const void* const set[4]) {
  return p != nullptr && (p == set[0] || p == set[1] || p == set[2] || p == set[3]);
}

#if defined(OPEN_MPI)
// Fortran handles of MPIZip's own messages: a range Open MPI never gives its Fortran message
// handles, which are indices of a table.
static_assert(std::is_pointer_v<MPI_Message>, "Open MPI's handles are pointers");
constexpr MPI_Fint kHeldBase = 0x4d5a0000;
std::mutex g_held_mutex;
std::unordered_map<MPI_Fint, MPI_Message> g_held;
MPI_Fint g_next_held = 0;
#endif

}  // namespace

const Sentinels& sentinels() {
  static const Sentinels s = find_sentinels();
  return s;
}

void* buffer(void* f, bool in_place_allowed) {
  const Sentinels& s = sentinels();
  if (is_one_of(f, s.bottom)) return MPI_BOTTOM;
  if (in_place_allowed && is_one_of(f, s.in_place)) return MPI_IN_PLACE;
  return f;
}

Statuses::Statuses(MPI_Fint* f, int n)
    : f_(f == sentinels().statuses_ignore ? nullptr : f), c_(f_ != nullptr ? n : 0) {
  for (int i = 0; i < c_.size(); ++i) MPI_Status_f2c(f_ + i * kStatusSize, &c_[i]);
}

void Statuses::back() {
  for (int i = 0; i < c_.size(); ++i) MPI_Status_c2f(&c_[i], f_ + i * kStatusSize);
}

#if defined(OPEN_MPI)
MPI_Message message_f2c(MPI_Fint f) {
  if ((f & ~0xffff) == kHeldBase) {
    std::lock_guard<std::mutex> lock(g_held_mutex);
    auto it = g_held.find(f);
    if (it != g_held.end()) return it->second;
  }
  return MPI_Message_f2c(f);
}

MPI_Fint message_c2f(MPI_Message c, MPI_Fint previous) {
  std::lock_guard<std::mutex> lock(g_held_mutex);
  if ((previous & ~0xffff) == kHeldBase) {
    auto it = g_held.find(previous);
    if (it != g_held.end() && it->second != c) g_held.erase(it);
  }
  if (!core::held_message(c)) return MPI_Message_c2f(c);
  // At most 65536 held at once: a probed message waits for its receive, so a job holds a few.
  for (int tries = 0; tries < 0x10000; ++tries) {
    const MPI_Fint f = kHeldBase | (g_next_held++ & 0xffff);
    if (g_held.emplace(f, c).second) return f;
  }
  return MPI_Message_c2f(MPI_MESSAGE_NULL);
}
#else
MPI_Message message_f2c(MPI_Fint f) { return MPI_Message_f2c(f); }
MPI_Fint message_c2f(MPI_Message c, MPI_Fint) { return MPI_Message_c2f(c); }
#endif

int types_count(MPI_Comm comm, bool neighbor, bool send) {
  int n = 0;
  if (comm == MPI_COMM_NULL) return 0;
  if (!neighbor) {
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
    const int rc = inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n);
    return rc == MPI_SUCCESS ? n : 0;
  }
  int topo = MPI_UNDEFINED;
  if (PMPI_Topo_test(comm, &topo) != MPI_SUCCESS) return 0;
  if (topo == MPI_CART) {
    int ndims = 0;
    if (PMPI_Cartdim_get(comm, &ndims) != MPI_SUCCESS) return 0;
    return 2 * ndims;
  }
  if (topo == MPI_GRAPH) {
    int rank = 0;
    if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        PMPI_Graph_neighbors_count(comm, rank, &n) != MPI_SUCCESS)
      return 0;
    return n;
  }
  if (topo == MPI_DIST_GRAPH) {
    int in = 0, out = 0, weighted = 0;
    if (PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted) != MPI_SUCCESS) return 0;
    return send ? out : in;
  }
  return 0;
}

LibraryEntry::LibraryEntry(const char* lower, const char* upper) {
#if MPIZIP_FORTRAN_F77
  const std::string l = std::string("pmpi_") + lower;
  const std::string names[4] = {l + "_", l + "__", l, std::string("PMPI_") + upper};
#else
  const std::string names[1] = {std::string("pmpir_") + lower + "_f08_"};
#endif
  for (const std::string& name : names) {
    if ((fn_ = dlsym(RTLD_NEXT, name.c_str())) != nullptr) {
      MPIZIP_DEBUG("Fortran MPI_%s: nothing for MPIZip to do, the MPI library's own %s", upper,
                 name.c_str());
      return;
    }
  }
  MPIZIP_DEBUG("Fortran MPI_%s: the MPI library has no pmpi_ entry point, converted", upper);
}

}  // namespace mpizip::interpose::fortran

#endif  // MPIZIP_FORTRAN_ENTRIES
