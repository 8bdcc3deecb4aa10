// The one check of the MPI test programs (tests/mpi/*.c). CHECK(cond, fmt, ...): when `cond` is
// false, one line on stderr (the world rank, the message, the place) and one more failure in
// `failures`, which the program turns into its exit status. A program that defines
// CHECK_ABORT_AFTER before including this file calls MPI_Abort once more failures than that have
// been counted (0: at the first); by default it never aborts. Thread-safe: the count is atomic and
// the line is written with one call.
#pragma once

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>

#ifndef CHECK_ABORT_AFTER
#define CHECK_ABORT_AFTER -1
#endif

static int failures = 0;

static void check_failed(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check_failed(const char* file, int line, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int up = 0, world_rank = -1;
  MPI_Initialized(&up);
  if (up) MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  fprintf(stderr, "rank %d: check failed: %s (%s:%d)\n", world_rank, msg, file, line);
  const int n = __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
  if (CHECK_ABORT_AFTER >= 0 && n > CHECK_ABORT_AFTER) MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) check_failed(__FILE__, __LINE__, __VA_ARGS__);  \
  } while (0)
