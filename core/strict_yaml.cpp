#include "core/strict_yaml.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <unistd.h>
#include <fstream>
#include <sstream>
#include <type_traits>
#include <utility>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include "core/input_error.h"
#include "core/input_file.h"
#include "core/yaml_depth.h"

namespace isim {

namespace {

// Records where each document starts; the content is not needed.
class DocumentStarts : public YAML::EventHandler {
 public:
  int last_start = -1;
  void OnDocumentStart(const YAML::Mark& m) override { last_start = m.pos; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The 1-based number of the first of lines 1..`last` whose indentation holds a tab; 0 if none.
int tab_indented_line(const std::string& text, int last) {
  int line = 1;
  for (size_t i = 0; i < text.size() && line <= last; ++line) {
    const size_t end = std::min(text.find('\n', i), text.size());
    const size_t body = text.find_first_not_of(" \t", i);
    if (text.find('\t', i) < std::min(body, end)) return line;
    i = end + 1;
  }
  return 0;
}

// "ORIGIN:LINE: <yaml>: message" (`with_line`) or "ORIGIN: <yaml>: message"; when a line up to
// the one at fault indents with a tab, the message says so (unless the parser's words do).
YAML::Node parse(const std::string& text, const std::string& origin, bool with_line) {
  require_utf8(text, origin, with_line);
  const std::string too_deep = "nested more than " + std::to_string(kMaxYamlNesting) +
                               " levels deep (lists or maps inside each other); expected at most " +
                               std::to_string(kMaxYamlNesting) + " levels";
  if (const size_t line = yaml_too_deep_line(text); line > 0)
    throw InputError(origin + (with_line ? ":" + std::to_string(line) : "") +
                     ": <yaml>: " + too_deep);
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {  // a nesting the scan above undercounted
    std::string at = origin;
    if (with_line && e.mark.line >= 0) at += ":" + std::to_string(e.mark.line + 1);
    throw InputError(at + ": <yaml>: " + too_deep);
  } catch (const YAML::Exception& e) {
    std::string at = origin;
    if (with_line && e.mark.line >= 0) at += ":" + std::to_string(e.mark.line + 1);
    std::string hint;
    const int tab =
        e.msg.find("tab") == std::string::npos ? tab_indented_line(text, e.mark.line + 1) : 0;
    if (tab > 0)
      hint = "; line " + std::to_string(tab) + " indents with a tab (YAML indents with spaces)";
    throw InputError(at + ": <yaml>: " + e.msg + hint);
  }
}

// The nodes of the live YamlOrigins scopes on this thread, with their origins.
thread_local std::vector<std::pair<YAML::Node, std::string>> t_origins;

bool within(const YAML::Node& tree, const YAML::Node& n) {
  if (tree.is(n)) return true;
  if (tree.IsMap()) {
    for (const auto& kv : tree)
      if (within(kv.first, n) || within(kv.second, n)) return true;
  } else if (tree.IsSequence()) {
    for (const auto& x : tree)
      if (within(x, n)) return true;
  }
  return false;
}

const std::string* origin_of(const YAML::Node& n) {
  if (!n.IsDefined()) return nullptr;
  for (auto it = t_origins.rbegin(); it != t_origins.rend(); ++it)
    if (within(it->first, n)) return &it->second;
  return nullptr;
}

}  // namespace

const std::string* yaml_origin(const YAML::Node& n) { return origin_of(n); }

YamlOrigins::YamlOrigins() : begin_(t_origins.size()) {}

YamlOrigins::~YamlOrigins() { t_origins.resize(begin_); }

void YamlOrigins::add(const YAML::Node& n, const std::string& origin) {
  if (n.IsDefined()) t_origins.emplace_back(n, origin);
}

std::string yaml_key(const YAML::Node& k, const std::string& file, const std::string& path) {
  if (!k.IsScalar())
    throw InputError(yaml_where(file, k, path.empty() ? "(document)" : path) +
                     ": keys must be strings, got " + yaml_describe(k));
  return k.Scalar();
}

std::string yaml_where(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (const std::string* origin = origin_of(n)) return *origin + ": " + key;
  std::string s = file;
  if (n && n.Mark().line >= 0) {
    s += ':';
    s += std::to_string(n.Mark().line + 1);
  }
  s += ": ";
  s += key;
  return s;
}

std::string yaml_describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "nothing (null)";
    case YAML::NodeType::Scalar:
      if (n.Tag() == "!") return "the quoted string \"" + n.Scalar() + "\"";
      return "'" + n.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Undefined:
      break;
  }
  return "an undefined node";
}

std::string yaml_key_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  if (::access(path.c_str(), F_OK) != 0)
    throw InputError(path + ": cannot open" + (what.empty() ? "" : " " + what) + ": " +
                     std::strerror(errno));
  return parse(read_input_file(path, what.empty() ? "a YAML file" : "a YAML " + what), path, true);
}

YAML::Node parse_yaml_value(const std::string& text, const std::string& origin) {
  return parse(text, origin, false);
}

