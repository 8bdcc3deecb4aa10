// The functions declared in include/mpizip.h.
#include "include/mpizip.h"

#include "config.h"
#include "src/core/comm_state.h"
#include "src/core/runtime.h"

extern "C" const char* MPIZip_Version(void) { return PACKAGE_VERSION; }

extern "C" int MPIZip_Active(void) { return mpizip::core::active() ? 1 : 0; }

extern "C" int MPIZip_Comm_protocol(MPI_Comm comm) {
  if (!mpizip::core::active()) return 0;
  mpizip::core::CommState* s = mpizip::core::comm_state_find(comm);
  return s != nullptr && s->protocol.load() ? 1 : 0;
}
