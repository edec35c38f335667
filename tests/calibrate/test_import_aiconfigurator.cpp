// The aiconfigurator importer on tests/data/aiconfigurator-excerpt (rows cut unchanged from
// aiconfigurator's H200 tables), composed for llama-3.1-8b, with expected values by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "calibrate/import_aiconfigurator.h"
#include "calibrate/model.h"
#include "core/input_error.h"
#include "sim/profile.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

namespace fs = std::filesystem;
using isim::InputError;
using isim::calib::AiconfiguratorOptions;
using isim::calib::import_aiconfigurator;

namespace {

const std::string kExcerpt = std::string(ISIM_SOURCE_DIR) + "/tests/data/aiconfigurator-excerpt";
const std::string kModel = std::string(ISIM_SOURCE_DIR) + "/calibrate/models/llama-3.1-8b.yaml";

isim::calib::ModelSpec llama() {
  return isim::calib::load_model(kModel);
}

// Rewrites the file `f` (of a copy_excerpt folder) through `change`.
void edit(const fs::path& f, const std::function<std::string(std::string)>& change) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  in.close();
  const std::string text = change(ss.str());
  fs::permissions(f, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(f) << text;
}

fs::path copy_excerpt(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("isim-test-import-aic-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  for (const auto& e : fs::directory_iterator(kExcerpt))
    fs::copy_file(e.path(), d / e.path().filename());
  return d;
}

std::string error_of(const std::string& dir, const isim::calib::ModelSpec& m,
                     const AiconfiguratorOptions& o = {}) {
  try {
    import_aiconfigurator(dir, m, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("aiconfigurator import: llama-3.1-8b from the excerpt, by hand") {
  const isim::sim::Profile p = import_aiconfigurator(kExcerpt, llama());
  const auto& t = p.tables;

  // Dense at m=1 (latency ms x 1000):
  //  QKV  n=6144  k=4096: 16.14044 (table shape)
  //  O    n=4096  k=4096: 12.55733
  //  gate+up n=28672 k=4096: between n=16384 (33.91378) and 51200 (107.3307), weight
  //       12288/34816 = 6/17: 33.91378 + 6/17 * 73.41692 = 59.82563
  //  down n=4096 k=14336: halfway between k=12288 (29.68444) and 16384 (35.27822) = 32.48133
  //  sum = 121.00473 -> 121.005
  // The same for m=2: 15.90222 + 12.68 + (33.72533 + 6/17 * 87.45427) + (29.288 + 39.56178)/2
  //  = 127.59865 -> 127.599; m=2048: 132.1733 + 84.36178 + (326.4844 + 6/17 * 1118.1516)
  //  + (238.6044 + 334.7858)/2 = 1224.35632 -> 1224.356; m=4096: 248.216 + 168.0693
  //  + (731.3849 + 6/17 * 1940.4061) + (500.8062 + 708.328)/2 = 2437.08651 -> 2437.087.
  CHECK(t.dense_us.x == std::vector<double>{1, 2, 2048, 4096});
  CHECK(t.dense_us.y == std::vector<double>{121.005, 127.599, 1224.356, 2437.087});

  // lm_head n=128256 > 65536: two column blocks of n=64128, each between n=51200 and 65536
  // (weight 12928/14336): m=1: 2 * (107.3307 + 0.9017857 * 25.8586) = 261.29923 -> 261.299;
  // m=2: 2 * (121.1796 + 0.9017857 * 11.6213) = 263.31904 -> 263.319. Sequences stop at the
  // largest decode batch (2).
  CHECK(t.lm_head_us.x == std::vector<double>{1, 2});
  CHECK(t.lm_head_us.y == std::vector<double>{261.299, 263.319});

  // Decode: KV per sequence = isl + step = 16, 64. Batch 1 {16: 11.65333, 64: 11.52533},
  // batch 2 {16: 11.81867, 64: 11.87733}; totals {16, 32, 64, 128}.
  //  b=1: 11.653; kv 32: 11.65333 - 16/48 * 0.128 = 11.61067 -> 11.611; 11.525;
  //       kv 128: 11.52533 - 64/48 * 0.128 = 11.35467 -> 11.355
  //  b=2: kv 8: 11.81867 - 8/48 * 0.05866 = 11.80889 -> 11.809; 11.819;
  //       kv 32: 11.81867 + 16/48 * 0.05866 = 11.83822 -> 11.838; 11.877
  CHECK(t.decode_attention_us.x == std::vector<double>{1, 2});
  CHECK(t.decode_attention_us.y == std::vector<double>{16, 32, 64, 128});
  CHECK(t.decode_attention_us.z ==
        std::vector<double>{11.653, 11.611, 11.525, 11.355, 11.809, 11.819, 11.838, 11.877});

  // Prefill: T_ctx(16, 32, 64) = 12.192, 13.77067, 14.33067; chunks and kv up to 64 / 2 = 32.
  // At these small sizes the chunk alone dominates, e.g. (16, 32): max(12.192,
  // T_ctx(48) - T_ctx(32) = 14.05067 - 13.77067 = 0.28, T_gen(48) = 11.568) = 12.192.
  CHECK(t.prefill_attention_us.x == std::vector<double>{16, 32});
  CHECK(t.prefill_attention_us.y == std::vector<double>{0, 16, 32});
  CHECK(t.prefill_attention_us.z ==
        std::vector<double>{12.192, 12.192, 12.192, 13.771, 13.771, 13.771});

  // Knee: reference m(2048) = (2437.087 - 1224.356) / 2048 = 0.59215. Ladder 1024 ... 2 lies on
  // the segment 2..2048 (slope 1096.757 / 2046 = 0.53605), ratio 0.905, within 15%;
  // m(1) = 127.599 - 121.005 = 6.594, 11x: the knee is 2.
  CHECK(p.saturation_tokens == 2);
  CHECK(p.device.name == "H200-SXM");
  CHECK(p.device.memory_gib == 141);  // 151397597184 bytes
  CHECK(p.block_tokens == 16);
  CHECK(p.swap.h2d_gbps.y == std::vector<double>{55, 55});
  CHECK(p.provenance_value("commit") == "095f58a5");
  CHECK(p.provenance_value("license") == "Apache-2.0");
  CHECK(p.provenance_value("dense_rule").find("n interpolated between 16384 and 51200") !=
        std::string::npos);
  CHECK(p.provenance_value("lm_head_rule").find("split into 2 column blocks of n=64128") !=
        std::string::npos);
  CHECK(p.provenance_value("decode_attention_rule")
            .find("4 measured, 2 interpolated, 2 extrapolated") != std::string::npos);

  std::ostringstream os;
  isim::sim::write_profile(os, p);
  CHECK(isim::sim::parse_profile(os.str(), "roundtrip") == p);
}

TEST_CASE("aiconfigurator import: the prefill composition rule") {
  const isim::sim::Curve1D ctx{{1000, 2000, 4000}, {100, 300, 1000}};
  const isim::sim::Curve1D gen{{1000, 5000}, {10, 50}};
  using isim::calib::composed_prefill_us;
  CHECK(composed_prefill_us(ctx, gen, 1000, 0) == 100);
  // The last 1000 query rows of a 2000-token prefill: 300 - 100.
  CHECK(composed_prefill_us(ctx, gen, 1000, 1000) == 200);
  // ctx(3000) = 650: 1000 - 650.
  CHECK(composed_prefill_us(ctx, gen, 1000, 3000) == 350);
  // One read of 2000 KV tokens costs more than the compute difference: gen(2000) = 600.
  const isim::sim::Curve1D slow_gen{{1000, 5000}, {500, 900}};
  CHECK(composed_prefill_us(ctx, slow_gen, 1000, 1000) == 600);
  // Never below the chunk alone: with a launch-bound ctx, ctx(2000) - ctx(1000) = 50 and
  // gen(2000) = 20 are both below ctx(1000) = 100.
  const isim::sim::Curve1D flat_ctx{{1000, 2000, 4000}, {100, 150, 200}};
  CHECK(composed_prefill_us(flat_ctx, gen, 1000, 1000) == 100);
}

TEST_CASE("aiconfigurator import: bad input") {
  const auto m = llama();
  SUBCASE("a head config the tables do not have lists the ones they have") {
    auto other = m;
    other.shape.heads = 40;
    CHECK(error_of(kExcerpt, other) ==
          kExcerpt +
              "/generation_attention_perf.csv: num_heads/num_key_value_heads/head_dim: no "
              "rows for 40/8/128 (kernel vllm_flash_attn_fa3, kv_cache_dtype bfloat16, "
              "window_size 0); configs present: 32/8/128, 64/8/128");
  }
  SUBCASE("a dtype the GEMM table does not have") {
    auto other = m;
    other.shape.dtype = "fp16";
    CHECK(error_of(kExcerpt, other) ==
          kExcerpt + "/gemm_perf.csv: gemm_dtype: no rows for float16 (present: bfloat16)");
  }
  SUBCASE("missing file") {
    const fs::path d = copy_excerpt("missing");
    fs::remove(d / "context_attention_perf.csv");
    CHECK(error_of(d.string(), m) ==
          (d / "context_attention_perf.csv").string() + ": cannot open: No such file or directory");
  }
  SUBCASE("missing column") {
    const fs::path d = copy_excerpt("column");
    const fs::path f = d / "generation_attention_perf.csv";
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    text.replace(text.find(",step,"), 6, ",steps,");
    fs::permissions(f, fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(f) << text;
    CHECK(error_of(d.string(), m).find("generation_attention_perf.csv: step: missing (columns: ") !=
          std::string::npos);
  }
  SUBCASE("an unknown system spec") {
    AiconfiguratorOptions o;
    o.system = "nope";
    CHECK(error_of(kExcerpt, m, o) ==
          kExcerpt + "/nope.yaml: cannot open: No such file or directory");
  }
  SUBCASE("a tp that does not divide the heads") {
    AiconfiguratorOptions o;
    o.tp = 3;
    CHECK(error_of(kExcerpt, m, o) ==
          kExcerpt +
              ": tp 3: heads (32) and ffn (14336) must divide by tp, and kv_heads (8) divide by "
              "it or it by kv_heads");
  }
  SUBCASE("tp 2 reads one rank's GEMM shapes (QKV n = (16 + 2 x 4) x 128), absent here") {
    AiconfiguratorOptions o;
    o.tp = 2;
    const std::string msg = error_of(kExcerpt, m, o);
    CAPTURE(msg);
    CHECK(msg.find("GEMM n=3072 k=4096 is below the table's smallest") != std::string::npos);
  }
  // Found by tests/fuzz (corpus aic_*/regress-*): each threw YAML's own exception, cast a value
  // past int to int (undefined behaviour), or made a profile that load_profile refused.
  SUBCASE("a system spec that is not a map") {
    const fs::path d = copy_excerpt("system");
    edit(d / "h200_sxm.yaml", [](const std::string&) { return std::string("(\n"); });
    CHECK(error_of(d.string(), m) ==
          (d / "h200_sxm.yaml").string() + ":1: (document): expected a map, got '('");
    edit(d / "h200_sxm.yaml", [](const std::string&) { return std::string("gpu: 5\n"); });
    CHECK(error_of(d.string(), m) ==
          (d / "h200_sxm.yaml").string() + ":1: gpu: expected a map, got '5'");
  }
  SUBCASE("an attention shape past int") {
    const fs::path d = copy_excerpt("heads");
    edit(d / "context_attention_perf.csv", [](std::string t) {
      return t.replace(t.find(",1,64,32,8,"), 11, ",1,64,1e300,8,");
    });
    CHECK(error_of(d.string(), m) == (d / "context_attention_perf.csv").string() +
                                         ":2: num_heads: expected an integer from 0 to "
                                         "2147483647, got '1e300'");
  }
  SUBCASE("no GEMM rows small enough for lm_head") {
    // The excerpt's m are 1, 2, 2048 and 4096; its largest generation batch is 2.
    const fs::path d = copy_excerpt("lm-head");
    edit(d / "gemm_perf.csv", [](const std::string& t) {
      std::istringstream in(t);
      std::string out, line;
      while (std::getline(in, line)) {
        const auto m0 = line.find(",bfloat16,");
        const std::string mcol = m0 == std::string::npos ? "" : line.substr(m0 + 10, 2);
        if (mcol != "1," && mcol != "2,") out += line + "\n";
      }
      return out;
    });
    CHECK(error_of(d.string(), m) ==
          d.string() + "/gemm_perf.csv: m: no rows at m <= 2 (the largest batch_size of " +
              d.string() + "/generation_attention_perf.csv), needed for lm_head; the smallest m is "
              "2048");
  }
  SUBCASE("a latency past an hour") {
    const fs::path d = copy_excerpt("hour");
    edit(d / "generation_attention_perf.csv", [](std::string t) {
      return t.replace(t.find("0.01187733"), 10, "4000000");  // batch 2, step 63: 4e6 ms
    });
    const std::string msg = error_of(d.string(), m);
    CAPTURE(msg);
    CHECK(msg.starts_with("the profile imported from " + d.string() + ":"));
    CHECK(msg.find("must be at most 3600000000 us (an hour)") != std::string::npos);
  }
}

TEST_CASE("aiconfigurator all-reduce: the rows of the tp and backend, by bytes") {
  using isim::calib::aiconfigurator_allreduce;
  // vllm_graph, num_gpus 2: message_size 128, 256, 1048576 elements x 2 bytes;
  // latency 0.00437792, 0.00440896, 0.01244448 ms.
  const auto graph = aiconfigurator_allreduce(kExcerpt, 2, "bf16", "vllm_graph");
  CHECK(graph.us.x == std::vector<double>{256, 512, 2097152});
  CHECK(graph.us.y == std::vector<double>{4.378, 4.409, 12.444});
  CAPTURE(graph.rule);
  CHECK(graph.rule.find("custom_allreduce_perf.csv rows with op_name all_reduce, backend "
                        "vllm_graph, allreduce_dtype bfloat16, num_gpus 2 (3 rows, 128 to "
                        "1048576 elements)") != std::string::npos);
  const auto eager = aiconfigurator_allreduce(kExcerpt, 2, "bf16", "vllm_eager");
  CHECK(eager.us.x == std::vector<double>{256, 2097152});
  CHECK(eager.us.y == std::vector<double>{20.827, 20.373});
  const auto four = aiconfigurator_allreduce(kExcerpt, 4, "bf16", "vllm_graph");
  CHECK(four.us.y == std::vector<double>{4.428, 17.797});
  // NCCL: the one nccl_perf*.csv, nccl_dtype half, num_gpus 4: 256 and 1048576 elements.
  const auto nccl = aiconfigurator_allreduce(kExcerpt, 4, "bf16", "nccl");
  CHECK(nccl.us.x == std::vector<double>{512, 2097152});
  CHECK(nccl.us.y == std::vector<double>{9.49, 27.45});
  CHECK(nccl.rule.find("nccl_perf_2.29.2.csv rows") != std::string::npos);

  auto error = [&](int tp, const std::string& dtype, const std::string& backend) {
    try {
      aiconfigurator_allreduce(kExcerpt, tp, dtype, backend);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error(8, "bf16", "vllm_graph") ==
        kExcerpt +
            "/custom_allreduce_perf.csv: num_gpus: needs at least two all_reduce rows for tp 8 "
            "(vllm_graph bfloat16); num_gpus present: 2, 4");
  CHECK(error(4, "bf16", "vllm_eager").find("for tp 4 (vllm_eager bfloat16)") !=
        std::string::npos);  // one row only
  CHECK(error(2, "bf16", "mpi") ==
        "--allreduce: unknown 'mpi' (valid: vllm_graph, vllm_eager, nccl)");
  CHECK(error(2, "fp8", "vllm_graph").find("only bf16 and fp16 models") != std::string::npos);
  // num_gpus 1e300 was cast to int (undefined behaviour; found by tests/fuzz).
  const fs::path d = copy_excerpt("gpus");
  edit(d / "custom_allreduce_perf.csv", [](std::string t) {
    return t.replace(t.find("bfloat16,2,128,"), 15, "bfloat16,1e300,128,");
  });
  CHECK(isim::test::error_of_call([&] { aiconfigurator_allreduce(d.string(), 2, "bf16", "vllm_graph"); }) ==
        (d / "custom_allreduce_perf.csv").string() +
            ":2: num_gpus: expected an integer from 1 to 2147483647, got '1e300'");
}

TEST_CASE("aiconfigurator import at tp 2 from the full H200 tables (skipped without them)" *
          doctest::skip(isim::test::absent(!fs::exists(isim::test::shared_data() +
                                    "/aiconfigurator-h200/custom_allreduce_perf.csv")))) {
  const std::string dir = isim::test::shared_data() + "/aiconfigurator-h200";
  AiconfiguratorOptions o;
  o.tp = 2;
  const isim::sim::Profile p = import_aiconfigurator(dir, llama(), o);
  CHECK(p.model.tp == 2);
  CHECK(p.model.heads == 32);  // the model, not the shard
  // The first custom all-reduce row for 2 GPUs: 128 elements = 256 bytes, 0.00437792 ms.
  CHECK(p.tables.allreduce_us.x.front() == 256);
  CHECK(p.tables.allreduce_us.y.front() == 4.378);
  CHECK(p.provenance_value("tensor_parallel").find("16 heads, 4 kv heads") != std::string::npos);
  CHECK(p.provenance_value("decode_attention_rule").find("for 16/4/128 heads") !=
        std::string::npos);
  const isim::sim::Profile one = import_aiconfigurator(dir, llama());
  CHECK(one.tables.allreduce_us.empty());
  // One rank's QKV, O, gate+up and down are half as wide: at 4096 tokens dense is well below tp 1.
  CHECK(p.tables.dense_us.eval(4096) < 0.6 * one.tables.dense_us.eval(4096));
  std::ostringstream os;
  isim::sim::write_profile(os, p);
  CHECK(isim::sim::parse_profile(os.str(), "roundtrip") == p);
}
