#include "src/platform/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace mpizip::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kWarn)};
std::atomic<int> g_rank{-1};

const char* level_name(Level l) {
  switch (l) {
    case Level::kError: return "error";
    case Level::kWarn: return "warn";
    case Level::kInfo: return "info";
    case Level::kDebug: return "debug";
  }
  return "?";
}

// Before MPI_Init the rank is unknown; launchers export it.
const char* launcher_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* r = std::getenv(v)) return r;
  }
  return "?";
}


void vemit(const char* tag, const char* fmt, va_list ap) {
  char line[4096];
  int rank = g_rank.load(std::memory_order_relaxed);
  int n = rank >= 0 ? std::snprintf(line, sizeof line, "[mpizip %d] %s: ", rank, tag)
                    : std::snprintf(line, sizeof line, "[mpizip %s] %s: ", launcher_rank(), tag);
  int m = std::vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  ssize_t ignored = ::write(STDERR_FILENO, line, len);
  (void)ignored;
}

}  // namespace

Level level() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }
void set_level(Level l) { g_level.store(static_cast<int>(l), std::memory_order_relaxed); }
void set_rank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }

void write(Level l, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vemit(level_name(l), fmt, ap);
  va_end(ap);
}

void report(const char* tag, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vemit(tag, fmt, ap);
  va_end(ap);
}

}  // namespace mpizip::log
