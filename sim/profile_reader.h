// Internal to the profile reader and its sections: a strict YAML reader whose every error
// names the file, the line and the key path. Not a public header of sim/.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>
#include "core/input_error.h"
#include "core/strict_yaml.h"

#include "sim/profile.h"

namespace isim::sim::profile_io {

inline constexpr std::string_view kSchema = "isim-profile/1";
inline constexpr double kMaxGiB = 1024.0 * 1024.0;  // device memory sizes: a PiB
using Names = std::vector<std::string_view>;
inline const Names kDtypes = {"fp16", "bf16", "fp32", "fp8"};
inline const Names kSources = {"measured", "imported", "analytic", "published"};

inline std::string join(const Names& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

inline bool contains(const Names& names, std::string_view s) {
  for (const auto& n : names) {
    if (n == s) return true;
  }
  return false;
}

inline std::string child(const std::string& parent, std::string_view key) {
  return yaml_key_path(parent, std::string(key));
}

inline std::string element(const std::string& parent, std::size_t i) {
  return fmt::format("{}[{}]", parent, i);
}

// What a node is, for "expected X, got Y" messages.
inline std::string kind(const YAML::Node& n) {
  return yaml_describe(n);
}

// A YAML map whose keys are all plain strings, none repeated, in file order.
struct MapNode {
  YAML::Node node;
  std::string path;
  std::vector<std::pair<std::string, YAML::Node>> entries;
  std::vector<YAML::Node> keys;  // the key nodes, for their line numbers
};

// How the values of a table or an axis are constrained.
enum class Bound { kPositive, kNonNegative, kAny };  // kAny: any finite number

// Reads one profile document; every error names the origin, the line and the key path.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& reason) const {
    throw InputError(fmt::format("{}: {}: {}", origin_, path, reason));
  }

  // A map value is reported at its key's line: yaml-cpp marks a block collection at its first
  // child and a null value at the next token, neither of which is where the key is.
  [[noreturn]] void fail(const YAML::Node& at, const std::string& path,
                         const std::string& reason) const {
    YAML::Mark mark = at.Mark();
    for (const auto& [value, key_mark] : key_marks_) {
      if (value.is(at)) {
        mark = key_mark;
        break;
      }
    }
    if (mark.line < 0) fail(path, reason);
    throw InputError(fmt::format("{}:{}: {}: {}", origin_, mark.line + 1, path, reason));
  }

