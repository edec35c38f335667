// isim sweep submit (experiments/cli/cli_submit.h): the Slurm array and merge scripts, the
// Kubernetes Indexed Job manifests (checked against the batch/v1 Job fields they use; no
// cluster is available here to apply them), quoting, names, and the errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "experiments/cli/cli_submit.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/sweep_fixtures.h"

using namespace isim;
using namespace isim::test::sweep;
namespace fs = std::filesystem;

namespace {

// A scalar that YAML reads as a string: quoted, or plain text that is no number, bool or null
// (Kubernetes refuses `value: 8` where it wants a string).
bool yaml_string(const YAML::Node& n) {
  if (!n.IsScalar()) return false;
  if (n.Tag() == "!") return true;  // quoted
  const std::string t = n.Scalar();
  return !std::regex_match(t, std::regex("[-+]?[0-9.]+([eE][-+]?[0-9]+)?|true|false|null|~|"
                                         "True|False|yes|no|on|off"));
}

bool dns1123(const std::string& s) {
  return s.size() <= 63 && std::regex_match(s, std::regex("[a-z0-9]([-a-z0-9]*[a-z0-9])?"));
}

// The fields of a batch/v1 Job that the manifests use, with the API's types and rules.
void check_job(const YAML::Node& j, bool indexed) {
  CHECK(j["apiVersion"].as<std::string>() == "batch/v1");
  CHECK(j["kind"].as<std::string>() == "Job");
  CHECK(dns1123(j["metadata"]["name"].as<std::string>()));
  for (const auto& kv : j["metadata"]["labels"]) CHECK(kv.second.IsScalar());
  const YAML::Node spec = j["spec"];
  REQUIRE(spec.IsMap());
  CHECK(spec["backoffLimit"].as<int>() >= 0);
  if (indexed) {
    CHECK(spec["completionMode"].as<std::string>() == "Indexed");
    CHECK(spec["completions"].as<int>() == 4);
    CHECK(spec["parallelism"].as<int>() == 4);
  } else {
    CHECK(!spec["completionMode"]);
  }
  const YAML::Node pod = spec["template"]["spec"];
  const auto restart = pod["restartPolicy"].as<std::string>();
  CHECK((restart == "OnFailure" || restart == "Never"));  // a Job's pods may not use Always
  REQUIRE(pod["containers"].IsSequence());
  REQUIRE(pod["containers"].size() == 1);
  const YAML::Node c = pod["containers"][0];
  CHECK(dns1123(c["name"].as<std::string>()));
  CHECK(c["image"].as<std::string>() == "registry.example/isim:1");
  REQUIRE(c["command"].IsSequence());
  for (const auto& w : c["command"]) CHECK(yaml_string(w));
  for (const auto& e : c["env"]) CHECK(yaml_string(e["value"]));
  CHECK(yaml_string(c["image"]));
  CHECK(c["volumeMounts"][0]["name"].as<std::string>() ==
        pod["volumes"][0]["name"].as<std::string>());
  CHECK(pod["volumes"][0]["persistentVolumeClaim"]["claimName"].as<std::string>() == "results");
}

}  // namespace

TEST_CASE("submit --slurm writes an array script and a merge script") {
  auto d = test::scratch("submit-slurm");
  auto path = test::write_file(d / "s.yaml", spec_text());
  const std::string out = (d / "o").string();
  std::string so;
  REQUIRE(run_isim(fmt::format("sweep submit --slurm {} --tasks 4 --jobs 2 --time 0:10:00 "
                               "--partition debug -p 'engine.max_num_seqs=8' --out {}",
                               path, out),
                   &so) == 0);
  const std::string array = test::slurp(d / "o/submit/sweep-array.sbatch");
  CHECK(array.rfind("#!/bin/bash\n#SBATCH --job-name=isim-sweep-small\n", 0) == 0);
  for (const std::string& want : std::vector<std::string>{
           "#SBATCH --array=0-3\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --partition=debug\n",
           "#SBATCH --time=0:10:00\n", "#SBATCH --output=" + out + "/submit/logs/%A_%a.out\n",
           "\nexport ISIM_SHARDS=4\n",
           " sweep " + path + " --shard auto --resume --out " + out +
               " --jobs 2 -p engine.max_num_seqs=8\n"})
    CHECK_MESSAGE(array.find(want) != std::string::npos, want);
  const std::string merge = test::slurp(d / "o/submit/sweep-merge.sbatch");
  CHECK(merge.find(" sweep merge " + out + "/results.csv " + out + "/shards\n") !=
        std::string::npos);
  CHECK(merge.find("--array") == std::string::npos);
  CHECK(so.find("submit: ID=$(sbatch --parsable ") != std::string::npos);
}

