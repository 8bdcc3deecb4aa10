// Logging: one line per event on stderr, prefixed with the MPI rank, filtered by MPIZIP_LOG.
// Lives in platform (the lowest layer) because every layer reports events; src/core sets the
// level and the rank once MPI is up. Thread-safe: a line is formatted first and written with one
// write(2).
#pragma once

#include <atomic>

namespace mpizip::log {

enum class Level : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// Current threshold; events above it are dropped. Default kWarn until core configures it.
Level level();
void set_level(Level l);
// World rank shown in the prefix; -1 (the default) shows the launcher's rank variable if any, else '?'.
void set_rank(int rank);

// printf-style; appends the newline.
void write(Level l, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Same line format with a tag of the caller's choice instead of a level, never filtered (reports the
// user asked for, such as MPIZIP_STATS).
void report(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

inline bool enabled(Level l) { return static_cast<int>(l) <= static_cast<int>(level()); }

}  // namespace mpizip::log

#define MPIZIP_LOG(lvl, ...)                                                       \
  do {                                                                             \
    if (::mpizip::log::enabled(::mpizip::log::Level::lvl)) {                       \
      ::mpizip::log::write(::mpizip::log::Level::lvl, __VA_ARGS__);                \
    }                                                                              \
  } while (0)
#define MPIZIP_ERROR(...) MPIZIP_LOG(kError, __VA_ARGS__)
#define MPIZIP_WARN(...) MPIZIP_LOG(kWarn, __VA_ARGS__)
#define MPIZIP_INFO(...) MPIZIP_LOG(kInfo, __VA_ARGS__)
#define MPIZIP_DEBUG(...) MPIZIP_LOG(kDebug, __VA_ARGS__)

// Logs the first time this line is reached in the process, never again (for fallbacks that would
// otherwise repeat on every message).
#define MPIZIP_LOG_ONCE(lvl, ...)                                                  \
  do {                                                                             \
    static std::atomic<bool> mpizip_once_{false};                                  \
    if (!mpizip_once_.exchange(true, std::memory_order_relaxed)) {                 \
      MPIZIP_LOG(lvl, __VA_ARGS__);                                                \
    }                                                                              \
  } while (0)
