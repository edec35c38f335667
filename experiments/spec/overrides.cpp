// `-p key=value` and `--add key=value` (experiment.h states the contract).
#include <string>
#include <utility>
#include <vector>

#include "core/input_error.h"
#include "core/params.h"
#include "core/strict_yaml.h"
#include "experiments/spec/experiment.h"

namespace isim::exp {

namespace {

// Keys whose scalar value is short for a map with one field: `policy: swap` is
// {name: swap}, `cluster.split: always` is {mode: always}.
const std::pair<const char*, const char*> kShorthands[] = {
    {"policy", "name"},
    {"cluster.router", "name"},
    {"cluster.planner", "name"},
    {"cluster.split", "mode"},
};

// Maps whose keys are names the user chose, not keys of the spec's schema: a key that is not
// there yet is a new entry, which only `--add` (or `-p +key=value`) may create.
const char* const kCollections[] = {"deployments", "sweep"};

// Lists whose scalar elements are short for {name: ELEMENT}: `-p policies.2.estimator=oracle`.
const char* const kNamedLists[] = {"policies", "routers"};

struct Override {
  std::string key;
  std::vector<std::string> parts;
  YAML::Node value;
  std::string origin;
  bool add = false;
};

Override parse_override(const std::string& kv, const std::string& origin) {
  Override o;
  o.add = !kv.empty() && kv.front() == '+';
  const std::string text = o.add ? kv.substr(1) : kv;
  o.origin = !origin.empty() ? origin : (o.add ? "--add " : "-p ") + text;
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(o.origin + ": expected key=value (e.g. arrival.rate=2)");
  o.key = text.substr(0, eq);
  for (size_t start = 0;;) {
    auto dot = o.key.find('.', start);
    o.parts.push_back(o.key.substr(start, dot == std::string::npos ? dot : dot - start));
    if (o.parts.back().empty()) throw InputError(o.origin + ": empty key component");
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  o.value = parse_yaml_value(text.substr(eq + 1), o.origin);
  return o;
}

// When `key` lies below `path` and the spec gives `path` as a scalar, that scalar becomes
// {field: scalar}, so that `-p policy.estimator=history` refines `policy: min-waste`.
void expand_shorthand(YAML::Node& root, const std::string& key, const std::string& path,
                      const std::string& field) {
  if (key.rfind(path + ".", 0) != 0) return;
  YAML::Node parent = root;
  std::string last = path;
  for (auto dot = last.find('.'); dot != std::string::npos; dot = last.find('.')) {
    const YAML::Node next = std::as_const(parent)[last.substr(0, dot)];  // reading adds no key
    if (!next || !next.IsMap()) return;
    parent.reset(next);
    last = last.substr(dot + 1);
  }
  const YAML::Node v = std::as_const(parent)[last];
  if (!v || !v.IsScalar()) return;
  YAML::Node m(YAML::NodeType::Map);
  m[field] = v.Scalar();
  parent[last] = m;
}

// Records that the key `part` of map `m`, and its value, came from `origin`.
void note_entry(const YAML::Node& m, const std::string& part, const std::string& origin,
                YamlOrigins* origins) {
  if (!origins) return;
  for (const auto& e : m)
    if (e.first.IsScalar() && e.first.Scalar() == part) {
      origins->add(e.first, origin);
      origins->add(e.second, origin);
    }
}

bool has_key(const YAML::Node& m, const std::string& k) {
  for (const auto& e : m)
    if (e.first.IsScalar() && e.first.Scalar() == k) return true;
  return false;
}

std::string joined(const std::vector<std::string>& parts, size_t from, size_t to) {
  std::string s;
  for (size_t i = from; i < to; ++i) s += (i > from ? "." : "") + parts[i];
  return s;
}

std::string keys_of(const YAML::Node& m) {
  std::string s;
  for (const auto& e : m)
    if (e.first.IsScalar()) s += (s.empty() ? "" : ", ") + e.first.Scalar();
  return s.empty() ? "none" : s;
}

template <size_t N>
bool listed(const char* const (&names)[N], const std::string& path) {
  for (const char* n : names)
    if (path == n) return true;
  return false;
}

// The key of map `m` that the components parts[i..] name: the longest run of them that is an
// existing key (so `slo.ttft_s.p99` finds the key `ttft_s.p99`), else parts[i] alone. Advances i.
std::pair<std::string, bool> map_key(const YAML::Node& m, const std::vector<std::string>& parts,
                                     size_t& i) {
  for (size_t j = parts.size(); j > i; --j) {
    std::string k = joined(parts, i, j);
    if (has_key(m, k)) {
      i = j;
      return {k, true};
    }
  }
  return {parts[i++], false};
}

// The index that component `part` names in list `l` at `path`: 0..size-1, or size to append
// under --add.
size_t list_index(const YAML::Node& l, const std::string& part, const std::string& path,
                  const Override& o) {
  const auto idx = parse_param<uint64_t>(part);
  const size_t n = l.size();
  const size_t limit = o.add ? n : (n == 0 ? 0 : n - 1);
  if (idx && *idx <= limit && (n > 0 || o.add)) return *idx;
  std::string range = n == 0 ? "it is empty" : "indices 0.." + std::to_string(n - 1);
  throw InputError(
      o.origin + ": '" + path + "' is a list (" + range + "); got '" + part + "'" +
      (o.add ? ""
             : "; to append an element use --add " + path + "." + std::to_string(n) + "=VALUE"));
}

// The node below `cur` at component `part` for a path that goes on; created (a map) when absent.
YAML::Node descend_map(YAML::Node cur, const std::string& part, const std::string& path,
                       const Override& o, YamlOrigins* origins) {
  YAML::Node next = cur[part];
  if (!next || next.IsNull()) {
    cur[part] = YAML::Node(YAML::NodeType::Map);
    note_entry(cur, part, o.origin, origins);
    next = cur[part];
  }
  if (!next.IsMap() && !next.IsSequence())
    throw InputError(o.origin + ": '" + path + "' is " + yaml_describe(next) +
                     ", not a map or a list");
  return next;
}

}  // namespace

void check_override_root(const YAML::Node& root, const std::string& file, const std::string& kv) {
  if (!root.IsMap())
    throw InputError(yaml_where(file, root, "(document)") + ": expected a map of keys for -p " +
                     kv + " to set, got " + yaml_describe(root));
}

void apply_overrides(YAML::Node& root, const std::string& file,
                     const std::vector<std::string>& overrides, YamlOrigins& origins) {
  for (const auto& o : overrides) {
    check_override_root(root, file, o);
    apply_override(root, o, &origins);
  }
}

void apply_override(YAML::Node& root, const std::string& kv, YamlOrigins* origins,
                    const std::string& origin) {
  const Override o = parse_override(kv, origin);
  if (!root.IsMap())
    throw InputError(o.origin + ": expected a spec that is a map of keys, got " +
                     yaml_describe(root));
  // One policy named on the command line replaces the list of policies.
  if (o.key == "policy") root.remove("policies");
  for (const auto& [path, field] : kShorthands) expand_shorthand(root, o.key, path, field);
  // Likewise an executor parameter turns `executor: NAME` into {name: NAME, ...}.
  if (o.key.rfind("executor.", 0) == 0 && o.key != "executor.name" &&
      (!root["executor"] || root["executor"].IsScalar())) {
    YAML::Node m(YAML::NodeType::Map);
    m["name"] = root["executor"] ? root["executor"].as<std::string>() : std::string("sim");
    root["executor"] = m;
  }
  YAML::Node cur = root;
  std::string path;  // the components walked so far
  for (size_t i = 0; i < o.parts.size();) {
    if (cur.IsSequence()) {
      const std::string part = o.parts[i++];
      const size_t at = list_index(cur, part, path, o);
      path += "." + part;
      if (i == o.parts.size()) {
        if (at == cur.size())
          cur.push_back(o.value);
        else
          cur[at] = o.value;
        if (origins) origins->add(cur[at], o.origin);
        return;
      }
      if (at == cur.size()) cur.push_back(YAML::Node(YAML::NodeType::Map));
      YAML::Node el = cur[at];
      const std::string list = path.substr(0, path.rfind('.'));
      if (el.IsScalar() && listed(kNamedLists, list)) {
        YAML::Node m(YAML::NodeType::Map);
        m["name"] = el.Scalar();
        cur[at] = m;
        el.reset(cur[at]);
      }
      if (!el.IsMap() && !el.IsSequence())
        throw InputError(o.origin + ": '" + path + "' is " + yaml_describe(el) +
                         ", not a map or a list");
      cur.reset(el);
      continue;
    }
    const auto [part, exists] = map_key(cur, o.parts, i);
    const std::string here = path.empty() ? part : path + "." + part;
    if (!exists && !o.add && listed(kCollections, path) && here != "sweep.variants")
      throw InputError(o.origin + ": " + path + " has no entry '" + part + "' (entries: " +
                       keys_of(cur) + "); to add one, use --add " + o.key + "=...");
    if (i == o.parts.size()) {
      cur[part] = o.value;
      note_entry(cur, part, o.origin, origins);
      return;
    }
    cur.reset(descend_map(cur, part, here, o, origins));
    path = here;
  }
}

}  // namespace isim::exp
