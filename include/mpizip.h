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

/* Everything declared here is exported from libmpizip.so, which hides the rest. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The library's version as "MAJOR.MINOR.PATCH" (static storage; never free it). Callable before
 * MPI_Init. */
const char* MPIZip_Version(void);

/* Non-zero when libmpizip is loaded and active in this process: between MPI_Init and
 * MPI_Finalize, with MPIZIP_ENABLE not set to 0. */
int MPIZip_Active(void);

/* Non-zero when point-to-point messages on `comm` whose type signature repeats a float, double,
 * 16- or 8-bit element use the MPIZip protocol (and so may be compressed; a receive whose
 * signature is not the sender's is reported as MPI_ERR_TYPE). */
int MPIZip_Comm_protocol(MPI_Comm comm);

/* Element types, as values of the attributes below. */
enum {
  MPIZIP_ELEM_NONE = 0,
  MPIZIP_ELEM_BF16 = 1,
  MPIZIP_ELEM_FP16 = 2,
  MPIZIP_ELEM_FP8_E4M3 = 5,
  MPIZIP_ELEM_FP8_E5M2 = 6
};

/* Datatypes for bf16, fp16 and the two OCP fp8 formats, valid from MPI_Init to MPI_Finalize. Each
 * has the type signature of MPI_UINT16_T (16-bit) or MPI_UINT8_T (8-bit), so it works with any MPI
 * call; MPIZip compresses messages of these types losslessly. Use the same datatype on the sending
 * and the receiving side. */
extern MPI_Datatype MPIZip_bf16;
extern MPI_Datatype MPIZip_fp16;
extern MPI_Datatype MPIZip_fp8_e4m3;
extern MPI_Datatype MPIZip_fp8_e5m2;
#define MPIZIP_BF16 MPIZip_bf16
#define MPIZIP_FP16 MPIZip_fp16
#define MPIZIP_FP8_E4M3 MPIZip_fp8_e4m3
#define MPIZIP_FP8_E5M2 MPIZip_fp8_e5m2

/* Communicator attribute keys (valid from MPI_Init to MPI_Finalize). Setting
 *   MPI_Comm_set_attr(comm, MPIZIP_UINT16_ELEMENT, (void*)(intptr_t)MPIZIP_ELEM_BF16);
 * declares that MPI_UINT16_T buffers on `comm` hold bf16 values (MPIZIP_UINT8_ELEMENT: MPI_UINT8_T
 * buffers hold fp8), so their messages are compressed. Set the same value on every rank of `comm`
 * before its first message of that type; MPI_Comm_dup copies it. */
extern int MPIZip_uint16_element_keyval;
extern int MPIZip_uint8_element_keyval;
#define MPIZIP_UINT16_ELEMENT MPIZip_uint16_element_keyval
#define MPIZIP_UINT8_ELEMENT MPIZip_uint8_element_keyval

/* Point-to-point protocol traffic of one communicator in this process, all element types together.
 * Counted only while statistics are on (MPIZIP_STATS=1); zeros otherwise. */
typedef struct {
  unsigned long long sent_messages;      /* protocol messages sent */
  unsigned long long sent_compressed;    /* of which sent compressed */
  unsigned long long sent_app_bytes;     /* the application's bytes they carried */
  unsigned long long sent_wire_bytes;    /* payload bytes that travelled */
  unsigned long long received_messages;  /* protocol messages received */
  unsigned long long received_compressed;
} MPIZip_Traffic;

/* Fills `out` for `comm`. MPI_SUCCESS, or MPI_ERR_COMM when MPIZip is not active or does not know
 * `comm`. */
int MPIZip_Comm_traffic(MPI_Comm comm, MPIZip_Traffic* out);

/* Messages of `comm` in this process that travelled bare: datatypes the protocol carries, sent
 * and received as the MPI library's own messages (those of at most MPIZIP_BARE_BYTES; above it,
 * a host buffer sent raw, and a receive into a host buffer that such a message landed in).
 * Counted only while statistics are on; zeros otherwise. MPI_SUCCESS, or MPI_ERR_COMM as
 * MPIZip_Comm_traffic. */
int MPIZip_Comm_bare_messages(MPI_Comm comm, unsigned long long* sent,
                              unsigned long long* received);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* MPIZIP_H */
