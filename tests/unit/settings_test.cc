// Settings: parsing of every type, defaults, and the warning for bad values.
#include "src/core/settings.h"

#include <gtest/gtest.h>

#include "src/core/agreement.h"

#include <map>
#include <string>

namespace mpizip::core {
namespace {

GetEnv env_of(const std::map<std::string, std::string>& m) {
  return [&m](const char* name) -> const char* {
    auto it = m.find(name);
    return it == m.end() ? nullptr : it->second.c_str();
  };
}

TEST(Settings, DefaultsWhenUnset) {
  std::map<std::string, std::string> env;
  std::vector<std::string> warnings;
  Settings s = parse_settings(env_of(env), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(s.enable);
  EXPECT_FALSE(s.stats);
  EXPECT_EQ(s.log, 1);  // warn
}

TEST(Settings, ValidValues) {
  std::map<std::string, std::string> env{
      {"MPIZIP_ENABLE", "off"}, {"MPIZIP_STATS", "YES"}, {"MPIZIP_LOG", "Debug"}};
  std::vector<std::string> warnings;
  Settings s = parse_settings(env_of(env), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_FALSE(s.enable);
  EXPECT_TRUE(s.stats);
  EXPECT_EQ(s.log, 3);
}

TEST(Settings, InvalidValueWarnsOnceAndUsesDefault) {
  std::map<std::string, std::string> env{{"MPIZIP_LOG", "loud"}, {"MPIZIP_STATS", "2"}};
  std::vector<std::string> warnings;
  Settings s = parse_settings(env_of(env), &warnings);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "MPIZIP_LOG='loud' is not valid (accepted: error|warn|info|debug); using the default "
            "'warn'");
  EXPECT_NE(warnings[1].find("MPIZIP_STATS='2'"), std::string::npos);
  EXPECT_EQ(s.log, 1);
  EXPECT_FALSE(s.stats);
}

TEST(Settings, SizeParser) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_size("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parse_size("64K", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(parse_size("3mb", &v));
  EXPECT_EQ(v, 3u << 20);
  EXPECT_TRUE(parse_size("2G", &v));
  EXPECT_EQ(v, 2ull << 30);
  EXPECT_FALSE(parse_size("", &v));
  EXPECT_FALSE(parse_size("-1", &v));
  EXPECT_FALSE(parse_size("12Q", &v));
  EXPECT_FALSE(parse_size("1Kx", &v));
  EXPECT_FALSE(parse_size("99999999999999999999", &v));
  EXPECT_FALSE(parse_size("17179869184G", &v));  // overflows 64 bits
}

TEST(Settings, IntBoolEnumParsers) {
  int64_t i = 0;
  EXPECT_TRUE(parse_int("-42", &i));
  EXPECT_EQ(i, -42);
  EXPECT_FALSE(parse_int("4x", &i));
  EXPECT_FALSE(parse_int("", &i));
  bool b = false;
  EXPECT_TRUE(parse_bool("TRUE", &b));
  EXPECT_TRUE(b);
  EXPECT_TRUE(parse_bool("0", &b));
  EXPECT_FALSE(b);
  EXPECT_FALSE(parse_bool("2", &b));
  int e = -1;
  EXPECT_TRUE(parse_enum("b", "a|b|c", &e));
  EXPECT_EQ(e, 1);
  EXPECT_TRUE(parse_enum("c", "a|b|c", &e));
  EXPECT_EQ(e, 2);
  EXPECT_FALSE(parse_enum("d", "a|b|c", &e));
  EXPECT_FALSE(parse_enum("", "a|b|c", &e));
}

TEST(Settings, DescribeListsEverySettingOnce) {
  auto all = describe_settings();
  ASSERT_GE(all.size(), 3u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(std::string(all[i].env).rfind("MPIZIP_", 0), 0u);
    EXPECT_NE(std::string(all[i].help), "");
    for (size_t j = i + 1; j < all.size(); ++j) EXPECT_STRNE(all[i].env, all[j].env);
  }
}

// Values outside a setting's range (settings.def: MPIZIP_RANGE) warn once, naming the variable,
// the value and the value used: the nearest one in range.
TEST(Settings, OutOfRangeWarnsAndUsesTheNearestValue) {
  std::map<std::string, std::string> env{{"MPIZIP_TMA_CHUNK_BYTES", "1000"},
                                         {"MPIZIP_TMA_MAX_CTAS", "100"},
                                         {"MPIZIP_TMA_STAGES", "1"},
                                         {"MPIZIP_CHUNK_BYTES", "1000"},
                                         {"MPIZIP_EAGER_BYTES", "1M"}};
  std::vector<std::string> warnings;
  Settings s = parse_settings(env_of(env), &warnings);
  EXPECT_EQ(s.tma_chunk_bytes, 1024u);
  EXPECT_EQ(s.tma_max_ctas, 64);
  EXPECT_EQ(s.tma_stages, 2);
  EXPECT_EQ(s.chunk_bytes, 960u);
  EXPECT_EQ(s.eager_bytes, 65536u);
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_EQ(warnings[0], "MPIZIP_EAGER_BYTES=1M is out of range (0..64K); using 65536");
  EXPECT_EQ(warnings[1], "MPIZIP_CHUNK_BYTES=1000 is out of range (a multiple of 64); using 960");
  EXPECT_EQ(warnings[2], "MPIZIP_TMA_MAX_CTAS=100 is out of range (1..64); using 64");
  EXPECT_EQ(warnings[3],
            "MPIZIP_TMA_CHUNK_BYTES=1000 is out of range (1K..64K, a multiple of 16); using 1024");
  EXPECT_EQ(warnings[4], "MPIZIP_TMA_STAGES=1 is out of range (2..32); using 2");
  // In range: no warning; rounding within the range goes down.
  std::map<std::string, std::string> ok{{"MPIZIP_TMA_CHUNK_BYTES", "16K"},
                                        {"MPIZIP_TMA_CTAS", "0"},
                                        {"MPIZIP_TMA_TIMEOUT_MS", "1"}};
  warnings.clear();
  s = parse_settings(env_of(ok), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(s.tma_chunk_bytes, 16384u);
  std::map<std::string, std::string> down{{"MPIZIP_TMA_CHUNK_BYTES", "2001"}};
  s = parse_settings(env_of(down), &warnings);
  EXPECT_EQ(s.tma_chunk_bytes, 2000u);
  ASSERT_EQ(warnings.size(), 1u);
}

// Every default lies in its range, and every range names its bounds in the setting's own syntax.
TEST(Settings, DefaultsAreInRange) {
  std::vector<std::string> warnings;
  std::map<std::string, std::string> env;
  for (const auto& d : describe_settings()) env[d.env] = d.default_value;
  parse_settings(env_of(env), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  int ranged = 0, agreed = 0;
  for (const auto& d : describe_settings()) {
    ranged += !d.range.empty();
    agreed += d.agreed;
  }
  EXPECT_GE(ranged, 6);
  EXPECT_EQ(static_cast<size_t>(agreed), agreed_values(Settings{}).size());
}

// The agreed settings' hash changes with any of their values, and the line names the one setting
// that differs with both values.
TEST(Agreement, HashAndLine) {
  std::map<std::string, std::string> env;
  std::vector<std::string> warnings;
  const Settings a = parse_settings(env_of(env), &warnings);
  env["MPIZIP_TMA_MAX_CTAS"] = "4";
  const Settings b = parse_settings(env_of(env), &warnings);
  env["MPIZIP_LOG"] = "debug";  // not agreed: no change
  env["MPIZIP_STAGING_BYTES"] = "1G";
  const Settings c = parse_settings(env_of(env), &warnings);
  const auto va = agreed_values(a), vb = agreed_values(b), vc = agreed_values(c);
  EXPECT_NE(agreement_hash(va), agreement_hash(vb));
  EXPECT_EQ(agreement_hash(vb), agreement_hash(vc));
  std::vector<std::vector<uint64_t>> all(3);
  for (const auto& v : va) all[0].push_back(v.bits);
  all[2] = all[1] = all[0];
  EXPECT_EQ(disagreement_line(va, all, "MPI_COMM_WORLD"), "");
  for (size_t k = 0; k < vb.size(); ++k) all[2][k] = vb[k].bits;
  EXPECT_EQ(disagreement_line(va, all, "MPI_COMM_WORLD"),
            "MPIZIP_TMA_MAX_CTAS differs across the ranks of MPI_COMM_WORLD (MPIZIP_TMA_MAX_CTAS 8 "
            "on rank 0, 4 on rank 2); MPIZip is off for that communicator: its calls go to the MPI "
            "library");
  std::map<std::string, std::string> e2{{"MPIZIP_ALLREDUCE", "off"}};
  const auto vd = agreed_values(parse_settings(env_of(e2), &warnings));
  for (size_t k = 0; k < vd.size(); ++k) all[1][k] = vd[k].bits;
  EXPECT_EQ(disagreement_line(va, all, "MPI_COMM_WORLD"),
            "MPIZIP_ALLREDUCE, MPIZIP_TMA_MAX_CTAS differ across the ranks of MPI_COMM_WORLD "
            "(MPIZIP_ALLREDUCE auto on rank 0, off on rank 1; MPIZIP_TMA_MAX_CTAS 8 on rank 0, 4 on "
            "rank 2); MPIZip is off for that communicator: its calls go to the MPI library");
}

TEST(Hints, DeclaredWithTheirSettings) {
  const auto& decls = hint_decls();
  ASSERT_EQ(decls.size(), 5u);
  const std::map<std::string, std::pair<std::string, bool>> want{
      {"mpizip_compress", {"MPIZIP_HOST_COMPRESS", false}},
      {"mpizip_min_bytes", {"MPIZIP_MIN_BYTES", false}},
      {"mpizip_emu_gbps", {"MPIZIP_EMU_GBPS", false}},
      {"mpizip_allreduce", {"MPIZIP_ALLREDUCE", true}},
      {"mpizip_tma", {"MPIZIP_TMA", true}}};
  for (const auto& d : decls) {
    auto it = want.find(d.key);
    ASSERT_NE(it, want.end()) << d.key;
    EXPECT_EQ(it->second.first, d.env);
    EXPECT_EQ(it->second.second, d.agreed) << d.key;
  }
  size_t described = 0;
  for (const auto& s : describe_settings()) {
    if (*s.hint == '\0') continue;
    ++described;
    EXPECT_EQ(want.at(s.hint).first, s.env);
  }
  EXPECT_EQ(described, 5u);
}

TEST(Hints, ParseKeepsTheValueInForceOnInvalidInput) {
  std::map<std::string, std::string> env;
  std::vector<std::string> warnings;
  const Settings base = parse_settings(env_of(env), &warnings);
  auto index = [](const char* key) {
    for (size_t k = 0; k < hint_decls().size(); ++k)
      if (std::string(hint_decls()[k].key) == key) return k;
    return hint_decls().size();
  };
  Settings s = base;
  std::string why;
  EXPECT_TRUE(parse_hint(index("mpizip_compress"), "true", &s, &why));
  EXPECT_TRUE(why.empty());
  EXPECT_TRUE(s.host_compress);
  EXPECT_EQ(hint_text(index("mpizip_compress"), s), "true");
  EXPECT_TRUE(parse_hint(index("mpizip_min_bytes"), "64K", &s, &why));
  EXPECT_EQ(s.min_bytes, 65536u);
  EXPECT_EQ(hint_text(index("mpizip_min_bytes"), s), "65536");
  EXPECT_FALSE(parse_hint(index("mpizip_min_bytes"), "abc", &s, &why));
  EXPECT_EQ(why, "mpizip_min_bytes='abc' is not valid (accepted: a byte count with optional K, M "
                 "or G suffix)");
  EXPECT_EQ(s.min_bytes, 65536u);
  why.clear();
  EXPECT_TRUE(parse_hint(index("mpizip_tma"), "off", &s, &why));
  EXPECT_EQ(hint_text(index("mpizip_tma"), s), "off");
  EXPECT_FALSE(parse_hint(index("mpizip_tma"), "maybe", &s, &why));
  EXPECT_EQ(hint_text(index("mpizip_tma"), s), "off");
  EXPECT_TRUE(parse_hint(index("mpizip_allreduce"), "TwoShot", &s, &why));
  EXPECT_EQ(hint_text(index("mpizip_allreduce"), s), "twoshot");
  EXPECT_NE(hint_bits(index("mpizip_allreduce"), s), hint_bits(index("mpizip_allreduce"), base));
  // Back to the process's value, one setting at a time.
  copy_hint(index("mpizip_allreduce"), base, &s);
  EXPECT_EQ(s.allreduce, base.allreduce);
  EXPECT_EQ(s.min_bytes, 65536u);
  EXPECT_FALSE(parse_hint(hint_decls().size(), "1", &s, &why));
}

}  // namespace
}  // namespace mpizip::core
