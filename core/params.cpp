#include "core/params.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <type_traits>

#include "core/input_error.h"

namespace isim {

namespace {

// from_chars over the whole text, after an optional '+' (from_chars takes only '-').
template <class T>
std::optional<T> whole_number(const std::string& text) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const bool plus = first != last && *first == '+';
  if (plus) ++first;
  if (first == last || (plus && *first == '-')) return std::nullopt;
  T v{};
  const auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last) return std::nullopt;
  return v;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

template <class T>
std::optional<T> parse_param(const std::string& text) {
  if constexpr (std::is_same_v<T, std::string>) {
    return text;
  } else if constexpr (std::is_same_v<T, bool>) {
    const std::string s = lower(text);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    return std::nullopt;
  } else {
    const auto v = whole_number<T>(text);
    if constexpr (std::is_floating_point_v<T>)
      if (v && !std::isfinite(*v)) return std::nullopt;
    return v;
  }
}

template <class T>
const char* param_kind() {
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  if constexpr (std::is_same_v<T, bool>) return "true or false";
  if constexpr (std::is_floating_point_v<T>) return "a number";
  if constexpr (std::is_unsigned_v<T>) return "a non-negative integer";
  return "an integer";
}

template std::optional<std::string> parse_param<std::string>(const std::string&);
template std::optional<double> parse_param<double>(const std::string&);
template std::optional<int64_t> parse_param<int64_t>(const std::string&);
template std::optional<int32_t> parse_param<int32_t>(const std::string&);
template std::optional<uint64_t> parse_param<uint64_t>(const std::string&);
template std::optional<bool> parse_param<bool>(const std::string&);
template const char* param_kind<std::string>();
template const char* param_kind<double>();
template const char* param_kind<int64_t>();
template const char* param_kind<int32_t>();
template const char* param_kind<uint64_t>();
template const char* param_kind<bool>();

Params::Params(std::map<std::string, std::string> v, std::string w)
    : values(std::move(v)), where(std::move(w)) {}

Params& Params::operator=(const Params& o) {
  if (this == &o) return *this;
  values = o.values;
  where = o.where;
  at = o.at;
  std::lock_guard<std::mutex> lock(mu_);
  asked_.clear();
  table_.clear();
  return *this;
}

void Params::record(ParamRow row) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& r : table_)
    if (r.key == row.key) return;
  table_.push_back(std::move(row));
}

std::vector<ParamRow> Params::table() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_;
}

const std::string* Params::find(const std::string& key) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) asked_.push_back(key);
  }
  auto it = values.find(key);
  return it == values.end() ? nullptr : &it->second;
}

std::string Params::get_choice(const std::string& key, const std::string& def,
                               const std::vector<std::string>& choices) const {
  std::string expected;
  for (size_t i = 0; i < choices.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  return get<std::string>(key, def, expected, [&](const std::string& v) {
    return std::find(choices.begin(), choices.end(), v) != choices.end();
  });
}

void Params::done(const std::string& component) const {
  std::vector<std::string> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken = asked_;
  }
  for (const auto& [k, v] : values) {
    if (std::find(taken.begin(), taken.end(), k) != taken.end()) continue;
    std::string list;
    for (const auto& t : taken) list += (list.empty() ? "" : ", ") + t;
    fail(k, "unknown parameter; " + component + " takes " +
                (list.empty() ? std::string("no parameters") : list));
  }
}

std::string Params::key_path(const std::string& key) const {
  if (const auto it = at.find(key); it != at.end()) return it->second;
  return where.empty() ? key : where + "." + key;
}

void Params::fail(const std::string& key, const std::string& reason) const {
  throw InputError(key_path(key) + ": " + reason);
}

}  // namespace isim
