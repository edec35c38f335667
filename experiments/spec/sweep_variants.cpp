#include "experiments/spec/sweep_variants.h"

#include <cctype>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/strict_yaml.h"

namespace isim::exp {

namespace {

constexpr const char* kVariants = "variants";
constexpr const char* kShape = "{name: NAME, set: {dotted.key: value, ...}}";
constexpr const char* kSet = "a map of dotted keys to values, e.g. {cluster.roles: mixed}";

int line_of(const YAML::Node& n) {
  return n && n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
}

// The node as one line of YAML flow text, which apply_override parses back to the same node.
std::string flow_text(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

// `a` and `b` name the same key, or one lies below the other.
bool overlaps(const std::string& a, const std::string& b) {
  return a == b || b.rfind(a + ".", 0) == 0 || a.rfind(b + ".", 0) == 0;
}

// One `set` entry of a variant: a dotted key as `sweep:` takes it, and any YAML value.
void parse_set_key(const YAML::Node& k, const YAML::Node& value, const std::string& file,
                   const std::string& set_path, SweepVariant& v) {
  const auto key = yaml_key(k, file, set_path);
  const std::string at = yaml_where(file, k, set_path + "." + key);
  if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
    throw InputError(at + ": expected a dotted key such as cluster.roles");
  const auto head = key.substr(0, key.find('.'));
  if (head == "policy" || head == "policies")
    throw InputError(at + ": policies are swept by listing them under policies:, not by a variant");
  if (head == "sweep" || head == "plot" || head == "name")
    throw InputError(at + ": '" + head + "' cannot be set by a variant");
  for (const auto& [seen, text] : v.set)
    if (seen == key) throw InputError(at + ": duplicate key");
  v.set.emplace_back(key, flow_text(value));
  v.lines.push_back(line_of(k));
}

SweepVariant parse_variant(const YAML::Node& n, const std::string& file, const std::string& path) {
  const YamlMap m(n, file, path, {"name", "set"}, std::string("a map ") + kShape);
  SweepVariant v;
  v.name = m.require<std::string>("name", "a variant name");
  if (v.name.empty() || v.name.find_first_of("\r\n\"") != std::string::npos)
    m.fail("name", "expected a non-empty name without quotes or newlines");
  const YAML::Node set = m.need("set", kSet);
  if (!set.IsMap())
    throw InputError(m.where("set") + ": expected " + kSet + ", got " + yaml_describe(set));
  if (set.size() == 0) m.fail("set", "empty; a variant sets at least one key");
  for (const auto& kv : set) parse_set_key(kv.first, kv.second, file, m.key_path("set"), v);
  return v;
}

std::string entry_path(size_t i) {
  return fmt::format("sweep.variants[{}]", i);
}

}  // namespace

bool is_variants(const SweepAxis& ax) {
  return ax.key == kVariants;
}

SweepAxis parse_sweep_variants(const YAML::Node& k, const YAML::Node& list,
                               const std::string& file) {
  SweepAxis ax;
  ax.key = kVariants;
  ax.line = line_of(k);
  const std::string expected = std::string(": expected a non-empty list of ") + kShape;
  if (!list.IsSequence())
    throw InputError(yaml_where(file, list.IsNull() ? k : list, "sweep.variants") + expected +
                     ", got " + yaml_describe(list));
  if (list.size() == 0) throw InputError(yaml_where(file, list, "sweep.variants") + expected);
  for (size_t i = 0; i < list.size(); ++i) {
    SweepVariant v = parse_variant(list[i], file, entry_path(i));
    for (size_t j = 0; j < ax.variants.size(); ++j)
      if (ax.variants[j].name == v.name)
        throw InputError(yaml_where(file, list[i]["name"], entry_path(i) + ".name") + ": '" +
                         v.name + "' is also the name of " + entry_path(j));
    ax.values.push_back(v.name);
    ax.variants.push_back(std::move(v));
  }
  return ax;
}

void check_variant_keys(const std::vector<SweepAxis>& axes, const std::string& file) {
  for (const auto& ax : axes) {
    if (!is_variants(ax)) continue;
    for (size_t i = 0; i < ax.variants.size(); ++i) {
      const auto& v = ax.variants[i];
      for (size_t j = 0; j < v.set.size(); ++j)
        for (const auto& other : axes)
          if (!is_variants(other) && overlaps(v.set[j].first, other.key))
            throw InputError(fmt::format(
                "{}{}.set.{}: sweep.{} sweeps this key too; a key is set by variants or swept, "
                "not both",
                sweep_at(file, v.lines[j]), entry_path(i), v.set[j].first, other.key));
    }
  }
}

void check_plain_overrides(const std::vector<SweepAxis>& axes,
                           const std::vector<std::string>& keys) {
  for (const auto& ax : axes) {
    if (!is_variants(ax)) continue;
    for (size_t i = 0; i < ax.variants.size(); ++i)
      for (const auto& [set_key, text] : ax.variants[i].set)
        for (const auto& key : keys)
          if (overlaps(key, set_key))
            throw InputError(fmt::format(
                "-p {}: {}.set.{} sets this key ({}); change it in the variants instead", key,
                entry_path(i), set_key, ax.variants[i].name));
  }
}

std::string axis_column(const SweepAxis& ax) {
  return is_variants(ax) ? "variant" : ax.key;
}

Overrides axis_overrides(const SweepAxis& ax, size_t i) {
  if (is_variants(ax)) return ax.variants.at(i).set;
  return {{ax.key, ax.values.at(i)}};
}

std::vector<std::string> axis_keys(const SweepAxis& ax) {
  if (!is_variants(ax)) return {ax.key};
  std::vector<std::string> keys;
  for (const auto& v : ax.variants)
    for (const auto& [k, text] : v.set) keys.push_back(k);
  return keys;
}

YAML::Node axis_yaml(const SweepAxis& ax) {
  YAML::Node list(YAML::NodeType::Sequence);
  if (!is_variants(ax)) {
    for (const auto& v : ax.values) list.push_back(v);
    return list;
  }
  for (const auto& v : ax.variants) {
    YAML::Node entry;
    entry["name"] = v.name;
    entry["set"] = YAML::Node(YAML::NodeType::Map);
    for (const auto& [k, text] : v.set) entry["set"][k] = YAML::Load(text);
    list.push_back(entry);
  }
  return list;
}

void check_axis_value(const SweepAxis& ax, size_t i, const std::string& file,
                      const ParseOverrides& parse) {
  const Overrides all = axis_overrides(ax, i);
  std::string whole;  // the error of all the value's overrides together
  try {
    parse(all);
    return;
  } catch (const InputError& ex) {
    whole = ex.what();
  }
  // The first key whose overrides so far fail; the last one when only all of them together do.
  size_t bad = all.size() - 1;
  std::string msg = whole;
  for (size_t n = 1; n < all.size(); ++n) {
    try {
      parse(Overrides(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n)));
    } catch (const InputError& ex) {
      bad = n - 1;
      msg = ex.what();
      break;
    }
  }
  const auto& [key, text] = all[bad];
  const bool variant = is_variants(ax);
  const std::string name = variant ? entry_path(i) + ".set." + key : "sweep." + key;
  const std::string at = !ax.origin.empty()
                             ? ax.origin + ": "
                             : sweep_at(file, variant ? ax.variants[i].lines[bad] : ax.line);
  throw InputError(
      fmt::format("{}{} = {}: {}", at, name, text, strip_origin(msg, file, kv_text(key, text))));
}

std::string sweep_at(const std::string& file, int line) {
  std::string s = file;
  if (line > 0) {
    s += ':';
    s += std::to_string(line);
  }
  s += ": ";
  return s;
}

std::string kv_text(const std::string& key, const std::string& value) {
  std::string s = key;
  s += '=';
  s += value;
  return s;
}

std::string strip_origin(const std::string& msg, const std::string& file, const std::string& kv) {
  std::string rest = msg;
  std::string p = "-p " + kv;
  p += ": ";
  if (rest.rfind(p, 0) == 0) return rest.substr(p.size());
  if (rest.rfind(file, 0) == 0) {
    size_t i = file.size();
    if (i < rest.size() && rest[i] == ':') {
      size_t j = i + 1;
      while (j < rest.size() && std::isdigit(static_cast<unsigned char>(rest[j]))) ++j;
      if (j > i + 1 && j < rest.size() && rest[j] == ':') i = j;
      if (i + 1 < rest.size() && rest[i] == ':' && rest[i + 1] == ' ') return rest.substr(i + 2);
    }
  }
  return rest;
}

}  // namespace isim::exp
