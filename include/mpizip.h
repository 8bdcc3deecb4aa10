/*
 * MPIZip public interface.
 *
 * MPIZip is a PMPI interposer: an application needs no header to use it (preload libmpizip.so or
 * link -lmpizip). This header is for applications and tools that want to talk to it: version,
 * and, as they arrive, per-communicator attribute keys, element-type datatypes and statistics.
 * C and C++; no GPU runtime header needed.
 */
#ifndef MPIZIP_H
#define MPIZIP_H

#include <mpi.h>

#define MPIZIP_VERSION_MAJOR 0
#define MPIZIP_VERSION_MINOR 1
#define MPIZIP_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version as "MAJOR.MINOR.PATCH" (static storage; never free it). Callable before
 * MPI_Init. */
const char* MPIZip_Version(void);

/* Non-zero when libmpizip is loaded and active in this process: between MPI_Init and
 * MPI_Finalize, with MPIZIP_ENABLE not set to 0. */
int MPIZip_Active(void);

#ifdef __cplusplus
}
#endif

#endif /* MPIZIP_H */
