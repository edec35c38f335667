// isim-calibrate: measures a device with the synthetic transformer runner and writes a profile.
//
//   isim-calibrate --model M.yaml --backend cuda|cpu [--tp N] [--quick] [--seed S] --out P.yaml
//
// Progress goes to stderr; the profile to --out. Exit codes: 0 done, 2 bad input (including a
// CUDA backend without a device), 1 anything else.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "calibrate/measure.h"
#include "experiments/out_path.h"
#include "traces/input_error.h"

namespace {

constexpr std::string_view kUsage =
    "usage: isim-calibrate --model M.yaml --backend cuda|cpu [--tp N] [--quick] [--seed S] "
    "--out P.yaml\n";

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
  isim::calib::CalibrateOptions o;
  std::string out;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw isim::InputError(a + ": missing value");
        return argv[++i];
      };
      if (a == "--model") {
        o.model_path = value();
      } else if (a == "--backend") {
        o.backend = value();
      } else if (a == "--tp") {
        o.tp = parse_int(a, value());
      } else if (a == "--seed") {
        o.seed = static_cast<uint64_t>(parse_int(a, value()));
      } else if (a == "--quick") {
        o.quick = true;
      } else if (a == "--out") {
        out = value();
      } else if (a == "-h" || a == "--help") {
        std::cout << kUsage;
        return 0;
      } else {
        throw isim::InputError(fmt::format("unknown option '{}'", a));
      }
    }
    if (o.model_path.empty()) throw isim::InputError("--model: required");
    if (out.empty()) throw isim::InputError("--out: required");
    isim::exp::check_out_file(out, "--out");  // before minutes of measuring, not after
    o.progress = [](const std::string& line) { std::cerr << line << std::endl; };
    const isim::sim::Profile p = isim::calib::calibrate(o);
    isim::sim::write_profile_file(out, p);
    std::cerr << fmt::format("wrote {}: saturation_tokens {}, validation mean |error| {}\n", out,
                             p.saturation_tokens,
                             fmt::format("{:.1f}%", 100 * p.validation_mean_abs_error()));
    return 0;
  } catch (const isim::InputError& e) {
    std::cerr << "isim-calibrate: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "isim-calibrate: error: " << e.what() << "\n";
    return 1;
  }
}
