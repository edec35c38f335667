// Params: one component's parameters (`policy: {name: X, key: value}`, `-p policy.key=value`,
// `executor: {name: live-cpu, threads: 2}`, a router's `seed`), read typed by key.
//
// Contract:
// - `values` holds each value's text as given; `where` prefixes every error ("policy",
//   "policies[1]", "cluster.router"), or `at[KEY]` ("FILE:LINE: policy.KEY") for a key a spec
//   file gave (its reader fills it).
// - get(key, def) / require(key) parse the text as T: std::string (as is), double (finite),
//   int64_t, int32_t, uint64_t (decimal, whole text, in range) or bool (true/false, yes/no,
//   on/off). A bad value is InputError "WHERE.KEY: expected WHAT, got 'VALUE'", WHAT being the
//   type's ("a number", "an integer", "a non-negative integer", "true or false") or the
//   caller's when it passes a check `ok`; an absent required key is "WHERE.KEY: missing
//   (expected WHAT)". get_choice takes one of a list: "expected a, b or c, got 'VALUE'".
// - Every read records its key as one the component takes, present or not. done(COMPONENT)
//   then throws "WHERE.KEY: unknown parameter; COMPONENT takes a, b, c" (in the order first
//   read; "takes no parameters" when none was) for the first given key, in name order, that no
//   read asked for. Call it after the last read; a Params belongs to one component.
// - get(key, def, BOUND, HELP) reads a number and checks it against BOUND (core/knobs.h): a
//   value outside is "WHERE.KEY: must be <= N (WHY)" (as a knob table says it). It also records
//   (key, default, bound, help) in `table()`, in the order first read: `isim list` builds each
//   component once with empty Params and prints what it asked, and the property test walks
//   those rows. The key and its bound are named once, at the read.
// - Reads may run on several threads at once (the record is locked). A copy has the values and
//   `where` and has recorded nothing.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "core/knobs.h"

namespace isim {

// The value of `text` as T, or nothing when it is not one (rules above).
template <class T>
std::optional<T> parse_param(const std::string& text);
// What a T is, for "expected ..." ("a number", "an integer", ...).
template <class T>
const char* param_kind();

// One bounded parameter as read: key, default, bound, help (with the bound's reason), and
// whether it holds an integer.
struct ParamRow {
  std::string key, def;
  Bound bound;
  std::string help;
  bool integer = false;
};

class Params {
 public:
  Params() = default;
  Params(std::map<std::string, std::string> values, std::string where);
  Params(const Params& o) : values(o.values), where(o.where), at(o.at) {}
  Params& operator=(const Params& o);

  std::map<std::string, std::string> values;  // as given
  std::string where;                          // prefix for errors
  // Where a spec file gave each key ("FILE:LINE: WHERE.KEY"): its errors name the line too.
  std::map<std::string, std::string> at;

  bool empty() const { return values.empty(); }
  // Whether `key` was given (records it as taken).
  bool has(const std::string& key) const { return find(key) != nullptr; }

  template <class T>
  T get(const std::string& key, T def) const {
    return get(key, std::move(def), param_kind<T>(), [](const T&) { return true; });
  }
  template <class T>
  T require(const std::string& key) const {
    return require<T>(key, param_kind<T>(), [](const T&) { return true; });
  }
  // With a check: the value must parse and satisfy ok(value), else "expected EXPECTED, ...".
  template <class T, class Ok>
  T get(const std::string& key, T def, const std::string& expected, Ok ok) const {
    const std::string* text = find(key);
    return text ? checked<T>(key, *text, expected, ok) : def;
  }
  template <class T, class Ok>
  T require(const std::string& key, const std::string& expected, Ok ok) const {
    const std::string* text = find(key);
    if (!text) fail(key, "missing (expected " + expected + ")");
    return checked<T>(key, *text, expected, ok);
  }
  // A number within `b` (default `def`), recorded with `help` for `isim list` (contract).
  template <class T>
  T get(const std::string& key, T def, const Bound& b, const char* help) const {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "a bound is on a number");
    record({key, fmt::format("{}", def), b,
            b.why ? fmt::format("{} ({})", help, b.why) : std::string(help),
            std::is_integral_v<T>});
    const std::string* text = find(key);
    if (!text) return def;
    const T v = checked<T>(key, *text, param_kind<T>(), [](const T&) { return true; });
    if (const std::string why = b.check(static_cast<double>(v)); !why.empty()) fail(key, why);
    return v;
  }
  // The bounded keys read so far: key, default, bound, help (see the contract).
  std::vector<ParamRow> table() const;

  // One of `choices` (default `def`).
  std::string get_choice(const std::string& key, const std::string& def,
                         const std::vector<std::string>& choices) const;

  // Throws InputError for a given key that no read asked for (see the contract).
  void done(const std::string& component) const;

  // "WHERE.KEY", or at[KEY] ("FILE:LINE: WHERE.KEY") when the spec said where it was given.
  std::string key_path(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& reason) const;

 private:
  // The text of `key` (nullptr when absent); records the key as taken.
  const std::string* find(const std::string& key) const;
  template <class T, class Ok>
  T checked(const std::string& key, const std::string& text, const std::string& expected,
            Ok ok) const {
    const std::optional<T> v = parse_param<T>(text);
    if (!v || !ok(*v)) fail(key, "expected " + expected + ", got '" + text + "'");
    return *v;
  }

  mutable std::mutex mu_;
  void record(ParamRow row) const;

  mutable std::vector<std::string> asked_;  // in the order first read
  mutable std::vector<ParamRow> table_;     // bounded reads, in the order first read
};

}  // namespace isim
