// The strict YAML reader: every error names the file, the line and the key path.
#include <doctest/doctest.h>

#include "tests/input_error_text.h"

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/input_error.h"
#include "core/strict_yaml.h"

using isim::InputError;
using isim::YamlMap;

namespace {

const std::vector<std::string> kKeys = {"name", "rate", "count", "seed", "on", "sub"};

YamlMap root(const std::string& text) {
  return YamlMap(YAML::Load(text), "f.yaml", "", kKeys);
}

std::string error_of(const std::function<void()>& f) { return isim::test::error_of_call(f); }

std::string write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("strict yaml: typed reads with defaults and required keys") {
  const YamlMap m = root("name: a\nrate: 2.5\ncount: -3\nseed: 7\non: true\n");
  CHECK(m.require<std::string>("name", "a name") == "a");
  CHECK(m.get<double>("rate", 1, "a rate") == 2.5);
  CHECK(m.get<int64_t>("count", 0, "an integer") == -3);
  CHECK(m.get<int32_t>("count", 0, "an integer") == -3);
  CHECK(m.get<uint64_t>("seed", 1, "a seed") == 7);
  CHECK(m.get<bool>("on", false, "true or false"));
  // Absent keys give the default; has() and value() say whether a key is there.
  const YamlMap empty = root("{}");
  CHECK(empty.get<double>("rate", 1.5, "a rate") == 1.5);
  CHECK(empty.get<std::string>("name", "dflt", "a name") == "dflt");
  CHECK_FALSE(empty.has("rate"));
  CHECK_FALSE(empty.value("rate"));
  CHECK(m.has("rate"));
  // Reading never adds a key to the map.
  CHECK(empty.node().size() == 0);
}

TEST_CASE("strict yaml: wrong types name file, line, key and the value") {
  const YamlMap m = root("name: a\nrate: fast\ncount: 1.5\nseed: -1\non: maybe\nsub: [1, 2]\n");
  CHECK(error_of([&] { m.get<double>("rate", 1, "sessions per second"); }) ==
        "f.yaml:2: rate: expected sessions per second, got 'fast'");
  CHECK(error_of([&] { m.get<int64_t>("count", 0, "an integer"); }) ==
        "f.yaml:3: count: expected an integer, got '1.5'");
  CHECK(error_of([&] { m.get<uint64_t>("seed", 0, "a non-negative integer"); }) ==
        "f.yaml:4: seed: expected a non-negative integer, got '-1'");
  CHECK(error_of([&] { m.get<bool>("on", false, "true or false"); }) ==
        "f.yaml:5: on: expected true or false, got 'maybe'");
  CHECK(error_of([&] { m.get<std::string>("sub", "", "a string"); }) ==
        "f.yaml:6: sub: expected a string, got a list");
  const YamlMap n = root("name:\nrate: {a: 1}\ncount: \"3x\"\n");
  CHECK(error_of([&] { n.require<std::string>("name", "a name"); }) ==
        "f.yaml:2: name: expected a name, got nothing (null)");
  CHECK(error_of([&] { n.get<double>("rate", 0, "a number"); }) ==
        "f.yaml:2: rate: expected a number, got a map");
  CHECK(error_of([&] { n.get<int64_t>("count", 0, "an integer"); }) ==
        "f.yaml:3: count: expected an integer, got the quoted string \"3x\"");
}

TEST_CASE("strict yaml: missing required keys are reported at the map that lacks them") {
  const YamlMap m = root("rate: 1\nsub:\n  x: 1\n");
  CHECK(error_of([&] { m.require<std::string>("name", "a name"); }) ==
        "f.yaml:1: name: missing (expected a name)");
  const YamlMap sub = m.map("sub", {"x", "y"});
  CHECK(sub.path() == "sub");
  CHECK(sub.require<int64_t>("x", "an integer") == 1);
  CHECK(error_of([&] { sub.require<double>("y", "a number"); }) ==
        "f.yaml:3: sub.y: missing (expected a number)");
  CHECK(error_of([&] { m.map("count", {"x"}); }) ==
        "f.yaml:1: count: missing (expected a map with keys x)");
  CHECK(error_of([&] { m.map("rate", {"x"}, "{x}"); }) == "f.yaml:1: rate: expected {x}, got '1'");
  // fail() and where() point at the value when the key is there, at the map otherwise.
  CHECK(error_of([&] { sub.fail("x", "must be > 1"); }) == "f.yaml:3: sub.x: must be > 1");
  CHECK(sub.where("y") == "f.yaml:3: sub.y");
  // A node built in code has no line.
  YAML::Node built;
  built["rate"] = 1;
  CHECK(error_of([&] { YamlMap(built, "f.yaml", "", kKeys).require<int64_t>("count", "n"); }) ==
        "f.yaml: count: missing (expected n)");
}

TEST_CASE("strict yaml: unknown, duplicate and non-string keys, and non-maps") {
  CHECK(error_of([] { root("name: a\nrat: 1\n"); }) ==
        "f.yaml:2: rat: unknown key; valid keys: name, rate, count, seed, on, sub");
  CHECK(error_of([] {
          const YamlMap m = root("sub:\n  x: 1\n  z: 2\n");
          m.map("sub", {"x", "y"});
        }) == "f.yaml:3: sub.z: unknown key; valid keys: x, y");
  CHECK(error_of([] { root("rate: 1\nname: a\nrate: 2\n"); }) == "f.yaml:3: rate: duplicate key");
  CHECK(error_of([] { root("[a]: 1\n"); }) ==
        "f.yaml:1: (document): keys must be strings, got a list");
  CHECK(error_of([] { root("- a\n- b\n"); }) == "f.yaml:1: (document): expected a map, got a list");
  CHECK(error_of([] { YamlMap(YAML::Load("5"), "f.yaml", "sub", {"x"}, "{x, y}"); }) ==
        "f.yaml:1: sub: expected {x, y}, got '5'");
  CHECK(error_of([] { isim::check_keys(YAML::Load("a: 1\nb: 2\n"), "f.yaml", "top", {"a"}); }) ==
        "f.yaml:2: top.b: unknown key; valid keys: a");
}

TEST_CASE("strict yaml: text that is not UTF-8 is refused where it is read") {
  // yaml-cpp passed the bytes into strings, and write_jsonl (nlohmann) then threw its own
  // type_error on the generated trace (found by tests/fuzz: corpus multiturn, agents).
  using isim::invalid_utf8_at;
  CHECK(invalid_utf8_at("plain ascii\n") == std::string::npos);
  CHECK(invalid_utf8_at("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == std::string::npos);
  CHECK(invalid_utf8_at("\xef\xbb\xbfname: a") == std::string::npos);  // a UTF-8 BOM
  CHECK(invalid_utf8_at("ab\xff") == 2);
  CHECK(invalid_utf8_at("\xc0\x80") == 0);          // overlong NUL
  CHECK(invalid_utf8_at("x\xe0\x80\x80") == 1);    // overlong
  CHECK(invalid_utf8_at("\xed\xa0\x80") == 0);     // a UTF-16 surrogate
  CHECK(invalid_utf8_at("\xf4\x90\x80\x80") == 0);  // past U+10FFFF
  CHECK(invalid_utf8_at("\xe2\x82") == 0);          // cut short
  CHECK(invalid_utf8_at("\x80") == 0);               // a lone continuation byte
  const std::string bad = write("isim_strict_utf8.yaml", "name: a\nkind: u\xffser\n");
  CHECK(error_of([&] { isim::load_yaml_file(bad); }) ==
        bad + ":2: <yaml>: invalid UTF-8 at column 8 (byte 0xFF); expected UTF-8 text");
  CHECK(error_of([] { isim::parse_yaml_value("\xfe", "-p k=?"); }) ==
        "-p k=?: <yaml>: invalid UTF-8 at column 1 (byte 0xFE); expected UTF-8 text");
  std::filesystem::remove(bad);
}

TEST_CASE("strict yaml: control characters are refused; a string that is not UTF-8 names its key") {
  // yaml-cpp turned a NUL inside a plain scalar into a lone 0x85, a generated session carried it,
  // and write_jsonl threw nlohmann's type_error 316 (found by tests/fuzz, target generator:
  // corpus/generator/regress-nul-in-plain-scalar).
  using isim::control_char_at;
  CHECK(control_char_at("a: 1\tb\r\n") == std::string::npos);
  CHECK(control_char_at(std::string("ab\0c", 4)) == 2);
  CHECK(control_char_at("x\x01") == 1);
  CHECK(control_char_at("x\x7f") == 1);
  CHECK(control_char_at("caf\xc3\xa9") == std::string::npos);  // bytes >= 0x80 are UTF-8's business
  const std::string nul =
      write("isim_strict_nul.yaml", std::string("name: a\nkind: m\x01\0N\n", 19));
  CHECK(error_of([&] { isim::load_yaml_file(nul); }) ==
        nul + ":2: <yaml>: control character at column 8 (byte 0x01); YAML text holds no control "
              "characters but tab, line feed and carriage return");
  std::filesystem::remove(nul);
  // A node built with bytes that are not UTF-8 (what yaml-cpp handed back) is refused by the
  // string reader, naming the key.
  const std::string got = error_of([] {
    isim::read_as<std::string>(YAML::Node(std::string("u\xffser")), "f.yaml", "kind", "a string");
  });
  CHECK(got.ends_with("kind: expected a string in UTF-8, got bytes that are not UTF-8"));
  CHECK(got.starts_with("f.yaml"));
}

TEST_CASE("strict yaml: a parse error after a tab-indented line says the line indents with a tab") {
  // Before, `isim run` on such a spec said only "F:4: <yaml>: illegal map value" (issue 36's
  // bad-input pass, tests/bad_inputs: spec_tab_indent).
  const std::string tab = write("isim_strict_tab.yaml", "name: a\ntrace:\n\tfrom: x\n  path: y\n");
  CHECK(error_of([&] { isim::load_yaml_file(tab); }) ==
        tab +
            ":3: <yaml>: illegal map value; line 3 indents with a tab (YAML indents with spaces)");
  // Where the parser's own message speaks of the tab, it is left as it is.
  const std::string said =
      write("isim_strict_tab3.yaml", "name: a\ntrace:\n  from: x\n\tpath: y\n");
  CHECK(error_of([&] { isim::load_yaml_file(said); }) ==
        said + ":4: <yaml>: illegal tab when looking for indentation");
  std::filesystem::remove(said);
  std::filesystem::remove(tab);
  // A tab inside a line (not its indentation) is no hint: the parser's words alone.
  const std::string inner = write("isim_strict_tab2.yaml", "name: a\tb\nx: [1\n");
  CHECK(error_of([&] { isim::load_yaml_file(inner); }) ==
        inner + ":3: <yaml>: end of sequence flow not found");
  std::filesystem::remove(inner);
}

TEST_CASE("strict yaml: loading files and -p values") {
  const std::string ok = write("isim_strict_ok.yaml", "name: a\n");
  CHECK(isim::load_yaml_file(ok)["name"].as<std::string>() == "a");
  const std::string bad = write("isim_strict_bad.yaml", "name: a\nrate: [1,\n");
  CHECK(
      error_of([&] { isim::load_yaml_file(bad, "spec file"); }).starts_with(bad + ":3: <yaml>: "));
  CHECK(error_of([] { isim::load_yaml_file("/nonexistent-dir/x.yaml", "spec file"); }) ==
        "/nonexistent-dir/x.yaml: cannot open spec file: No such file or directory");
  CHECK(error_of([] { isim::load_yaml_file("/nonexistent-dir/x.yaml"); }) ==
        "/nonexistent-dir/x.yaml: cannot open: No such file or directory");
  CHECK(isim::parse_yaml_value("[1, 2]", "-p k=[1, 2]").size() == 2);
  CHECK(error_of([] {
          isim::parse_yaml_value("[1,", "-p k=[1,");
        }).starts_with("-p k=[1,: <yaml>: "));
  std::filesystem::remove(ok);
  std::filesystem::remove(bad);
}

TEST_CASE("strict yaml: where and describe") {
  const YAML::Node n = YAML::Load("a: 1\nb: x\n");
  CHECK(isim::yaml_where("f.yaml", n["b"], "b") == "f.yaml:2: b");
  CHECK(isim::yaml_where("f.yaml", YAML::Node(), "b") == "f.yaml: b");
  CHECK(isim::yaml_key_path("", "a") == "a");
  CHECK(isim::yaml_key_path("a.b", "c") == "a.b.c");
  CHECK(isim::yaml_describe(n["b"]) == "'x'");
  CHECK(isim::yaml_describe(YAML::Load("[1]")) == "a list");
  CHECK(isim::yaml_describe(YAML::Load("{a: 1}")) == "a map");
  CHECK(isim::yaml_describe(YAML::Load("~")) == "nothing (null)");
}

TEST_CASE("strict yaml: a null or non-scalar key is an input error naming file and line") {
  const YAML::Node n = YAML::Load("a: 1\n? [x, y]\n: 2\n");
  std::vector<std::string> keys;
  std::string err;
  for (const auto& kv : n) {
    try {
      keys.push_back(isim::yaml_key(kv.first, "f.yaml", "top"));
    } catch (const InputError& e) {
      err = e.what();
    }
  }
  CHECK(keys == std::vector<std::string>{"a"});
  CHECK(err == "f.yaml:2: top: keys must be strings, got a list");
  const YAML::Node null_key = YAML::Load("~: 1\n");
  CHECK(error_of([&] { isim::yaml_key(null_key.begin()->first, "f.yaml", ""); }) ==
        "f.yaml:1: (document): keys must be strings, got nothing (null)");
  CHECK(error_of([] { root("~: 1\n"); }) ==
        "f.yaml:1: (document): keys must be strings, got nothing (null)");
}

TEST_CASE("strict yaml: .nan and .inf are not numbers a reader accepts") {
  CHECK(error_of([] { root("rate: .nan\n").get<double>("rate", 1, "a rate"); }) ==
        "f.yaml:1: rate: expected a rate (a finite number), got '.nan'");
  CHECK(error_of([] { root("rate: .inf\n").get<double>("rate", 1, "a rate"); }) ==
        "f.yaml:1: rate: expected a rate (a finite number), got '.inf'");
  CHECK(error_of([] { root("rate: -.inf\n").require<double>("rate", "a rate"); }) ==
        "f.yaml:1: rate: expected a rate (a finite number), got '-.inf'");
  CHECK(root("rate: 1e300\n").require<double>("rate", "a rate") == 1e300);
}

TEST_CASE("strict yaml: nodes from the command line are named by their origin") {
  YAML::Node spec = YAML::Load("name: a\nsub: {x: 1}\n");
  const YAML::Node value = isim::parse_yaml_value("{y: 2}", "-p sub={y: 2}");
  {
    isim::YamlOrigins origins;
    spec["sub"] = value;
    origins.add(value, "-p sub={y: 2}");
    const YAML::Node sub = spec["sub"];
    CHECK(isim::yaml_where("f.yaml", sub, "sub") == "-p sub={y: 2}: sub");
    CHECK(isim::yaml_where("f.yaml", sub["y"], "sub.y") == "-p sub={y: 2}: sub.y");
    CHECK(isim::yaml_where("f.yaml", sub.begin()->first, "sub.y") == "-p sub={y: 2}: sub.y");
    CHECK(isim::yaml_where("f.yaml", spec["name"], "name") == "f.yaml:1: name");
    CHECK(error_of([&] { isim::check_keys(spec["sub"], "f.yaml", "sub", {"x"}); }) ==
          "-p sub={y: 2}: sub.y: unknown key; valid keys: x");
  }
  // The scope has ended: the value is described by its own (one-line) mark again.
  CHECK(isim::yaml_where("f.yaml", spec["sub"], "sub") == "f.yaml:1: sub");
}
