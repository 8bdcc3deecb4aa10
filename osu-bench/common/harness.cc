#include "osu-bench/common/harness.h"

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>

#include "mpizip.h"
#include "osu-bench/common/validate.h"

namespace osub {

namespace {

bool mpizip_active();

constexpr int kSizeWidth = 10;
constexpr int kFieldWidth = 18;
constexpr int kFloatPrecision = 2;

// Options and buffer checks that fail the same way on every rank; rank 0 says why.
std::optional<Context> make_context(int argc, char** argv, const BenchSpec& spec, int& status) {
  Context ctx;
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.nranks);
  std::string error;
  auto opts = parse_options(argc, argv, spec.traits, error);
  if (opts && opts->help) {
    if (ctx.rank == 0) std::fputs(usage(argv[0], spec.traits).c_str(), stdout);
    status = 0;
    return std::nullopt;
  }
  if (opts && opts->any_device() && !device_buffers_built())
    error = "-d cuda: this build has no CUDA support; rebuild with --with-cuda";
  else if (ctx.nranks < spec.min_ranks || (spec.max_ranks && ctx.nranks > spec.max_ranks))
    error = spec.max_ranks == spec.min_ranks
                ? "this test needs exactly " + std::to_string(spec.min_ranks) + " processes"
                : "this test needs at least " + std::to_string(spec.min_ranks) + " processes";
  if (opts && error.empty() && opts->data == DataKind::kReal)
    ctx.real = RealWeights::load(RealWeights::default_path(), error);
  if (!opts || !error.empty()) {
    if (ctx.rank == 0)
      std::fprintf(stderr, "%s: %s\n%s", argv[0], error.c_str(),
                   opts ? "" : usage(argv[0], spec.traits).c_str());
    status = 1;
    return std::nullopt;
  }
  ctx.opts = *opts;
  ctx.mpi = mpi_type_of(ctx.opts.type);
  ctx.elem_size = elem_type_size(ctx.opts.type);
  ctx.nonblocking = spec.nonblocking;
  ctx.staged = ctx.opts.any_device() && !mpi_accepts_device_pointers() &&
               !(spec.traits.mpizip_takes_device && mpizip_active());
  return ctx;
}

std::string buffers_line(const Context& ctx, const BenchSpec& spec) {
  if (!spec.traits.point_to_point)
    return std::string("Buffers: ") + location_name(ctx.opts.location[0]);
  return std::string("Buffers: rank 0 ") + location_name(ctx.opts.location[0]) + ", rank 1 " +
         location_name(ctx.opts.location[1]);
}

// Whether MPIZip is in this process and active, found at run time so the same binary runs with
// and without it; the compare runner checks this line.
bool mpizip_active() {
  auto active = reinterpret_cast<decltype(&MPIZip_Active)>(dlsym(RTLD_DEFAULT, "MPIZip_Active"));
  return active != nullptr && active();
}

std::string mpizip_line() {
  auto active = reinterpret_cast<decltype(&MPIZip_Active)>(dlsym(RTLD_DEFAULT, "MPIZip_Active"));
  auto version = reinterpret_cast<decltype(&MPIZip_Version)>(dlsym(RTLD_DEFAULT, "MPIZip_Version"));
  if (!active || !version) return "MPIZip: not loaded";
  return std::string("MPIZip: ") + (active() ? "active" : "loaded, inactive") + ", version " +
         version();
}

void print_header(const Context& ctx, const BenchSpec& spec, const Benchmark& bench) {
  std::printf("# %s\n", spec.title);
  std::printf("# Datatype: %s (%s, %zu byte%s)\n",
              std::string(elem_type_name(ctx.opts.type)).c_str(), ctx.mpi.name, ctx.elem_size,
              ctx.elem_size == 1 ? "" : "s");
  std::printf("# Data: %s\n", data_kind_label(ctx.opts.data, ctx.opts.type).c_str());
  if (ctx.real)
    std::printf("# Weights: %s (%zu fp32 values)\n", ctx.real->path().c_str(),
                ctx.real->values().size());
  std::printf("# %s\n", buffers_line(ctx, spec).c_str());
  if (ctx.staged)
    std::printf("# device buffers staged through host memory: MPI is not CUDA-aware\n");
  std::printf("# Processes: %d\n", ctx.nranks);
  std::printf("# %s\n", mpizip_line().c_str());
  if (spec.traits.window) std::printf("# Window size: %d\n", ctx.opts.window);
  for (const std::string& line : spec.notes) std::printf("# %s\n", line.c_str());
  for (const std::string& line : bench.header_lines()) std::printf("# %s\n", line.c_str());
  std::printf("%-*s", kSizeWidth, "# Size");
  for (const std::string& c : spec.columns) std::printf("%*s", kFieldWidth, c.c_str());
  if (ctx.opts.validate) std::printf("%*s", kFieldWidth, "Validation");
  std::printf("\n");
  std::fflush(stdout);
}

void print_row(const Context& ctx, size_t bytes, const Row& row, bool valid) {
  std::printf("%-*zu", kSizeWidth, bytes);
  for (double f : row.figures) std::printf("%*.*f", kFieldWidth, kFloatPrecision, f);
  if (ctx.opts.validate) std::printf("%*s", kFieldWidth, valid ? "Pass" : "Fail");
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

std::vector<std::byte> Context::data_of(int r, size_t count) const {
  std::vector<std::byte> out(count * elem_size);
  generate_data(opts.data, opts.type, r, count, real ? &*real : nullptr, out.data());
  return out;
}

std::unique_ptr<Buffer> Context::buffer(size_t bytes) const {
  return std::make_unique<Buffer>(opts.location_of(rank), bytes, staged);
}

std::unique_ptr<Buffer> Context::data_buffer(size_t count) const {
  auto b = buffer(count * elem_size);
  b->upload(data_of(rank, count).data(), count * elem_size);
  return b;
}

BenchSpec point_to_point_spec(const char* title, const char* column, bool window,
                              BenchmarkFactory make) {
  return {title,
          {.point_to_point = true, .window = window, .default_max_size = size_t(1) << 22,
           .mpizip_takes_device = true},
          {column}, 2,
          2,        std::move(make)};
}

BenchSpec collective_spec(const char* title, BenchmarkFactory make) {
  return {title,
          {.point_to_point = false, .window = false, .default_max_size = size_t(1) << 20},
          {"Avg Latency(us)", "Min Latency(us)", "Max Latency(us)"},
          2,
          0,
          std::move(make)};
}

BenchSpec nonblocking_spec(const char* title, BenchmarkFactory make) {
  BenchSpec spec = collective_spec(title, std::move(make));
  spec.nonblocking = true;
  spec.columns = {"Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)"};
  spec.notes = {"Overall = Coll. Init + Compute + MPI_Wait; Compute: a host busy loop as long as "
                "the pure communication time"};
  return spec;
}

int bench_main(int argc, char** argv, const BenchSpec& spec) {
  MPI_Init(&argc, &argv);
  int status = 0;
  std::optional<Context> ctx = make_context(argc, argv, spec, status);
  if (!ctx) {
    MPI_Finalize();
    return status;
  }
  std::unique_ptr<Benchmark> bench = spec.make(*ctx);
  if (ctx->rank == 0) print_header(*ctx, spec, *bench);
  bool all_valid = true;
  const std::vector<size_t> sizes =
      spec.traits.sizeless ? std::vector<size_t>{0} : ctx->opts.sizes();
  for (size_t bytes : sizes) {
    std::optional<Row> row = bench->run(bytes);
    if (!row) continue;
    bool valid = !ctx->opts.validate || agree_valid(row->valid);
    all_valid = all_valid && valid;
    if (ctx->rank == 0) print_row(*ctx, bytes, *row, valid);
  }
  bench.reset();  // device memory goes before MPI does
  MPI_Finalize();
  return all_valid ? 0 : 1;
}

namespace {

// OSU's collective loop: a barrier, then warm-up and timed iterations of op with a barrier after
// each. Returns this rank's mean seconds per timed call.
double mean_call_seconds(const Context& ctx, size_t bytes, const std::function<void()>& op) {
  int warmup = ctx.opts.warmup_for(bytes), iterations = ctx.opts.iterations_for(bytes);
  double total = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < warmup + iterations; ++i) {
    double start = MPI_Wtime();
    op();
    double elapsed = MPI_Wtime() - start;
    if (i >= warmup) total += elapsed;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return total / iterations;
}

// The average of value over ranks, at rank 0.
double average_over_ranks(const Context& ctx, double value) {
  double sum = 0;
  MPI_Reduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  return sum / ctx.nranks;
}

// OSU's dummy compute (compute_on_host, target CPU): a 25x25 float matrix product into a vector,
// repeated until `seconds` have passed.
void host_compute(double seconds) {
  constexpr int kDim = 25;
  static float a[kDim][kDim], x[kDim], y[kDim];
  const double start = MPI_Wtime();
  do {
    for (int i = 0; i < kDim; ++i)
      for (int j = 0; j < kDim; ++j) x[i] = x[i] + a[i][j] * a[j][i] + y[j];
  } while (MPI_Wtime() - start < seconds);
}

}  // namespace

std::vector<double> time_collective(const Context& ctx, size_t bytes,
                                    const std::function<void()>& op) {
  double mean_us = mean_call_seconds(ctx, bytes, op) * 1e6;
  double min = 0, max = 0;
  MPI_Reduce(&mean_us, &min, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&mean_us, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return {average_over_ranks(ctx, mean_us), min, max};
}

std::vector<double> time_overlap(const Context& ctx, size_t bytes,
                                 const std::function<void(MPI_Request*)>& post,
                                 const std::function<void()>& complete) {
  const double pure = mean_call_seconds(ctx, bytes, [&] {
    MPI_Request request;
    post(&request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    complete();
  });
  std::vector<double> computes;  // per call, warm-up included
  const double overall = mean_call_seconds(ctx, bytes, [&] {
    MPI_Request request;
    post(&request);
    double start = MPI_Wtime();
    host_compute(pure);
    computes.push_back(MPI_Wtime() - start);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    complete();
  });
  const int iterations = ctx.opts.iterations_for(bytes);
  double compute = 0;
  for (size_t i = computes.size() - size_t(iterations); i < computes.size(); ++i)
    compute += computes[i];
  compute /= iterations;
  double overall_us = average_over_ranks(ctx, overall * 1e6);
  double compute_us = average_over_ranks(ctx, compute * 1e6);
  double pure_us = average_over_ranks(ctx, pure * 1e6);
  double overlap = pure_us > 0 ? std::max(0.0, 100 - 100 * (overall_us - compute_us) / pure_us) : 0;
  return {overall_us, compute_us, pure_us, overlap};
}

std::vector<double> time_call(const Context& ctx, size_t bytes,
                              const std::function<void(MPI_Request*)>& post,
                              const std::function<void()>& complete) {
  if (ctx.nonblocking) return time_overlap(ctx, bytes, post, complete);
  return time_collective(ctx, bytes, [&] {
    post(nullptr);
    complete();
  });
}

}  // namespace osub
