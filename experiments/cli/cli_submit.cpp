// isim sweep submit: Slurm job arrays and Kubernetes Indexed Jobs (cli_submit.h).
#include "experiments/cli/cli_submit.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/plan/plan.h"
#include "experiments/sweep/sweep.h"
#include "experiments/sweep/sweep_command.h"

namespace isim::exp {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

const char* kSubmitUsage =
    "usage: isim sweep|plan submit --slurm SPEC.yaml --tasks N [--out DIR] [--jobs J]\n"
    "              [--partition P] [--time T] [--mem M] [--now] [-p key=value ...]\n"
    "       isim sweep|plan submit --k8s SPEC.yaml --tasks N --image IMAGE [--out DIR]\n"
    "              [--jobs J] [--pvc CLAIM] [--workdir PATH] [--mem M] [-p key=value ...]\n";

const Help kSubmitHelp{
    kSubmitUsage,
    "Writes the scripts that run a sweep's (or plan's) shards as a Slurm job array or a\n"
    "Kubernetes Indexed Job, and the job that merges them; --now also submits (Slurm).\n",
    "  isim sweep submit --slurm experiments/specs/multiturn.yaml --tasks 8 --time 1:00:00\n"
    "  isim plan submit --k8s experiments/specs/plan-agents.yaml --tasks 4 --image isim:latest\n"};

struct SubmitArgs {
  std::string verb, spec, out, name;
  size_t tasks = 0, jobs = 0;  // jobs 0: not given
  std::vector<std::string> overrides;
  std::string partition, time, mem, image, pvc = "isim-work", workdir = "/work";
};

std::string self_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("isim") : p.string();
}

// The shard command's words: isim VERB SPEC --shard auto --resume --out OUT ...
std::vector<std::string> shard_words(const SubmitArgs& a, const std::string& isim,
                                     const std::string& spec, const std::string& out) {
  std::vector<std::string> w = {isim, a.verb, spec, "--shard", "auto", "--resume", "--out", out};
  if (a.jobs > 0) {
    w.push_back("--jobs");
    w.push_back(std::to_string(a.jobs));
  }
  for (const auto& o : a.overrides) {
    w.push_back("-p");
    w.push_back(o);
  }
  return w;
}

// The merge command's words: sweep merge OUT/results.csv OUT/shards, or plan merge SPEC
// OUT/shards --out OUT -p ...
std::vector<std::string> merge_words(const SubmitArgs& a, const std::string& isim,
                                     const std::string& spec, const std::string& out) {
  const std::string shards = (fs::path(out) / "shards").string();
  if (a.verb == "sweep")
    return {isim, "sweep", "merge", (fs::path(out) / "results.csv").string(), shards};
  std::vector<std::string> w = {isim, "plan", "merge", spec, shards, "--out", out};
  for (const auto& o : a.overrides) {
    w.push_back("-p");
    w.push_back(o);
  }
  return w;
}

std::string join_shell(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) {
    if (!s.empty()) s += ' ';
    s += shell_quote(w);
  }
  return s;
}

