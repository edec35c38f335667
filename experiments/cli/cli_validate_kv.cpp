// isim validate --kv-logs DIR: the KV capacity rule against real vLLM servers' startup logs
// (calibrate/kv_logs.h). A report: exit 0 when it ran, 2 on bad input.
#include <filesystem>
#include <iostream>

#include <boost/program_options.hpp>

#include "calibrate/kv_logs.h"
#include "core/cli_help.h"
#include "experiments/cli/cli.h"

namespace isim::exp {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const Help kKvLogsHelp{
    "usage: isim validate --kv-logs DIR [--models DIR ...]\n",
    "Reads every vLLM startup log (*.log) in DIR, predicts the GPU KV tokens of each log whose\n"
    "model is known with the rule `isim run` uses (engine.kv_capacity vllm), and prints\n"
    "predicted against logged per log (weights, torch peak, non-torch, KV tokens, error) and\n"
    "the summary line 'N logs: within 2%: K, within 5%: M, skipped: S (why)'. Known models:\n"
    "the model YAMLs and Hugging Face config.json files of each --models folder (default:\n"
    "calibrate/models, then DIR/../llmservingsim/models and DIR/../aiconfigurator-models where\n"
    "they exist). Exit 0: it ran (a report); 2: bad input (DIR missing, a log that is not a\n"
    "vLLM log).\n",
    "  isim validate --kv-logs ../shared/data/vllm-startup-logs\n"};

}  // namespace

int cmd_validate_kv_logs(const Args& args) {
  po::options_description opts;
  std::string dir;
  std::vector<std::string> models;
  opts.add_options()("help,h", "show this help")("kv-logs", po::value(&dir),
                                                 "folder of vLLM startup logs")(
      "models", po::value(&models)->composing(), "folder of known models (repeatable)");
  const po::variables_map vm = parse_visible_hidden(args, opts, po::options_description(),
                                                    po::positional_options_description());
  if (vm.count("help")) return print_help(kKvLogsHelp, opts);
  if (dir.empty()) throw usage_error("--kv-logs needs DIR", kKvLogsHelp);
  if (models.empty()) {
    if (fs::is_directory("calibrate/models")) models.push_back("calibrate/models");
    for (const char* sub : {"/../llmservingsim/models", "/../aiconfigurator-models"})
      if (fs::is_directory(dir + sub)) models.push_back(dir + sub);
  }
  const calib::KvLogReport r = calib::check_kv_logs(dir, models);
  calib::print_kv_report(std::cout, r);
  return 0;
}

}  // namespace isim::exp
