// Profile texts and error helpers shared by the profile tests (test_profile*.cpp).
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include "core/input_error.h"
#include "sim/profile.h"
#include "tests/test_paths.h"

using isim::InputError;
using isim::sim::Curve1D;
using isim::sim::ForwardForm;
using isim::sim::Grid2D;
using isim::sim::load_profile;
using isim::sim::parse_profile;
using isim::sim::Profile;
using isim::sim::write_profile;

namespace isim::test::profile_text {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string tables_text() {
  return slurp(isim::test::data_dir() + "/profile-tables-small.yaml");
}
inline std::string linear_text() {
  return slurp(isim::test::data_dir() + "/profile-linear-small.yaml");
}
inline std::string shipped_path() {
  return isim::test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// Replaces the one occurrence of `from` in `text`.
inline std::string edit(std::string text, std::string_view from, std::string_view to) {
  const auto pos = text.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, "not found: ", from);
  REQUIRE_MESSAGE(text.find(from, pos + 1) == std::string::npos, "not unique: ", from);
  text.replace(pos, from.size(), to);
  return text;
}

// "t.yaml:N: " for the 1-based line holding the one occurrence of `needle`.
inline std::string at(const std::string& text, std::string_view needle) {
  const auto pos = text.find(needle);
  REQUIRE_MESSAGE(pos != std::string::npos, "not found: ", needle);
  REQUIRE_MESSAGE(text.find(needle, pos + 1) == std::string::npos, "not unique: ", needle);
  int line = 1;
  for (std::size_t i = 0; i < pos; ++i) line += text[i] == '\n' ? 1 : 0;
  return fmt::format("t.yaml:{}: ", line);
}

inline std::string error_of(const std::string& text) {
  try {
    (void)parse_profile(text, "t.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

inline void expect_error(const std::string& text, const std::string& prefix) {
  const std::string msg = error_of(text);
  CHECK(msg.substr(0, prefix.size()) == prefix);
}

inline std::string to_text(const Profile& p) {
  std::ostringstream os;
  write_profile(os, p);
  return os.str();
}

}  // namespace isim::test::profile_text