std::string sbatch_head(const SubmitArgs& a, const std::string& job, const std::string& log) {
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n#SBATCH --output={}\n", job, log);
  if (a.jobs > 0) s += fmt::format("#SBATCH --cpus-per-task={}\n", a.jobs);
  if (!a.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", a.partition);
  if (!a.time.empty()) s += fmt::format("#SBATCH --time={}\n", a.time);
  if (!a.mem.empty()) s += fmt::format("#SBATCH --mem={}\n", a.mem);
  return s;
}

// Runs `cmd` (sbatch --parsable ...) and returns the job id it prints.
std::string sbatch(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) throw InputError("--now: cannot run sbatch");
  std::string text;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  const int rc = ::pclose(p);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const std::string id = text.substr(0, text.find(';'));  // "ID;CLUSTER" on federations
  if (rc != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw InputError(fmt::format("--now: `{}` failed (exit {}): {}", cmd, rc, text));
  return id;
}

int submit_slurm(const SubmitArgs& a, bool now) {
  const std::string out = fs::absolute(a.out).lexically_normal().string();
  const std::string spec = fs::absolute(a.spec).lexically_normal().string();
  const fs::path dir = fs::path(out) / "submit";
  fs::create_directories(dir / "logs");
  const std::string job = "isim-" + a.verb + "-" + dns_label(a.name);
  const std::string isim = self_path();
  std::string array = sbatch_head(a, job, (dir / "logs" / "%A_%a.out").string());
  // ISIM_SHARDS: a task resubmitted alone (--array=T) still knows it is shard T+1 of N.
  array += fmt::format("#SBATCH --array=0-{}\nset -euo pipefail\nexport ISIM_SHARDS={}\nexec {}\n",
                       a.tasks - 1, a.tasks, join_shell(shard_words(a, isim, spec, out)));
  SubmitArgs merge_args = a;
  merge_args.jobs = 0;
  std::string merge =
      sbatch_head(merge_args, job + "-merge", (dir / "logs" / "merge-%j.out").string());
  merge += fmt::format("set -euo pipefail\nexec {}\n", join_shell(merge_words(a, isim, spec, out)));
  const std::string array_path = (dir / (a.verb + "-array.sbatch")).string();
  const std::string merge_path = (dir / (a.verb + "-merge.sbatch")).string();
  write_file_atomic(array_path, array);
  write_file_atomic(merge_path, merge);
  fmt::print("wrote {}\nwrote {}\n", array_path, merge_path);
  if (!now) {
    fmt::print("submit: ID=$(sbatch --parsable {}) && sbatch --dependency=afterok:$ID {}\n",
               shell_quote(array_path), shell_quote(merge_path));
    return 0;
  }
  const std::string id = sbatch("sbatch --parsable " + shell_quote(array_path));
  fmt::print("submitted array job {} ({} tasks)\n", id, a.tasks);
  const std::string mid = sbatch(
      fmt::format("sbatch --parsable --dependency=afterok:{} {}", id, shell_quote(merge_path)));
  fmt::print("submitted merge job {} (after {})\n", mid, id);
  fmt::print("a task that died: sbatch --array=T {} (it resumes)\n", shell_quote(array_path));
  return 0;
}

// `j` as block YAML with every string double-quoted (as JSON quotes it, which YAML reads
// alike), so that "4" or "true" stays a string where Kubernetes wants one.
void emit_yaml(const Json& j, const std::string& indent, std::string& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const Json& v = *it;
    out += indent + (j.is_array() ? std::string("- ") : it.key() + ":");
    const bool nested = (v.is_object() || v.is_array()) && !v.empty();
    if (!nested) {
      out += (j.is_array() ? "" : " ") + v.dump() + "\n";
    } else if (j.is_array() && v.is_object()) {  // "- key: ..." then the rest of the map
      std::string inner;
      emit_yaml(v, indent + "  ", inner);
      out += inner.substr(indent.size() + 2);
    } else {
      out += "\n";
      emit_yaml(v, indent + "  ", out);
    }
  }
}

std::string yaml_text(const Json& j) {
  std::string out;
  emit_yaml(j, "", out);
  return out;
}

// The container of a k8s Job: isim with `words`, ISIM_SHARDS, the claim at the workdir.
Json k8s_pod(const SubmitArgs& a, const std::vector<std::string>& words, bool indexed) {
  Json c;
  c["name"] = "isim";
  c["image"] = a.image;
  c["workingDir"] = a.workdir;
  c["command"] = Json::array();
  for (const auto& w : words) c["command"].push_back(w);
  if (indexed)
    c["env"] = Json::array({{{"name", "ISIM_SHARDS"}, {"value", std::to_string(a.tasks)}}});
  if (indexed && a.jobs > 0) c["resources"]["requests"]["cpu"] = std::to_string(a.jobs);
  if (indexed && !a.mem.empty()) c["resources"]["requests"]["memory"] = a.mem;
  c["volumeMounts"] = Json::array({{{"name", "work"}, {"mountPath", a.workdir}}});
  Json pod;
  pod["restartPolicy"] = "OnFailure";  // a restarted container resumes its shard's journal
  pod["containers"] = Json::array({c});
  pod["volumes"] =
      Json::array({{{"name", "work"}, {"persistentVolumeClaim", {{"claimName", a.pvc}}}}});
  return pod;
}

Json k8s_job(const SubmitArgs& a, const std::string& name, const Json& pod, bool indexed) {
  Json j;
  j["apiVersion"] = "batch/v1";
  j["kind"] = "Job";
  j["metadata"]["name"] = name;
  j["metadata"]["labels"]["app.kubernetes.io/name"] = "isim";
  j["metadata"]["labels"]["isim/" + a.verb] = dns_label(a.name);
  if (indexed) {
    j["spec"]["completionMode"] = "Indexed";
    j["spec"]["completions"] = a.tasks;
    j["spec"]["parallelism"] = a.tasks;
  }
  j["spec"]["backoffLimit"] = indexed ? 3 * a.tasks : 3;
  j["spec"]["template"]["spec"] = pod;
  return j;
}

