// isim profile analytic: a roofline `tables` profile from a GPU spec sheet and a model shape,
// optionally with efficiency factors fitted from a measured profile of another GPU.
#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "calibrate/analytic.h"
#include "calibrate/crosscheck.h"
#include "calibrate/model.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "experiments/version.h"
#include "sim/cost_model.h"

namespace isim::exp {

namespace {

const Help kAnalyticHelp{
    "usage: isim profile analytic --gpu SPEC.yaml --model MODEL.yaml [--tp N] [--ep E]\n"
    "                             [--fit-from MEASURED.yaml --fit-gpu MEASURED_SPEC.yaml]\n"
    "                             [--against AICONFIGURATOR_DIR] [--block-tokens N]\n"
    "                             --out PROFILE.yaml\n",
    "A roofline profile (source: analytic) from a spec sheet (calibrate/gpus/) and a model\n"
    "(calibrate/models/). Default efficiency factors: compute 0.7, memory 0.8, attention 0.5,\n"
    "pcie 0.8, overhead 30 us, decode attention 0.1 us per sequence per layer, 4 us per copy,\n"
    "duplex 0.8. --fit-from fits them from a measured tables profile of the GPU --fit-gpu\n"
    "describes, and applies them to --gpu. --ep spreads a MoE model's routed experts over E\n"
    "GPUs (model.ep; default 1: every GPU holds them all, split by --tp). fp8 weights run their\n"
    "GEMMs at the sheet's fp8_dense_tflops. --against compares the roofline's bf16 GEMMs,\n"
    "attention and all-to-all with measured aiconfigurator tables and prints the error.\n"
    "--block-tokens sets the KV block size (default 16; vLLM's MLA backends page by 64\n"
    "(FlashMLA, FlashInfer MLA) or 128 (CUTLASS MLA); a trace's prefix hash blocks must be a\n"
    "multiple of it).\n",
    "  isim profile analytic --gpu calibrate/gpus/H200.yaml \\\n"
    "      --model calibrate/models/llama-3.1-8b.yaml --out h200.yaml\n"
    "  isim profile analytic --gpu calibrate/gpus/H100-SXM.yaml \\\n"
    "      --model calibrate/models/llama-3.1-8b.yaml --tp 2 \\\n"
    "      --fit-from calibrate/profiles/h200-llama-3.1-8b.aiconfigurator.yaml \\\n"
    "      --fit-gpu calibrate/gpus/H200.yaml --out h100.yaml\n"};

int parse_count(const std::string& flag, const std::string& s) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 1 || v > 1024)
    throw usage_error(fmt::format("{}: expected a positive integer, got '{}'", flag, s),
                      kAnalyticHelp);
  return static_cast<int>(v);
}

// --ep is the model's, checked against it here so that the error names the flag.
void set_ep(calib::ModelSpec& model, const std::string& model_path, int ep) {
  const sim::MoeShape& moe = model.shape.moe;
  if (ep > 1 && !moe.given())
    throw usage_error(fmt::format("--ep {}: model {} ({}) is dense (no moe section): expert "
                                  "parallelism needs routed experts",
                                  ep, model.shape.name, model_path),
                      kAnalyticHelp);
  if (moe.given() && ep > moe.experts)
    throw usage_error(fmt::format("--ep {}: more than the {} routed experts of model {} ({})", ep,
                                  moe.experts, model.shape.name, model_path),
                      kAnalyticHelp);
  model.shape.ep = ep;
}

}  // namespace

