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
//   --uneven       the v-collectives (osu_gatherv, ...): uneven counts, one of them zero, and
//                  displacements that are not the counts' prefix sums (see v_layout)
//   --tensors LIST the messages of one step, e.g. 214M,107M,32M,16M (programs that send a list of
//                  tensors instead of a range of sizes, weight_sync; K, M, G: 2^10, 2^20, 2^30)
//   --bcast        (the same programs) each tensor goes out as an MPI_Bcast from rank 0
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
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
  // Non-empty: the program sends this list of tensors (bytes) per step, takes --tensors instead
  // of -m, and runs one row, their total.
  std::vector<size_t> default_tensors = {};
  ElemType default_type = ElemType::kFloat;
  // -i and -x when not given (unset: OSU's counts by message size).
  std::optional<int> default_iterations = {};
  std::optional<int> default_warmup = {};
  // The program always checks some steps bit-exactly (validate is always on); -c makes it check
  // every step (check_every_step).
  bool always_validates = false;
  // Accepts --uneven: the v-collectives' uneven counts (see v_layout in collective.h).
  bool uneven_counts = false;
  // One row of size 0 (osu_barrier, which moves no data): -m is accepted and ignored, as OSU does.
  bool sizeless = false;
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
  std::vector<size_t> tensors;    // from ProgramTraits::default_tensors or --tensors
  bool check_every_step = false;  // -c under ProgramTraits::always_validates
  bool broadcast = false;         // --bcast (tensor programs): each tensor as an MPI_Bcast from rank 0
  bool uneven = false;            // --uneven (ProgramTraits::uneven_counts)
  bool help = false;

  // OSU's loop counts: large messages (over 8 KiB) run fewer iterations unless -i/-x says.
  int iterations_for(size_t bytes) const;
  int warmup_for(size_t bytes) const;
  // Message sizes to run: powers of two in [min_size, max_size], multiples of the element size;
  // for a tensor list, one size: the list's total bytes.
  std::vector<size_t> sizes() const;
  size_t total_tensor_bytes() const;
  size_t largest_size() const;  // the last of sizes(), 0 when there is none
  // Where rank r's buffers live (collectives: everyone uses location[0]).
  Location location_of(int rank) const { return location[rank == 1 ? 1 : 0]; }
  bool any_device() const;
};

// Parses argv; on a bad option returns nullopt and says why in error.
std::optional<Options> parse_options(int argc, char** argv, const ProgramTraits& traits,
                                     std::string& error);
std::string usage(const char* program, const ProgramTraits& traits);

// Parses a byte count with an optional binary suffix K, M or G (2^10, 2^20, 2^30): "512K".
std::optional<size_t> parse_bytes(std::string_view s);
// The inverse for printing: "214M" when exact in M (or K, G), else the bytes.
std::string format_bytes(size_t bytes);

}  // namespace osub
