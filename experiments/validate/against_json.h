// Strict reading of the benchmark formats' JSON for validate --against (against_aiperf.cpp,
// against_guidellm.cpp, against_vllm_bench.cpp).
//
// Contract: every helper names `where` (FILE or FILE:LINE) and the key's dotted path in its
// InputError: `WHERE: PATH: missing`, `WHERE: PATH: expected a number, got "x"`, `WHERE: PATH:
// expected an integer >= 0, got -1`, `WHERE: PATH: expected a list, got ...`. read_json_text
// reads a file (InputError when it cannot be opened or is empty) and parse_json parses it
// through parse_json_unique (a key twice is refused), a syntax error as
// `WHERE: not JSON: <parser's reason>`.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace isim::exp::bench_json {

using json = nlohmann::json;

std::string read_json_text(const std::string& path, const std::string& what);
json parse_json(const std::string& text, const std::string& where, int64_t first_line = 1);

const json& need(const json& j, const std::string& key, const std::string& where,
                 const std::string& path);
double number(const json& v, const std::string& where, const std::string& path);
int64_t count(const json& v, const std::string& where, const std::string& path);
const json& list(const json& v, const std::string& where, const std::string& path);
// A YAML file as JSON (GuideLLM writes its report as either): maps, lists, and scalars as
// YAML 1.2's core schema reads them: a quoted scalar is a string; a plain one is null (null, ~,
// empty), a boolean (true, false), an integer, a finite number, else a string. Errors as
// load_yaml_file's (core/strict_yaml.h).
json read_yaml_as_json(const std::string& path, const std::string& what);
// A short rendering of `v` for messages (at most 40 characters).
std::string shown(const json& v);

}  // namespace isim::exp::bench_json
