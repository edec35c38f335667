// The disaggregation parts of `cluster:` (experiments/spec/cluster_spec.h): links, the split rule,
// role switching, P:D text, and creating a planner by name.
#include <cmath>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/spec/cluster_spec.h"
#include "policies/planners.h"

namespace isim::exp {

namespace {

// "a, b or c"
std::string alternatives(const std::vector<std::string>& choices) {
  std::string s;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) s += i + 1 == choices.size() ? " or " : ", ";
    s += choices[i];
  }
  return s;
}

// The value of `key` in `m`, which must be one of `choices`.
std::string one_of(const YamlMap& m, const std::string& key,
                   const std::vector<std::string>& choices) {
  const std::string expected = alternatives(choices);
  const auto v = m.require<std::string>(key, expected);
  for (const auto& c : choices)
    if (c == v) return v;
  m.fail(key, "expected " + expected + ", got '" + v + "'");
}

// A finite number of `m` at `key`, >= 0 (or > 0 when `positive`).
double number(const YamlMap& m, const std::string& key, double def, bool positive,
              const std::string& unit) {
  const char* bound = positive ? "> 0" : ">= 0";
  const double v = m.get<double>(key, def, std::string("a number ") + bound + " (" + unit + ")");
  if (!std::isfinite(v) || (positive ? !(v > 0) : !(v >= 0)))
    m.fail(key, std::string("must be ") + bound);
  return v;
}

std::string num(double v) {
  return fmt::format("{}", v);
}

const std::vector<std::string> kLinkKinds = {"nvlink", "infiniband", "roce"};
const std::vector<std::string> kTransfers = {"whole", "layer"};
const std::vector<std::string> kSplitModes = {"always", "threshold"};
const std::vector<std::string> kPausedKv = {"keep", "drop", "move"};
const std::vector<std::string> kResumeKv = {"fetch", "recompute"};

// One link: a map whose keys refine `l` (the default of its kind of place).
cluster::LinkSpec parse_link(const YamlMap& links, const std::string& key, cluster::LinkSpec l) {
  if (!links.has(key)) return l;
  const YamlMap m = links.map(key, {"kind", "gbps", "latency_us"});
  if (m.has("kind")) l.kind = one_of(m, "kind", kLinkKinds);
  l.gbps = number(m, "gbps", l.gbps, true, "GB/s");
  if (m.has("latency_us")) l.latency_s = number(m, "latency_us", 0, false, "microseconds") / 1e6;
  return l;
}

void parse_links(const YamlMap& cl, cluster::LinksConfig& l) {
  if (!cl.has("links")) return;
  const YamlMap m = cl.map("links", {"replicas_per_node", "intra_node", "inter_node", "transfer"});
  l.replicas_per_node = m.get<int32_t>("replicas_per_node", l.replicas_per_node, "an integer >= 1");
  if (l.replicas_per_node < 1) m.fail("replicas_per_node", "must be >= 1");
  l.intra_node = parse_link(m, "intra_node", l.intra_node);
  l.inter_node = parse_link(m, "inter_node", l.inter_node);
  if (m.has("transfer")) l.transfer = one_of(m, "transfer", kTransfers);
}

// `split: always`, `split: threshold` or {mode, threshold_tokens}; threshold_tokens alone
// means mode threshold.
void parse_split(const YamlMap& cl, cluster::SplitConfig& s) {
  const YAML::Node n = cl.value("split");
  if (!n) return;
  const std::string expected = "always, threshold or {mode, threshold_tokens, resume_kv}";
  if (n.IsScalar()) {
    s.mode = read_as<std::string>(n, cl.file(), cl.key_path("split"), expected);
    for (const auto& m : kSplitModes)
      if (m == s.mode) return;
    cl.fail("split", "expected " + expected + ", got '" + s.mode + "'");
  }
  const YamlMap m = cl.map("split", {"mode", "threshold_tokens", "resume_kv"}, expected);
  if (m.has("resume_kv")) s.resume_kv = one_of(m, "resume_kv", kResumeKv);
  if (m.has("mode")) {
    s.mode = one_of(m, "mode", kSplitModes);
  } else if (m.has("threshold_tokens")) {
    s.mode = "threshold";
  }
  if (!m.has("threshold_tokens")) return;
  if (s.mode != "threshold")
    m.fail("threshold_tokens",
           "applies to mode threshold only (" + m.key_path("mode") + " is " + s.mode + ")");
  s.threshold_tokens = m.require<int64_t>("threshold_tokens", "an integer >= 0 (uncached tokens)");
  if (s.threshold_tokens < 0) m.fail("threshold_tokens", "must be >= 0");
}

void parse_switching(const YamlMap& cl, cluster::SwitchConfig& s) {
  if (!cl.has("switching")) return;
  const YamlMap m = cl.map("switching", {"cost_s", "drain_first", "paused_kv", "restart"});
  s.cost_s = number(m, "cost_s", s.cost_s, false, "seconds");
  s.drain_first = m.get<bool>("drain_first", s.drain_first, "true or false");
  if (m.has("paused_kv")) s.paused_kv = one_of(m, "paused_kv", kPausedKv);
  s.restart = m.get<bool>("restart", s.restart, "true or false");
  // A restarted worker drains first: restart implies drain_first, and contradicts its `false`.
  if (s.restart && m.has("drain_first") && !s.drain_first)
    m.fail("drain_first",
           "must be true when " + m.key_path("restart") + " is (a restarted worker drains first)");
  if (s.restart) s.drain_first = true;
}

