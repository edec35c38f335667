// A key twice in one JSON object is refused by the experiments' JSON readers too, naming both
// places (core/json_unique.h): a vLLM run's meta.json and a shard journal line.
#include <doctest/doctest.h>

#include <string>

#include "experiments/sweep/journal_record.h"
#include "experiments/validate/validate_vllm.h"
#include "tests/input_error_text.h"

TEST_CASE("json_unique: meta.json and a shard journal refuse a key twice") {
  // {"schema_version": 1, "schema_version": 1}: the quotes open at bytes 1 and 22.
  CHECK(isim::test::error_of_call([] {
          isim::exp::parse_vllm_meta(R"({"schema_version": 1, "schema_version": 1})",
                                     "r/meta.json");
        }) == R"(r/meta.json:1: <json>: key "schema_version" appears twice in one object (line )"
              "1 column 2, line 1 column 23); each key may appear once");
  // Line 2 of a journal: {"a":1,"a":2}, quotes at bytes 1 and 7.
  CHECK(isim::test::error_of_call([] {
          isim::exp::split_journal("{\"isim_sweep_shard\": 1}\n{\"a\":1,\"a\":2}\n", "j.jsonl",
                                   "isim_sweep_shard");
        }) == R"(j.jsonl:2: <json>: key "a" appears twice in one object (line 2 column 2, line 2 )"
              "column 8); each key may appear once");
}
