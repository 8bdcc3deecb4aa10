#include "src/core/settings.h"

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "src/platform/log.h"

namespace mpizip::core {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

const char* type_name(SettingType t) {
  switch (t) {
    case SettingType::Bool: return "bool";
    case SettingType::Size: return "size";
    case SettingType::Int: return "int";
    case SettingType::Double: return "double";
    case SettingType::Enum: return "enum";
  }
  return "?";
}

const char* accepted(SettingType t, const char* choices) {
  switch (t) {
    case SettingType::Bool: return "0|1|yes|no|true|false|on|off";
    case SettingType::Size: return "a byte count with optional K, M or G suffix";
    case SettingType::Int: return "an integer";
    case SettingType::Double: return "a decimal number";
    case SettingType::Enum: return choices;
  }
  return "?";
}

bool parse(SettingType t, const char* text, const char* choices, bool* b, uint64_t* s, int64_t* i,
           double* d, int* e) {
  switch (t) {
    case SettingType::Bool: return parse_bool(text, b);
    case SettingType::Size: return parse_size(text, s);
    case SettingType::Int: return parse_int(text, i);
    case SettingType::Double: return parse_double(text, d);
    case SettingType::Enum: return parse_enum(text, choices, e);
  }
  return false;
}

// Stores a parsed value into a field of the matching type.
template <typename T>
void assign(T* field, bool b, uint64_t s, int64_t i, double d, int e) {
  if constexpr (std::is_same_v<T, bool>) *field = b;
  else if constexpr (std::is_same_v<T, uint64_t>) *field = s;
  else if constexpr (std::is_same_v<T, int64_t>) *field = i;
  else if constexpr (std::is_same_v<T, double>) *field = d;
  else *field = e;
}

template <typename T>
std::string to_text(T v, const char* choices) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "1" : "0";
  } else if constexpr (std::is_same_v<T, int>) {
    std::string_view rest(choices);
    for (int k = 0; k < v; ++k) rest.remove_prefix(rest.find('|') + 1);
    return std::string(rest.substr(0, rest.find('|')));
  } else if constexpr (std::is_same_v<T, double>) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
  } else {
    return std::to_string(v);
  }
}

// Parses one setting: the environment value if valid, otherwise the default (with a warning).
template <typename T>
void parse_one(const GetEnv& getenv_fn, SettingType type, const char* env, const char* def,
               const char* choices, T* field, bool* from_env, std::vector<std::string>* warnings) {
  bool b = false;
  uint64_t s = 0;
  int64_t i = 0;
  double d = 0;
  int e = 0;
  const char* text = getenv_fn(env);
  *from_env = false;
  if (text != nullptr && parse(type, text, choices, &b, &s, &i, &d, &e)) {
    *from_env = true;
  } else {
    if (text != nullptr && warnings != nullptr) {
      warnings->push_back(std::string(env) + "='" + text + "' is not valid (accepted: " +
                          accepted(type, choices) + "); using the default '" + def + "'");
    }
    parse(type, def, choices, &b, &s, &i, &d, &e);
  }
  assign(field, b, s, i, d, e);
}

// Each setting's variable, type and choices by field name, for the companion macros of
// settings.def (which name the field only).
struct Declared {
#define MPIZIP_SETTING(field, kind, env, def, choices, help)       \
  static constexpr const char* env_##field = env;                  \
  static constexpr SettingType type_##field = SettingType::kind;   \
  static constexpr const char* choices_##field = choices;
#include "src/core/settings.def"
#undef MPIZIP_SETTING
};

// A bound of a range, written as a value of the setting's type ("" for none).
template <typename T>
bool range_bound(SettingType type, const char* text, T* out) {
  if (*text == '\0') return false;
  bool b = false;
  uint64_t s = 0;
  int64_t i = 0;
  double d = 0;
  int e = 0;
  if (!parse(type, text, "", &b, &s, &i, &d, &e)) return false;  // settings_test checks them all
  if constexpr (std::is_same_v<T, uint64_t>) *out = s;
  else if constexpr (std::is_same_v<T, int64_t>) *out = i;
  else if constexpr (std::is_same_v<T, double>) *out = d;
  else return false;
  return true;
}

// The range as text: "1K..64K, a multiple of 16", "at least 0.001", "a multiple of 64".
std::string range_text(const char* least, const char* most, const char* multiple) {
  std::string t;
  if (*least && *most) t = std::string(least) + ".." + most;
  else if (*least) t = std::string("at least ") + least;
  else if (*most) t = std::string("at most ") + most;
  if (*multiple) t += (t.empty() ? "" : ", ") + std::string("a multiple of ") + multiple;
  return t;
}

