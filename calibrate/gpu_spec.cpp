// Loading GPU spec sheets (calibrate/gpus/*.yaml; format in calibrate/analytic.h).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>

#include "calibrate/analytic.h"
#include "core/input_error.h"
#include "core/strict_yaml.h"

namespace isim::calib {

namespace {

// A {value, source} entry: returns the value, checked > 0.
double sourced_value(const YamlMap& root, const std::string& key) {
  const YamlMap n = root.map(key, {"value", "source"}, "a map {value, source}");
  const YAML::Node src = n.value("source");
  if (!src || !src.IsScalar() || src.Scalar().empty())
    n.fail("source", "missing (every figure names where it comes from)");
  const double out = n.require<double>("value", "a number");
  if (!(out > 0) || !std::isfinite(out)) n.fail("value", fmt::format("must be > 0, got {}", out));
  return out;
}

}  // namespace

GpuSpec load_gpu_spec(const std::string& path) {
  const std::vector<std::string> keys = {
      "name",     "bf16_dense_tflops", "fp8_dense_tflops", "hbm_gbps",     "memory_gib",
      "pcie_gen", "pcie_gbps",         "nvlink_gbps",      "network_gbps", "nvlink_domain_gpus"};
  std::string key_list;
  for (const auto& k : keys) key_list += (key_list.empty() ? "" : ", ") + k;
  const YamlMap root(load_yaml_file(path, "GPU spec file"), path, "", keys,
                     "a map with keys " + key_list);
  GpuSpec g;
  g.path = path;
  const YAML::Node name = root.value("name");
  if (!name || !name.IsScalar() || name.Scalar().empty())
    root.fail("name", "missing (expected the GPU's name)");
  g.name = name.Scalar();
  g.bf16_dense_tflops = sourced_value(root, "bf16_dense_tflops");
  g.hbm_gbps = sourced_value(root, "hbm_gbps");
  g.memory_gib = sourced_value(root, "memory_gib");
  if (g.memory_gib > 1024.0 * 1024.0)  // a profile's limit (sim/profile.h): a PiB
    root.map("memory_gib", {"value", "source"})
        .fail("value", fmt::format("must be at most 1048576 GiB (a PiB), got {}", g.memory_gib));
  const double gen = sourced_value(root, "pcie_gen");
  if (gen != std::floor(gen) || gen > 7)
    root.map("pcie_gen", {"value", "source"})
        .fail("value", fmt::format("expected a PCIe generation 1..7, got {}", gen));
  g.pcie_gen = static_cast<int>(gen);
  g.pcie_gbps = sourced_value(root, "pcie_gbps");
  if (root.has("nvlink_gbps")) g.nvlink_gbps = sourced_value(root, "nvlink_gbps");
  if (root.has("fp8_dense_tflops")) g.fp8_dense_tflops = sourced_value(root, "fp8_dense_tflops");
  if (root.has("network_gbps")) g.network_gbps = sourced_value(root, "network_gbps");
  if (root.has("nvlink_domain_gpus")) {
    const double n = sourced_value(root, "nvlink_domain_gpus");
    if (n != std::floor(n) || n > 100000)
      root.map("nvlink_domain_gpus", {"value", "source"})
          .fail("value", fmt::format("expected a GPU count 1..100000, got {}", n));
    if (g.nvlink_gbps <= 0)
      root.fail("nvlink_domain_gpus", "given without nvlink_gbps (a domain needs its link)");
    g.nvlink_domain_gpus = static_cast<int>(n);
  }
  return g;
}

}  // namespace isim::calib
