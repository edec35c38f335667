// The command lines: `isim profile analytic`, `isim profile diff` (exit codes 0/1/2 and the
// report) and `isim profile show --plot`, run through the built binary.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "calibrate/analytic.h"
#include "calibrate/model.h"
#include "experiments/sweep/sweep.h"
#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
};

// Runs `[env] isim ARGS` from the source folder; captures stdout and stderr.
Result run_isim(const std::string& args, const std::string& env = "") {
  Result r;
  r.rc = test::run_shell(
      "cd " + test::source_dir() + " && " + env + " " + test::bin_dir() + "/isim " + args, &r.out,
      &r.err);
  return r;
}

std::string h200_profile(const fs::path& dir) {
  const std::string out = (dir / "h200.yaml").string();
  const Result r = run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                                        "calibrate/models/llama-3.1-8b.yaml --out ") +
                            out);
  REQUIRE(r.rc == 0);
  return out;
}

}  // namespace

TEST_CASE("isim profile analytic writes the library's profile and reports T(1), T(S)") {
  auto d = test::scratch("analytic");
  const std::string out = (d / "p.yaml").string();
  const Result r = run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                                        "calibrate/models/llama-3.1-8b.yaml --tp 2 --out ") +
                            out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("llama-3.1-8b on H200-SXM-141GB, tp 2; T(1) = ") != std::string::npos);
  const sim::Profile p = sim::load_profile(out);
  calib::ModelSpec m =
      calib::load_model(test::source_dir() + "/calibrate/models/llama-3.1-8b.yaml");
  m.shape.tp = 2;
  const sim::Profile want = calib::analytic_profile(
      calib::load_gpu_spec(test::source_dir() + "/calibrate/gpus/H200.yaml"), m,
      "calibrate/models/llama-3.1-8b.yaml", calib::Efficiency{});
  CHECK(p.tables == want.tables);
  CHECK(p.swap == want.swap);
  CHECK(p.saturation_tokens == want.saturation_tokens);
  CHECK(p.model.tp == 2);
  CHECK(p.provenance_value("source") == "analytic");
  CHECK(p.provenance_value("gpu_spec") == "calibrate/gpus/H200.yaml");
  CHECK(!p.provenance_value("tool_version").empty());

  CHECK(run_isim("profile analytic --gpu calibrate/gpus/H200.yaml --out x.yaml").rc == 2);
  const Result tp = run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                                         "calibrate/models/llama-3.1-8b.yaml --tp zero --out ") +
                             out);
  CHECK(tp.rc == 2);
  CHECK(tp.err.find("--tp: expected a positive integer, got 'zero'") != std::string::npos);
  const Result big =
      run_isim(std::string("profile analytic --gpu calibrate/gpus/RTX-4090.yaml --model "
                           "calibrate/models/llama-3.1-70b.yaml --out ") +
               out);
  CHECK(big.rc == 2);
  CHECK(big.err.find("raise --tp") != std::string::npos);
  const Result fp32 =
      run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                           "calibrate/models/tiny.yaml --out ") +
               out);
  CHECK(fp32.rc == 2);
  CHECK(fp32.err.find("dtype fp32") != std::string::npos);
}

TEST_CASE("isim profile analytic --fit-from prints and records the fitted factors") {
  auto d = test::scratch("fit");
  // A "measured" A100 profile generated with known factors.
  calib::Efficiency truth;
  truth.compute = 0.6;
  truth.memory = 0.75;
  truth.attention = 0.4;
  truth.pcie = 0.7;
  const std::string a100 = test::source_dir() + "/calibrate/gpus/A100-80GB.yaml";
  const calib::ModelSpec m =
      calib::load_model(test::source_dir() + "/calibrate/models/llama-3.1-8b.yaml");
  const std::string measured = (d / "a100.yaml").string();
  sim::write_profile_file(measured,
                          calib::analytic_profile(calib::load_gpu_spec(a100), m, "m", truth));
  const std::string out = (d / "h200.yaml").string();
  const Result r =
      run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                           "calibrate/models/llama-3.1-8b.yaml --fit-from ") +
               measured + std::string(" --fit-gpu calibrate/gpus/A100-80GB.yaml --out ") + out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("compute 0.6, memory 0.75, attention 0.4, pcie 0.7") != std::string::npos);
  const sim::Profile p = sim::load_profile(out);
  CHECK(p.provenance_value("fitted_from").find(measured) == 0);
  CHECK(p.provenance_value("factors").find("compute 0.6") == 0);
  // --fit-from without the measured GPU's spec is a usage error.
  CHECK(run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                             "calibrate/models/llama-3.1-8b.yaml --fit-from ") +
                 measured + " --out " + out)
            .rc == 2);
}

