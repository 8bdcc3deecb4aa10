/* A stand-in for a CUDA-aware MPI library (tests/mpi/cuda_aware.sh, tests/gpu/cuda_aware.sh),
 * preloaded after libmpizip: it answers MPIX_Query_cuda_support() with 1, and its PMPI_Send,
 * PMPI_Recv and PMPI_Bcast count the device pointers they are handed, then do what a CUDA-aware
 * library does with them (here: through host copies, with the GPU runtime the process has loaded)
 * before calling the real library's. So a test sees whether MPIZip handed a device buffer to the
 * MPI library untouched instead of staging it. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int MPIX_Query_cuda_support(void) { return 1; }

static long g_device_pointers;
long standin_device_pointers(void) { return g_device_pointers; }

/* cudaPointerGetAttributes and cudaMemcpy of the runtime the process loaded, if any. */
struct attrs { int type; int device; void* dptr; void* hptr; char reserved[256]; };
static int is_device(const void* p) {
  static int (*get)(struct attrs*, const void*) = NULL;
  static int looked = 0;
  if (!looked) {
    get = (int (*)(struct attrs*, const void*))dlsym(RTLD_DEFAULT, "cudaPointerGetAttributes");
    looked = 1;
  }
  struct attrs a;
  memset(&a, 0, sizeof a);
  return get != NULL && p != NULL && get(&a, p) == 0 && a.type == 2; /* cudaMemoryTypeDevice */
}
static void copy(void* dst, const void* src, size_t n, int kind) {
  int (*memcpy_fn)(void*, const void*, size_t, int) =
      (int (*)(void*, const void*, size_t, int))dlsym(RTLD_DEFAULT, "cudaMemcpy");
  if (memcpy_fn != NULL) memcpy_fn(dst, src, n, kind);
}
static size_t span_of(int count, MPI_Datatype t) {
  MPI_Aint lb, extent;
  PMPI_Type_get_extent(t, &lb, &extent);
  return count > 0 ? (size_t)count * (size_t)extent : 0;
}

typedef int (*send_fn)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_fn)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*);
typedef int (*bcast_fn)(void*, int, MPI_Datatype, int, MPI_Comm);
#define NEXT(name, type)  \
  static type next = NULL; \
  if (next == NULL) next = (type)dlsym(RTLD_NEXT, name)

int PMPI_Send(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  NEXT("PMPI_Send", send_fn);
  if (!is_device(buf)) return next(buf, count, t, dest, tag, comm);
  ++g_device_pointers;
  size_t n = span_of(count, t);
  void* h = malloc(n ? n : 1);
  copy(h, buf, n, 2 /* device to host */);
  int rc = next(h, count, t, dest, tag, comm);
  free(h);
  return rc;
}

int PMPI_Recv(void* buf, int count, MPI_Datatype t, int source, int tag, MPI_Comm comm,
              MPI_Status* status) {
  NEXT("PMPI_Recv", recv_fn);
  if (!is_device(buf)) return next(buf, count, t, source, tag, comm, status);
  ++g_device_pointers;
  size_t n = span_of(count, t);
  void* h = malloc(n ? n : 1);
  copy(h, buf, n, 2);
  int rc = next(h, count, t, source, tag, comm, status);
  copy(buf, h, n, 1 /* host to device */);
  free(h);
  return rc;
}

int PMPI_Bcast(void* buf, int count, MPI_Datatype t, int root, MPI_Comm comm) {
  NEXT("PMPI_Bcast", bcast_fn);
  if (!is_device(buf)) return next(buf, count, t, root, comm);
  ++g_device_pointers;
  size_t n = span_of(count, t);
  void* h = malloc(n ? n : 1);
  copy(h, buf, n, 2);
  int rc = next(h, count, t, root, comm);
  copy(buf, h, n, 1);
  free(h);
  return rc;
}