size_t invalid_utf8_at(std::string_view text) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = b[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Lead byte: the length and the range of the second byte (no overlong forms, no UTF-16
    // surrogates, nothing past U+10FFFF).
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n || b[i + 1] < lo || b[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (b[i + k] < 0x80 || b[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string::npos;
}

size_t control_char_at(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) return i;
  }
  return std::string::npos;
}

void require_utf8(const std::string& text, const std::string& origin, bool with_line) {
  const size_t bad_utf8 = invalid_utf8_at(text);
  const size_t control = control_char_at(text);
  const size_t bad = std::min(bad_utf8, control);
  if (bad == std::string::npos) return;
  const size_t line_start = bad == 0 ? std::string::npos : text.rfind('\n', bad - 1);
  const size_t column = line_start == std::string::npos ? bad + 1 : bad - line_start;
  std::string at = origin;
  if (with_line)
    at += ":" + std::to_string(1 + std::count(text.begin(),
                                              text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
  char byte[8];
  const auto code = static_cast<unsigned>(static_cast<unsigned char>(text[bad]));
  std::snprintf(byte, sizeof byte, "0x%02X", code);
  if (bad == control)
    throw InputError(at + ": <yaml>: control character at column " + std::to_string(column) +
                     " (byte " + byte + "); YAML text holds no control characters but tab, " +
                     "line feed and carriage return");
  throw InputError(at + ": <yaml>: invalid UTF-8 at column " + std::to_string(column) + " (byte " +
                   byte + "); expected UTF-8 text");
}

int count_yaml_documents(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  int count = 0, previous = -1;
  // Each real document starts past the one before; a repeat is the parser stuck (see header).
  while (parser.HandleNextDocument(starts)) {
    if (count > 0 && starts.last_start == previous) break;
    previous = starts.last_start;
    ++count;
  }
  return count;
}

void check_keys(const YAML::Node& n, const std::string& file, const std::string& path,
                const std::vector<std::string>& valid) {
  const std::string self = path.empty() ? "(document)" : path;
  if (!n.IsMap())
    throw InputError(yaml_where(file, n, self) + ": expected a map, got " + yaml_describe(n));
  std::vector<std::string> seen;
  for (const auto& kv : n) {
    const std::string k = yaml_key(kv.first, file, path);
    const std::string at = yaml_where(file, kv.first, yaml_key_path(path, k));
    if (std::find(valid.begin(), valid.end(), k) == valid.end())
      throw InputError(at + ": unknown key; valid keys: " + joined(valid));
    if (std::find(seen.begin(), seen.end(), k) != seen.end())
      throw InputError(at + ": duplicate key");
    seen.push_back(k);
  }
}

template <class T>
T read_as(const YAML::Node& n, const std::string& file, const std::string& key,
          const std::string& expected) {
  try {
    if (n.IsScalar()) {
      const T v = n.as<T>();
      if constexpr (std::is_same_v<T, std::string>) {
        // yaml-cpp can hand back bytes that are not UTF-8 (it turned a NUL into a lone 0x85);
        // whatever reads a string gets UTF-8 or an error naming the key.
        if (invalid_utf8_at(v) != std::string::npos)
          throw InputError(yaml_where(file, n, key) + ": expected " + expected +
                           " in UTF-8, got bytes that are not UTF-8");
      }
      if constexpr (std::is_same_v<T, double>) {
        if (!std::isfinite(v))
          throw InputError(yaml_where(file, n, key) + ": expected " + expected +
                           " (a finite number), got " + yaml_describe(n));
      }
      return v;
    }
  } catch (const YAML::Exception&) {
  }
  throw InputError(yaml_where(file, n, key) + ": expected " + expected + ", got " +
                   yaml_describe(n));
}

template std::string read_as<std::string>(const YAML::Node&, const std::string&, const std::string&,
                                          const std::string&);
template double read_as<double>(const YAML::Node&, const std::string&, const std::string&,
                                const std::string&);
template int64_t read_as<int64_t>(const YAML::Node&, const std::string&, const std::string&,
                                  const std::string&);
template uint64_t read_as<uint64_t>(const YAML::Node&, const std::string&, const std::string&,
                                    const std::string&);
template int32_t read_as<int32_t>(const YAML::Node&, const std::string&, const std::string&,
                                  const std::string&);
template bool read_as<bool>(const YAML::Node&, const std::string&, const std::string&,
                            const std::string&);

YamlMap::YamlMap(YAML::Node node, std::string file, std::string path,
                 std::vector<std::string> valid, const std::string& not_map)
    : node_(std::move(node)),
      file_(std::move(file)),
      path_(std::move(path)),
      valid_(std::move(valid)) {
  if (!node_.IsMap())
    throw InputError(yaml_where(file_, node_, path_.empty() ? "(document)" : path_) +
                     ": expected " + not_map + ", got " + yaml_describe(node_));
  check_keys(node_, file_, path_, valid_);
}

YAML::Node YamlMap::value(const std::string& key) const {
  const YAML::Node& n = node_;  // const: reading never adds the key
  return n[key];
}

YAML::Node YamlMap::need(const std::string& key, const std::string& expected) const {
  YAML::Node n = value(key);
  if (!n) fail(key, "missing (expected " + expected + ")");
  return n;
}

std::string YamlMap::where(const std::string& key) const {
  const YAML::Node n = value(key);
  return yaml_where(file_, n ? n : node_, key_path(key));
}

void YamlMap::fail(const std::string& key, const std::string& reason) const {
  throw InputError(where(key) + ": " + reason);
}

YamlMap YamlMap::map(const std::string& key, std::vector<std::string> valid,
                     const std::string& expected) const {
  const std::string what = expected.empty() ? "a map with keys " + joined(valid) : expected;
  return YamlMap(need(key, what), file_, key_path(key), std::move(valid), what);
}

}  // namespace isim
