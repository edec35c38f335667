// core/yaml_depth.h and its use in core/strict_yaml.cpp: text nested past kMaxYamlNesting
// levels is refused by name, with the line, before yaml-cpp sees it (issue 36: 100,000 nested
// lists in a spec said "<yaml>: bad file").
#include <doctest/doctest.h>

#include <string>

#include "core/input_error.h"
#include "core/strict_yaml.h"
#include "core/yaml_depth.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"

namespace {

const char* kTooDeep =
    "<yaml>: nested more than 100 levels deep (lists or maps inside each other); expected at "
    "most 100 levels";

// `levels` block lists, each indented two columns under the last: "-\n  -\n    -\n...".
std::string block_lists(int levels) {
  std::string t;
  for (int i = 0; i < levels; ++i) t += std::string(static_cast<size_t>(2 * i), ' ') + "-\n";
  return t;
}

}  // namespace

TEST_CASE("yaml depth: 100,000 nested flow lists in a spec name the file, line and the depth") {
  const auto p = isim::test::scratch("yaml-depth") / "deep.yaml";
  isim::test::write_file(
      p, "seed: 1\npolicies: " + std::string(100000, '[') + std::string(100000, ']') + "\n");
  // Line 2 holds the brackets: the 101st '[' is where the nesting passes 100.
  CHECK(isim::test::error_of_call([&] { isim::load_yaml_file(p.string(), "experiment file"); }) ==
        p.string() + ":2: " + kTooDeep);
  CHECK(isim::test::error_of_call([] {
          isim::parse_yaml_value(std::string(1000, '[') + std::string(1000, ']'), "-p x=...");
        }) == std::string("-p x=...: ") + kTooDeep);
}

TEST_CASE("yaml depth: block nesting counts one level per indented '-'") {
  // Line k opens level k: 100 levels pass, the 101st line is refused.
  CHECK(isim::yaml_too_deep_line(block_lists(100)) == 0);
  CHECK(isim::yaml_too_deep_line(block_lists(101)) == 101);
  // Compact "- - - x": each '-' a level, then the scalar: 99 dashes and x are 100 levels.
  std::string compact;
  for (int i = 0; i < 99; ++i) compact += "- ";
  CHECK(isim::yaml_too_deep_line(compact + "x\n") == 0);
  CHECK(isim::yaml_too_deep_line("- " + compact + "x\n") == 1);
}

TEST_CASE("yaml depth: brackets in quotes, comments and block scalars are text") {
  const std::string brackets(200, '[');
  CHECK(isim::yaml_too_deep_line("a: \"" + brackets + "\"\n") == 0);
  CHECK(isim::yaml_too_deep_line("a: '" + brackets + "'\n") == 0);
  CHECK(isim::yaml_too_deep_line("a: 1  # " + brackets + "\n") == 0);
  CHECK(isim::yaml_too_deep_line("a: |\n  " + brackets + "\nb: 2\n") == 0);
  // Siblings at one indentation do not add up: 150 keys side by side are 1 level.
  std::string flat;
  for (int i = 0; i < 150; ++i) flat += "k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  CHECK(isim::yaml_too_deep_line(flat) == 0);
  CHECK(isim::yaml_too_deep_line(flat + "z: " + brackets + "\n") == 151);
}
