// The known models of `isim validate --kv-logs` and how a log's model id finds one
// (calibrate/kv_logs.h).
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "calibrate/hf_config.h"
#include "calibrate/kv_logs.h"
#include "core/input_error.h"

namespace isim::calib {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool strip_suffix(std::string& s, const std::string& suffix) {
  if (!s.ends_with(suffix)) return false;
  s.resize(s.size() - suffix.size());
  return true;
}

// Same shapes under another name: the checkpoint a log serves -> the config the project has.
const std::pair<const char*, const char*> kModelIdAliases[] = {
    // Instruct fine-tune of the base model: Mixtral-8x7B-v0.1's config.json shapes.
    {"mixtral-8x7b-instruct-v0.1", "mixtral-8x7b-v0.1"},
    // The 2507 Instruct update keeps Qwen3-30B-A3B's layer shapes (its context is longer).
    {"qwen3-30b-a3b", "qwen3-30b-a3b-instruct-2507"},
    // The chat model's config (calibrate/models/deepseek-v2-lite-chat.yaml, named by its
    // _name_or_path) under the id with "-chat" stripped.
    {"deepseek-v2-lite", "deepseek-v2-lite-chat"},
    // The dated release's id keeps "-instruct" before its date.
    {"mistral-small-3.1-24b-instruct-2503", "mistral-small-3.1-24b"},
};

struct Unmodelled {
  const char* needle;
  const char* category;
  const char* detail;
};
const Unmodelled kUnmodelledIds[] = {
    {"gemma-3-", "vision tower", "Gemma 3 loads a SigLIP vision tower not counted here"},
    {"gemma-4-", "vision tower", "Gemma 4 loads vision and audio towers not counted here"},
    {"gpt-oss", "MXFP4 experts",
     "gpt-oss stores its experts in MXFP4, a weight format the rule has no size for"},
    {"granite-vision", "vision tower", "a SigLIP vision tower not counted here"},
    {"kimi-vl", "vision tower", "a MoonViT vision tower not counted here (and MoE with MLA)"},
    {"llama-4-", "vision tower", "Llama 4 loads a vision tower not counted here (and is MoE)"},
};

}  // namespace

std::vector<KnownModel> load_model_catalog(const std::vector<std::string>& dirs) {
  std::vector<KnownModel> out;
  for (const std::string& dir : dirs) {
    if (!fs::is_directory(dir)) throw InputError(dir + ": not a folder of models");
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const std::string ext = f.extension().string();
      if (ext != ".yaml" && ext != ".json") continue;
      KnownModel k;
      k.path = f.string();
      std::string stem = lower(f.stem().string());
      if (const size_t at = stem.find("--"); at != std::string::npos) stem = stem.substr(at + 2);
      strip_suffix(stem, "_config");
      k.name = stem;
      try {
        if (ext == ".yaml") {
          k.spec = load_model(k.path);
          k.name = k.spec.shape.name;
        } else {
          HfImportOptions o;
          o.name = stem;
          k.spec = import_hf_config(k.path, o).model;
        }
        k.ok = true;
      } catch (const InputError& e) {
        k.error = e.what();
      }
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const KnownModel& m) { return m.name == k.name; });
      if (!seen) out.push_back(std::move(k));
    }
  }
  return out;
}

ModelMatch match_model_id(const std::string& id, const std::string& quantization) {
  ModelMatch m;
  std::string s = lower(id.substr(id.rfind('/') == std::string::npos ? 0 : id.rfind('/') + 1));
  if (strip_suffix(s, "-fp8-dynamic") || strip_suffix(s, "-fp8")) {
    m.weight_dtype = "fp8";
  } else if (strip_suffix(s, "-quantized.w8a8") || strip_suffix(s, "-w8a8")) {
    m.weight_dtype = "int8";
  } else if (strip_suffix(s, "-quantized.w4a16") || strip_suffix(s, "-w4a16")) {
    m.weight_dtype = "int4";
  } else if (quantization == "fp8") {
    m.weight_dtype = "fp8";  // vLLM's online fp8 quantization of a bf16 checkpoint
  } else if (!quantization.empty()) {
    m.weight_dtype = "?";
  }
  if (s.starts_with("meta-")) s = s.substr(5);
  while (strip_suffix(s, "-instruct") || strip_suffix(s, "-hf") || strip_suffix(s, "-chat") ||
         strip_suffix(s, "-it")) {
  }
  for (const auto& [from, to] : kModelIdAliases)
    if (s == from) s = to;
  m.name = s;
  return m;
}

std::pair<std::string, std::string> unmodelled(const std::string& id) {
  const std::string s = lower(id);
  for (const Unmodelled& u : kUnmodelledIds)
    if (s.find(u.needle) != std::string::npos) return {u.category, u.detail};
  return {"", ""};
}

}  // namespace isim::calib