int submit_k8s(const SubmitArgs& a) {
  const fs::path dir = fs::path(a.out) / "submit";
  fs::create_directories(dir);
  const std::string name = "isim-" + a.verb + "-" + dns_label(a.name);
  const Json job = k8s_job(a, name, k8s_pod(a, shard_words(a, "isim", a.spec, a.out), true), true);
  SubmitArgs m = a;
  m.jobs = 0;
  const Json merge =
      k8s_job(m, name + "-merge", k8s_pod(m, merge_words(a, "isim", a.spec, a.out), false), false);
  const std::string job_path = (dir / (a.verb + "-job.yaml")).string();
  const std::string merge_path = (dir / (a.verb + "-merge-job.yaml")).string();
  write_file_atomic(job_path, yaml_text(job));
  write_file_atomic(merge_path, yaml_text(merge));
  fmt::print("wrote {}\nwrote {}\n", job_path, merge_path);
  fmt::print(
      "submit: kubectl apply -f {} && kubectl wait --for=condition=complete --timeout=-1s "
      "job/{} && kubectl apply -f {}\n",
      shell_quote(job_path), name, shell_quote(merge_path));
  return 0;
}

}  // namespace

int cmd_submit(const std::string& verb, const Args& args) {
  po::options_description opts, hidden;
  SubmitArgs a;
  a.verb = verb;
  opts.add_options()("help,h", "show this help")("slurm", "a Slurm job array (sbatch)")(
      "k8s", "a Kubernetes Indexed Job")("tasks", po::value<std::string>(),
                                         "shards: array tasks or completions")(
      "out,o", po::value(&a.out),
      "output folder of the shards and the merge (default results/<name>)")(
      "jobs,j", po::value<std::string>(), "worker threads per task (default: the task's cores)")(
      "partition", po::value(&a.partition), "Slurm partition")(
      "time", po::value(&a.time), "Slurm time limit per task (e.g. 1:00:00)")(
      "mem", po::value(&a.mem), "memory per task (Slurm --mem, k8s memory request)")(
      "now", "run sbatch on the scripts (Slurm)")("image", po::value(&a.image),
                                                  "container image with isim on PATH (k8s)")(
      "pvc", po::value(&a.pvc),
      "persistent volume claim mounted at --workdir (k8s; default isim-work)")(
      "workdir", po::value(&a.workdir), "working directory in the container (k8s; default /work)")(
      "set,p", override_flag(a.overrides, false), "override a spec key, as for the runs")(
      "add", override_flag(a.overrides, true), kAddHelp);
  hidden.add_options()("spec", po::value(&a.spec), "spec YAML");
  po::positional_options_description pos;
  pos.add("spec", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kSubmitHelp, opts);
  const bool slurm = vm.count("slurm") > 0, k8s = vm.count("k8s") > 0;
  if (slurm == k8s) throw usage_error("give one of --slurm and --k8s", kSubmitHelp);
  if (a.spec.empty()) throw usage_error("needs SPEC.yaml", kSubmitHelp);
  if (!vm.count("tasks")) throw usage_error("needs --tasks N", kSubmitHelp);
  a.tasks = flag_value<uint64_t>(vm, "tasks", 1, "an integer in 1..100000 (shards)",
                                 [](uint64_t v) { return v >= 1 && v <= 100000; });
  if (vm.count("jobs")) a.jobs = jobs_flag(vm);
  if (k8s && a.image.empty()) throw usage_error("--k8s needs --image IMAGE", kSubmitHelp);
  if (slurm && vm.count("image")) throw usage_error("--image is for --k8s", kSubmitHelp);
  // The spec must load here, with its overrides, before any task is queued.
  size_t units = 0;
  if (verb == "plan") {
    const PlanSpec p = load_plan(a.spec, a.overrides);
    a.name = p.name;
    units = p.candidates.size();
  } else {
    const Sweep sw = load_sweep(a.spec, a.overrides);
    check_sweep_inputs(sw, Shard{});  // a missing swept profile is refused here, not in a task
    a.name = sw.base.name;
    units = sw.runs.size();
  }
  if (a.out.empty()) a.out = default_out_dir(a.name, a.overrides);
  make_out_dir(a.out, "--out");
  if (a.tasks > units)
    fmt::print(stderr, "note: {} task(s) for {} {}: some shards will be empty\n", a.tasks, units,
               verb == "plan" ? "candidate(s)" : "run(s)");
  return slurm ? submit_slurm(a, vm.count("now") > 0) : submit_k8s(a);
}

}  // namespace isim::exp
