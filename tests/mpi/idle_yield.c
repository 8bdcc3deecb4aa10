/* Preloaded into every rank of the tests under MPICH (tests/mpi/yield_launch.sh), never part of
 * libmpizip: MPICH 4.0's ch4 device busy-polls while it waits, with no setting to yield the core
 * (MPIR_CVAR_POLLS_BEFORE_YIELD is ch3's; libmpich calls sched_yield nowhere), so ranks that
 * outnumber the cores (the tests' 3, 4 and 8 ranks on a CI machine of 2 cores) each spin through
 * their whole time slice before the rank they wait for runs: a 4-rank ring of 2,000 round trips
 * took 20 s on 2 cores, 0.08 s with this. Its progress loop calls ucp_worker_progress() on every
 * pass, shared memory or not; this wraps it and, after kIdlePolls passes in a row that progressed
 * nothing, yields the core, as Open MPI's mpi_yield_when_idle does. Nothing else changes: the
 * same calls, in the same order, with the same results. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

enum { kIdlePolls = 64 };
typedef unsigned (*progress_fn)(void*);

unsigned ucp_worker_progress(void* worker);
unsigned ucp_worker_progress(void* worker) {
  static progress_fn real;
  static __thread unsigned idle;
  if (!real) real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
  const unsigned n = real(worker);
  if (n != 0) {
    idle = 0;
  } else if (++idle >= kIdlePolls) {
    idle = 0;
    sched_yield();
  }
  return n;
}