// Moves `*v` into the range (clamped, then rounded down to the multiple, or up where rounding down
// leaves the range), with one warning when it changes a value the environment gave.
template <typename T>
void check_range(const GetEnv& getenv_fn, SettingType type, const char* env, const char* least,
                 const char* most, const char* multiple, T* v, std::vector<std::string>* warnings) {
  if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t> ||
                std::is_same_v<T, double>) {
    const T was = *v;
    T lo{}, hi{}, m{};
    const bool has_lo = range_bound(type, least, &lo);
    const bool has_hi = range_bound(type, most, &hi);
    if (has_lo && *v < lo) *v = lo;
    if (has_hi && *v > hi) *v = hi;
    if constexpr (!std::is_same_v<T, double>) {
      if (range_bound(type, multiple, &m) && m > 0 && *v % m != 0) {
        T down = *v / m * m;
        if (*v < 0 && down > *v) down -= m;
        *v = has_lo && down < lo ? down + m : down;
      }
    }
    if (*v != was && warnings != nullptr) {
      const char* text = getenv_fn(env);
      warnings->push_back(std::string(env) + "=" + (text ? text : to_text(was, "")) +
                          " is out of range (" + range_text(least, most, multiple) + "); using " +
                          to_text(*v, ""));
    }
  }
}

struct Parsed {
  Settings values;
  std::vector<bool> from_env;
};

Parsed parse_all(const GetEnv& getenv_fn, std::vector<std::string>* warnings) {
  Parsed p{};
#define MPIZIP_SETTING(field, kind, env, def, choices, help)                                  \
  {                                                                                         \
    bool from_env = false;                                                                  \
    parse_one(getenv_fn, SettingType::kind, env, def, choices, &p.values.field, &from_env,  \
              warnings);                                                                    \
    p.from_env.push_back(from_env);                                                         \
  }
#define MPIZIP_RANGE(field, least, most, multiple)                                          \
  check_range(getenv_fn, Declared::type_##field, Declared::env_##field, least, most, multiple, \
              &p.values.field, warnings);
#include "src/core/settings.def"
#undef MPIZIP_RANGE
#undef MPIZIP_SETTING
  return p;
}

const Parsed& process_settings() {
  static std::once_flag once;
  static Parsed parsed;
  std::call_once(once, [] {
    std::vector<std::string> warnings;
    parsed = parse_all([](const char* name) { return std::getenv(name); }, &warnings);
    for (const auto& w : warnings) MPIZIP_WARN("%s", w.c_str());
  });
  return parsed;
}

}  // namespace

bool parse_bool(const char* text, bool* out) {
  for (const char* t : {"1", "yes", "true", "on"}) {
    if (iequals(text, t)) return *out = true, true;
  }
  for (const char* f : {"0", "no", "false", "off"}) {
    if (iequals(text, f)) return *out = false, true;
  }
  return false;
}

