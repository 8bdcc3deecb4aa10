// The functions declared in include/mpizip.h.
#include "include/mpizip.h"

#include "config.h"
#include "src/core/runtime.h"

extern "C" const char* MPIZip_Version(void) { return PACKAGE_VERSION; }

extern "C" int MPIZip_Active(void) { return mpizip::core::active() ? 1 : 0; }
