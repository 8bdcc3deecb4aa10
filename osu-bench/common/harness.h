// What every benchmark program shares: MPI start-up, options, the header, the loop over message
// sizes, validation verdicts and the OSU-style output. A program supplies one Benchmark: how to
// run and time one message size.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osu-bench/common/buffer.h"
#include "osu-bench/common/data.h"
#include "osu-bench/common/elem_type.h"
#include "osu-bench/common/options.h"

namespace osub {

// Facts every rank shares for one run.
struct Context {
  Options opts;
  int rank = 0;
  int nranks = 0;
  MpiType mpi{};
  size_t elem_size = 0;
  bool staged = false;  // device buffers go through pinned host memory (MPI is not CUDA-aware)
  bool nonblocking = false;  // the non-blocking form of a collective (BenchSpec::nonblocking)
  std::optional<RealWeights> real;

  // The first count elements rank r sends, on the host.
  std::vector<std::byte> data_of(int r, size_t count) const;
  // A buffer of bytes in this rank's location, staged when needed.
  std::unique_ptr<Buffer> buffer(size_t bytes) const;
  // A send buffer of this rank's data, count elements.
  std::unique_ptr<Buffer> data_buffer(size_t count) const;
};

// One output line: the figures in the program's columns, and, under -c, this rank's verdict.
struct Row {
  std::vector<double> figures;
  bool valid = true;
};

class Benchmark {
 public:
  virtual ~Benchmark() = default;
  // Extra header lines (without the leading "# ").
  virtual std::vector<std::string> header_lines() const { return {}; }
  // Runs one message size on every rank; rank 0's row is printed. nullopt: this size does not
  // apply (decided from arguments every rank shares, so all ranks skip it together).
  virtual std::optional<Row> run(size_t bytes) = 0;
};

struct BenchSpec {
  const char* title;  // "OSU MPI Bandwidth Test"
  ProgramTraits traits;
  std::vector<std::string> columns;  // after "Size", e.g. "Bandwidth (MB/s)"
  int min_ranks;
  int max_ranks;  // 0: no limit
  std::function<std::unique_ptr<Benchmark>(const Context&)> make;
  std::vector<std::string> notes = {};  // header lines of the kind of test (without "# ")
  bool nonblocking = false;             // time_call times the non-blocking form, as OSU does
};

using BenchmarkFactory = std::function<std::unique_ptr<Benchmark>(const Context&)>;
template <typename B>
std::unique_ptr<Benchmark> make_benchmark(const Context& ctx) {
  return std::make_unique<B>(ctx);
}

// Two ranks, OSU's default sizes up to 4 MiB, one figure per size (column).
BenchSpec point_to_point_spec(const char* title, const char* column, bool window,
                              BenchmarkFactory make);
// Two or more ranks, sizes up to 1 MiB, OSU's average/minimum/maximum latency over ranks.
BenchSpec collective_spec(const char* title, BenchmarkFactory make);

// OSU's non-blocking collectives (osu_iallreduce, ...): two or more ranks, sizes up to 1 MiB, the
// columns of time_overlap.
BenchSpec nonblocking_spec(const char* title, BenchmarkFactory make);

// A program built from one source in both forms: the blocking test (collective_spec, title), or,
// where the build defines OSUB_NONBLOCKING (osu_iallreduce from osu_allreduce.cc, ...), the
// non-blocking one (nonblocking_spec, nonblocking_title).
inline BenchSpec collective_spec(const char* title, const char* nonblocking_title,
                                 BenchmarkFactory make) {
#ifdef OSUB_NONBLOCKING
  (void)title;
  return nonblocking_spec(nonblocking_title, std::move(make));
#else
  (void)nonblocking_title;
  return collective_spec(title, std::move(make));
#endif
}

// The whole program: returns main's exit status (1 on bad options or a failed validation).
int bench_main(int argc, char** argv, const BenchSpec& spec);

// OSU's collective timing: warm-up, then timed iterations of op with a barrier between them.
// Returns {average, minimum, maximum} over ranks of the mean time per call, in microseconds.
std::vector<double> time_collective(const Context& ctx, size_t bytes,
                                    const std::function<void()>& op);

// One call of a collective, timed in the program's form: post(request) makes the call; request is
// null in a blocking test (post makes the blocking call) and the request the non-blocking call is
// to set in a non-blocking test; complete() runs after the call has finished (a staged receive's
// copy to the device). Returns time_collective's figures, or time_overlap's.
std::vector<double> time_call(const Context& ctx, size_t bytes,
                              const std::function<void(MPI_Request*)>& post,
                              const std::function<void()>& complete);

// OSU's non-blocking collective timing. post(request) starts the call; complete() runs after its
// MPI_Wait (a staged receive's copy to the device). First the pure communication time: post, then
// MPI_Wait at once, in time_collective's loop; then the same loop again with a dummy compute
// between the post and MPI_Wait: a host busy loop (OSU's matrix product) as long as this rank's
// pure communication time, whatever the buffers' location, as OSU does by default. Returns the
// averages over ranks, in microseconds, of the overall time per call and of the compute time, the
// average pure communication time, and OSU's overlap,
// max(0, 100 - 100 (overall - compute) / pure communication) percent.
std::vector<double> time_overlap(const Context& ctx, size_t bytes,
                                 const std::function<void(MPI_Request*)>& post,
                                 const std::function<void()>& complete);

}  // namespace osub
