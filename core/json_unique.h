// parse_json_unique: the one JSON parser every reader of user JSON goes through (trace lines,
// InferCept and Weka files, Hugging Face config.json, vLLM meta.json, shard journals), so that an
// object with the same key twice is refused instead of silently resolved (nlohmann keeps the
// last value; an ordered_json keeps the first).
//
// Contract: parse_json_unique<Json>(text, origin, first_line) parses `text` as one JSON value
// (nlohmann::json or nlohmann::ordered_json) and returns it. If any object in it (at any depth)
// has a key twice, it throws InputError
//   `ORIGIN:L2: <json>: key "K" appears twice in one object (line L1 column C1, line L2 column
//   C2); each key may appear once`
// where L1/C1 is the first occurrence's opening quote and L2/C2 the second's; lines count from
// `first_line` (a JSON-lines reader passes the line's number), columns from 1 in bytes.
// Syntax errors are nlohmann's parse_error, left to the caller to word. on_event(depth, event)
// is called for every parser event (a caller's depth limit throws from it); it never sees keys
// already refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "core/json_shown.h"

namespace isim {

namespace json_unique_detail {

// A forward iterator over the text that records the furthest byte the parser has read, so that
// the key callback knows where the key it was just given ends.
struct CountingIt {
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* p = nullptr;
  const char** furthest = nullptr;
  reference operator*() const { return *p; }
  CountingIt& operator++() {
    ++p;
    if (p > *furthest) *furthest = p;
    return *this;
  }
  CountingIt operator++(int) {
    CountingIt before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIt& o) const { return p == o.p; }
  bool operator!=(const CountingIt& o) const { return p != o.p; }
};

// The opening quote of the key whose closing quote is text[close].
inline size_t key_start(std::string_view text, size_t close) {
  for (size_t i = close; i-- > 0;) {
    if (text[i] != '"') continue;
    size_t slashes = 0;
    while (slashes < i && text[i - 1 - slashes] == '\\') ++slashes;
    if (slashes % 2 == 0) return i;
  }
  return 0;
}

struct Place {
  int64_t line;
  int64_t column;
};

inline Place place(std::string_view text, size_t at, int64_t first_line) {
  int64_t line = first_line;
  size_t line_start = 0;
  for (size_t i = 0; i < at && i < text.size(); ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return {line, static_cast<int64_t>(at - line_start) + 1};
}

}  // namespace json_unique_detail

template <class Json, class OnEvent>
Json parse_json_unique(std::string_view text, const std::string& origin, int64_t first_line,
                       OnEvent&& on_event) {
  using json_unique_detail::CountingIt;
  const char* furthest = text.data();
  const CountingIt first{text.data(), &furthest};
  const CountingIt last{text.data() + text.size(), &furthest};
  std::vector<std::unordered_map<std::string, size_t>> frames;  // per open object: key -> start
  size_t open = 0;
  auto cb = [&](int depth, typename Json::parse_event_t event, Json& parsed) -> bool {
    using E = typename Json::parse_event_t;
    if (event == E::object_start) {
      if (frames.size() <= open) frames.emplace_back();
      frames[open++].clear();
    } else if (event == E::object_end) {
      if (open > 0) --open;
    } else if (event == E::key && open > 0) {
      const size_t close = static_cast<size_t>(furthest - text.data()) - 1;
      const size_t start = json_unique_detail::key_start(text, close);
      auto [it, fresh] = frames[open - 1].emplace(parsed.template get<std::string>(), start);
      if (!fresh) {
        const auto a = json_unique_detail::place(text, it->second, first_line);
        const auto b = json_unique_detail::place(text, start, first_line);
        throw InputError(fmt::format(
            "{}:{}: <json>: key {} appears twice in one object (line {} column {}, line {} "
            "column {}); each key may appear once",
            origin, b.line, shown(parsed), a.line, a.column, b.line, b.column));
      }
    }
    on_event(depth, event);
    return true;
  };
  return Json::parse(first, last, cb);
}

template <class Json>
Json parse_json_unique(std::string_view text, const std::string& origin, int64_t first_line = 1) {
  return parse_json_unique<Json>(text, origin, first_line,
                                 [](int, typename Json::parse_event_t) {});
}

}  // namespace isim