YAML::Node resolved_link(const cluster::LinkSpec& l) {
  YAML::Node y;
  y["kind"] = l.kind;
  y["gbps"] = num(l.gbps);
  // Microseconds to the nanosecond, so that 3 reads back as 3 (not 3.0000000000000004).
  y["latency_us"] = num(std::round(l.latency_s * 1e9) / 1e3);
  return y;
}

// The whole number `t`, or nothing (digits only, at most 9 of them).
std::optional<int32_t> whole(const std::string& t) {
  if (t.empty() || t.size() > 9) return std::nullopt;
  int32_t v = 0;
  for (char ch : t) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = v * 10 + (ch - '0');
  }
  return v;
}

}  // namespace

std::optional<std::pair<int32_t, int32_t>> parse_pd_split(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const auto p = whole(text.substr(0, colon));
  const auto d = whole(text.substr(colon + 1));
  if (!p || !d) return std::nullopt;
  return std::make_pair(*p, *d);
}

std::vector<cluster::Role> pd_ratio_roles(int32_t p, int32_t d, int32_t n) {
  const double share = static_cast<double>(n) * p / (static_cast<double>(p) + d);
  int64_t prefill = std::llround(share);
  prefill = std::max<int64_t>(1, std::min<int64_t>(prefill, n - 1));
  std::vector<cluster::Role> roles(static_cast<size_t>(n), cluster::Role::kDecode);
  for (int64_t i = 0; i < prefill; ++i) roles[static_cast<size_t>(i)] = cluster::Role::kPrefill;
  return roles;
}

// A tier: {capacity_gib, gbps, latency_us}, each refining the default.
void parse_tier(const YamlMap& m, const std::string& key, cluster::TierSpec& t) {
  if (!m.has(key)) return;
  const YamlMap x = m.map(key, {"capacity_gib", "gbps", "latency_us"});
  t.capacity_gib = number(x, "capacity_gib", t.capacity_gib, false, "GiB; 0: no such tier");
  t.link.gbps = number(x, "gbps", t.link.gbps, true, "GB/s");
  if (x.has("latency_us"))
    t.link.latency_s = number(x, "latency_us", 0, false, "microseconds") / 1e6;
}

void parse_tiers(const YamlMap& cl, cluster::KvTiersConfig& t) {
  if (!cl.has("kv_tiers")) return;
  const YamlMap m = cl.map("kv_tiers", {"node_cpu", "pool", "fetch_threshold_tokens"});
  parse_tier(m, "node_cpu", t.node_cpu);
  parse_tier(m, "pool", t.pool);
  t.fetch_threshold_tokens =
      m.get<int64_t>("fetch_threshold_tokens", t.fetch_threshold_tokens, "an integer >= 0");
  if (t.fetch_threshold_tokens < 0) m.fail("fetch_threshold_tokens", "must be >= 0");
}

YAML::Node resolved_tier(const cluster::TierSpec& t) {
  YAML::Node y;
  y["capacity_gib"] = num(t.capacity_gib);
  y["gbps"] = num(t.link.gbps);
  y["latency_us"] = num(t.link.latency_s * 1e6);
  return y;
}

void parse_disagg_settings(const YamlMap& cl, cluster::DisaggConfig& d) {
  parse_links(cl, d.links);
  parse_split(cl, d.split);
  parse_switching(cl, d.switching);
  parse_tiers(cl, d.tiers);
}

void resolved_links(const cluster::LinksConfig& l, YAML::Node& out) {
  out["links"]["replicas_per_node"] = l.replicas_per_node;
  out["links"]["intra_node"] = resolved_link(l.intra_node);
  out["links"]["inter_node"] = resolved_link(l.inter_node);
}

void resolved_tiers(const cluster::DisaggConfig& d, YAML::Node& out) {
  resolved_links(d.links, out);
  out["kv_tiers"]["node_cpu"] = resolved_tier(d.tiers.node_cpu);
  out["kv_tiers"]["pool"] = resolved_tier(d.tiers.pool);
  out["kv_tiers"]["fetch_threshold_tokens"] = d.tiers.fetch_threshold_tokens;
}

void resolved_disagg_settings(const cluster::DisaggConfig& d, YAML::Node& out) {
  resolved_links(d.links, out);
  out["links"]["transfer"] = d.links.transfer;
  out["split"]["mode"] = d.split.mode;
  if (d.split.mode == "threshold") out["split"]["threshold_tokens"] = d.split.threshold_tokens;
  out["split"]["resume_kv"] = d.split.resume_kv;
  out["switching"]["cost_s"] = num(d.switching.cost_s);
  out["switching"]["drain_first"] = d.switching.drain_first;
  out["switching"]["paused_kv"] = d.switching.paused_kv;
  out["switching"]["restart"] = d.switching.restart;
}

std::unique_ptr<cluster::Planner> make_planner(const std::string& name, const Params& params,
                                               const std::string& where) {
  return policy::planner_registry().create(name, where, params);
}

}  // namespace isim::exp
