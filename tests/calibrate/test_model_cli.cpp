// `isim model import` end to end through the binary: the file it writes, its refusal to
// overwrite, its exit codes and messages, and its help.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "calibrate/model.h"
#include "tests/cli_helpers.h"

namespace fs = std::filesystem;

namespace {

// Mistral-7B-v0.1's config.json (model card numbers), abridged to the keys the import reads.
const char* kMistral = R"({
  "architectures": ["MistralForCausalLM"],
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "vocab_size": 32000
}
)";

int model(const std::string& args, std::string* out, std::string* err) {
  return isim::test::run_bin("isim", "model " + args, out, err);
}

}  // namespace

TEST_CASE("isim model import: writes a model that loads, and refuses to overwrite it") {
  const auto dir = isim::test::scratch("model-cli") / "Mistral-7B-v0.1";
  fs::create_directories(dir);
  const std::string cfg = isim::test::write_file(dir / "config.json", kMistral);
  const std::string yaml = (dir / "m.yaml").string();
  std::string out, err;
  REQUIRE(model("import " + cfg + " --out " + yaml, &out, &err) == 0);
  CHECK(out == "wrote " + yaml +
                   ": mistral-7b-v0.1 (MistralForCausalLM): 32 layers, hidden 4096, "
                   "32 heads (8 KV) x head_dim 128, ffn 14336, vocab 32000, bf16, "
                   "7.24B params, KV 131072 bytes/token\n");
  CHECK(err.rfind("note: not modelled: sliding_window 4096:", 0) == 0);
  const auto m = isim::calib::load_model(yaml);
  CHECK(m.shape.name == "mistral-7b-v0.1");
  CHECK(m.shape.params ==
        32 * (2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336 + 2.0 * 4096) +
            2.0 * 32000 * 4096 + 4096);
  const std::string first = isim::test::slurp(yaml);
  CHECK(model("import " + cfg + " --out " + yaml, &out, &err) == 2);
  CHECK(err == "isim: error: --out " + yaml + ": exists; pass --force to overwrite it\n");
  CHECK(isim::test::slurp(yaml) == first);
  CHECK(model("import " + cfg + " --out " + yaml + " --force", &out, &err) == 0);
  CHECK(isim::test::slurp(yaml) == first);           // deterministic
  for (const auto& e : fs::directory_iterator(dir))  // no temporary file left behind
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("isim model import: bad input exits 2 naming the file and key") {
  const auto dir = isim::test::scratch("model-cli-bad");
  const std::string yaml = (dir / "m.yaml").string();
  std::string out, err;
  std::string moe = kMistral;
  moe.replace(moe.find("\"vocab_size\""), 0, "\"num_local_experts\": 8,\n  ");
  const std::string moe_cfg = isim::test::write_file(dir / "mixtral.json", moe);
  CHECK(model("import " + moe_cfg + " --out " + yaml, &out, &err) == 2);
  CHECK(err.rfind("isim: error: " + moe_cfg +
                      ": num_local_experts: 8 experts in a config of the dense "
                      "MistralForCausalLM; expected a mixture-of-experts architecture",
                  0) == 0);
  std::string broken = kMistral;
  broken.replace(broken.find("4096,"), 5, "4096");  // line 3 lacks its comma
  const std::string broken_cfg = isim::test::write_file(dir / "broken.json", broken);
  CHECK(model("import " + broken_cfg + " --out " + yaml, &out, &err) == 2);
  CHECK(err.rfind("isim: error: " + broken_cfg + ":4: not valid JSON", 0) == 0);
  CHECK(!fs::exists(yaml));
  CHECK(model("import " + moe_cfg, &out, &err) == 2);
  CHECK(err.rfind("isim model: missing --out M.yaml\n", 0) == 0);
  CHECK(model("import --out " + yaml, &out, &err) == 2);
  CHECK(err.rfind("isim model: missing HF_CONFIG.json\n", 0) == 0);
  CHECK(model("export", &out, &err) == 2);
  CHECK(err.rfind("isim model: unknown sub-verb 'export'; valid: import\n", 0) == 0);
}

TEST_CASE("isim model --help and isim model import --help show usage with examples") {
  std::string out, err;
  CHECK(model("--help", &out, &err) == 0);
  CHECK(out.rfind("usage: isim model import HF_CONFIG.json --out M.yaml", 0) == 0);
  CHECK(out.find("examples:\n  isim model import ") != std::string::npos);
  CHECK(model("import --help", &out, &err) == 0);
  CHECK(out.find("--force               overwrite an existing M.yaml") != std::string::npos);
  CHECK(out.find("examples:\n  isim model import ") != std::string::npos);
  CHECK(isim::test::run_bin("isim", "--help", &out, &err) == 0);
  CHECK(out.find("  model import HF_CONFIG.json --out M.yaml") != std::string::npos);
}
