#include "sim/profile.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>
#include <system_error>

#include "sim/cost_model.h"
#include "traces/input_error.h"
#include "traces/strict_yaml.h"

namespace isim::sim {
namespace {

constexpr std::string_view kSchema = "isim-profile/1";
using Names = std::vector<std::string_view>;
const Names kDtypes = {"fp16", "bf16", "fp32", "fp8"};
const Names kSources = {"measured", "imported", "analytic", "published"};

std::string join(const Names& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

bool contains(const Names& names, std::string_view s) {
  for (const auto& n : names) {
    if (n == s) return true;
  }
  return false;
}

std::string child(const std::string& parent, std::string_view key) {
  return yaml_key_path(parent, std::string(key));
}

std::string element(const std::string& parent, std::size_t i) {
  return fmt::format("{}[{}]", parent, i);
}

// What a node is, for "expected X, got Y" messages.
std::string kind(const YAML::Node& n) {
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
enum class Bound { kPositive, kNonNegative };

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

const Names kTopKeys = {"schema",  "provenance", "device",    "model", "kv", "saturation_tokens",
                        "forward", "swap",       "validation"};
const Names kValidationKeys = {"batch", "predicted_ms", "measured_ms"};
const Names kDeviceKeys = {"name", "memory_gib"};
const Names kModelKeys = {"name", "layers", "hidden", "heads",  "kv_heads", "head_dim",
                          "ffn",  "vocab",  "dtype",  "params", "tp"};
const Names kKvKeys = {"block_tokens"};
const Names kForwardKeys = {"linear", "tables"};
const Names kLinearKeys = {"base_ms", "slope_ms_per_token"};
const Names kTablesKeys = {"dense_us",   "decode_attention_us", "prefill_attention_us",
                           "lm_head_us", "overhead_us",         "prefill_interpolation"};
const Names kSwapKeys = {"h2d", "d2h", "duplex_factor", "per_copy_overhead_us"};

void read_provenance(const Reader& r, const MapNode& top, Profile& p) {
  const std::string expected = "a map of strings with at least source";
  const MapNode m = r.map(r.need(top, "provenance", expected), "provenance", expected);
  for (const auto& [key, value] : m.entries) {
    p.provenance.emplace_back(key, r.text(value, child("provenance", key)));
  }
  const auto source = Reader::find(m, "source");
  if (!source)
    r.fail("provenance.source", fmt::format("missing (expected one of {})", join(kSources)));
  if (!contains(kSources, p.provenance_value("source"))) {
    r.fail(*source, "provenance.source",
           fmt::format("unknown source '{}' (valid: {})", p.provenance_value("source"),
                       join(kSources)));
  }
}

void read_model(const Reader& r, const MapNode& top, ModelShape& model) {
  const MapNode m = r.section(top, "model", kModelKeys);
  model.name = r.name(m, "name");
  model.layers = r.count(m, "layers");
  model.hidden = r.count(m, "hidden");
  model.heads = r.count(m, "heads");
  model.kv_heads = r.count(m, "kv_heads");
  model.head_dim = r.count(m, "head_dim");
  model.ffn = r.count(m, "ffn");
  model.vocab = r.count(m, "vocab");
  const YAML::Node dtype = r.need(m, "dtype", fmt::format("one of {}", join(kDtypes)));
  model.dtype = r.text(dtype, "model.dtype");
  if (!contains(kDtypes, model.dtype)) {
    r.fail(dtype, "model.dtype",
           fmt::format("unknown dtype '{}' (valid: {})", model.dtype, join(kDtypes)));
  }
  model.params = r.number(m, "params", Bound::kPositive, "a parameter count");
  model.tp = r.count(m, "tp");
}

void read_forward(const Reader& r, const MapNode& top, Profile& p) {
  const MapNode f = r.section(top, "forward", kForwardKeys);
  const auto linear = Reader::find(f, "linear");
  const auto tables = Reader::find(f, "tables");
  if (linear.has_value() == tables.has_value()) {
    r.fail(
        f.node, "forward",
        fmt::format("expected exactly one of linear, tables, got {}", linear ? "both" : "neither"));
  }
  if (linear) {
    p.form = ForwardForm::kLinear;
    const MapNode m = r.section(f, "linear", kLinearKeys);
    p.linear.base_ms = r.number(m, "base_ms", Bound::kNonNegative, "a time");
    p.linear.slope_ms_per_token = r.number(m, "slope_ms_per_token", Bound::kNonNegative, "a time");
    return;
  }
  p.form = ForwardForm::kTables;
  const MapNode m = r.section(f, "tables", kTablesKeys);
  TablesForward& t = p.tables;
  t.dense_us =
      r.curve(m, "dense_us", "tokens", Bound::kPositive, "us", Bound::kNonNegative, "a time");
  t.decode_attention_us = r.grid(m, "decode_attention_us", "sequences", Bound::kPositive,
                                 "kv_tokens", Bound::kNonNegative);
  t.prefill_attention_us = r.grid(m, "prefill_attention_us", "chunk", Bound::kPositive, "kv_tokens",
                                  Bound::kNonNegative);
  t.lm_head_us =
      r.curve(m, "lm_head_us", "sequences", Bound::kPositive, "us", Bound::kNonNegative, "a time");
  t.overhead_us = r.number(m, "overhead_us", Bound::kNonNegative, "a time");
  for (const auto& [k, v] : m.entries) {
    if (k != "prefill_interpolation") continue;
    const std::string path = m.path + ".prefill_interpolation";
    t.prefill_interpolation = r.text(v, path);
    if (t.prefill_interpolation != "time" && t.prefill_interpolation != "per_pair")
      r.fail(v, path,
             fmt::format("'{}': expected time or per_pair", t.prefill_interpolation));
  }
}

void read_swap(const Reader& r, const MapNode& top, SwapSpec& s) {
  const MapNode m = r.section(top, "swap", kSwapKeys);
  s.h2d_gbps =
      r.curve(m, "h2d", "bytes", Bound::kPositive, "gbps", Bound::kPositive, "a bandwidth");
  s.d2h_gbps =
      r.curve(m, "d2h", "bytes", Bound::kPositive, "gbps", Bound::kPositive, "a bandwidth");
  s.duplex_factor = r.number(m, "duplex_factor", Bound::kPositive, "a bandwidth multiplier");
  if (s.duplex_factor > 1) {
    r.fail(*Reader::find(m, "duplex_factor"), "swap.duplex_factor",
           fmt::format("must be at most 1 (both directions at once never go faster), got {}",
                       s.duplex_factor));
  }
  s.per_copy_overhead_us = r.number(m, "per_copy_overhead_us", Bound::kNonNegative, "a time");
}

Profile read_document(const Reader& r, const YAML::Node& root) {
  const MapNode top = r.map(root, "", fmt::format("a map with keys {}", join(kTopKeys)));
  const auto schema = Reader::find(top, "schema");
  if (!schema) r.fail("schema", fmt::format("missing (expected {})", kSchema));
  if (!schema->IsScalar() || schema->Scalar() != kSchema) {
    r.fail(*schema, "schema", fmt::format("unsupported {} (expected {})", kind(*schema), kSchema));
  }
  r.only(top, kTopKeys);

  Profile p;
  read_provenance(r, top, p);
  const MapNode device = r.section(top, "device", kDeviceKeys);
  p.device.name = r.name(device, "name");
  p.device.memory_gib = r.number(device, "memory_gib", Bound::kPositive, "a size");
  read_model(r, top, p.model);
  const MapNode kv = r.section(top, "kv", kKvKeys);
  p.block_tokens = r.count(kv, "block_tokens");
  p.saturation_tokens = r.count64(top, "saturation_tokens");
  read_forward(r, top, p);
  read_swap(r, top, p.swap);
  if (const auto v = Reader::find(top, "validation")) {
    const std::string expected = "a list of {batch, predicted_ms, measured_ms}";
    if (!v->IsSequence())
      r.fail(*v, "validation", fmt::format("expected {}, got {}", expected, kind(*v)));
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string path = element("validation", i);
      const MapNode m = r.map((*v)[i], path, "a map with keys batch, predicted_ms, measured_ms");
      r.only(m, kValidationKeys);
      ValidationPoint pt;
      pt.batch = r.name(m, "batch");
      pt.predicted_ms = r.number(m, "predicted_ms", Bound::kNonNegative, "a time");
      pt.measured_ms = r.number(m, "measured_ms", Bound::kPositive, "a time");
      p.validation.push_back(pt);
    }
  }
  return p;
}

// ---- writing ----

std::string num(double v) {
  return fmt::format("{}", v);
}

bool plain_char(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view(" _-./()+,=").find(static_cast<char>(c)) != std::string_view::npos;
}

// True when `s` reads back as the same string written as a YAML plain scalar.
bool plain_safe(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return false;
  const unsigned char first = static_cast<unsigned char>(s.front());
  if (first == ' ' || first == '-' || first == ',' || s.back() == ' ') return false;
  for (const char c : s) {
    if (!plain_char(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string scalar(const std::string& s) {
  if (plain_safe(s)) return s;
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02X}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

std::string list(const std::vector<double>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    out += num(v[i]);
  }
  return out + "]";
}

void write_curve(std::string& out, std::string_view indent, std::string_view key,
                 std::string_view xkey, std::string_view ykey, const Curve1D& c) {
  fmt::format_to(std::back_inserter(out), "{}{}:\n{}  {}: {}\n{}  {}: {}\n", indent, key, indent,
                 xkey, list(c.x), indent, ykey, list(c.y));
}

void write_grid(std::string& out, std::string_view indent, std::string_view key,
                std::string_view xkey, std::string_view ykey, const Grid2D& g) {
  fmt::format_to(std::back_inserter(out), "{}{}:\n{}  {}: {}\n{}  {}: {}\n{}  us:\n", indent, key,
                 indent, xkey, list(g.x), indent, ykey, list(g.y), indent);
  for (std::size_t i = 0; i < g.x.size(); ++i) {
    const auto begin = g.z.begin() + static_cast<std::ptrdiff_t>(i * g.y.size());
    const std::vector<double> row(begin, begin + static_cast<std::ptrdiff_t>(g.y.size()));
    fmt::format_to(std::back_inserter(out), "{}    - {}\n", indent, list(row));
  }
}

std::string to_yaml(const Profile& p) {
  std::string out;
  auto w = std::back_inserter(out);
  fmt::format_to(w, "schema: {}\n", kSchema);
  if (p.provenance.empty()) {
    out += "provenance: {}\n";
  } else {
    out += "provenance:\n";
    for (const auto& [key, value] : p.provenance) {
      fmt::format_to(w, "  {}: {}\n", scalar(key), scalar(value));
    }
  }
  fmt::format_to(w, "device:\n  name: {}\n  memory_gib: {}\n", scalar(p.device.name),
                 num(p.device.memory_gib));
  const ModelShape& m = p.model;
  fmt::format_to(w,
                 "model:\n  name: {}\n  layers: {}\n  hidden: {}\n  heads: {}\n  kv_heads: {}\n"
                 "  head_dim: {}\n  ffn: {}\n  vocab: {}\n  dtype: {}\n  params: {}\n  tp: {}\n",
                 scalar(m.name), m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn,
                 m.vocab, scalar(m.dtype), num(m.params), m.tp);
  fmt::format_to(w, "kv:\n  block_tokens: {}\nsaturation_tokens: {}\nforward:\n", p.block_tokens,
                 p.saturation_tokens);
  if (p.form == ForwardForm::kLinear) {
    fmt::format_to(w, "  linear:\n    base_ms: {}\n    slope_ms_per_token: {}\n",
                   num(p.linear.base_ms), num(p.linear.slope_ms_per_token));
  } else {
    const TablesForward& t = p.tables;
    out += "  tables:\n";
    write_curve(out, "    ", "dense_us", "tokens", "us", t.dense_us);
    write_grid(out, "    ", "decode_attention_us", "sequences", "kv_tokens", t.decode_attention_us);
    write_grid(out, "    ", "prefill_attention_us", "chunk", "kv_tokens", t.prefill_attention_us);
    write_curve(out, "    ", "lm_head_us", "sequences", "us", t.lm_head_us);
    fmt::format_to(w, "    overhead_us: {}\n", num(t.overhead_us));
    if (t.prefill_interpolation != "time")
      fmt::format_to(w, "    prefill_interpolation: {}\n", t.prefill_interpolation);
  }
  out += "swap:\n";
  write_curve(out, "  ", "h2d", "bytes", "gbps", p.swap.h2d_gbps);
  write_curve(out, "  ", "d2h", "bytes", "gbps", p.swap.d2h_gbps);
  fmt::format_to(w, "  duplex_factor: {}\n  per_copy_overhead_us: {}\n", num(p.swap.duplex_factor),
                 num(p.swap.per_copy_overhead_us));
  if (!p.validation.empty()) {
    out += "validation:\n";
    for (const ValidationPoint& v : p.validation)
      fmt::format_to(w, "  - batch: {}\n    predicted_ms: {}\n    measured_ms: {}\n",
                     scalar(v.batch), num(v.predicted_ms), num(v.measured_ms));
  }
  return out;
}

std::string bytes_text(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kGiB = kMiB * 1024.0;
  if (bytes >= kGiB) return fmt::format("{:.3g} GiB", bytes / kGiB);
  if (bytes >= kMiB) return fmt::format("{:.3g} MiB", bytes / kMiB);
  if (bytes >= 1024.0) return fmt::format("{:.3g} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

// The curve's bandwidth for one copy of `bytes`, marked when it lies outside the measured grid.
std::string bandwidth_at(const Curve1D& gbps, int64_t bytes) {
  bool outside = false;
  const double v = gbps.eval(static_cast<double>(bytes), &outside);
  return fmt::format("{:.4g} GB/s{}", v, outside ? " (extrapolated)" : "");
}

}  // namespace

int ModelShape::dtype_bytes() const {
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "fp32") return 4;
  if (dtype == "fp8") return 1;
  throw InputError(
      fmt::format("model.dtype: unknown dtype '{}' (valid: {})", dtype, join(kDtypes)));
}

int64_t ModelShape::kv_bytes_per_token() const {
  return int64_t{2} * layers * kv_heads * head_dim * dtype_bytes() / tp;
}

double ModelShape::weight_bytes_per_gpu() const {
  return params * dtype_bytes() / tp;
}

std::string Profile::provenance_value(const std::string& key) const {
  for (const auto& [k, v] : provenance) {
    if (k == key) return v;
  }
  return "";
}

double Profile::validation_mean_abs_error() const {
  if (validation.empty()) return 0;
  double sum = 0;
  for (const ValidationPoint& v : validation) sum += std::abs(v.error());
  return sum / static_cast<double>(validation.size());
}

bool Profile::operator==(const Profile& o) const {
  const bool same = provenance == o.provenance && device == o.device && model == o.model &&
                    block_tokens == o.block_tokens && saturation_tokens == o.saturation_tokens &&
                    form == o.form && swap == o.swap && validation == o.validation;
  if (!same) return false;
  // Only the active forward form is part of a profile (it is all that gets written).
  return form == ForwardForm::kLinear ? linear == o.linear : tables == o.tables;
}

Profile parse_profile(const std::string& yaml_text, const std::string& origin) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml_text);
  } catch (const YAML::Exception& e) {
    if (e.mark.line >= 0) {
      throw InputError(fmt::format("{}:{}: invalid YAML: {}", origin, e.mark.line + 1, e.msg));
    }
    throw InputError(fmt::format("{}: invalid YAML: {}", origin, e.msg));
  }
  if (docs.size() != 1) {
    throw InputError(fmt::format("{}: expected one YAML document, found {}", origin, docs.size()));
  }
  return read_document(Reader(origin), docs.front());
}

Profile load_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: read failed", path));
  Profile p = parse_profile(text.str(), path);
  p.path = path;
  return p;
}

void write_profile(std::ostream& os, const Profile& p) {
  os << to_yaml(p);
}

void write_profile_file(const std::string& path, const Profile& p) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(fmt::format("{}: cannot open for writing", path));
  write_profile(out, p);
  out.flush();
  if (!out) throw InputError(fmt::format("{}: write failed", path));
}

std::string describe_profile(const Profile& p) {
  const CostModel cm(p);
  const ModelShape& m = p.model;
  std::string out;
  auto w = std::back_inserter(out);
  fmt::format_to(w, "profile: {}\n", p.path.empty() ? "(in memory)" : p.path);
  out += "provenance:";
  for (const auto& [key, value] : p.provenance) fmt::format_to(w, " {}={}", key, scalar(value));
  out += "\n";
  fmt::format_to(w, "device: {}, {} GiB\n", p.device.name, num(p.device.memory_gib));
  fmt::format_to(w,
                 "model: {}, {} layers, hidden {}, {} heads ({} KV) x {}, ffn {}, vocab {}, {}, "
                 "{:.4g} params, tp {}\n",
                 m.name, m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.vocab,
                 m.dtype, m.params, m.tp);
  const int64_t per_token = m.kv_bytes_per_token();
  const int64_t per_block = per_token * p.block_tokens;
  fmt::format_to(w, "weights: {} per GPU\n", bytes_text(m.weight_bytes_per_gpu()));
  fmt::format_to(w, "kv: {} bytes per token ({}), {} tokens per block = {} bytes ({})\n", per_token,
                 bytes_text(static_cast<double>(per_token)), p.block_tokens, per_block,
                 bytes_text(static_cast<double>(per_block)));
  if (p.form == ForwardForm::kLinear) {
    fmt::format_to(w, "forward: linear, T(x) = {} ms + {} ms/token * x\n", num(p.linear.base_ms),
                   num(p.linear.slope_ms_per_token));
  } else {
    const TablesForward& t = p.tables;
    fmt::format_to(w,
                   "forward: tables per layer, dense {} points, decode attention {}x{}, prefill "
                   "attention {}x{}, lm_head {} points, overhead {} us\n",
                   t.dense_us.x.size(), t.decode_attention_us.x.size(),
                   t.decode_attention_us.y.size(), t.prefill_attention_us.x.size(),
                   t.prefill_attention_us.y.size(), t.lm_head_us.x.size(), num(t.overhead_us));
  }
  const int64_t s = p.saturation_tokens;
  fmt::format_to(w, "T(1) = {} ms, T({}) = {} ms (saturation), marginal a = {:.6g} ns/token\n",
                 num(static_cast<double>(cm.T(1)) / 1e6), s,
                 num(static_cast<double>(cm.T(s)) / 1e6), cm.marginal_ns_per_token());
  constexpr int64_t kMiB = int64_t{1} << 20;
  fmt::format_to(w, "swap: h2d {} at 1 MiB, {} at 64 MiB; d2h {} at 1 MiB, {} at 64 MiB\n",
                 bandwidth_at(p.swap.h2d_gbps, kMiB), bandwidth_at(p.swap.h2d_gbps, 64 * kMiB),
                 bandwidth_at(p.swap.d2h_gbps, kMiB), bandwidth_at(p.swap.d2h_gbps, 64 * kMiB));
  fmt::format_to(w, "      duplex factor {}, per-copy overhead {} us\n", num(p.swap.duplex_factor),
                 num(p.swap.per_copy_overhead_us));
  if (!p.validation.empty()) {
    fmt::format_to(w, "validation: {} batches, mean |error| {:.1f}%\n", p.validation.size(),
                   100 * p.validation_mean_abs_error());
    for (const ValidationPoint& v : p.validation)
      fmt::format_to(w, "  {}: predicted {} ms, measured {} ms, {:+.1f}%\n", v.batch,
                     num(v.predicted_ms), num(v.measured_ms), 100 * v.error());
  }
  return out;
}

}  // namespace isim::sim
