// `isim model import HF_CONFIG.json --out M.yaml`: a Hugging Face config.json becomes a model
// YAML in the calibrate/models/ format (calibrate/hf_config.h does the conversion).
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "calibrate/hf_config.h"
#include "calibrate/model.h"
#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"

namespace isim::exp {

namespace {

// What is written must read back: TEXT is read from a sibling file (named OUT in any message),
// which then replaces OUT; a refusal leaves OUT as it was and no other file.
calib::ModelSpec read_back_model(const std::string& out, const std::string& text) {
  const std::string tmp = out + ".check-" + std::to_string(::getpid());
  write_file_atomic(tmp, text);
  try {
    calib::ModelSpec m = calib::load_model(tmp);
    std::filesystem::rename(tmp, out);
    return m;
  } catch (const InputError& ie) {
    remove_file(tmp);
    std::string msg = ie.what();
    for (size_t at; (at = msg.find(tmp)) != std::string::npos;) msg.replace(at, tmp.size(), out);
    throw InputError(msg);
  } catch (...) {
    remove_file(tmp);
    throw;
  }
}

}  // namespace

namespace po = boost::program_options;

namespace {

const Help kModelHelp{
    "usage: isim model import HF_CONFIG.json --out M.yaml [--name NAME] [--dtype D] "
    "[--weight-dtype W]\n"
    "                         [--force]\n",
    "Sub-verbs:\n"
    "  import  a Hugging Face config.json -> a model YAML (the calibrate/models/ format) for\n"
    "          isim profile analytic / import and isim-calibrate (isim model import --help)\n",
    "  isim model import ~/models/Llama-3.1-8B/config.json --out llama-3.1-8b.yaml\n"
    "  isim profile analytic --gpu calibrate/gpus/H200.yaml --model llama-3.1-8b.yaml "
    "--out p.yaml\n"};

const Help kModelImportHelp{
    "usage: isim model import HF_CONFIG.json --out M.yaml [--name NAME] [--dtype D] "
    "[--weight-dtype W]\n"
    "                         [--force]\n",
    "Reads a Hugging Face config.json, identified by `architectures` or `model_type`:\n"
    "dense LlamaForCausalLM (Llama 2, 3.x), Qwen2ForCausalLM, Qwen3ForCausalLM,\n"
    "MistralForCausalLM, GPTJForCausalLM; mixture-of-experts Qwen2MoeForCausalLM,\n"
    "Qwen3MoeForCausalLM, MixtralForCausalLM, PhiMoEForCausalLM, Glm4MoeForCausalLM; and\n"
    "MLA + MoE DeepseekV2ForCausalLM, DeepseekV3ForCausalLM (Kimi K2), GlmMoeDsaForCausalLM\n"
    "(GLM-5, its sparse attention costed as dense). A multimodal wrapper's text_config is\n"
    "read; quantization_config gives weight_dtype (fp8, int8, int4). params and\n"
    "active_params are computed from the shapes; each value's comment in M.yaml says which\n"
    "config key it came from. Exit 0: written; 2: bad input.\n",
    "  isim model import ~/models/Llama-3.1-8B/config.json --out llama-3.1-8b.yaml\n"
    "  isim model import gpt-j-6b/config.json --dtype fp16 --name gpt-j-6b --out gptj.yaml\n"};

int model_import(const Args& args) {
  std::string config, out;
  calib::HfImportOptions o;
  po::options_description opts, hidden;
  opts.add_options()("help,h", "show this help")(
      "out", po::value(&out), "the model file to write (refused if it exists, unless --force)")(
      "name", po::value(&o.name),
      "the model's name (default: the last part of _name_or_path, else the file's name when "
      "it is not config.json, else the config's folder name, lowercased)")(
      "dtype", po::value(&o.dtype), "fp16, bf16, fp32 or fp8 (default: from torch_dtype)")(
      "weight-dtype", po::value(&o.weight_dtype),
      "fp8, int8 or int4: the linear weights' dtype (default: from quantization_config, else "
      "dtype)")("force", "overwrite an existing M.yaml");
  hidden.add_options()("config", po::value(&config), "config.json");
  po::positional_options_description pos;
  pos.add("config", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kModelImportHelp, opts);
  if (config.empty()) throw usage_error("missing HF_CONFIG.json", kModelImportHelp);
  if (out.empty()) throw usage_error("missing --out M.yaml", kModelImportHelp);
  check_out_file(out, "--out");
  check_not_input(out, "--out", {config});
  if (std::filesystem::exists(out) && !vm.count("force"))
    throw InputError("--out " + out + ": exists; pass --force to overwrite it");

  const calib::HfImport imp = calib::import_hf_config(config, o);
  const calib::ModelSpec read_back = read_back_model(out, calib::hf_model_yaml(imp));
  const auto& s = read_back.shape;
  for (const auto& note : imp.notes) fmt::print(stderr, "note: not modelled: {}\n", note);
  fmt::print(
      "wrote {}: {} ({}): {} layers, hidden {}, {} heads ({} KV) x head_dim {}, ffn {}, "
      "vocab {}, {}, {:.2f}B params, KV {} bytes/token\n",
      out, s.name, imp.architecture, s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.ffn,
      s.vocab, s.dtype, s.params / 1e9, s.kv_bytes_per_token());
  if (s.moe.given())
    fmt::print(
        "  MoE: {} experts, {} per token, expert ffn {}, shared ffn {}, {} dense layers; "
        "{:.2f}B active params per token\n",
        s.moe.experts, s.moe.experts_per_token, s.moe.expert_ffn, s.moe.shared_ffn,
        s.moe.dense_layers, s.active_params / 1e9);
  if (s.mla.given())
    fmt::print(
        "  MLA: KV is one latent of kv_lora_rank {} + qk_rope_head_dim {} per token and "
        "layer\n",
        s.mla.kv_lora_rank, s.mla.qk_rope_head_dim);
  if (!s.weight_dtype.empty())
    fmt::print("  weights: {} (embedding and lm_head {}): {:.2f} GiB\n", s.weight_dtype, s.dtype,
               s.weight_bytes_per_gpu() / (1024.0 * 1024.0 * 1024.0));
  return 0;
}

}  // namespace

int cmd_model(const Args& args) {
  if (!args.empty() && args[0] == "import") return model_import(Args(args.begin() + 1, args.end()));
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    po::options_description opts;
    opts.add_options()("help,h", "show this help");
    return print_help(kModelHelp, opts);
  }
  throw usage_error(args.empty() ? "missing the sub-verb (import)"
                                 : "unknown sub-verb '" + args[0] + "'; valid: import",
                    kModelHelp);
}

}  // namespace isim::exp