int cmd_profile_analytic(const Args& args) {
  std::string gpu_path, model_path, fit_from, fit_gpu, against, out;
  int tp = 1, ep = 1, block_tokens = 16;
  namespace po = boost::program_options;
  po::options_description opts;
  opts.add_options()("help,h", "show this help")("gpu", po::value(&gpu_path),
                                                 "GPU spec sheet YAML (calibrate/gpus/)")(
      "model", po::value(&model_path), "model YAML (calibrate/models/)")(
      "tp", po::value<std::string>(), "tensor parallel degree (default 1)")(
      "ep", po::value<std::string>(),
      "expert-parallel ranks the routed experts are spread over (MoE; default 1)")(
      "block-tokens", po::value<std::string>(), "KV block size in tokens (default 16)")(
      "against", po::value(&against),
      "aiconfigurator table folder to cross-check the roofline against")(
      "fit-from", po::value(&fit_from), "a measured tables profile to fit the factors from")(
      "fit-gpu", po::value(&fit_gpu), "the spec sheet of --fit-from's GPU")(
      "out,o", po::value(&out), "the profile to write");
  const po::variables_map vm = parse_args(args, opts, po::positional_options_description{});
  if (vm.count("help")) return print_help(kAnalyticHelp, opts);
  if (vm.count("tp")) tp = parse_count("--tp", vm["tp"].as<std::string>());
  if (vm.count("ep")) ep = parse_count("--ep", vm["ep"].as<std::string>());
  if (vm.count("block-tokens"))
    block_tokens = parse_count("--block-tokens", vm["block-tokens"].as<std::string>());
  if (gpu_path.empty() || model_path.empty() || out.empty())
    throw usage_error("--gpu, --model and --out are required", kAnalyticHelp);
  check_out_file(out, "--out");
  check_not_input(out, "--out", {gpu_path, model_path, fit_from, fit_gpu});
  if (fit_from.empty() != fit_gpu.empty())
    throw usage_error(
        "--fit-from and --fit-gpu go together (the measured profile and its GPU's spec)",
        kAnalyticHelp);

  const calib::GpuSpec gpu = calib::load_gpu_spec(gpu_path);
  calib::ModelSpec model = calib::load_model(model_path);
  calib::check_tp(model, tp, "--tp", model_path);  // refused, not truncated to whole heads
  model.shape.tp = tp;
  set_ep(model, model_path, ep);
  calib::Efficiency eff;
  std::string fitted;
  if (!fit_from.empty()) {
    const sim::Profile measured = sim::load_profile(fit_from);
    const calib::GpuSpec mgpu = calib::load_gpu_spec(fit_gpu);
    const calib::FitResult fit = calib::fit_efficiency(measured, mgpu);
    eff = fit.eff;
    fmt::print("fitted from {} ({} on {}):\n", fit_from, measured.model.name, mgpu.name);
    fmt::print("  compute {:.4g}, memory {:.4g}, attention {:.4g}, pcie {:.4g}\n", eff.compute,
               eff.memory, eff.attention, eff.pcie);
    fmt::print(
        "  overhead {:.4g} us, decode attention {:.4g} us/seq/layer, {:.4g} us per copy, "
        "duplex {:.4g}\n",
        eff.overhead_us, eff.attention_per_seq_us, eff.pcie_latency_us, eff.duplex);
    for (const auto& n : fit.notes) fmt::print("  {}\n", n);
    for (const auto& k : fit.kept) fmt::print("  kept the default for {}\n", k);
    fitted = fmt::format("{} (model {}, GPU spec {})", fit_from, measured.model.name, fit_gpu);
  }
  sim::Profile p = calib::analytic_profile(gpu, model, model_path, eff);
  if (!fitted.empty()) p.provenance.emplace_back("fitted_from", fitted);
  p.block_tokens = block_tokens;
  std::string command = "isim profile analytic";
  for (const std::string& a : args) command += " " + a;
  p.provenance.emplace_back("command", command);
  p.provenance.emplace_back("tool_version", fmt::format("isim {}", ISIM_VERSION));
  p.provenance.emplace_back("git_sha", ISIM_GIT_SHA);
  sim::write_profile_file(out, p);
  const sim::CostModel cm(p);
  const int64_t s = p.saturation_tokens;
  fmt::print("wrote {}: {} on {}, tp {}{}; T(1) = {:.4g} ms, T({}) = {:.4g} ms (saturation)\n", out,
             model.shape.name, gpu.name, tp, ep > 1 ? fmt::format(", ep {}", ep) : "",
             static_cast<double>(cm.T(1)) / 1e6, s, static_cast<double>(cm.T(s)) / 1e6);
  if (const std::string min_ep = p.provenance_value("min_ep"); !min_ep.empty())
    fmt::print("note: min_ep {}\n", min_ep);
  if (!against.empty())
    fmt::print("{}", calib::cross_check_text(
                         calib::cross_check_aiconfigurator(against, gpu, model.shape, eff)));
  return 0;
}

}  // namespace isim::exp
