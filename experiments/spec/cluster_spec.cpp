#include "experiments/spec/cluster_spec.h"

#include "experiments/spec/engine_spec.h"
#include "experiments/spec/experiment.h"
#include "policies/kv_managers.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/input_error.h"
#include "policies/routers.h"

namespace isim::exp {

namespace {

const char* const kRoleNames = "prefill, decode or mixed";

void parse_router(const YamlMap& cl, ClusterSpec& c) {
  if (!cl.has("router")) return;
  read_named(cl, "router", "router", c.router, c.router_params);
  // Fail now, with the file's position: an unknown name or parameter.
  const std::string at = cl.where("router");
  policy::router_registry().get(c.router, at);
  policy::router_registry().create(c.router, at, c.router_params);
}

ReplicaGroup parse_group(const YAML::Node& n, const std::string& file, const std::string& key,
                         const std::string& base_dir, const sim::EngineConfig& engine,
                         const EngineReader& read_engine) {
  std::vector<std::string> keys = {"name", "count", "profile", "tp", "engine", "role"};
  for (const auto& k : knob_names<ParallelKnobs>()) keys.push_back(k);
  const YamlMap g(
      n, file, key, keys,
      "a map {name, count, profile, tp, engine, role, dp, ep, ep_overlap, expert_skew}");
  ReplicaGroup r;
  r.name = g.get<std::string>("name", "", "a string");
  r.count = g.require<int32_t>("count", "an integer >= 1");
  if (const std::string why = FleetKnobs::bound().check(r.count); !why.empty())
    g.fail("count", why);
  r.profile = resolve_spec_path(base_dir, g.get<std::string>("profile", "", "a profile YAML path"));
  r.tp = g.get<int32_t>("tp", 0, "an integer >= 1");
  if (g.has("tp") && r.tp < 1) g.fail("tp", "must be >= 1");
  parse_parallel_keys(g, r);
  if (int64_t{r.count} * r.par.dp > kMaxEngines)
    g.fail("dp",
           fmt::format("count x dp must be <= {} engine cores ({})", kMaxEngines, kEnginesWhy));
  r.engine = engine;
  if (g.has("engine")) {
    read_engine(g, "engine", r.engine);
    r.engine_overrides = YAML::Clone(g.value("engine"));
  }
  if (g.has("role")) {
    r.role_given = true;
    const auto role = g.require<std::string>("role", kRoleNames);
    if (role == "prefill") {
      r.role = cluster::Role::kPrefill;
    } else if (role == "decode") {
      r.role = cluster::Role::kDecode;
    } else if (role != "mixed") {
      g.fail("role", std::string("expected ") + kRoleNames + ", got '" + role + "'");
    }
  }
  return r;
}

struct RoleCounts {
  int32_t prefill = 0, decode = 0, mixed = 0;
};

// `roles:` as counts: {prefill, decode, mixed}, "P:D" or mixed; they sum to the replica count.
RoleCounts parse_role_counts(const YamlMap& cl, int32_t replicas) {
  const YAML::Node n = cl.value("roles");
  const std::string key = cl.key_path("roles");
  const std::string expected = "{prefill: P, decode: D, mixed: M}, \"P:D\" or mixed";
  RoleCounts rc;
  if (n.IsScalar()) {
    const std::string text = n.Scalar();
    if (text == "mixed") return {0, 0, replicas};
    const auto pd = parse_pd_split(text);
    if (!pd) cl.fail("roles", "expected " + expected + ", got '" + text + "'");
    rc.prefill = pd->first;
    rc.decode = pd->second;
  } else {
    const YamlMap m(n, cl.file(), key, {"prefill", "decode", "mixed"}, expected);
    for (auto [k, v] : {std::pair{"prefill", &rc.prefill}, std::pair{"decode", &rc.decode},
                        std::pair{"mixed", &rc.mixed}}) {
      *v = m.get<int32_t>(k, 0, "an integer >= 0");
      if (*v < 0) m.fail(k, "must be >= 0");
    }
  }
  const int64_t sum = int64_t{rc.prefill} + rc.decode + rc.mixed;
  if (sum != replicas)
    cl.fail("roles", fmt::format("expected prefill + decode + mixed = {} (the replica count), "
                                 "got {} + {} + {} = {}",
                                 replicas, rc.prefill, rc.decode, rc.mixed, sum));
  return rc;
}

// The roles, from `roles:` or the groups' `role:`; enabled when any is prefill or decode.
void parse_roles(const YamlMap& cl, ClusterSpec& c) {
  bool by_group = false;
  for (const auto& g : c.groups) by_group = by_group || g.role_given;
  if (by_group && cl.has("roles"))
    cl.fail("roles", "give the roles here or as role: in the replica groups, not both");
  std::vector<cluster::Role> roles;
  if (cl.has("roles")) {
    const RoleCounts rc = parse_role_counts(cl, c.replicas());
    roles.assign(static_cast<size_t>(rc.prefill), cluster::Role::kPrefill);
    roles.insert(roles.end(), static_cast<size_t>(rc.decode), cluster::Role::kDecode);
    roles.insert(roles.end(), static_cast<size_t>(rc.mixed), cluster::Role::kMixed);
  } else {
    for (const auto& g : c.groups) roles.insert(roles.end(), static_cast<size_t>(g.count), g.role);
  }
  int32_t prefill = 0, decode = 0;
  for (auto r : roles) {
    prefill += r == cluster::Role::kPrefill;
    decode += r == cluster::Role::kDecode;
  }
  if (prefill + decode == 0) return;
  if (prefill == 0 || decode == 0)
    cl.fail(by_group ? "replicas" : "roles",
            fmt::format("a disaggregated fleet needs at least one prefill and one decode "
                        "replica, got {} prefill and {} decode",
                        prefill, decode));
  c.disagg.enabled = true;
  c.disagg.roles = std::move(roles);
}

// `planner:`, created once so that a bad name or parameter fails before any run.
void parse_planner(const YamlMap& cl, ClusterSpec& c) {
  auto& d = c.disagg;
  if (!cl.has("planner")) return;
  read_named(cl, "planner", "planner", d.planner, d.planner_params);
  const std::string at = cl.where("planner");
  make_planner(d.planner, d.planner_params, at);
  if (d.planner != "static" && !d.enabled)
    cl.fail("planner", "needs a disaggregated fleet (cluster.roles)");
}

// Roles, links, split, switching and planner of a disaggregated fleet.
void resolved_disagg(const ClusterSpec& c, YAML::Node& r) {
  const auto& d = c.disagg;
  bool by_group = false;
  for (const auto& g : c.groups) by_group = by_group || g.role_given;
  if (!by_group) {
    RoleCounts rc;
    for (auto role : d.roles)
      ++(role == cluster::Role::kPrefill  ? rc.prefill
         : role == cluster::Role::kDecode ? rc.decode
                                          : rc.mixed);
    r["roles"]["prefill"] = rc.prefill;
    r["roles"]["decode"] = rc.decode;
    r["roles"]["mixed"] = rc.mixed;
  }
  resolved_disagg_settings(d, r);
  if (d.planner_params.empty()) {
    r["planner"] = d.planner;
  } else {
    r["planner"]["name"] = d.planner;
    for (const auto& [k, v] : d.planner_params.values) r["planner"][k] = v;
  }
}

}  // namespace

ClusterSpec parse_cluster(const YamlMap& root, const std::string& base_dir,
                          const sim::EngineConfig& engine, const EngineReader& read_engine) {
  ClusterSpec c;
  if (!root.has("cluster")) return c;
  c.given = true;
  const YamlMap cl = root.map("cluster", {"replicas", "router", "roles", "links", "split",
                                          "switching", "planner", "kv_tiers"});
  const YAML::Node reps = cl.value("replicas");
  if (!reps || reps.IsScalar()) {
    ReplicaGroup g;
    FleetKnobs f;
    KnobReader read{cl};
    f.knobs(read);
    g.count = f.replicas;
    g.engine = engine;
    c.groups.push_back(std::move(g));
  } else if (reps.IsSequence() && reps.size() > 0) {
    std::vector<std::string> names;
    for (size_t i = 0; i < reps.size(); ++i) {
      const std::string key = "cluster.replicas[" + std::to_string(i) + "]";
      c.groups.push_back(parse_group(reps[i], root.file(), key, base_dir, engine, read_engine));
      const std::string& nm = c.groups.back().name;
      if (nm.empty()) c.groups.back().name = "group" + std::to_string(i);
      for (const auto& other : names)
        if (other == c.groups.back().name)
          throw InputError(yaml_where(root.file(), reps[i], key + ".name") + ": '" + other +
                           "' names two groups");
      names.push_back(c.groups.back().name);
    }
  } else {
    cl.fail("replicas", "expected an integer >= 1 or a non-empty list of replica groups");
  }
  int64_t engines = 0;  // each group's count x dp is bounded; so is their sum
  for (const auto& g : c.groups) engines += int64_t{g.count} * g.par.dp;
  if (engines > kMaxEngines)
    cl.fail("replicas", fmt::format("the groups' count x dp sum to {} engine cores, more than {} "
                                    "({})",
                                    engines, kMaxEngines, kEnginesWhy));
  parse_router(cl, c);
  parse_roles(cl, c);
  for (size_t i = 0; i < c.groups.size(); ++i)
    if (c.disagg.enabled && c.groups[i].parallel())
      throw InputError(
          yaml_where(root.file(), reps[i], "cluster.replicas[" + std::to_string(i) + "].dp") +
          ": DP/EP groups in a disaggregated fleet are not simulated; give roles "
          "to groups without dp and ep");
  parse_disagg_settings(cl, c.disagg);
  parse_planner(cl, c);
  return c;
}

void parse_parallel_keys(const YamlMap& g, ReplicaGroup& r) {
  r.par.knobs(KnobReader{g});
}

void check_parallel_profile(const ReplicaGroup& grp, const sim::Profile& p,
                            const std::string& dp_at, const std::string& ep_at) {
  if (!grp.parallel()) return;
  const sim::ModelShape& m = p.model;
  if (!m.moe.given()) {
    if (grp.par.ep)
      throw InputError(
          fmt::format("{}: the profile's model {} is dense; expert parallelism "
                      "needs a MoE model (a dense model's DP cores are independent "
                      "replicas: drop ep)",
                      ep_at, m.name));
    return;
  }
  if (p.form != sim::ForwardForm::kTables ||
      (p.tables.moe_us.empty() && !p.tables.moe_roofline.given()))
    throw InputError(
        fmt::format("{}: a DP/EP group of MoE model {} needs a tables profile "
                    "with moe_us or moe_roofline",
                    dp_at, m.name));
  const int ranks = grp.par.dp * m.tp;
  if (grp.par.ep && m.moe.experts % ranks != 0)
    throw InputError(
        fmt::format("{}: {} experts do not divide over dp {} x tp {} = {} EP "
                    "ranks",
                    dp_at, m.moe.experts, grp.par.dp, m.tp, ranks));
}

sim::Profile group_profile(const ReplicaGroup& grp, sim::Profile p, const std::string& at) {
  if (!grp.parallel() || !p.model.moe.given()) return p;
  const int ranks = grp.par.dp * p.model.tp;
  if (p.model.ep > 1 && p.model.ep != ranks)
    throw InputError(
        fmt::format("{}: the profile was made for ep {} (model.ep), but the group "
                    "spreads the experts over dp {} x tp {} = {} ranks; give a "
                    "profile without model.ep or with ep {}",
                    at, p.model.ep, grp.par.dp, p.model.tp, ranks, ranks));
  p.model.ep = ranks;
  return p;
}

YAML::Node resolved_cluster(const ClusterSpec& c) {
  YAML::Node r;
  if (c.groups.size() == 1 && c.groups.front().name.empty()) {
    r["replicas"] = c.groups.front().count;
  } else {
    for (const auto& g : c.groups) {
      YAML::Node y;
      y["name"] = g.name;
      y["count"] = g.count;
      if (!g.profile.empty()) y["profile"] = g.profile;
      if (g.tp > 0) y["tp"] = g.tp;
      if (g.engine_overrides.IsMap()) y["engine"] = g.engine_overrides;
      if (c.disagg.enabled && g.role_given) y["role"] = cluster::role_name(g.role);
      if (g.parallel()) ParallelKnobs{g.par}.knobs(KnobWriter{y});
      r["replicas"].push_back(y);
    }
  }
  if (c.router_params.empty()) {
    r["router"] = c.router;
  } else {
    r["router"]["name"] = c.router;
    for (const auto& [k, v] : c.router_params.values) r["router"][k] = v;
  }
  if (c.disagg.enabled) resolved_disagg(c, r);
  if (uses_tiers(c)) {
    resolved_tiers(c.disagg, r);
  } else if (std::any_of(c.groups.begin(), c.groups.end(),
                         [](const ReplicaGroup& g) { return g.parallel(); })) {
    resolved_links(c.disagg.links, r);  // the DP/EP groups' all-to-all runs over them
  }
  return r;
}

bool uses_tiers(const ClusterSpec& c) {
  return std::any_of(c.groups.begin(), c.groups.end(),
                     [](const ReplicaGroup& g) { return make_kv_manager(g.engine)->uses_tiers(); });
}

}  // namespace isim::exp