TEST_CASE("isim profile diff: exit 0, 1 on a regression past the threshold, 2 on bad input") {
  auto d = test::scratch("diff");
  const std::string base = h200_profile(d);
  sim::Profile p = sim::load_profile(base);
  CHECK(run_isim(std::string("profile diff ") + base + " " + base).rc == 0);

  // 8% slower at tokens=512 of dense_us: a regression at 5%, not at 10%.
  const auto it = std::find(p.tables.dense_us.x.begin(), p.tables.dense_us.x.end(), 512.0);
  REQUIRE(it != p.tables.dense_us.x.end());
  p.tables.dense_us.y[static_cast<size_t>(it - p.tables.dense_us.x.begin())] *= 1.08;
  const std::string slower = (d / "slower.yaml").string();
  sim::write_profile_file(slower, p);
  const Result r =
      run_isim(std::string("profile diff ") + base + " " + slower + " --max-regression 5%");
  CHECK(r.rc == 1);
  CHECK(r.out.find("1 slower by more than 5.00%: REGRESSION") != std::string::npos);
  const auto first_row = r.out.find("dense_us");
  CHECK(first_row != std::string::npos);
  CHECK(r.out.find("tokens=512", first_row) != std::string::npos);
  CHECK(r.out.find("+8.00%  !") != std::string::npos);
  CHECK(run_isim(std::string("profile diff ") + base + " " + slower + " --max-regression 10%").rc ==
        0);
  // Faster is never a regression.
  CHECK(run_isim(std::string("profile diff ") + slower + " " + base).rc == 0);

  // Different model shapes: exit 2 with the field named.
  sim::Profile other = sim::load_profile(base);
  other.model.layers = 40;
  const std::string shape = (d / "shape.yaml").string();
  sim::write_profile_file(shape, other);
  const Result s = run_isim(std::string("profile diff ") + base + " " + shape);
  CHECK(s.rc == 2);
  CHECK(s.err.find("model.layers: 32 vs 40") != std::string::npos);
  // Different forms, a bad threshold, a missing file: exit 2.
  const std::string linear =
      test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
  CHECK(run_isim(std::string("profile diff ") + base + " " + linear).rc == 2);
  const Result t =
      run_isim(std::string("profile diff ") + base + " " + base + " --max-regression 5");
  CHECK(t.rc == 2);
  CHECK(t.err.find("expected a percentage like 5%") != std::string::npos);
  CHECK(run_isim(std::string("profile diff ") + base + " " + (d / "missing.yaml").string()).rc ==
        2);
  CHECK(run_isim(std::string("profile diff ") + base).rc == 2);
}

TEST_CASE("isim profile show --plot without matplotlib says so and writes nothing") {
  auto d = test::scratch("plot-none");
  const std::string p = h200_profile(d);
  const std::string png = (d / "p.png").string();
  const Result none = run_isim(std::string("profile show ") + p + " --plot " + png,
                               std::string("ISIM_PYTHON=") + (d / "no-such-python3").string());
  CHECK(none.rc == 2);
  CHECK(none.err.find("--plot: no python3 with matplotlib") != std::string::npos);
  CHECK(!fs::exists(png));
}

TEST_CASE("isim profile show --plot draws a PNG when matplotlib is there" *
          doctest::skip(isim::test::absent(exp::find_plot_python().empty()))) {
  auto d = test::scratch("plot");
  const std::string p = h200_profile(d);
  const std::string png = (d / "p.png").string();
  const Result r = run_isim(std::string("profile show ") + p + " --plot " + png);
  CHECK(r.rc == 0);
  CHECK(r.out.find("T(1) = ") != std::string::npos);  // the summary comes first
  CHECK(r.out.find(std::string("plot: ") + png) != std::string::npos);
  const std::string bytes = test::slurp(png);
  REQUIRE(bytes.size() > 8);
  CHECK(bytes.substr(1, 3) == "PNG");
}

