// Strict YAML input: the one reader for every YAML file a user writes (experiment, sweep and
// plan specs, trace generator configs, model and GPU specs; profiles share its helpers).
//
// Contract:
// - Every error is an InputError "FILE:LINE: key.path: reason", LINE being the 1-based line
//   yaml-cpp marked on the node at fault ("FILE: key.path: reason" where it marked none, e.g. a
//   node built in code). Front ends print it and exit 2 (core/input_error.h).
// - load_yaml_file: "FILE: cannot open[ WHAT]: <system reason>", or "FILE:LINE: <yaml>:
//   <parser message>" when the text is not YAML. The file is opened by core/input_file.h (a
//   directory, device or FIFO is refused by name, the size capped). Text nested more than
//   kMaxYamlNesting levels (core/yaml_depth.h) is "FILE:LINE: <yaml>: nested more than 100
//   levels deep (lists or maps inside each other); expected at most 100 levels", checked before
//   yaml-cpp parses it. parse_yaml_value reads one-line text (a `-p`
//   value) and reports "ORIGIN: <yaml>: <parser message>". Both refuse text that is not UTF-8
//   ("<yaml>: invalid UTF-8 at column C (byte 0xFF); expected UTF-8 text"), which yaml-cpp
//   would pass into strings that JSON writers then refuse.
// - YamlMap: constructing one checks that the node is a map whose keys are strings, none
//   repeated ("duplicate key"), each one of `valid` ("unknown key; valid keys: a, b, c").
//   Reads are typed: "expected WHAT, got 'TEXT'" (or got a list, a map, nothing (null)); a
//   required key that is absent is "missing (expected WHAT)", reported at the map's line.
// - read_as<T> and check_keys are the same checks on a bare node; T is one of std::string,
//   double, int64_t, int32_t, uint64_t, bool, as yaml-cpp converts scalars. A double must be
//   finite: .nan and .inf are "expected WHAT (a finite number), got '.nan'", so no range check
//   downstream ever sees one.
// - yaml_key reads a map key: a null or non-scalar key (`? :`, `[a]: 1`) is "keys must be
//   strings, got ..."; no reader calls yaml-cpp's as<> on a key.
// - YamlOrigins names where nodes built from the command line came from: while one is alive on
//   a thread, yaml_where describes a node added to it (or lying inside one) as "ORIGIN: key"
//   (e.g. "-p arrival.rate=-1: arrival.rate") instead of by the spec's file and line.
// - count_yaml_documents counts the documents of a text without YAML::LoadAll, which spins
//   forever, allocating, on text such as "," (yaml-cpp 0.7): its parser then hands out an endless
//   run of empty documents at one position, and those count once. It throws YAML::Exception
//   when the text is not YAML (the caller words the error).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace isim {

// "FILE:LINE: key" (LINE from the node's mark when it has one, else "FILE: key").
std::string yaml_where(const std::string& file, const YAML::Node& n, const std::string& key);

// What a node is, for "got ..." messages: 'text', the quoted string "text", a list, a map,
// nothing (null).
std::string yaml_describe(const YAML::Node& n);

// "parent.key", or "key" at the root (parent "").
std::string yaml_key_path(const std::string& parent, const std::string& key);

// The scalar text of map key `k`, in the map at dotted `path` ("" for the document).
std::string yaml_key(const YAML::Node& k, const std::string& file, const std::string& path);

// Where command-line values came from (contract above). Scopes nest; each forgets, when it
// ends, what was added while it lived. Not copyable: it lives on the stack of one thread.
class YamlOrigins {
 public:
  YamlOrigins();
  ~YamlOrigins();
  YamlOrigins(const YamlOrigins&) = delete;
  YamlOrigins& operator=(const YamlOrigins&) = delete;
  // `n` (and every node inside it) came from `origin`, e.g. "-p seed=2" or "--rate 3".
  void add(const YAML::Node& n, const std::string& origin);

 private:
  size_t begin_;
};

// The origin a live YamlOrigins scope gave `n` (or a node holding it); nullptr when `n` came
// from the file.
const std::string* yaml_origin(const YAML::Node& n);

// Reads and parses a file. `what` names it in "cannot open WHAT" (e.g. "model file"; "" for
// just "cannot open").
YAML::Node load_yaml_file(const std::string& path, const std::string& what = "");

// Parses one-line YAML text such as a `-p key=value` value; `origin` prefixes the error.
YAML::Node parse_yaml_value(const std::string& text, const std::string& origin);

// The offset of the first byte of `text` that does not start valid UTF-8 (overlong forms, UTF-16
// surrogates and code points past U+10FFFF are invalid), or std::string::npos when all of it is.
size_t invalid_utf8_at(std::string_view text);
// The offset of the first control character (below 0x20 but tab, LF and CR; or 0x7F), which
// YAML does not allow in its text, or std::string::npos.
size_t control_char_at(std::string_view text);
// Throws InputError "ORIGIN:LINE: <yaml>: invalid UTF-8 at column C (byte 0xFF); expected UTF-8
// text" ("ORIGIN: <yaml>: ..." without `with_line`) unless `text` is UTF-8, and "...: control
// character at column C (byte 0x00); ..." at a control character (yaml-cpp turned a NUL into a
// byte that is not UTF-8: found by tests/fuzz, target generator).
void require_utf8(const std::string& text, const std::string& origin, bool with_line = true);

// How many YAML documents `text` holds (see the contract above).
int count_yaml_documents(const std::string& text);

// Throws InputError unless `n` is a map of string keys, none repeated, all in `valid`; `path`
// is the map's dotted key ("" for the document).
void check_keys(const YAML::Node& n, const std::string& file, const std::string& path,
                const std::vector<std::string>& valid);

// The scalar `n` as T; InputError "FILE:LINE: key: expected EXPECTED, got ..." otherwise.
template <class T>
T read_as(const YAML::Node& n, const std::string& file, const std::string& key,
          const std::string& expected);

// One map of a YAML file, read key by key.
class YamlMap {
 public:
  // `not_map` replaces "a map" in the error for a node that is not one.
  YamlMap(YAML::Node node, std::string file, std::string path, std::vector<std::string> valid,
          const std::string& not_map = "a map");

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }
  const std::vector<std::string>& valid() const { return valid_; }

  bool has(const std::string& key) const { return static_cast<bool>(value(key)); }
  // The value of `key`, or an undefined node (false in a condition) when it is absent.
  YAML::Node value(const std::string& key) const;
  // The value of `key`; InputError "missing (expected EXPECTED)" when it is absent.
  YAML::Node need(const std::string& key, const std::string& expected) const;

  std::string key_path(const std::string& key) const { return yaml_key_path(path_, key); }
  // "FILE:LINE: path.key" at the key's value, or at this map when the key is absent.
  std::string where(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& reason) const;

  template <class T>
  T get(const std::string& key, T def, const std::string& expected) const {
    const YAML::Node n = value(key);
    return n ? read_as<T>(n, file_, key_path(key), expected) : def;
  }
  template <class T>
  T require(const std::string& key, const std::string& expected) const {
    return read_as<T>(need(key, expected), file_, key_path(key), expected);
  }

  // The map under `key` (required; `expected` for the missing message, default "a map with
  // keys ...").
  YamlMap map(const std::string& key, std::vector<std::string> valid,
              const std::string& expected = "") const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::vector<std::string> valid_;
};

}  // namespace isim
