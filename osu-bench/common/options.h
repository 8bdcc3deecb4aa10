// Command-line options, OSU's where OSU has them:
//   -m [min:]max   message sizes in bytes (powers of two from min to max)
//   -i N           timed iterations per size (small and large messages alike)
//   -x N           warm-up iterations per size
//   -c             check the received data bit-exactly (reductions: against a host reference)
//   -d cuda|host   buffer location; point-to-point also takes OSU's per-rank letters after it
//                  or at the end: "-d cuda D H" puts rank 0's buffers in device memory and
//                  rank 1's in host memory ("-d cuda" alone means D D)
//   -W N           window size (bandwidth tests)
//   -T TYPE        float|double|bf16|fp16|fp8e4m3|fp8e5m2
//   --data KIND    constant|uniform|normal|real (default uniform)
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "osu-bench/common/buffer.h"
#include "osu-bench/common/data.h"
#include "osu-bench/common/elem_type.h"

namespace osub {

// What a program accepts, and its OSU defaults.
struct ProgramTraits {
  bool point_to_point;  // two ranks, per-rank buffer locations
  bool window;          // accepts -W
  size_t default_max_size;
  // MPIZip serves this call's device buffers itself (compressing or staging them), so with MPIZip
  // active the benchmark hands it device pointers, as an application would.
  bool mpizip_takes_device = false;
};

struct Options {
  size_t min_size = 1;
  size_t max_size = 0;            // set from ProgramTraits
  std::optional<int> iterations;  // unset: OSU's defaults for small and large messages
  std::optional<int> warmup;
  bool validate = false;
  std::array<Location, 2> location = {Location::kHost, Location::kHost};  // rank 0, rank 1
  int window = 64;
  ElemType type = ElemType::kFloat;
  DataKind data = DataKind::kUniform;
  bool help = false;

  // OSU's loop counts: large messages (over 8 KiB) run fewer iterations unless -i/-x says.
  int iterations_for(size_t bytes) const;
  int warmup_for(size_t bytes) const;
  // Message sizes to run: powers of two in [min_size, max_size], multiples of the element size.
  std::vector<size_t> sizes() const;
  size_t largest_size() const;  // the last of sizes(), 0 when there is none
  // Where rank r's buffers live (collectives: everyone uses location[0]).
  Location location_of(int rank) const { return location[rank == 1 ? 1 : 0]; }
  bool any_device() const;
};

// Parses argv; on a bad option returns nullopt and says why in error.
std::optional<Options> parse_options(int argc, char** argv, const ProgramTraits& traits,
                                     std::string& error);
std::string usage(const char* program, const ProgramTraits& traits);

}  // namespace osub