bool parse_int(const char* text, int64_t* out) {
  if (*text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

// std::from_chars rather than strtod: the application's locale must not change what "12.5" means.
bool parse_double(const char* text, double* out) {
  const char* end = text + std::strlen(text);
  double v = 0;
  auto [stop, error] = std::from_chars(text, end, v);
  if (error != std::errc() || stop != end || stop == text || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_size(const char* text, uint64_t* out) {
  if (*text < '0' || *text > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0) return false;
  int shift = 0;
  if (*end != '\0') {
    switch (*end) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: return false;
    }
    ++end;
    if (*end == 'b' || *end == 'B') ++end;
    if (*end != '\0') return false;
  }
  if (shift != 0 && v > (UINT64_MAX >> shift)) return false;
  *out = static_cast<uint64_t>(v) << shift;
  return true;
}

bool parse_enum(const char* text, const char* choices, int* out) {
  std::string_view rest(choices);
  for (int k = 0; !rest.empty(); ++k) {
    size_t bar = rest.find('|');
    if (iequals(text, rest.substr(0, bar))) return *out = k, true;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return false;
}

Settings parse_settings(const GetEnv& getenv_fn, std::vector<std::string>* warnings) {
  return parse_all(getenv_fn, warnings).values;
}

const Settings& settings() {
  static const Settings& values = process_settings().values;  // one guard test per call
  return values;
}

std::vector<SettingInfo> describe_settings() {
  const Parsed& p = process_settings();
  std::vector<SettingInfo> out;
  size_t k = 0;
  auto find = [&out](const char* env) -> SettingInfo& {
    for (auto& s : out)
      if (std::strcmp(s.env, env) == 0) return s;
    return out.back();  // unreachable: every companion names a declared field
  };
#define MPIZIP_SETTING(field, kind, env, def, choices, help)                              \
  out.push_back(SettingInfo{env, type_name(SettingType::kind), def, choices, help,         \
                            to_text(p.values.field, choices), p.from_env[k++], "", false, ""});
#define MPIZIP_RANGE(field, least, most, multiple) \
  find(Declared::env_##field).range = range_text(least, most, multiple);
#define MPIZIP_AGREED(field) find(Declared::env_##field).agreed = true;
#define MPIZIP_HINT(field, key) find(Declared::env_##field).hint = key;
#include "src/core/settings.def"
#undef MPIZIP_HINT
#undef MPIZIP_AGREED
#undef MPIZIP_RANGE
#undef MPIZIP_SETTING
  return out;
}

std::vector<AgreedValue> agreed_values(const Settings& s) {
  std::vector<AgreedValue> out;
  auto add = [&out](const char* env, SettingType type, auto v, const char* choices) {
    uint64_t bits = 0;
    if constexpr (std::is_same_v<decltype(v), double>) std::memcpy(&bits, &v, sizeof bits);
    else bits = static_cast<uint64_t>(v);
    out.push_back(AgreedValue{env, type, choices, bits, to_text(v, choices)});
  };
#define MPIZIP_SETTING(field, kind, env, def, choices, help)
#define MPIZIP_AGREED(field) \
  add(Declared::env_##field, Declared::type_##field, s.field, Declared::choices_##field);
#include "src/core/settings.def"
#undef MPIZIP_AGREED
#undef MPIZIP_SETTING
  return out;
}

namespace {

// Calls fn(&field, type, choices) with hint `k`'s field of `*s`.
template <typename S, typename Fn>
void with_hint_field(size_t k, S* s, Fn&& fn) {
  size_t i = 0;
#define MPIZIP_SETTING(field, kind, env, def, choices, help)
#define MPIZIP_HINT(field, key)                                                          \
  if (i++ == k) {                                                                        \
    fn(&s->field, Declared::type_##field, Declared::choices_##field);                   \
    return;                                                                              \
  }
#include "src/core/settings.def"
#undef MPIZIP_HINT
#undef MPIZIP_SETTING
}

}  // namespace

const std::vector<HintDecl>& hint_decls() {
  static const std::vector<HintDecl> decls = [] {
    std::vector<HintDecl> out;
#define MPIZIP_SETTING(field, kind, env, def, choices, help)
#define MPIZIP_HINT(field, key) out.push_back(HintDecl{key, Declared::env_##field, false});
#include "src/core/settings.def"
#undef MPIZIP_HINT
    for (auto& d : out) {
#define MPIZIP_AGREED(field) \
  if (std::strcmp(d.env, Declared::env_##field) == 0) d.agreed = true;
#include "src/core/settings.def"
#undef MPIZIP_AGREED
    }
#undef MPIZIP_SETTING
    return out;
  }();
  return decls;
}

bool parse_hint(size_t k, const char* text, Settings* s, std::string* why) {
  if (k >= hint_decls().size()) return false;
  const char* key = hint_decls()[k].key;
  bool valid = false;
  const void* target = nullptr;
  with_hint_field(k, s, [&](auto* field, SettingType type, const char* choices) {
    bool b = false;
    uint64_t sz = 0;
    int64_t i = 0;
    double d = 0;
    int e = 0;
    valid = parse(type, text, choices, &b, &sz, &i, &d, &e);
    if (valid) assign(field, b, sz, i, d, e);
    else *why = std::string(key) + "='" + text + "' is not valid (accepted: " +
                accepted(type, choices) + ")";
    target = field;
  });
  if (!valid) return false;
  // The setting's range, as for its variable.
  std::vector<std::string> warnings;
  const GetEnv given = [text](const char*) { return text; };
#define MPIZIP_SETTING(field, kind, env, def, choices, help)
#define MPIZIP_RANGE(field, least, most, multiple)                                          \
  if (static_cast<const void*>(&s->field) == target)                                        \
    check_range(given, Declared::type_##field, key, least, most, multiple, &s->field, &warnings);
#include "src/core/settings.def"
#undef MPIZIP_RANGE
#undef MPIZIP_SETTING
  if (!warnings.empty()) *why = warnings.front();
  return true;
}

std::string hint_text(size_t k, const Settings& s) {
  std::string out;
  with_hint_field(k, &s, [&out](const auto* field, SettingType, const char* choices) {
    if constexpr (std::is_same_v<std::decay_t<decltype(*field)>, bool>) {
      out = *field ? "true" : "false";
    } else {
      out = to_text(*field, choices);
    }
  });
  return out;
}

uint64_t hint_bits(size_t k, const Settings& s) {
  uint64_t bits = 0;
  with_hint_field(k, &s, [&bits](const auto* field, SettingType, const char*) {
    const auto v = *field;
    if constexpr (std::is_same_v<decltype(v), const double>) std::memcpy(&bits, &v, sizeof bits);
    else bits = static_cast<uint64_t>(v);
  });
  return bits;
}

void copy_hint(size_t k, const Settings& from, Settings* to) {
  size_t i = 0;
#define MPIZIP_SETTING(field, kind, env, def, choices, help)
#define MPIZIP_HINT(field, key)  \
  if (i++ == k) {                \
    to->field = from.field;      \
    return;                      \
  }
#include "src/core/settings.def"
#undef MPIZIP_HINT
#undef MPIZIP_SETTING
}

std::string setting_text(SettingType type, const char* choices, uint64_t bits) {
  switch (type) {
    case SettingType::Bool: return to_text(bits != 0, choices);
    case SettingType::Size: return to_text(bits, choices);
    case SettingType::Int: return to_text(static_cast<int64_t>(bits), choices);
    case SettingType::Double: {
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      return to_text(d, choices);
    }
    case SettingType::Enum: {
      int n = 1;
      for (const char* c = choices; *c; ++c) n += *c == '|';
      return bits < static_cast<uint64_t>(n) ? to_text(static_cast<int>(bits), choices) : "?";
    }
  }
  return "?";
}

}  // namespace mpizip::core
