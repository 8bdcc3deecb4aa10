// Settings: parsing of every type, defaults, and the warning for bad values.
#include "src/core/settings.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mpizip::core
