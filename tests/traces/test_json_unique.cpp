// A key twice in one JSON object is refused by every JSON reader, naming both places
// (core/json_unique.h): the shared parser itself, then a native trace line, a Mooncake line, an
// InferCept file (a session id twice) and a Weka file, each through its public reader.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_unique.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "traces/infercept.h"
#include "traces/jsonl.h"
#include "traces/mooncake.h"
#include "traces/weka.h"

namespace {

using isim::test::error_of_call;
using UJson = nlohmann::json;

std::string unique_error(const std::string& text, int64_t first_line = 1) {
  return error_of_call([&] { (void)isim::parse_json_unique<UJson>(text, "f", first_line); });
}

}  // namespace

TEST_CASE("json_unique: a key twice in one object names both places") {
  // {"a":1,"b":{"c":2,"c":3}}: the inner object's quotes open at bytes 12 and 18 (0-based), so
  // columns 13 and 19, on the line the caller numbered 4.
  CHECK(unique_error(R"({"a":1,"b":{"c":2,"c":3}})", 4) ==
        R"(f:4: <json>: key "c" appears twice in one object (line 4 column 13, line 4 column 19); )"
        "each key may appear once");
  // Over lines: "x" opens at line 2 column 3 and again at line 4 column 3.
  CHECK(unique_error("{\n  \"x\": 1,\n  \"y\": 2,\n  \"x\": 3\n}") ==
        R"(f:4: <json>: key "x" appears twice in one object (line 2 column 3, line 4 column 3); )"
        "each key may appear once");
  // An escaped quote inside the key: {"a\"b":1,"a\"b":2} opens at bytes 1 and 10.
  CHECK(unique_error(R"({"a\"b":1,"a\"b":2})") ==
        R"(f:1: <json>: key "a\"b" appears twice in one object (line 1 column 2, line 1 column )"
        "11); each key may appear once");
  // The outer object's key after a nested one: "k" at bytes 1 and 20.
  CHECK(unique_error(R"({"k":{"k":1,"j":[]},"k":2})") ==
        R"(f:1: <json>: key "k" appears twice in one object (line 1 column 2, line 1 column 21); )"
        "each key may appear once");
}

TEST_CASE("json_unique: the same key in different objects is fine") {
  CHECK(unique_error(R"([{"a":1},{"a":2}])") == "(no error)");
  CHECK(unique_error(R"({"a":{"a":{"a":1}},"b":[{"a":1,"b":2},{"b":3}]})") == "(no error)");
  const UJson j = isim::parse_json_unique<UJson>(R"({"a":{"b":2},"c":[1]})", "f");
  CHECK(j["a"]["b"] == 2);
  CHECK(j["c"][0] == 1);
}

TEST_CASE("json_unique: every JSON-lines and JSON trace reader refuses a key twice") {
  // Native trace, line 2: "arrival_s" at bytes 10 and 24 -> columns 11 and 25.
  std::istringstream native(
      R"({"id":"s","arrival_s":0,"segments":[{"input":1,"output":1}]})"
      "\n"
      R"({"id":"t","arrival_s":1,"arrival_s":2,"segments":[{"input":1,"output":1}]})"
      "\n");
  CHECK(error_of_call([&] { isim::trace::parse_jsonl(native, "t.jsonl"); }) ==
        R"(t.jsonl:2: <json>: key "arrival_s" appears twice in one object (line 2 column 11, )"
        "line 2 column 25); each key may appear once");
  // Mooncake, line 1: "input_length" at bytes 17 and 36 -> columns 18 and 37.
  std::istringstream mooncake(
      R"({"timestamp": 0, "input_length": 5, "input_length": 9, "output_length": 1, )"
      R"("hash_ids": [1]})"
      "\n");
  CHECK(error_of_call([&] { isim::trace::parse_mooncake(mooncake, "m.jsonl"); }) ==
        R"(m.jsonl:1: <json>: key "input_length" appears twice in one object (line 1 column 18, )"
        "line 1 column 37); each key may appear once");
}

TEST_CASE("json_unique: an InferCept session id twice and a Weka key twice are refused") {
  const auto dir = isim::test::scratch("json-unique");
  // Session "a" opens at line 2 column 3 and again at line 4 column 3 (nlohmann's ordered_json
  // kept the first and dropped the second before).
  const std::string seg = R"([{"prompt_tokens":10,"completion_tokens":5}])";
  const std::string infercept =
      isim::test::write_file(dir / "ic.json", "{\n  \"a\": " + seg + ",\n  \"b\": " + seg +
                                                  ",\n  \"a\": " + seg + "\n}\n");
  CHECK(error_of_call([&] { isim::trace::import_infercept(infercept); }) ==
        infercept +
            R"(:4: <json>: key "a" appears twice in one object (line 2 column 3, line 4 column )"
            "3); each key may appear once");
  // Weka: "block_size" at bytes 10 and 25 -> columns 11 and 26.
  const std::string weka = isim::test::write_file(
      dir / "w.json", R"({"id":"x","block_size":4,"block_size":8,"requests":[]})");
  CHECK(error_of_call([&] { isim::trace::import_weka(weka); }) ==
        weka +
            R"(:1: <json>: key "block_size" appears twice in one object (line 1 column 11, line )"
            "1 column 26); each key may appear once");
}
