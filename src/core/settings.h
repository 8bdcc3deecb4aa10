// Settings: the typed values of the MPIZIP_* environment variables of settings.def, parsed once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mpizip::core {

enum class SettingType { Bool, Size, Int, Double, Enum };

namespace setting_detail {
template <SettingType> struct Value;
template <> struct Value<SettingType::Bool> { using T = bool; };
template <> struct Value<SettingType::Size> { using T = uint64_t; };
template <> struct Value<SettingType::Int> { using T = int64_t; };
template <> struct Value<SettingType::Double> { using T = double; };
template <> struct Value<SettingType::Enum> { using T = int; };  // index into the choices
}  // namespace setting_detail

struct Settings {
#define MPIZIP_SETTING(field, kind, env, def, choices, help) \
  setting_detail::Value<SettingType::kind>::T field;
#include "src/core/settings.def"
#undef MPIZIP_SETTING
};

// MPIZIP_FAULT's choices, in settings.def's order.
enum FaultSetting {
  kFaultNone = 0,
  kFaultTmaFail,
  kFaultTmaSilent,
  kFaultSend,
  kFaultUcxStart,
  kFaultAllreduce,
  kFaultScratch
};

// The process's settings, parsed from the environment on first use (thread-safe). An invalid value
// logs one warning naming the variable and the accepted values, and the default is used; a value
// outside the setting's range (MPIZIP_RANGE in settings.def) logs one warning naming the variable,
// the value and the nearest value in range, which is used.
const Settings& settings();

// One setting, described for mpizip-info and the tests.
struct SettingInfo {
  const char* env;
  const char* type;
  const char* default_value;
  const char* choices;
  const char* help;
  std::string current;  // the value in effect, as text
  bool from_env;        // the variable is set (validly) in the environment
  std::string range;    // the values accepted (MPIZIP_RANGE), as text; empty: any of the type
  bool agreed;          // must be the same on every rank of a communicator (MPIZIP_AGREED)
  const char* hint;     // the MPI_Info key that overrides it on one communicator (MPIZIP_HINT), or ""
};
std::vector<SettingInfo> describe_settings();

// Parses settings through `getenv_fn` (the environment, or a map in tests); each problem is
// appended to `warnings` as the one line that settings() logs.
using GetEnv = std::function<const char*(const char*)>;
Settings parse_settings(const GetEnv& getenv_fn, std::vector<std::string>* warnings);

// The settings that must be the same on every rank of a communicator (MPIZIP_AGREED in
// settings.def), in declaration order, with their values in `s`: `bits` the value as 64 bits
// (enums: the choice's index, doubles: their representation), `text` as mpizip-info shows it.
struct AgreedValue {
  const char* env;
  SettingType type;
  const char* choices;
  uint64_t bits;
  std::string text;
};
std::vector<AgreedValue> agreed_values(const Settings& s);
// A value of a setting of `type` (and `choices`) given as AgreedValue::bits, as text.
std::string setting_text(SettingType type, const char* choices, uint64_t bits);

// The per-communicator hints (MPIZIP_HINT in settings.def), in declaration order: each one's
// MPI_Info key and the setting it overrides.
struct HintDecl {
  const char* key;  // "mpizip_compress", ...
  const char* env;  // the setting's variable
  bool agreed;      // the setting must be the same on every rank of a communicator
};
const std::vector<HintDecl>& hint_decls();
// Parses `text` as a value of hint `k` (the type, choices and range of its setting) into the
// setting's field of `*s`. False, with the one line to log in `*why`, when `text` is not a value of
// the setting (`*s` unchanged); a value outside the setting's range is moved into it (clamped, then
// rounded, as for the variable) with the line in `*why` and true.
bool parse_hint(size_t k, const char* text, Settings* s, std::string* why);
// Hint `k`'s value in `s` as MPI_Comm_get_info returns it (a bool as "true" or "false").
std::string hint_text(size_t k, const Settings& s);
// Hint `k`'s setting in `s`, as 64 bits as agreed_values() gives them.
uint64_t hint_bits(size_t k, const Settings& s);
// Copies hint `k`'s setting from `from` to `*to`.
void copy_hint(size_t k, const Settings& from, Settings* to);

// Parsers, exposed for tests. Return false on a value they do not accept.
bool parse_bool(const char* text, bool* out);
bool parse_size(const char* text, uint64_t* out);
bool parse_int(const char* text, int64_t* out);
bool parse_double(const char* text, double* out);  // finite values only
bool parse_enum(const char* text, const char* choices, int* out);

}  // namespace mpizip::core
