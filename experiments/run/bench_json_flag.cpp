// isim run --bench-json FILE: where each policy's bench.json goes, the refusals before a run,
// and the copy after it (experiments/run/bench_json.h).
#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/run/bench_json.h"

namespace isim::exp {

namespace fs = std::filesystem;

std::string bench_json_path(const std::string& file, const std::string& policy, size_t policies) {
  return per_policy_file(file, ".json", policy, policies);
}

void check_bench_json_flag(const std::string& file, const Experiment& e,
                           const std::vector<std::string>& inputs) {
  if (e.run_metrics.bench_json == "off")
    throw InputError(fmt::format(
        "--bench-json {}: metrics.bench_json is off, so the run writes no bench.json to copy; "
        "give -p metrics.bench_json=detailed (or summary)",
        file));
  for (size_t i = 0; i < e.policies.size(); ++i) {
    const std::string path = bench_json_path(file, e.policies[i].name, e.policies.size());
    for (size_t k = 0; k < i; ++k)
      if (e.policies[k].name == e.policies[i].name)
        throw InputError(fmt::format(
            "--bench-json {}: policies {} and {} are both named {}, so one file would replace the "
            "other: run them separately",
            path, k + 1, i + 1, e.policies[i].name));
    check_out_file(path, "--bench-json");
    check_not_input(path, "--bench-json", inputs);
  }
}

void copy_bench_json(const std::string& file, const Experiment& e, const std::string& out) {
  for (const PolicySpec& p : e.policies) {
    const fs::path from = fs::path(out) / p.name / "bench.json";
    if (!fs::exists(from)) continue;  // an interrupted run: the policy never ran
    const std::string to = bench_json_path(file, p.name, e.policies.size());
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(from.c_str(), "rb"), std::fclose);
    if (!f) throw InputError(from.string() + ": cannot read");
    write_file_atomic(to, [&](const PutText& put) {  // a megabyte at a time
      std::vector<char> buf(1 << 20);
      for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0;)
        put(std::string_view(buf.data(), n));
      if (std::ferror(f.get())) throw InputError(from.string() + ": cannot read");
    });
    fmt::print(stderr, "{}: bench.json -> {}\n", p.name, to);
  }
}

}  // namespace isim::exp