  MapNode map(const YAML::Node& n, const std::string& path, const std::string& expected) const {
    const std::string where = path.empty() ? "(document)" : path;
    if (!n.IsMap()) fail(n, where, fmt::format("expected {}, got {}", expected, kind(n)));
    MapNode m{n, path, {}, {}};
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) fail(key, where, fmt::format("keys must be strings, got {}", kind(key)));
      const std::string& name = key.Scalar();
      for (const auto& [seen, value] : m.entries) {
        if (seen == name) fail(key, child(path, name), "duplicate key");
      }
      m.entries.emplace_back(name, it->second);
      m.keys.push_back(key);
      key_marks_.emplace_back(it->second, key.Mark());
    }
    return m;
  }

  void only(const MapNode& m, const Names& valid) const {
    for (std::size_t i = 0; i < m.entries.size(); ++i) {
      const std::string& name = m.entries[i].first;
      if (!contains(valid, name)) {
        fail(m.keys[i], child(m.path, name),
             fmt::format("unknown key (valid keys: {})", join(valid)));
      }
    }
  }

  static std::optional<YAML::Node> find(const MapNode& m, std::string_view key) {
    for (const auto& [name, value] : m.entries) {
      if (name == key) return value;
    }
    return std::nullopt;
  }

  YAML::Node need(const MapNode& m, std::string_view key, const std::string& expected) const {
    if (auto n = find(m, key)) return *n;
    fail(child(m.path, key), fmt::format("missing (expected {})", expected));
  }

  MapNode section(const MapNode& parent, std::string_view key, const Names& valid) const {
    const std::string expected = fmt::format("a map with keys {}", join(valid));
    MapNode m = map(need(parent, key, expected), child(parent.path, key), expected);
    only(m, valid);
    return m;
  }

  std::string text(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, path, fmt::format("expected a string, got {}", kind(n)));
    return n.Scalar();
  }

  std::string name(const MapNode& m, std::string_view key) const {
    const std::string path = child(m.path, key);
    const YAML::Node n = need(m, key, "a non-empty string");
    std::string s = text(n, path);
    if (s.empty()) fail(n, path, "must not be empty");
    return s;
  }

  double number(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar() || n.Tag() == "!") {
      fail(n, path, fmt::format("expected a number, got {}", kind(n)));
    }
    const std::string& s = n.Scalar();
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    const bool whole = end == s.data() + s.size();
    const bool yaml_special = s == ".inf" || s == "-.inf" || s == "+.inf" || s == ".Inf" ||
                              s == "-.Inf" || s == ".INF" || s == "-.INF" || s == ".nan" ||
                              s == ".NaN" || s == ".NAN";
    if (yaml_special || (whole && ec == std::errc::result_out_of_range) ||
        (whole && ec == std::errc() && !std::isfinite(v))) {
      fail(n, path, fmt::format("expected a finite number, got {}", kind(n)));
    }
    if (ec != std::errc() || !whole) {
      fail(n, path, fmt::format("expected a number, got {}", kind(n)));
    }
    return v;
  }

  int64_t integer(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar() || n.Tag() == "!") {
      fail(n, path, fmt::format("expected an integer, got {}", kind(n)));
    }
    const std::string& s = n.Scalar();
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
      fail(n, path, fmt::format("expected an integer, got {}", kind(n)));
    }
    return v;
  }

  void check(const YAML::Node& n, const std::string& path, double v, Bound bound,
             std::string_view what) const {
    if (bound == Bound::kPositive && !(v > 0)) {
      fail(n, path, fmt::format("must be > 0 ({}), got {}", what, v));
    }
    if (bound == Bound::kNonNegative && !(v >= 0)) {
      fail(n, path, fmt::format("must be >= 0 ({}), got {}", what, v));
    }
    // A time of an hour or more is no GPU's: the cap keeps forward times far inside int64
    // nanoseconds (sim/time.h). Paths name the unit: *_ms, else microseconds.
    if (what == "a time") {
      const bool ms = path.find("_ms") != std::string::npos;
      const double hour = ms ? 3.6e6 : 3.6e9;
      if (v > hour)
        fail(n, path,
             fmt::format("must be at most {:.0f} {} (an hour), got {}", hour, ms ? "ms" : "us", v));
    }
    if (what == "a size in GiB" && v > kMaxGiB) {
      fail(n, path, fmt::format("must be at most {:.0f} GiB (a PiB), got {}", kMaxGiB, v));
    }
  }

  double number(const MapNode& m, std::string_view key, Bound bound, std::string_view what) const {
    const std::string path = child(m.path, key);
    const YAML::Node n = need(m, key, "a number");
    const double v = number(n, path);
    check(n, path, v, bound, what);
    return v;
  }

  int64_t count64(const MapNode& m, std::string_view key) const {
    const std::string path = child(m.path, key);
    const YAML::Node n = need(m, key, "a positive integer");
    const int64_t v = integer(n, path);
    if (v <= 0) fail(n, path, fmt::format("must be > 0 (a size), got {}", v));
    return v;
  }

  int count(const MapNode& m, std::string_view key) const {
    const int64_t v = count64(m, key);
    if (v > std::numeric_limits<int>::max()) {
      fail(*find(m, key), child(m.path, key),
           fmt::format("must be at most {}, got {}", std::numeric_limits<int>::max(), v));
    }
    return static_cast<int>(v);
  }

  std::vector<double> numbers(const YAML::Node& n, const std::string& path, Bound bound,
                              std::string_view what) const {
    if (!n.IsSequence()) fail(n, path, fmt::format("expected a list of numbers, got {}", kind(n)));
    std::vector<double> out;
    std::size_t i = 0;
    for (const YAML::Node& e : n) {
      const std::string at = element(path, i++);
      const double v = number(e, at);
      check(e, at, v, bound, what);
      out.push_back(v);
    }
    return out;
  }

  std::vector<double> axis(const MapNode& table, std::string_view key, Bound bound) const {
    const std::string path = child(table.path, key);
    const YAML::Node n = need(table, key, "a strictly increasing list of numbers");
    std::vector<double> v = numbers(n, path, bound, "an axis point");
    if (v.empty()) fail(n, path, "must have at least one point");
    for (std::size_t i = 1; i < v.size(); ++i) {
      if (!(v[i] > v[i - 1])) {
        fail(n[i], element(path, i),
             fmt::format("axis must be strictly increasing, got {} after {}", v[i], v[i - 1]));
      }
    }
    return v;
  }

  // A 1-D table {xkey: axis, ykey: values}.
  Curve1D curve(const MapNode& parent, std::string_view key, std::string_view xkey, Bound xbound,
                std::string_view ykey, Bound ybound, std::string_view what) const {
    const Names keys = {xkey, ykey};
    const std::string expected = fmt::format("a table with {}", join(keys));
    const MapNode t = map(need(parent, key, expected), child(parent.path, key), expected);
    only(t, keys);
    Curve1D c;
    c.x = axis(t, xkey, xbound);
    const std::string ypath = child(t.path, ykey);
    const YAML::Node yn = need(t, ykey, fmt::format("a list with one value per {} value", xkey));
    c.y = numbers(yn, ypath, ybound, what);
    if (c.y.size() != c.x.size()) {
      fail(yn, ypath,
           fmt::format("expected {} values (one per {} value), got {}", c.x.size(), xkey,
                       c.y.size()));
    }
    return c;
  }

  // A 2-D table {xkey: axis, ykey: axis, us: rows}, one row per x value, one column per y value.
  Grid2D grid(const MapNode& parent, std::string_view key, std::string_view xkey, Bound xbound,
              std::string_view ykey, Bound ybound) const {
    const Names keys = {xkey, ykey, "us"};
    const std::string expected = fmt::format("a table with {}", join(keys));
    const MapNode t = map(need(parent, key, expected), child(parent.path, key), expected);
    only(t, keys);
    Grid2D g;
    g.x = axis(t, xkey, xbound);
    g.y = axis(t, ykey, ybound);
    const std::string zpath = child(t.path, "us");
    const YAML::Node rows = need(t, "us", fmt::format("a list of rows, one per {} value", xkey));
    if (!rows.IsSequence()) {
      fail(rows, zpath, fmt::format("expected a list of rows, got {}", kind(rows)));
    }
    if (rows.size() != g.x.size()) {
      fail(rows, zpath,
           fmt::format("expected {} rows (one per {} value), got {}", g.x.size(), xkey,
                       rows.size()));
    }
    std::size_t i = 0;
    for (const YAML::Node& row : rows) {
      const std::string rpath = element(zpath, i++);
      const std::vector<double> v = numbers(row, rpath, Bound::kNonNegative, "a time");
      if (v.size() != g.y.size()) {
        fail(row, rpath,
             fmt::format("expected {} values (one per {} value), got {}", g.y.size(), ykey,
                         v.size()));
      }
      g.z.insert(g.z.end(), v.begin(), v.end());
    }
    return g;
  }

 private:
  std::string origin_;
  mutable std::vector<std::pair<YAML::Node, YAML::Mark>> key_marks_;  // map value -> its key
};
// The optional serving sections `step_overhead:` and `memory:` (profile_serving.cpp).
void read_serving(const Reader& r, const MapNode& top, Profile& p);

// The optional MoE and ragged-decode tables of `forward.tables` (sim/profile_moe_skew.cpp).
void read_moe_skew(const Reader& r, const MapNode& tables, TablesForward& t);
// Their YAML at `indent` (empty when the profile has none), in the order read_moe_skew reads.
std::string write_moe_skew(const TablesForward& t, std::string_view indent);

// The `forward:` section (sim/profile_forward.cpp); reads after the model (allreduce_us needs tp).
void read_forward(const Reader& r, const MapNode& top, Profile& p);

}  // namespace isim::sim::profile_io
