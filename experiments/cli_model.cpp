// `isim model import HF_CONFIG.json --out M.yaml`: a Hugging Face config.json becomes a model
// YAML in the calibrate/models/ format (calibrate/hf_config.h does the conversion).
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "calibrate/hf_config.h"
#include "calibrate/model.h"
#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "experiments/cli_args.h"
#include "experiments/out_path.h"
#include "traces/input_error.h"

namespace isim::exp {

namespace po = boost::program_options;

namespace {

const char* kModelUsage =
    "usage: isim model import HF_CONFIG.json --out M.yaml [--name NAME] [--dtype D] [--force]\n"
    "  import  a Hugging Face config.json -> a model YAML (the calibrate/models/ format) for\n"
    "          isim profile analytic / import and isim-calibrate (isim model import --help)\n"
    "examples:\n"
    "  isim model import ~/models/Llama-3.1-8B/config.json --out llama-3.1-8b.yaml\n"
    "  isim profile analytic --gpu calibrate/gpus/H200.yaml --model llama-3.1-8b.yaml "
    "--out p.yaml\n";

const char* kImportUsage =
    "usage: isim model import HF_CONFIG.json --out M.yaml [--name NAME] [--dtype D] [--force]\n"
    "  Reads a Hugging Face config.json of a dense decoder: LlamaForCausalLM (Llama 2, 3.x),\n"
    "  Qwen2ForCausalLM (Qwen2, Qwen2.5), MistralForCausalLM, GPTJForCausalLM, identified by\n"
    "  `architectures` or `model_type`. Mixture-of-experts configs are refused (not yet\n"
    "  supported). params is computed from the shapes; each value's comment in M.yaml says\n"
    "  which config key it came from.\n"
    "  --out M.yaml   the model file to write (refused if it exists, unless --force)\n"
    "  --name NAME    the model's name (default: the last part of _name_or_path, else the\n"
    "                 config's folder name, lowercased)\n"
    "  --dtype D      fp16, bf16, fp32 or fp8 (default: from torch_dtype)\n"
    "  --force        overwrite an existing M.yaml\n"
    "examples:\n"
    "  isim model import ~/models/Llama-3.1-8B/config.json --out llama-3.1-8b.yaml\n"
    "  isim model import gpt-j-6b/config.json --dtype fp16 --name gpt-j-6b --out gptj.yaml\n";

int model_import(const Args& args) {
  std::string config, out;
  calib::HfImportOptions o;
  po::options_description opts("options");
  opts.add_options()("help,h", "help")("config", po::value(&config), "config.json")(
      "out", po::value(&out), "model YAML")("name", po::value(&o.name), "model name")(
      "dtype", po::value(&o.dtype), "dtype")("force", "overwrite --out");
  const po::variables_map vm = parse_args(args, opts, "config");
  if (vm.count("help")) return std::cout << kImportUsage, 0;
  if (config.empty()) throw UsageError{"missing HF_CONFIG.json", kImportUsage};
  if (out.empty()) throw UsageError{"missing --out M.yaml", kImportUsage};
  check_out_file(out, "--out");
  if (std::filesystem::exists(out) && !vm.count("force"))
    throw InputError("--out " + out + ": exists; pass --force to overwrite it");

  const calib::HfImport imp = calib::import_hf_config(config, o);
  write_file_atomic(out, calib::hf_model_yaml(imp));
  const auto& s = calib::load_model(out).shape;  // what was written must read back
  for (const auto& note : imp.notes) fmt::print(stderr, "note: not modelled: {}\n", note);
  fmt::print(
      "wrote {}: {} ({}): {} layers, hidden {}, {} heads ({} KV) x head_dim {}, ffn {}, "
      "vocab {}, {}, {:.2f}B params, KV {} bytes/token\n",
      out, s.name, imp.architecture, s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.ffn,
      s.vocab, s.dtype, s.params / 1e9, s.kv_bytes_per_token());
  return 0;
}

}  // namespace

int cmd_model(const Args& args) {
  if (!args.empty() && args[0] == "import") return model_import(Args(args.begin() + 1, args.end()));
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help"))
    return std::cout << kModelUsage, 0;
  throw UsageError{args.empty() ? "missing the sub-verb (import)"
                                : "unknown sub-verb '" + args[0] + "'; valid: import",
                   kModelUsage};
}

}  // namespace isim::exp
