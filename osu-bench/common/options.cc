#include "osu-bench/common/options.h"

#include <bit>
#include <charconv>
#include <limits>
#include <string_view>

namespace osub {

namespace {

// OSU switches to fewer iterations above this size.
constexpr size_t kLargeMessage = 8192;
constexpr int kIterationsSmall = 1000, kIterationsLarge = 100;
constexpr int kWarmupSmall = 200, kWarmupLarge = 10;

template <typename T>
std::optional<T> parse_number(std::string_view s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

bool parse_sizes(std::string_view arg, Options& o) {
  size_t colon = arg.find(':');
  if (colon == std::string_view::npos) {
    auto max = parse_number<size_t>(arg);
    if (!max) return false;
    o.max_size = *max;
  } else {
    auto min = parse_number<size_t>(arg.substr(0, colon));
    if (!min) return false;
    o.min_size = *min;
    if (colon + 1 < arg.size()) {
      auto max = parse_number<size_t>(arg.substr(colon + 1));
      if (!max) return false;
      o.max_size = *max;
    }
  }
  return o.min_size <= o.max_size;
}

// A comma-separated list of byte counts, each positive.
bool parse_tensor_list(std::string_view arg, std::vector<size_t>& out) {
  out.clear();
  while (true) {
    size_t comma = arg.find(',');
    auto bytes = parse_bytes(arg.substr(0, comma));
    if (!bytes || *bytes == 0) return false;
    out.push_back(*bytes);
    if (comma == std::string_view::npos) return true;
    arg.remove_prefix(comma + 1);
  }
}

// MPI_TAG_UB is at least this: weight_sync tags each tensor with its index.
constexpr size_t kMaxTensors = 32767;

// Each tensor a whole number of elements, each count an MPI int.
bool check_tensors(const Options& o, std::string& error) {
  size_t elem = elem_type_size(o.type);
  if (o.tensors.size() > kMaxTensors) {
    error = "--tensors: at most " + std::to_string(kMaxTensors) + " tensors";
    return false;
  }
  for (size_t bytes : o.tensors) {
    if (bytes % elem) {
      error = "--tensors: " + std::to_string(bytes) + " bytes is not a whole number of " +
              std::string(elem_type_name(o.type)) + " elements";
      return false;
    }
    if (bytes / elem > size_t(std::numeric_limits<int>::max())) {
      error = "--tensors: a tensor of " + std::to_string(bytes) +
              " bytes has more elements than an MPI count can hold";
      return false;
    }
  }
  return true;
}

std::optional<Location> location_letter(std::string_view s) {
  if (s == "D") return Location::kDevice;
  if (s == "H") return Location::kHost;
  return std::nullopt;
}

// Reads up to two D/H letters starting at argv[i]; returns how many it consumed.
int parse_letters(int argc, char** argv, int i, std::vector<Location>& out) {
  int used = 0;
  while (i + used < argc && out.size() < 2) {
    auto loc = location_letter(argv[i + used]);
    if (!loc) break;
    out.push_back(*loc);
    ++used;
  }
  return used;
}

// Applies "-d cuda|host" and the letters that followed it or ended the command line.
bool apply_locations(std::optional<std::string_view> device, const std::vector<Location>& letters,
                     const ProgramTraits& traits, Options& o, std::string& error) {
  bool cuda = device == "cuda";
  if (device && !cuda && device != "host") {
    error = "-d takes cuda or host";
    return false;
  }
  if (!letters.empty() && !traits.point_to_point) {
    error = "per-rank buffer letters (D/H) are for point-to-point tests";
    return false;
  }
  if (letters.empty()) {
    o.location.fill(cuda ? Location::kDevice : Location::kHost);
    return true;
  }
  if (letters.size() != 2) {
    error = "give two buffer letters, one per rank (e.g. D H)";
    return false;
  }
  bool wants_device = letters[0] == Location::kDevice || letters[1] == Location::kDevice;
  if (wants_device && !cuda) {
    error = "device buffers (D) need -d cuda";
    return false;
  }
  o.location = {letters[0], letters[1]};
  return true;
}

}  // namespace

int Options::iterations_for(size_t bytes) const {
  if (iterations) return *iterations;
  return bytes > kLargeMessage ? kIterationsLarge : kIterationsSmall;
}

int Options::warmup_for(size_t bytes) const {
  if (warmup) return *warmup;
  return bytes > kLargeMessage ? kWarmupLarge : kWarmupSmall;
}

size_t Options::total_tensor_bytes() const {
  size_t total = 0;
  for (size_t b : tensors) total += b;
  return total;
}

std::vector<size_t> Options::sizes() const {
  if (!tensors.empty()) return {total_tensor_bytes()};
  std::vector<size_t> out;
  size_t elem = elem_type_size(type);
  for (size_t s = std::bit_ceil(std::max(min_size, elem)); s && s <= max_size; s *= 2)
    out.push_back(s);
  return out;
}

size_t Options::largest_size() const {
  std::vector<size_t> all = sizes();
  return all.empty() ? 0 : all.back();
}

bool Options::any_device() const {
  return location[0] == Location::kDevice || location[1] == Location::kDevice;
}

std::optional<Options> parse_options(int argc, char** argv, const ProgramTraits& traits,
                                     std::string& error) {
  Options o;
  o.max_size = traits.default_max_size;
  o.tensors = traits.default_tensors;
  o.type = traits.default_type;
  bool tensors = !traits.default_tensors.empty();
  std::optional<std::string_view> device;
  std::vector<Location> letters;
  auto bad = [&](const char* why) -> std::optional<Options> {
    error = why;
    return std::nullopt;
  };
  auto value = [&](int& i) -> std::optional<std::string_view> {
    if (i + 1 >= argc) return std::nullopt;
    return std::string_view(argv[++i]);
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> v;
    if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "-c" || arg == "--validation") {
      o.validate = true;
    } else if ((arg == "-m" || arg == "--message-size") && !tensors) {
      if (!(v = value(i)) || !parse_sizes(*v, o)) return bad("-m takes [min:]max in bytes");
    } else if (arg == "-i" || arg == "--iterations") {
      if (!(v = value(i)) || !(o.iterations = parse_number<int>(*v)) || *o.iterations < 1)
        return bad("-i takes a positive count");
    } else if (arg == "-x" || arg == "--warmup") {
      if (!(v = value(i)) || !(o.warmup = parse_number<int>(*v)) || *o.warmup < 0)
        return bad("-x takes a count");
    } else if ((arg == "-W" || arg == "--window-size") && traits.window) {
      std::optional<int> w;
      if (!(v = value(i)) || !(w = parse_number<int>(*v)) || *w < 1)
        return bad("-W takes a positive count");
      o.window = *w;
    } else if (arg == "-d" || arg == "--accelerator") {
      if (!(device = value(i))) return bad("-d takes cuda or host");
      i += parse_letters(argc, argv, i + 1, letters);
    } else if (arg == "-T" || arg == "--type") {
      std::optional<ElemType> t;
      if (!(v = value(i)) || !(t = elem_type_from_name(*v)))
        return bad("-T takes float, double, bf16, fp16, fp8e4m3 or fp8e5m2");
      o.type = *t;
    } else if (arg == "--data") {
      std::optional<DataKind> k;
      if (!(v = value(i)) || !(k = data_kind_from_name(*v)))
        return bad("--data takes constant, uniform, normal, real or bits");
      o.data = *k;
    } else if (arg == "--uneven" && traits.uneven_counts) {
      o.uneven = true;
    } else if (arg == "--tensors" && tensors) {
      if (!(v = value(i)) || !parse_tensor_list(*v, o.tensors))
        return bad("--tensors takes a list of sizes in bytes, K, M or G, e.g. 214M,107M,32M,16M");
    } else if (arg == "--bcast" && tensors) {
      o.broadcast = true;
    } else if (location_letter(arg) && traits.point_to_point && letters.empty()) {
      i += parse_letters(argc, argv, i, letters) - 1;  // OSU's trailing "D H"
    } else {
      error = "unknown option " + std::string(arg);
      return std::nullopt;
    }
  }
  if (!apply_locations(device, letters, traits, o, error)) return std::nullopt;
  if (!o.iterations) o.iterations = traits.default_iterations;
  if (!o.warmup) o.warmup = traits.default_warmup;
  if (traits.always_validates) {
    o.check_every_step = o.validate;
    o.validate = true;
  }
  if (tensors) return check_tensors(o, error) ? std::optional<Options>(o) : std::nullopt;
  // MPI counts are int.
  if (o.largest_size() / elem_type_size(o.type) > size_t(std::numeric_limits<int>::max()))
    return bad("-m: the largest message has more elements than an MPI count can hold");
  return o;
}

std::string usage(const char* program, const ProgramTraits& traits) {
  bool tensors = !traits.default_tensors.empty();
  std::string u = std::string("usage: ") + program + " [options]" +
                  (traits.point_to_point ? " [D|H D|H]" : "") + "\n";
  if (tensors) {
    std::string list;
    for (size_t b : traits.default_tensors) list += (list.empty() ? "" : ",") + format_bytes(b);
    u += "  --tensors LIST    tensors sent per step, bytes with K, M or G (default " + list + ")\n";
    u += "  --bcast           each tensor as an MPI_Bcast from rank 0 (default: MPI_Isend/MPI_Irecv)\n";
  } else {
    u += "  -m [min:]max      message sizes in bytes, powers of two (default 1:" +
         std::to_string(traits.default_max_size) + ")\n";
  }
  u += traits.default_iterations
           ? "  -i N              timed iterations (default " +
                 std::to_string(*traits.default_iterations) + ")\n"
           : "  -i N              timed iterations per size (default 1000, 100 above 8 KiB)\n";
  u += traits.default_warmup
           ? "  -x N              warm-up iterations (default " +
                 std::to_string(*traits.default_warmup) + ")\n"
           : "  -x N              warm-up iterations per size (default 200, 10 above 8 KiB)\n";
  u += traits.always_validates
           ? "  -c                check every iteration bit-exactly (default: the first and last)\n"
           : "  -c                check the received data bit-exactly\n";
  u += "  -d cuda|host      buffer location";
  u += traits.point_to_point ? "; \"-d cuda D H\" sets rank 0 and rank 1 apart\n" : "\n";
  if (traits.window) u += "  -W N              window size (default 64)\n";
  u += "  -T TYPE           float|double|bf16|fp16|fp8e4m3|fp8e5m2|char|byte, OSU's mpi_ prefix "
       "accepted (default " +
       std::string(elem_type_name(traits.default_type)) +
       ")\n"
       "  --data KIND       constant|uniform|normal|real|bits (default uniform)\n";
  if (traits.uneven_counts)
    u += "  --uneven          rank r's block size*(r+1)/P bytes in whole elements, rank 1's none\n"
         "                    when P > 2; blocks in reverse rank order, one element apart\n";
  u += "  -h                this help\n";
  return u;
}

std::optional<size_t> parse_bytes(std::string_view s) {
  unsigned shift = 0;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k':
        shift = 10;
        break;
      case 'M':
      case 'm':
        shift = 20;
        break;
      case 'G':
      case 'g':
        shift = 30;
        break;
      default:
        break;
    }
    if (shift) s.remove_suffix(1);
  }
  auto n = parse_number<size_t>(s);
  if (!n || *n > (std::numeric_limits<size_t>::max() >> shift)) return std::nullopt;
  return *n << shift;
}

std::string format_bytes(size_t bytes) {
  static const struct {
    unsigned shift;
    char suffix;
  } units[] = {{30, 'G'}, {20, 'M'}, {10, 'K'}};
  for (const auto& u : units)
    if (bytes && bytes % (size_t(1) << u.shift) == 0)
      return std::to_string(bytes >> u.shift) + u.suffix;
  return std::to_string(bytes);
}

}  // namespace osub
