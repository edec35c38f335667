// How an error message shows a JSON value that a reader rejected: the one helper every trace
// reader uses (json_lines::shown is this function).
//
// Contract: shown(v) never serialises more than kShownChars characters of v and never recurses,
// so a value nested 200,000 deep or a string of a gigabyte costs a few dozen bytes and no stack.
// - A value whose compact JSON text fits in kShownChars is shown as that text (`-3`, `"a"`,
//   `[1,2]`, `{}`), as before.
// - A longer one is shown by its type and the first kShownChars characters of its text:
//   `an array of 1 element: [[[[...`, `an object of 3 keys: {"a":...`, `a string of 70000
//   bytes: "xxxx...`. Invalid UTF-8 inside strings is replaced, not an error.
// Works for nlohmann::json and nlohmann::ordered_json alike.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace isim {

inline constexpr std::size_t kShownChars = 40;

namespace json_shown_detail {

// The text of a scalar, a string cut to `limit` bytes first (so a huge one is never copied whole).
template <class Json>
std::string scalar_text(const Json& v, std::size_t limit) {
  if (v.is_string()) {
    const auto& s = v.template get_ref<const std::string&>();
    const Json cut(s.size() > limit ? s.substr(0, limit) : s);
    return cut.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <class Json>
std::string key_text(const std::string& key, std::size_t limit) {
  return scalar_text(Json(key.size() > limit ? key.substr(0, limit) : key), limit);
}

// Compact JSON text of v, cut once it passes `limit` characters; `complete` says whether it
// holds all of v. Iterative: the stack grows by one frame per character written, at most.
template <class Json>
std::string text_prefix(const Json& v, std::size_t limit, bool& complete) {
  struct Frame {
    const Json* j;
    typename Json::const_iterator it;
  };
  std::string out;
  std::vector<Frame> stack;
  auto open = [&](const Json& x) {
    if (x.is_array() || x.is_object()) {
      out += x.is_array() ? '[' : '{';
      stack.push_back({&x, x.cbegin()});
    } else {
      out += scalar_text(x, limit);
    }
  };
  open(v);
  while (!stack.empty() && out.size() <= limit) {
    Frame& f = stack.back();
    if (f.it == f.j->cend()) {
      out += f.j->is_array() ? ']' : '}';
      stack.pop_back();
      continue;
    }
    if (f.it != f.j->cbegin()) out += ',';
    if (f.j->is_object()) out += key_text<Json>(f.it.key(), limit) + ':';
    const Json& child = *f.it;
    ++f.it;  // before open(), which may reallocate the stack and leave `f` dangling
    open(child);
  }
  complete = stack.empty() && out.size() <= limit;
  return out;
}

template <class Json>
std::string type_of(const Json& v) {
  const std::size_t n = v.is_string() ? v.template get_ref<const std::string&>().size() : v.size();
  if (v.is_array()) return fmt::format("an array of {} element{}", n, n == 1 ? "" : "s");
  if (v.is_object()) return fmt::format("an object of {} key{}", n, n == 1 ? "" : "s");
  if (v.is_string()) return fmt::format("a string of {} byte{}", n, n == 1 ? "" : "s");
  return "a number";
}

}  // namespace json_shown_detail

template <class Json>
std::string shown(const Json& v) {
  bool complete = false;
  std::string s = json_shown_detail::text_prefix(v, kShownChars, complete);
  if (complete) return s;
  std::size_t cut = kShownChars;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole chars
  s.resize(cut);
  return json_shown_detail::type_of(v) + ": " + s + "...";
}

}  // namespace isim
