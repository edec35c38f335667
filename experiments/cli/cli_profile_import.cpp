// `isim profile import --from llmservingsim|aiconfigurator --model M.yaml [--tp N] IN_DIR
//  --out P.yaml`: turns public measurements into a `tables` profile (calibrate/import_*.h).
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "calibrate/import_aiconfigurator.h"
#include "calibrate/import_llmservingsim.h"
#include "calibrate/model.h"
#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "sim/cost_model.h"
#include "sim/profile.h"

namespace isim::exp {

namespace po = boost::program_options;

namespace {

const Help kImportHelp{
    "usage: isim profile import --from llmservingsim|aiconfigurator --model M.yaml [--tp N]\n"
    "                           IN_DIR --out P.yaml\n",
    "Turns public measurements into a `tables` profile.\n"
    "  llmservingsim:  IN_DIR holds attention.csv, dense.csv, per_sequence.csv, meta.yaml\n"
    "                  [--memory-gib G] [--pcie-gbps B] [--gpu-spec calibrate/gpus/GPU.yaml]\n"
    "                  override the known-hardware table; --tp N: IN_DIR is the folder\n"
    "                  measured at tp N (one rank's shard); its all-reduce comes from the GPU\n"
    "                  link [--link-gbps B] [--allreduce-latency-us U], or from an\n"
    "                  aiconfigurator table [--allreduce-dir DIR [--allreduce nccl]]\n"
    "  aiconfigurator: IN_DIR holds gemm_perf.csv, context_attention_perf.csv,\n"
    "                  generation_attention_perf.csv and SYSTEM.yaml\n"
    "                  [--system h200_sxm] [--kernel vllm_flash_attn_fa3] [--pcie-gbps 55]\n"
    "                  [--allreduce vllm_graph|vllm_eager|nccl] (with --tp N > 1)\n",
    "  isim profile import --from aiconfigurator --model calibrate/models/llama-3.1-8b.yaml \\\n"
    "      ../shared/data/aiconfigurator-h200 --out h200.yaml\n"
    "  isim profile import --from llmservingsim --model calibrate/models/llama-3.1-8b.yaml \\\n"
    "      ../shared/data/llmservingsim/RTX4090-llama-3.1-8b --out rtx4090.yaml\n"};

}  // namespace

int cmd_profile_import(const Args& args) {
  std::string from, model_path, in_dir, out;
  int tp = 1;
  double memory_gib = 0, pcie_gbps = 0;
  calib::LlmServingSimOptions lss;
  calib::AiconfiguratorOptions aic;
  po::options_description opts, hidden;
  opts.add_options()("help,h", "show this help")("from", po::value(&from),
                                                 "source format: llmservingsim or aiconfigurator")(
      "model", po::value(&model_path), "model YAML (calibrate/models/)")(
      "tp", po::value(&tp), "tensor parallel degree (default 1)")(
      "out,o", po::value(&out), "the profile to write")("memory-gib", po::value(&memory_gib),
                                                        "llmservingsim: device memory, GiB")(
      "pcie-gbps", po::value(&pcie_gbps), "swap bandwidth each way, GB/s")(
      "system", po::value(&aic.system), "aiconfigurator system spec")(
      "kernel", po::value(&aic.kernel), "aiconfigurator attention kernel_source")(
      "allreduce", po::value(&aic.allreduce), "aiconfigurator all-reduce table (tp > 1)")(
      "gpu-spec", po::value(&lss.gpu_spec), "llmservingsim: GPU spec (peaks, link)")(
      "link-gbps", po::value(&lss.link_gbps), "llmservingsim: all-reduce link, GB/s each way")(
      "allreduce-latency-us", po::value(&lss.allreduce_latency_us),
      "llmservingsim: all-reduce latency per call, us")(
      "allreduce-dir", po::value(&lss.allreduce_dir),
      "llmservingsim: aiconfigurator folder with the all-reduce table");
  hidden.add_options()("in", po::value(&in_dir), "input directory");
  po::positional_options_description pos;
  pos.add("in", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kImportHelp, opts);
  if (from.empty()) throw usage_error("missing --from", kImportHelp);
  if (from != "llmservingsim" && from != "aiconfigurator") {
    throw usage_error("unknown --from '" + from + "'; valid: aiconfigurator, llmservingsim",
                      kImportHelp);
  }
  if (model_path.empty()) throw usage_error("missing --model M.yaml", kImportHelp);
  if (in_dir.empty()) throw usage_error("missing IN_DIR", kImportHelp);
  if (out.empty()) throw usage_error("missing --out P.yaml", kImportHelp);
  check_out_file(out, "--out");
  check_not_input(out, "--out", {model_path});
  if (tp < 1) throw usage_error("--tp must be >= 1", kImportHelp);
  if (lss.link_gbps < 0) throw usage_error("--link-gbps must be > 0", kImportHelp);
  if (memory_gib < 0 || pcie_gbps < 0) {
    throw usage_error("--memory-gib and --pcie-gbps must be > 0", kImportHelp);
  }

  const calib::ModelSpec model = calib::load_model(model_path);
  calib::check_tp(model, tp, "--tp", model_path);
  sim::Profile p;
  if (from == "llmservingsim") {
    calib::LlmServingSimOptions o = lss;
    o.tp = tp;
    if (vm.count("allreduce")) o.allreduce = aic.allreduce;
    o.memory_gib = memory_gib;
    o.pcie_gbps = pcie_gbps;
    p = calib::import_llmservingsim(in_dir, model, o);
  } else {
    aic.tp = tp;
    if (pcie_gbps > 0) aic.pcie_gbps = pcie_gbps;
    p = calib::import_aiconfigurator(in_dir, model, aic);
  }

  std::string cmdline = "isim profile import";
  for (const auto& a : args) {
    cmdline += ' ';
    cmdline += a;
  }
  std::ostringstream yaml;
  sim::write_profile(yaml, p);
  const std::string text = "# " + model.shape.name + " on " + p.device.name + ", imported from " +
                           from + " measurements (see provenance).\n# Generated by: " + cmdline +
                           "\n" + yaml.str();
  sim::parse_profile(text, out);  // what is written must read back: checked before it is
  write_file_atomic(out, text);   // written, so that a refusal leaves no file

  const sim::CostModel cm(p);
  const int64_t s = p.saturation_tokens;
  fmt::print(stderr, "wrote {}: T(1) = {:.3f} ms, T({}) = {:.3f} ms (saturation_tokens {})\n", out,
             static_cast<double>(cm.T(1)) / 1e6, s, static_cast<double>(cm.T(s)) / 1e6, s);
  return 0;
}

}  // namespace isim::exp
