// Knob tables: a component's settings named once.
//
// A settings struct lists its knobs in one member template,
//   template <class Visit> void knobs(Visit&& k) {
//     k("max_num_seqs", max_num_seqs, positive(), "an integer", "sequences per step");
//   }
// (key, member, bound, what a value must be, one-line help); the member's initialiser is the
// default. That one table drives every use of the names:
// - KnobReader reads a YAML map onto the struct: a present key is read as the member's type
//   ("expected WHAT, got ...") and checked against its bound ("must be > 0", "must be <= 1");
//   an absent one keeps the member's value;
// - knob_names lists the valid keys (a YamlMap's unknown-key error lists them);
// - KnobWriter writes the members as config.resolved.yaml shows them (doubles in shortest
//   round-trip text);
// - knob_rows gives `isim list` each key's default, bound and help.
// Bounds are closed or open ends on a number; `none()` marks a knob with no numeric bound
// (strings, booleans). A bound is checked on the value read, never on a default. A bound may
// carry why its upper end is where it is (`.because("each replica holds ~60 KB")`): a value
// above it is refused with "must be <= N (WHY)", and `isim list` shows WHY after the help.
// Every numeric knob has a bound on both ends: tests/experiments/test_knob_bounds.cpp walks
// every table and checks that a value just outside each end is refused, naming the key and
// the end, and one just inside is read.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/strict_yaml.h"

namespace isim {

struct Bound {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
  const char* why = nullptr;  // why the upper end is where it is (shown after a refusal)

  // This bound, with the reason for its upper end.
  Bound because(const char* reason) const {
    Bound b = *this;
    b.why = reason;
    return b;
  }
  // The reason `v` is out of bounds ("must be > 0", "must be <= 8 (WHY)"), or "" when within.
  std::string check(double v) const {
    if (lo_open ? !(v > lo) : !(v >= lo))
      return fmt::format("must be {} {}", lo_open ? ">" : ">=", lo);
    if (hi_open ? !(v < hi) : !(v <= hi))
      return fmt::format("must be {} {}{}", hi_open ? "<" : "<=", hi,
                         why ? fmt::format(" ({})", why) : "");
    return "";
  }
  // "(0, 1]", "[1, 16777216]", "> 0", "" (no bound): what `isim list` shows.
  std::string text() const {
    const bool has_lo = lo > -kInf, has_hi = hi < kInf;
    if (has_lo && has_hi)
      return fmt::format("{}{}, {}{}", lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
    if (has_lo) return fmt::format("{} {}", lo_open ? ">" : ">=", lo);
    if (has_hi) return fmt::format("{} {}", hi_open ? "<" : "<=", hi);
    return "";
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
};

inline Bound none() {
  return {};
}
inline Bound at_least(double lo) {
  return {lo, Bound{}.hi, false, false};
}
// [lo, hi]
inline Bound in(double lo, double hi) {
  return {lo, hi, false, false};
}
// (lo, hi]
inline Bound above_upto(double lo, double hi) {
  return {lo, hi, true, false};
}
// [lo, hi)
inline Bound from_below(double lo, double hi) {
  return {lo, hi, false, true};
}
// (lo, hi)
inline Bound above_below(double lo, double hi) {
  return {lo, hi, true, true};
}

// Reads the knobs of the map `m` onto a struct (see the contract above).
class KnobReader {
 public:
  explicit KnobReader(const YamlMap& m) : m_(m) {}
  template <class T>
  void operator()(const char* key, T& member, const Bound& b, const char* what, const char*) {
    if (!m_.has(key)) return;
    member = m_.require<T>(key, what);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const std::string why = b.check(static_cast<double>(member));
      if (!why.empty()) m_.fail(key, why);
    }
  }

 private:
  const YamlMap& m_;
};

// Collects the keys of a table, in its order.
struct KnobNames {
  std::vector<std::string> names;
  template <class T>
  void operator()(const char* key, T&, const Bound&, const char*, const char*) {
    names.emplace_back(key);
  }
};

// Writes a table's members into a YAML map, in the table's order.
class KnobWriter {
 public:
  explicit KnobWriter(YAML::Node& out) : out_(out) {}
  template <class T>
  void operator()(const char* key, T& member, const Bound&, const char*, const char*) {
    if constexpr (std::is_floating_point_v<T>)
      out_[key] = fmt::format("{}", member);  // shortest round-trip text
    else
      out_[key] = member;
  }

 private:
  YAML::Node& out_;
};

// One knob as `isim list` shows it.
struct KnobRow {
  std::string key, def, bound, help;
};
struct KnobRows {
  std::vector<KnobRow> rows;
  template <class T>
  void operator()(const char* key, T& member, const Bound& b, const char*, const char* help) {
    std::string def;
    if constexpr (std::is_same_v<T, bool>)
      def = member ? "true" : "false";
    else if constexpr (std::is_arithmetic_v<T>)
      def = fmt::format("{}", member);
    else
      def = member;
    rows.push_back({key, def, b.text(), b.why ? fmt::format("{} ({})", help, b.why) : help});
  }
};

// The valid keys, and the rows of `isim list`, of a settings struct S.
template <class S>
std::vector<std::string> knob_names(S s = {}) {
  KnobNames n;
  s.knobs(n);
  return n.names;
}
template <class S>
std::vector<KnobRow> knob_rows(S s = {}) {
  KnobRows r;
  s.knobs(r);
  return r.rows;
}

}  // namespace isim
