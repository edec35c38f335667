// isim profile step: what one step of one engine, or of one DP/EP group, costs for a batch
// (experiments/run/step_profile.h), printed term by term.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include <boost/program_options.hpp>

#include "core/cli_help.h"
#include "core/input_error.h"
#include "experiments/cli/cli.h"
#include "experiments/run/step_profile.h"
#include "sim/profile.h"

namespace isim::exp {

namespace {

const Help kStepHelp{
    "usage: isim profile step PROFILE.yaml [--dp D] [--ep] [--ep-overlap X] [--expert-skew S]\n"
    "                         [--decode B] [--kv K] [--prefill C] [--prefill-kv P]\n"
    "                         [--replicas-per-node N] [--nvlink-gbps G] [--nvlink-latency-us L]\n"
    "                         [--network-gbps G] [--network-latency-us L]\n",
    "Prints what one step costs on the profile, without a trace. The batch: B decodes each\n"
    "attending K KV tokens and, with --prefill C, one prefill chunk of C tokens over P cached\n"
    "ones (B + 1 logits). Without --dp/--ep: one engine's forward and its terms as the cost\n"
    "model sums them (sim/cost_model.h). With --dp D and/or --ep on a MoE model: a DP/EP group\n"
    "of D engine cores (vLLM data_parallel_size, enable_expert_parallel), each running that\n"
    "batch, in lockstep as `isim run` simulates a cluster group with these keys\n"
    "(cluster/lockstep.h): a core's own time (its forward without its MoE part), the group's\n"
    "MoE layer (the busiest EP rank's expert load, dispatch and combine over NVLink inside\n"
    "--replicas-per-node cores and the network beyond), the group's step, and output tokens/s\n"
    "per GPU (B / step / tp) and per group. The link defaults are the cluster's\n"
    "(cluster/link_spec.h). Exit 2 on bad input, naming the flag.\n",
    "  isim profile step tests/data/profile-tables-small-moe.yaml --decode 4 --kv 50\n"
    "  isim profile step calibrate/profiles/gb300-kimi-k2.analytic.yaml --dp 48 --ep \\\n"
    "      --decode 128 --kv 2000 --replicas-per-node 72 --nvlink-gbps 900 --network-gbps 100\n"};

void check_flag(bool ok, const std::string& flag, double v, const char* want) {
  if (!ok) throw InputError(fmt::format("--{}: {} is out of range; give {}", flag, v, want));
}

std::string us(double v) {
  return fmt::format("{:.3f}", v);
}
double us_of(sim::Nanos t) {
  return static_cast<double>(t) / 1e3;
}

std::string batch_text(const StepQuery& q) {
  std::string s = fmt::format("{} decodes x {} KV tokens", q.decode, q.kv);
  if (q.prefill > 0)
    s += fmt::format(", a prefill chunk of {} tokens over {} cached", q.prefill, q.prefill_kv);
  return s;
}

void print_parts(const sim::ForwardParts& f, const char* title) {
  fmt::print("{}\n", title);
  fmt::print("  {:<22}{:>14}\n", "dense", us(f.dense_us));
  fmt::print("  {:<22}{:>14}\n", "attention", us(f.attention_us));
  if (f.allreduce_us > 0) fmt::print("  {:<22}{:>14}\n", "allreduce (tp)", us(f.allreduce_us));
  fmt::print("  {:<22}{:>14}\n", "moe", us(f.moe_us));
  fmt::print("  {:<22}{:>14}\n", "lm_head", us(f.lm_head_us));
  fmt::print("  {:<22}{:>14}\n", "overhead", us(f.overhead_us));
  fmt::print("  {:<22}{:>14}\n", "forward", us(us_of(f.total)));
}

void print_report(const std::string& path, const StepQuery& q, const StepProfile& r) {
  const sim::ModelShape& m = r.profile.model;
  fmt::print("profile {}: {} on {}, tp {}\n", path, m.name, r.profile.device.name, m.tp);
  fmt::print("batch: {} ({} tokens, {} logits)\n", batch_text(q), r.batch.total_tokens,
             r.batch.num_logits);
  if (!r.group) {
    if (q.par.dp > 1)
      fmt::print("dense model: the {} DP cores step independently, each as below\n", q.par.dp);
    print_parts(r.parts, "one engine's forward (us, all layers)");
    fmt::print("output tokens/s per GPU   {:.1f}\n", r.tokens_per_s_per_gpu);
    fmt::print("output tokens/s per {}  {:.1f}\n",
               q.par.dp > 1 ? fmt::format("{} engines", q.par.dp) : std::string("engine"),
               r.tokens_per_s);
    return;
  }
  const sim::EpGroupShape& g = r.shape;
  fmt::print(
      "group: dp {} x tp {} = {} GPUs, ep {}, ep_overlap {}, expert_skew {}; model.ep {}\n"
      "links: NVLink domain {} GPUs at {} GB/s + {} us; network {} GB/s + {} us\n",
      g.cores, g.tp, g.ranks(), g.ep ? "on" : "off", g.overlap, g.skew, m.ep, g.gpus_per_domain,
      g.intra.gbps, g.intra.latency_us, g.inter.gbps, g.inter.latency_us);
  print_parts(r.parts, "one core's forward alone (us, all layers; the group replaces its moe)");
  fmt::print("  {:<22}{:>14}\n", "own (forward - moe)", us(us_of(r.own)));
  const sim::GroupMoe& l = r.step.layer;
  fmt::print("the group's MoE layer (us, one of {})\n", r.step.layers);
  if (g.ep)
    fmt::print("  {:<22}{:>14}   (mean {:.1f}, sd {:.1f}; {} experts per rank)\n",
               "busiest rank's pairs", fmt::format("{:.1f}", l.load), r.load.mean, r.load.sd,
               m.moe.experts / g.ranks());
  else
    fmt::print("  {:<22}{:>14}\n", "tokens every rank runs", fmt::format("{:.0f}", l.load));
  fmt::print("  {:<22}{:>14}\n", "experts", us(l.expert_us));
  fmt::print("  {:<22}{:>14}   ({:.0f} B each way from the busiest rank)\n", "dispatch + combine",
             us(l.comm_us), l.bytes);
  fmt::print("  {:<22}{:>14}\n", "exposed", us(l.exposed_us));
  fmt::print("  {:<22}{:>14}\n", "layer", us(l.us()));
  fmt::print("the group's step (us)\n");
  fmt::print("  {:<22}{:>14}\n", "own (slowest core)", us(us_of(r.step.slowest)));
  fmt::print("  {:<22}{:>14}\n", "MoE layers", us(us_of(r.step.moe_ns)));
  fmt::print("  {:<22}{:>14}\n", "step", us(us_of(r.step_ns)));
  fmt::print("output tokens/s per GPU   {:.1f}\n", r.tokens_per_s_per_gpu);
  fmt::print("output tokens/s per group {:.1f}\n", r.tokens_per_s);
}

}  // namespace

int cmd_profile_step(const Args& args) {
  namespace po = boost::program_options;
  std::string path;
  StepQuery q;
  int64_t dp = 1;
  double rpn = q.links.replicas_per_node;
  double nv_gbps = q.links.intra_node.gbps, nv_lat = q.links.intra_node.latency_s * 1e6;
  double net_gbps = q.links.inter_node.gbps, net_lat = q.links.inter_node.latency_s * 1e6;
  po::options_description opts, hidden;
  opts.add_options()("help,h", "show this help")(
      "dp", po::value(&dp), "engine cores in the group, [1, 1024] (default 1)")(
      "ep", po::bool_switch(&q.par.ep), "spread the experts over dp x tp GPUs")(
      "ep-overlap", po::value(&q.par.ep_overlap), "share of dispatch/combine hidden, [0, 1]")(
      "expert-skew", po::value(&q.par.expert_skew),
      "hottest EP rank's mean load over the mean, [1, 64] (default 1)")(
      "decode", po::value(&q.decode), "decodes in a core's batch, [0, 2^20] (default 0)")(
      "kv", po::value(&q.kv), "KV tokens each decode attends (default 0)")(
      "prefill", po::value(&q.prefill), "tokens of one prefill chunk (default 0: none)")(
      "prefill-kv", po::value(&q.prefill_kv), "cached tokens before the chunk (default 0)")(
      "replicas-per-node", po::value(&rpn), "engine cores per NVLink domain (default 8)")(
      "nvlink-gbps", po::value(&nv_gbps), "NVLink GB/s one way (default 450)")(
      "nvlink-latency-us", po::value(&nv_lat), "NVLink latency per transfer (default 3)")(
      "network-gbps", po::value(&net_gbps), "inter-node GB/s one way (default 50)")(
      "network-latency-us", po::value(&net_lat), "inter-node latency (default 10)");
  hidden.add_options()("profile", po::value(&path), "profile YAML");
  po::positional_options_description pos;
  pos.add("profile", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kStepHelp, opts);
  if (path.empty()) throw usage_error("needs PROFILE.yaml", kStepHelp);
  check_flag(dp >= 1 && dp <= 1024, "dp", static_cast<double>(dp), "a whole number in [1, 1024]");
  check_flag(q.par.ep_overlap >= 0 && q.par.ep_overlap <= 1, "ep-overlap", q.par.ep_overlap,
             "a number in [0, 1]");
  check_flag(q.par.expert_skew >= 1 && q.par.expert_skew <= 64, "expert-skew", q.par.expert_skew,
             "a number in [1, 64]");
  check_flag(rpn >= 1 && rpn <= 4096 && rpn == std::floor(rpn), "replicas-per-node", rpn,
             "a whole number in [1, 4096]");
  check_flag(nv_gbps > 0 && nv_gbps <= 1e6, "nvlink-gbps", nv_gbps, "a number in (0, 1e6]");
  check_flag(net_gbps > 0 && net_gbps <= 1e6, "network-gbps", net_gbps, "a number in (0, 1e6]");
  check_flag(nv_lat >= 0 && nv_lat <= 1e6, "nvlink-latency-us", nv_lat, "a number in [0, 1e6]");
  check_flag(net_lat >= 0 && net_lat <= 1e6, "network-latency-us", net_lat, "a number in [0, 1e6]");
  q.par.dp = static_cast<int32_t>(dp);
  q.links.replicas_per_node = static_cast<int32_t>(rpn);
  q.links.intra_node.gbps = nv_gbps;
  q.links.intra_node.latency_s = nv_lat * 1e-6;
  q.links.inter_node.gbps = net_gbps;
  q.links.inter_node.latency_s = net_lat * 1e-6;
  const sim::Profile p = sim::load_profile(path);
  print_report(path, q, profile_step(p, q));
  return 0;
}

}  // namespace isim::exp
