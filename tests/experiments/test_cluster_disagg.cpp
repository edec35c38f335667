// The disaggregation keys of `cluster:` (experiments/spec/cluster_spec.h): roles in replica order,
// the defaults of links, split, switching and planner, the resolved spec, -p overrides, and
// every error with its exact text. Nothing here runs a disaggregated fleet.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/input_error.h"
#include "experiments/spec/cluster_spec.h"
#include "experiments/spec/experiment.h"
#include "experiments/sweep/sweep.h"
#include "tests/spec_helpers.h"

using namespace isim;
using cluster::Role;

namespace {

using test::error_of;
using test::parse;
// Lines 1-3; a cluster: section starts on line 4.
const char* kMinimal = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";

exp::ClusterSpec cluster_of(const std::string& section) {
  return parse(std::string(kMinimal) + "cluster: " + section + "\n").cluster;
}

// The error of `cluster: {replicas: 16, <rest>}` (all on line 4).
std::string error16(const std::string& rest) {
  return error_of(std::string(kMinimal) + "cluster: {replicas: 16, " + rest + "}\n");
}

std::vector<Role> roles(int p, int d, int m) {
  std::vector<Role> r(static_cast<size_t>(p), Role::kPrefill);
  r.insert(r.end(), static_cast<size_t>(d), Role::kDecode);
  r.insert(r.end(), static_cast<size_t>(m), Role::kMixed);
  return r;
}

// The spec with `-p` overrides applied, parsed.
exp::Experiment overridden(const std::string& cluster, const std::vector<std::string>& ps) {
  YAML::Node y = YAML::Load(std::string(kMinimal) + "cluster: " + cluster + "\n");
  for (const auto& p : ps) exp::apply_override(y, p);
  return exp::parse_experiment(y, "e.yaml", ".");
}

std::string override_error(const std::string& cluster, const std::vector<std::string>& ps) {
  try {
    overridden(cluster, ps);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("roles: counts assign prefill, then decode, then mixed, in replica order") {
  const auto c = cluster_of("{replicas: 16, roles: {prefill: 4, decode: 12}}");
  CHECK(c.disagg.enabled);
  CHECK(c.disagg.roles == roles(4, 12, 0));
  const auto m = cluster_of("{replicas: 6, roles: {mixed: 1, decode: 3, prefill: 2}}");
  CHECK(m.disagg.roles == roles(2, 3, 1));  // the order of the keys does not matter
  CHECK(cluster_of("{replicas: 16, roles: \"4:12\"}").disagg.roles == roles(4, 12, 0));
  CHECK(cluster_of("{replicas: 16, roles: 8:8}").disagg.roles == roles(8, 8, 0));
  // All mixed, however it is said, is not disaggregated: no roles, nothing changes.
  for (const char* mixed :
       {"{replicas: 4}", "{replicas: 4, roles: mixed}", "{replicas: 4, roles: {mixed: 4}}"}) {
    CAPTURE(mixed);
    const auto x = cluster_of(mixed);
    CHECK_FALSE(x.disagg.enabled);
    CHECK(x.disagg.roles.empty());
  }
}

TEST_CASE("a sweep over cluster.roles compares mixed with P:D splits") {
  const auto s = exp::expand_sweep(
      YAML::Load(std::string(kMinimal) +
                 "cluster: {replicas: 16}\nsweep: {cluster.roles: [mixed, \"4:12\", \"8:8\"]}\n"),
      "e.yaml", "/base");
  REQUIRE(s.runs.size() == 3);
  CHECK_FALSE(s.runs[0].experiment.cluster.disagg.enabled);
  CHECK(s.runs[1].experiment.cluster.disagg.roles == roles(4, 12, 0));
  CHECK(s.runs[2].experiment.cluster.disagg.roles == roles(8, 8, 0));
}

TEST_CASE("roles: counts also apply across replica groups, in replica order") {
  const auto c =
      cluster_of("{replicas: [{name: a, count: 2}, {name: b, count: 2}], roles: \"1:3\"}");
  CHECK(c.disagg.roles == roles(1, 3, 0));
  CHECK_FALSE(c.groups[0].role_given);
}

TEST_CASE("a group's role: its replicas take it, in group order") {
  const auto c = cluster_of(
      "{replicas: [{name: d, count: 3, role: decode}, {count: 2}, {count: 1, role: prefill}]}");
  CHECK(c.disagg.enabled);
  CHECK(c.disagg.roles == std::vector<Role>{Role::kDecode, Role::kDecode, Role::kDecode,
                                            Role::kMixed, Role::kMixed, Role::kPrefill});
  CHECK(c.groups[0].role == Role::kDecode);
  CHECK_FALSE(c.groups[1].role_given);
}

TEST_CASE("links, split, switching and planner: the cited defaults, or as given") {
  const auto d = cluster_of("{replicas: 2, roles: \"1:1\"}").disagg;
  CHECK(d.links.replicas_per_node == 8);
  CHECK(d.links.intra_node == cluster::default_nvlink());
  CHECK(d.links.inter_node == cluster::default_infiniband());
  CHECK(d.links.transfer == "whole");
  CHECK(d.split.mode == "always");
  CHECK(d.split.threshold_tokens == 0);
  CHECK(d.switching.cost_s == 0);
  CHECK_FALSE(d.switching.drain_first);
  CHECK(d.switching.paused_kv == "keep");
  CHECK(d.planner == "static");
  CHECK(d.planner_params.empty());
  CHECK(d.planner_params.where == "cluster.planner");

  const auto g = cluster_of(
                     "\n"
                     "  replicas: 16\n"
                     "  roles: {prefill: 4, decode: 12}\n"
                     "  links:\n"
                     "    replicas_per_node: 4\n"
                     "    intra_node: {gbps: 300}\n"
                     "    inter_node: {kind: roce, gbps: 25, latency_us: 2.5}\n"
                     "    transfer: layer\n"
                     "  split: {threshold_tokens: 512}\n"
                     "  switching: {cost_s: 1.5, drain_first: true, paused_kv: drop}\n"
                     "  planner: dynamo-threshold\n")
                     .disagg;
  CHECK(g.links.replicas_per_node == 4);
  CHECK(g.links.intra_node == cluster::LinkSpec{"nvlink", 300.0, 3e-6});  // kind, latency kept
  CHECK(g.links.inter_node == cluster::LinkSpec{"roce", 25.0, 2.5e-6});
  CHECK(g.links.transfer == "layer");
  CHECK(g.split.mode == "threshold");  // threshold_tokens without a mode
  CHECK(g.split.threshold_tokens == 512);
  CHECK(g.switching.cost_s == 1.5);
  CHECK(g.switching.drain_first);
  CHECK(g.switching.paused_kv == "drop");
  CHECK(g.planner == "dynamo-threshold");
  CHECK(cluster_of("{replicas: 2, roles: \"1:1\", split: threshold}").disagg.split.mode ==
        "threshold");
  CHECK(cluster_of("{replicas: 2, roles: \"1:1\", split: {mode: always}}").disagg.split.mode ==
        "always");
}

TEST_CASE("resume_kv and restart: defaults fetch and false; restart implies drain_first") {
  const auto d =
      parse(std::string(kMinimal) + "cluster: {replicas: 16, roles: \"4:12\"}\n").cluster.disagg;
  CHECK(d.split.resume_kv == "fetch");
  CHECK_FALSE(d.switching.restart);
  const auto g = parse(std::string(kMinimal) +
                       "cluster: {replicas: 16, roles: \"4:12\", split: {resume_kv: recompute},"
                       " switching: {restart: true, cost_s: 60}}\n")
                     .cluster.disagg;
  CHECK(g.split.resume_kv == "recompute");
  CHECK(g.split.mode == "always");
  CHECK(g.switching.restart);
  CHECK(g.switching.drain_first);
  CHECK(g.switching.cost_s == 60);
}

TEST_CASE("config.resolved.yaml records every disaggregation setting, and reads back") {
  const auto e =
      parse(std::string(kMinimal) +
            "cluster: {replicas: 16, roles: \"4:12\", split: {threshold_tokens: 256}}\n");
  YAML::Emitter out;
  out << exp::resolved_cluster(e.cluster);
  CHECK(std::string(out.c_str()) ==
        "replicas: 16\n"
        "router: session-affinity\n"
        "roles:\n  prefill: 4\n  decode: 12\n  mixed: 0\n"
        "links:\n"
        "  replicas_per_node: 8\n"
        "  intra_node:\n    kind: nvlink\n    gbps: 450\n    latency_us: 3\n"
        "  inter_node:\n    kind: infiniband\n    gbps: 50\n    latency_us: 10\n"
        "  transfer: whole\n"
        "split:\n  mode: threshold\n  threshold_tokens: 256\n  resume_kv: fetch\n"
        "switching:\n  cost_s: 0\n  drain_first: false\n  paused_kv: keep\n  restart: false\n"
        "planner: static");
  const auto again = exp::parse_experiment(e.resolved(), "r.yaml", "/elsewhere").cluster;
  CHECK(again.disagg.roles == e.cluster.disagg.roles);
  CHECK(again.disagg.links.intra_node == e.cluster.disagg.links.intra_node);
  CHECK(again.disagg.links.inter_node == e.cluster.disagg.links.inter_node);
  CHECK(again.disagg.split.threshold_tokens == 256);

  // Group roles stay with their groups; a planner's parameters are written with its name.
  const auto g = parse(std::string(kMinimal) +
                       "cluster: {replicas: [{count: 1, role: prefill}, {count: 2, role: "
                       "decode}], planner: {name: static}}\n");
  const YAML::Node r = exp::resolved_cluster(g.cluster);
  CHECK_FALSE(r["roles"]);
  CHECK(r["replicas"][0]["role"].as<std::string>() == "prefill");
  CHECK(r["replicas"][1]["role"].as<std::string>() == "decode");
  CHECK(exp::parse_experiment(g.resolved(), "r.yaml", "/x").cluster.disagg.roles == roles(1, 2, 0));

  // A fleet without roles writes exactly what it wrote before disaggregation existed.
  const auto m = parse(std::string(kMinimal) +
                       "cluster: {replicas: 4, roles: mixed, links: {transfer: layer}}\n");
  YAML::Emitter plain;
  plain << exp::resolved_cluster(m.cluster);
  CHECK(std::string(plain.c_str()) == "replicas: 4\nrouter: session-affinity");
}

TEST_CASE("-p reaches roles, planner, split and links; a scalar shorthand becomes a map") {
  const std::string base = "{replicas: 16, roles: {prefill: 4, decode: 12}}";
  auto e = overridden(base, {"cluster.roles.prefill=6", "cluster.roles.decode=10"});
  CHECK(e.cluster.disagg.roles == roles(6, 10, 0));
  CHECK(overridden(base, {"cluster.roles=8:8"}).cluster.disagg.roles == roles(8, 8, 0));
  CHECK_FALSE(overridden(base, {"cluster.roles=mixed"}).cluster.disagg.enabled);
  CHECK(overridden(base, {"cluster.planner=online"}).cluster.disagg.planner == "online");
  const auto split = overridden(base, {"cluster.split.threshold_tokens=256"}).cluster.disagg;
  CHECK(split.split.mode == "threshold");
  CHECK(split.split.threshold_tokens == 256);
  CHECK(overridden(base, {"cluster.links.transfer=layer"}).cluster.disagg.links.transfer ==
        "layer");
  CHECK(
      overridden(base, {"cluster.links.inter_node.gbps=25"}).cluster.disagg.links.inter_node.gbps ==
      25);
  // `router: kv-aware` and `planner: static` take parameters by -p, as `policy: NAME` does.
  const auto kv =
      overridden("{replicas: 2, router: kv-aware}", {"cluster.router.overlap_weight=3"});
  CHECK(kv.cluster.router == "kv-aware");
  CHECK(kv.cluster.router_params.values.at("overlap_weight") == "3");
  CHECK(override_error("{replicas: 2, roles: \"1:1\", planner: static}",
                       {"cluster.planner.colour=red"})
            .find("cluster.planner.colour: unknown parameter") != std::string::npos);
  // `split: always` is {mode: always}: a threshold then needs the mode too.
  const std::string always = "{replicas: 2, roles: \"1:1\", split: always}";
  CHECK(override_error(always, {"cluster.split.threshold_tokens=256"}) ==
        "e.yaml:1: cluster.split.threshold_tokens: applies to mode threshold only "
        "(cluster.split.mode is always)");
  const auto both =
      overridden(always, {"cluster.split.mode=threshold", "cluster.split.threshold_tokens=64"});
  CHECK(both.cluster.disagg.split.threshold_tokens == 64);
}

TEST_CASE("every roles error names the file, line and key, and says what was expected") {
  CHECK(error16("roles: {prefill: 4, decode: 10}") ==
        "e.yaml:4: cluster.roles: expected prefill + decode + mixed = 16 (the replica count), "
        "got 4 + 10 + 0 = 14");
  CHECK(error16("roles: \"8:9\"") ==
        "e.yaml:4: cluster.roles: expected prefill + decode + mixed = 16 (the replica count), "
        "got 8 + 9 + 0 = 17");
  CHECK(error16("roles: {prefill: 16}") ==
        "e.yaml:4: cluster.roles: a disaggregated fleet needs at least one prefill and one "
        "decode replica, got 16 prefill and 0 decode");
  CHECK(error16("roles: \"0:16\"") ==
        "e.yaml:4: cluster.roles: a disaggregated fleet needs at least one prefill and one "
        "decode replica, got 0 prefill and 16 decode");
  CHECK(error16("roles: {prefill: -1, decode: 17}") ==
        "e.yaml:4: cluster.roles.prefill: must be >= 0");
  CHECK(error16("roles: {prefill: x}") ==
        "e.yaml:4: cluster.roles.prefill: expected an integer >= 0, got 'x'");
  CHECK(error16("roles: {prefil: 4}") ==
        "e.yaml:4: cluster.roles.prefil: unknown key; valid keys: prefill, decode, mixed");
  CHECK(error16("roles: 8:x") ==
        "e.yaml:4: cluster.roles: expected {prefill: P, decode: D, mixed: M}, \"P:D\" or mixed, "
        "got '8:x'");
  CHECK(error16("roles: [4, 12]") ==
        "e.yaml:4: cluster.roles: expected {prefill: P, decode: D, mixed: M}, \"P:D\" or mixed, "
        "got a list");
  const std::string m = kMinimal;
  CHECK(error_of(m + "cluster: {replicas: [{count: 2, role: prefill}, {count: 2}]}\n") ==
        "e.yaml:4: cluster.replicas: a disaggregated fleet needs at least one prefill and one "
        "decode replica, got 2 prefill and 0 decode");
  CHECK(error_of(m + "cluster: {replicas: [{count: 2, role: verify}]}\n") ==
        "e.yaml:4: cluster.replicas[0].role: expected prefill, decode or mixed, got 'verify'");
  CHECK(error_of(m + "cluster: {replicas: [{count: 1, role: prefill}, {count: 1, role: decode}],"
                     " roles: \"1:1\"}\n") ==
        "e.yaml:4: cluster.roles: give the roles here or as role: in the replica groups, not both");
  CHECK(error_of(m + "cluster: {replicas: 2, role: prefill}\n") ==
        "e.yaml:4: cluster.role: unknown key; valid keys: replicas, router, roles, links, split, "
        "switching, planner, kv_tiers");
  // Live executors never meet roles: a fleet of more than one replica is refused first.
  CHECK(error_of(m + "executor: live-cpu\ncluster: {replicas: 2, roles: \"1:1\"}\n") ==
        "e.yaml:5: cluster: live executors run on one replica only (executor live-cpu)");
}

TEST_CASE("every links, split and switching error names its key and the valid values") {
  CHECK(error16("links: {replicas_per_node: 0}") ==
        "e.yaml:4: cluster.links.replicas_per_node: must be >= 1");
  CHECK(error16("links: {intra_node: {gbps: 0}}") ==
        "e.yaml:4: cluster.links.intra_node.gbps: must be > 0");
  CHECK(error16("links: {intra_node: {gbps: fast}}") ==
        "e.yaml:4: cluster.links.intra_node.gbps: expected a number > 0 (GB/s), got 'fast'");
  CHECK(error16("links: {inter_node: {latency_us: -1}}") ==
        "e.yaml:4: cluster.links.inter_node.latency_us: must be >= 0");
  CHECK(error16("links: {inter_node: {kind: ethernet}}") ==
        "e.yaml:4: cluster.links.inter_node.kind: expected nvlink, infiniband or roce, got "
        "'ethernet'");
  CHECK(error16("links: {inter_node: {bw: 1}}") ==
        "e.yaml:4: cluster.links.inter_node.bw: unknown key; valid keys: kind, gbps, latency_us");
  CHECK(error16("links: {transfer: chunk}") ==
        "e.yaml:4: cluster.links.transfer: expected whole or layer, got 'chunk'");
  CHECK(error16("links: {bandwidth: 1}") ==
        "e.yaml:4: cluster.links.bandwidth: unknown key; valid keys: replicas_per_node, "
        "intra_node, inter_node, transfer");
  CHECK(error16("split: sometimes") ==
        "e.yaml:4: cluster.split: expected always, threshold or {mode, threshold_tokens, "
        "resume_kv}, got 'sometimes'");
  CHECK(error16("split: [always]") ==
        "e.yaml:4: cluster.split: expected always, threshold or {mode, threshold_tokens, "
        "resume_kv}, got a list");
  CHECK(error16("split: {mode: never}") ==
        "e.yaml:4: cluster.split.mode: expected always or threshold, got 'never'");
  CHECK(error16("split: {threshold_tokens: -1}") ==
        "e.yaml:4: cluster.split.threshold_tokens: must be >= 0");
  CHECK(error16("split: {mode: always, threshold_tokens: 5}") ==
        "e.yaml:4: cluster.split.threshold_tokens: applies to mode threshold only "
        "(cluster.split.mode is always)");
  CHECK(error16("switching: {cost_s: -1}") == "e.yaml:4: cluster.switching.cost_s: must be >= 0");
  CHECK(error16("switching: {drain_first: maybe}") ==
        "e.yaml:4: cluster.switching.drain_first: expected true or false, got 'maybe'");
  CHECK(error16("switching: {paused_kv: carry}") ==
        "e.yaml:4: cluster.switching.paused_kv: expected keep, drop or move, got 'carry'");
  CHECK(error16("switching: {cost: 1}") ==
        "e.yaml:4: cluster.switching.cost: unknown key; valid keys: cost_s, drain_first, "
        "paused_kv, restart");
  CHECK(error16("split: {resume_kv: move}") ==
        "e.yaml:4: cluster.split.resume_kv: expected fetch or recompute, got 'move'");
  CHECK(error16("switching: {restart: true, drain_first: false}") ==
        "e.yaml:4: cluster.switching.drain_first: must be true when cluster.switching.restart is "
        "(a restarted worker drains first)");
}

TEST_CASE("the planner is checked against the registry when the spec is read") {
  CHECK(error16("planner: online") ==
        "e.yaml:4: cluster.planner: needs a disaggregated fleet (cluster.roles)");
  CHECK(error16("roles: mixed, planner: {name: dynamo-threshold}") ==
        "e.yaml:4: cluster.planner: needs a disaggregated fleet (cluster.roles)");
  CHECK(error16("planner: static") == "(no error)");  // static on a mixed fleet changes nothing
  const std::string unknown = error16("roles: \"8:8\", planner: nonsense");
  CHECK(unknown.rfind("e.yaml:4: cluster.planner: unknown ", 0) == 0);
  CHECK(unknown.find("'nonsense'; valid: ") != std::string::npos);
  CHECK(error16("roles: \"8:8\", planner: {interval_s: 3}") ==
        "e.yaml:4: cluster.planner.name: missing planner name");
  CHECK(error16("roles: \"8:8\", planner: [static]") ==
        "e.yaml:4: cluster.planner: expected a planner name or {name: ..., params}, got a list");
  CHECK(error16("roles: \"8:8\", planner: {name: static, colour: red}")
            .rfind("e.yaml:4: cluster.planner.colour: unknown parameter", 0) == 0);
}