TEST_CASE("submit --k8s writes an Indexed Job and a merge Job") {
  auto d = test::scratch("submit-k8s");
  auto path = test::write_file(d / "s.yaml", spec_text());
  REQUIRE(run_isim(fmt::format("sweep submit --k8s {} --tasks 4 --image registry.example/isim:1 "
                               "--pvc results --jobs 3 --mem 4Gi --out {}",
                               path, (d / "o").string())) == 0);
  const YAML::Node job = YAML::LoadFile((d / "o/submit/sweep-job.yaml").string());
  check_job(job, true);
  const YAML::Node c = job["spec"]["template"]["spec"]["containers"][0];
  CHECK(c["env"][0]["name"].as<std::string>() == "ISIM_SHARDS");
  CHECK(c["env"][0]["value"].as<std::string>() == "4");
  CHECK(c["resources"]["requests"]["cpu"].as<std::string>() == "3");
  CHECK(c["resources"]["requests"]["memory"].as<std::string>() == "4Gi");
  CHECK(c["workingDir"].as<std::string>() == "/work");
  CHECK(c["command"][1].as<std::string>() == "sweep");
  CHECK(c["command"][3].as<std::string>() == "--shard");
  CHECK(c["command"][4].as<std::string>() == "auto");
  const YAML::Node merge = YAML::LoadFile((d / "o/submit/sweep-merge-job.yaml").string());
  check_job(merge, false);
  CHECK(merge["metadata"]["name"].as<std::string>() == "isim-sweep-small-merge");
  CHECK(merge["spec"]["template"]["spec"]["containers"][0]["command"][2].as<std::string>() ==
        "merge");
}

TEST_CASE("submit: bad input exits 2 with the reason") {
  auto d = test::scratch("submit-errors");
  auto path = test::write_file(d / "s.yaml", spec_text());
  std::string err;
  CHECK(run_isim("sweep submit " + path + " --tasks 2", nullptr, &err) == 2);
  CHECK(err.find("give one of --slurm and --k8s") != std::string::npos);
  CHECK(run_isim("sweep submit --slurm --k8s " + path + " --tasks 2", nullptr, &err) == 2);
  CHECK(err.find("give one of --slurm and --k8s") != std::string::npos);
  CHECK(run_isim("sweep submit --slurm " + path, nullptr, &err) == 2);
  CHECK(err.find("needs --tasks N") != std::string::npos);
  CHECK(run_isim("sweep submit --slurm " + path + " --tasks 0", nullptr, &err) == 2);
  CHECK(err.find("--tasks: expected an integer in 1..100000 (shards), got '0'") !=
        std::string::npos);
  CHECK(run_isim("sweep submit --k8s " + path + " --tasks 2", nullptr, &err) == 2);
  CHECK(err.find("--k8s needs --image IMAGE") != std::string::npos);
  CHECK(
      run_isim("sweep submit --slurm " + path + " --tasks 2 -p nope=1 --out " + (d / "o").string(),
               nullptr, &err) == 2);
  CHECK(!fs::exists(d / "o"));  // nothing written for a spec that does not load
}

TEST_CASE("shell quoting and DNS-1123 names") {
  CHECK(exp::shell_quote("a/b.yaml") == "a/b.yaml");
  CHECK(exp::shell_quote("sweep.seed=[1, 2]") == "'sweep.seed=[1, 2]'");
  CHECK(exp::shell_quote("it's") == "'it'\\''s'");
  CHECK(exp::shell_quote("") == "''");
  CHECK(exp::dns_label("My_Sweep: v2!") == "my-sweep-v2");
  CHECK(exp::dns_label("__") == "isim");
  CHECK(exp::dns_label(std::string(50, 'a')) == std::string(40, 'a'));
}
