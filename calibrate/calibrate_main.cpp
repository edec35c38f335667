// isim-calibrate: measures a device with the synthetic transformer runner and writes a profile.
//
//   isim-calibrate --model M.yaml --backend cuda|cpu [--tp N] [--quick] [--seed S] --out P.yaml
//   (--help lists the options, from the table main() parses with, and examples)
//
// Progress goes to stderr; the profile to --out. Exit codes: 0 done, 2 bad input (including a
// CUDA backend without a device), 1 anything else.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "calibrate/measure.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/out_path.h"

namespace {

const isim::Help kHelp{
    "usage: isim-calibrate --model M.yaml --backend cuda|cpu [--tp N] [--quick] [--seed S]\n"
    "                      --out P.yaml\n",
    "Measures the synthetic transformer runner on this machine's device (cuda) or CPU (cpu)\n"
    "for the model's shape and writes a `tables` profile: dense, decode and prefill attention,\n"
    "lm_head and per-iteration overhead tables, the swap (copy) bandwidth curves and the\n"
    "profile's own validation. Progress goes to stderr. Exit 0: done; 2: bad input (a CUDA\n"
    "backend without a device included); 1: anything else.\n",
    "  isim-calibrate --model calibrate/models/tiny.yaml --backend cpu --quick --out cpu.yaml\n"
    "  isim-calibrate --model calibrate/models/llama-3.1-8b.yaml --backend cuda --out h200.yaml\n"
    "  isim-calibrate --model calibrate/models/llama-3.1-8b.yaml --backend cuda --tp 2 \\\n"
    "      --seed 3 --out h200-tp2.yaml\n"};

int parse_int(const std::string& flag, const std::string& v) {
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty())
    throw isim::InputError(fmt::format("{} {}: expected an integer", flag, v));
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  isim::calib::CalibrateOptions o;
  std::string out;
  po::options_description opts;
  opts.add_options()("help,h", "show this help")("model", po::value(&o.model_path),
                                                 "model YAML (calibrate/models/)")(
      "backend", po::value(&o.backend), "cuda (default; needs a GPU) or cpu")(
      "tp", po::value<std::string>(), "tensor parallel degree (default 1)")(
      "quick", "smaller grids and fewer repetitions (minutes, not tens of minutes)")(
      "seed", po::value<std::string>(), "seed of the synthetic weights and inputs (default 1)")(
      "out,o", po::value(&out), "the profile to write");
  try {
    po::variables_map vm;
    try {
      vm = isim::parse_args(isim::Args(argv + 1, argv + argc), opts,
                                 po::positional_options_description{});
    } catch (const po::error& e) {
      throw isim::InputError(e.what());
    }
    if (vm.count("help")) return isim::print_help(kHelp, opts);
    if (vm.count("tp")) o.tp = parse_int("--tp", vm["tp"].as<std::string>());
    if (vm.count("seed"))
      o.seed = static_cast<uint64_t>(parse_int("--seed", vm["seed"].as<std::string>()));
    o.quick = vm.count("quick") > 0;
    if (o.model_path.empty()) throw isim::InputError("--model: required");
    if (out.empty()) throw isim::InputError("--out: required");
    isim::check_out_file(out, "--out");  // before minutes of measuring, not after
    o.progress = [](const std::string& line) { std::cerr << line << std::endl; };
    const isim::sim::Profile p = isim::calib::calibrate(o);
    isim::sim::write_profile_file(out, p);
    std::cerr << fmt::format("wrote {}: saturation_tokens {}, validation mean |error| {}\n", out,
                             p.saturation_tokens,
                             fmt::format("{:.1f}%", 100 * p.validation_mean_abs_error()));
    return 0;
  } catch (const isim::InputError& e) {
    std::cerr << "isim-calibrate: " << e.what() << "\n" << kHelp.usage << "(see --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "isim-calibrate: error: " << e.what() << "\n";
    return 1;
  }
}