TEST_CASE("isim profile analytic --ep and --against: a MoE/MLA fp8 model, flags named on error") {
  auto d = test::scratch("analytic-ep");
  const std::string out = (d / "k.yaml").string();
  const std::string kimi = "profile analytic --model calibrate/models/kimi-k2.yaml ";
  // H200 x 8, ep 8: the experts spread, written into the model section.
  const Result h200 = run_isim(kimi + "--gpu calibrate/gpus/H200.yaml --tp 8 --ep 8 --out " + out);
  CHECK(h200.rc == 0);
  CHECK(h200.out.find("kimi-k2 on H200-SXM-141GB, tp 8, ep 8; T(1) = ") != std::string::npos);
  const sim::Profile p = sim::load_profile(out);
  CHECK(p.model.ep == 8);
  CHECK(p.tables.moe_roofline.peak_tflops == 1979);  // fp8 experts at the FP8 peak
  CHECK(p.provenance_value("gemm_peak").find("fp8_dense_tflops 1979") != std::string::npos);
  CHECK(p.provenance_value("mla").find("qk 192 + v 128") != std::string::npos);
  // GB300 at tp 1 and ep 1: a profile for a DP/EP group, with the smallest ep that fits noted.
  const Result gb300 = run_isim(kimi + "--gpu calibrate/gpus/GB300.yaml --out " + out);
  CHECK(gb300.rc == 0);
  CHECK(gb300.out.find("note: min_ep ") != std::string::npos);
  CHECK(!sim::load_profile(out).provenance_value("min_ep").empty());
  CHECK(sim::load_profile(out).block_tokens == 16);  // the default
  // --block-tokens: vLLM's MLA backends page by 64 (FlashMLA) or 128 (CUTLASS MLA).
  CHECK(run_isim(kimi + "--gpu calibrate/gpus/GB300.yaml --block-tokens 64 --out " + out).rc == 0);
  CHECK(sim::load_profile(out).block_tokens == 64);
  const Result zero =
      run_isim(kimi + "--gpu calibrate/gpus/GB300.yaml --block-tokens 0 --out " + out);
  CHECK(zero.rc == 2);
  CHECK(zero.err.find("--block-tokens: expected a positive integer, got '0'") != std::string::npos);
  // Bad --ep values name the flag; a sheet without an FP8 peak is named for fp8 weights.
  const Result dense = run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml "
                                            "--model calibrate/models/llama-3.1-8b.yaml --ep 2 "
                                            "--out ") +
                                out);
  CHECK(dense.rc == 2);
  CHECK(
      dense.err.find("--ep 2: model llama-3.1-8b (calibrate/models/llama-3.1-8b.yaml) is dense") !=
      std::string::npos);
  const Result many =
      run_isim(kimi + "--gpu calibrate/gpus/H200.yaml --tp 8 --ep 385 --out " + out);
  CHECK(many.rc == 2);
  CHECK(many.err.find("--ep 385: more than the 384 routed experts of model kimi-k2") !=
        std::string::npos);
  const Result word = run_isim(kimi + "--gpu calibrate/gpus/H200.yaml --ep eight --out " + out);
  CHECK(word.rc == 2);
  CHECK(word.err.find("--ep: expected a positive integer, got 'eight'") != std::string::npos);
  const Result a100 = run_isim(kimi + "--gpu calibrate/gpus/A100-80GB.yaml --tp 8 --out " + out);
  CHECK(a100.rc == 2);
  CHECK(a100.err.find("calibrate/gpus/A100-80GB.yaml: fp8_dense_tflops: missing (model kimi-k2 "
                      "has fp8 weights") != std::string::npos);
  CHECK(run_isim("profile analytic --help").out.find("--ep") != std::string::npos);
  // --against prints the cross-check table after the profile.
  const Result x = run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                                        "calibrate/models/llama-3.1-8b.yaml --against "
                                        "tests/data/aiconfigurator-excerpt --out ") +
                            out);
  CHECK(x.rc == 0);
  CHECK(x.out.find("cross-check of the roofline (llama-3.1-8b on H200-SXM-141GB) against "
                   "tests/data/aiconfigurator-excerpt") != std::string::npos);
  CHECK(x.out.find("alltoall 8 GPUs") != std::string::npos);
}

TEST_CASE("isim profile analytic --tp that does not divide the heads is refused, not truncated") {
  auto d = test::scratch("analytic-tp");
  const std::string out = (d / "p.yaml").string();
  // Llama-3.1-8B: heads 32, kv_heads 8. 32 % 3 = 2, so the heads do not split over 3 ranks
  // (before, kv_heads / tp = 8 / 3 was truncated to 2 heads a GPU).
  const Result r = run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                                        "calibrate/models/llama-3.1-8b.yaml --tp 3 --out ") +
                            out);
  CHECK(r.rc == 2);
  CHECK(r.err.find("--tp: 3 does not divide heads 32; expected a divisor of it (the "
                   "tensor-parallel ranks split the heads evenly) (model "
                   "calibrate/models/llama-3.1-8b.yaml: heads 32, kv_heads 8)\n") !=
        std::string::npos);
  CHECK(!fs::exists(out));
  // tp 16 divides the 32 heads and exceeds the 8 KV heads by a whole factor: each KV head is
  // replicated on 2 ranks, which vLLM allows.
  const Result ok = run_isim(std::string("profile analytic --gpu calibrate/gpus/H200.yaml --model "
                                         "calibrate/models/llama-3.1-8b.yaml --tp 16 --out ") +
                             out);
  CHECK(ok.rc == 0);
}
