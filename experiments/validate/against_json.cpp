// Strict JSON reading for the benchmark formats of validate --against (against_json.h).
#include "experiments/validate/against_json.h"

#include <cmath>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/input_file.h"
#include "core/json_shown.h"
#include "core/json_unique.h"
#include "core/strict_yaml.h"

namespace isim::exp::bench_json {

std::string read_json_text(const std::string& path, const std::string& what) {
  std::string text = read_input_file(path, what, kMaxWholeDataBytes);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(fmt::format("{}: empty; expected {}", path, what));
  return text;
}

json parse_json(const std::string& text, const std::string& where, int64_t first_line) {
  try {
    return parse_json_unique<json>(text, where, first_line);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: not JSON: {}", where, e.what()));
  }
}

std::string shown(const json& v) {
  return isim::shown(v);
}

const json& need(const json& j, const std::string& key, const std::string& where,
                 const std::string& path) {
  const std::string full = path.empty() ? key : path + "." + key;
  if (!j.is_object())
    throw InputError(fmt::format("{}: {}: expected an object, got {}", where,
                                 path.empty() ? "(document)" : path, shown(j)));
  auto it = j.find(key);
  if (it == j.end()) throw InputError(fmt::format("{}: {}: missing", where, full));
  return *it;
}

double number(const json& v, const std::string& where, const std::string& path) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw InputError(fmt::format("{}: {}: expected a number, got {}", where, path, shown(v)));
  return v.get<double>();
}

int64_t count(const json& v, const std::string& where, const std::string& path) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw InputError(
        fmt::format("{}: {}: expected an integer >= 0, got {}", where, path, shown(v)));
  return v.get<int64_t>();
}

const json& list(const json& v, const std::string& where, const std::string& path) {
  if (!v.is_array())
    throw InputError(fmt::format("{}: {}: expected a list, got {}", where, path, shown(v)));
  return v;
}

namespace {

json scalar(const YAML::Node& n) {
  const std::string& t = n.Scalar();
  if (n.Tag() == "!") return t;  // quoted
  if (t.empty() || t == "null" || t == "~" || t == "Null" || t == "NULL") return nullptr;
  if (t == "true" || t == "True") return true;
  if (t == "false" || t == "False") return false;
  size_t used = 0;
  try {
    const long long i = std::stoll(t, &used);
    if (used == t.size()) return static_cast<int64_t>(i);
  } catch (const std::exception&) {
  }
  try {
    const double d = std::stod(t, &used);
    if (used == t.size() && std::isfinite(d)) return d;
  } catch (const std::exception&) {
  }
  return t;
}

json to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json j = json::object();
    for (const auto& kv : n) j[kv.first.Scalar()] = to_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    json j = json::array();
    for (const auto& x : n) j.push_back(to_json(x));
    return j;
  }
  if (n.IsScalar()) return scalar(n);
  return nullptr;
}

}  // namespace

json read_yaml_as_json(const std::string& path, const std::string& what) {
  return to_json(load_yaml_file(path, what));
}

}  // namespace isim::exp::bench_json
