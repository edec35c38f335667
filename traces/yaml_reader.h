// YamlReader: strict reading of YAML config files, shared by the trace generators' loaders.
// Internal to traces/ (not part of the public API).
//
// Contract: every failure is an InputError `FILE:LINE: KEY: reason` (`FILE: KEY: reason` where
// YAML gives no line); KEY is the dotted path of the value (e.g. `mix[0].calls.mean`); unknown
// keys list the valid ones. load_yaml turns an unreadable file or a YAML syntax error into an
// InputError as well.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string>

#include "traces/dist.h"
#include "traces/input_error.h"

namespace isim::trace {

inline YAML::Node load_yaml(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno));
  try {
    return YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}: <yaml>: {}", path, e.mark.line + 1, e.msg));
  }
}

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key,
                         const std::string& reason) const {
    const YAML::Mark m = at.Mark();
    const std::string where = m.is_null() ? file_ : fmt::format("{}:{}", file_, m.line + 1);
    throw InputError(where + ": " + key + ": " + reason);
  }

  // `map` must be a map whose keys are all in `valid`.
  void expect_map(const YAML::Node& map, const std::string& path,
                  std::initializer_list<const char*> valid) const {
    if (!map.IsMap()) fail(map, path.empty() ? "<root>" : path, "expected a map");
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
      std::string list;
      for (const char* v : valid) list += (list.empty() ? "" : ", ") + std::string(v);
      fail(kv.first, join(path, key), "unknown key; valid: " + list);
    }
  }

  YAML::Node required(const YAML::Node& map, const std::string& path, const char* key) const {
    YAML::Node n = map[key];
    if (!n) fail(map, join(path, key), "missing");
    return n;
  }

  double number(const YAML::Node& n, const std::string& path) const {
    try {
      if (n.IsScalar()) return n.as<double>();
    } catch (const YAML::Exception&) {
    }
    fail(n, path, "expected a number, got '" + YAML::Dump(n) + "'");
  }

  std::string text(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, path, "expected a string");
    return n.as<std::string>();
  }

  // {dist, mean, sd, min, max}; sd may be left out for the families whose sd is implied.
  Dist dist(const YAML::Node& n, const std::string& path) const {
    expect_map(n, path, {"dist", "mean", "sd", "min", "max"});
    Dist d;
    if (n["dist"]) d.dist = text(n["dist"], path + ".dist");
    d.mean = number(required(n, path, "mean"), path + ".mean");
    if (!sd_is_implied(d.dist) || n["sd"]) d.sd = number(required(n, path, "sd"), path + ".sd");
    if (n["min"]) d.min = number(n["min"], path + ".min");
    if (n["max"]) d.max = number(n["max"], path + ".max");
    return d;
  }

 private:
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  std::string file_;
};

}  // namespace isim::trace
