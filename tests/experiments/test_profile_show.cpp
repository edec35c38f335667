// `isim profile show`: the swap bandwidth it prints is the one the cost model uses (clamped to
// the slowest measured point where a falling curve extrapolates below it), titled by what the
// profile measured (PCIe, or host memcpy for the CPU backend); `--plot` draws the four panels.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "experiments/sweep/sweep.h"
#include "sim/cost_model.h"
#include "sim/profile.h"
#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

// tests/data/profile-tables-small.yaml with a falling h2d curve (20 GB/s at 1 MiB, 10 GB/s at
// 4 MiB) and a rising d2h one (30 at 1 MiB, 40 at 2 MiB), and `backend` in its provenance.
std::string write_profile(const fs::path& dir, const std::string& backend) {
  std::string t = test::slurp(test::data_dir() + "/profile-tables-small.yaml");
  const auto swap = t.find("swap:\n");
  const auto end = t.find("  duplex_factor:", swap);
  REQUIRE(swap != std::string::npos);
  REQUIRE(end != std::string::npos);
  t.replace(swap, end - swap,
            "swap:\n  h2d:\n    bytes: [1048576, 4194304]\n    gbps: [20, 10]\n"
            "  d2h:\n    bytes: [1048576, 2097152]\n    gbps: [30, 40]\n");
  const auto prov = t.find("provenance:\n");
  REQUIRE(prov != std::string::npos);
  t.insert(prov + 12, "  backend: " + backend + "\n");
  return test::write_file(dir / (backend + ".yaml"), t);
}

}  // namespace

TEST_CASE("profile show prints the copy bandwidth the cost model uses, clamped where it is") {
  const fs::path d = test::scratch("profile-show");
  const std::string cuda = write_profile(d, "cuda");
  std::string out, err;
  REQUIRE(test::run_bin("isim", "profile show " + cuda, &out, &err) == 0);
  // h2d at 64 MiB: the line through (1 MiB, 20) and (4 MiB, 10) falls by 10 GB/s per 3 MiB,
  // 20 - 63/3 * 10 = -190, read as 0; the cost model uses the slowest measured, 10 GB/s.
  // d2h at 64 MiB: 30 + 63 * 10 = 660 GB/s, beyond the grid but not clamped.
  CHECK(out.find("swap (PCIe): h2d 20 GB/s at 1 MiB, 10 GB/s (clamped to the slowest measured; "
                 "the curve extrapolates to 0) at 64 MiB\n") != std::string::npos);
  CHECK(out.find("      d2h 30 GB/s at 1 MiB, 660 GB/s (extrapolated) at 64 MiB\n") !=
        std::string::npos);
  CHECK(out.find(" 0 GB/s") == std::string::npos);
  // The cost model's transfer of one 64 MiB copy: 2 us per copy + 67108864 B / 10 B/ns.
  const sim::CostModel cm(sim::load_profile(cuda));
  CHECK(cm.transfer(64 << 20, 1, sim::Direction::kHostToDevice) == 2000 + 6710886);
  CHECK(cm.transfer(64 << 20, 1, sim::Direction::kDeviceToHost) ==
        2000 + 101680);  // 67108864 / 660 = 101680.1
  // A CPU-backend profile measured host memcpy, not PCIe.
  REQUIRE(test::run_bin("isim", "profile show " + write_profile(d, "cpu"), &out) == 0);
  CHECK(out.find("swap (host memcpy): h2d ") != std::string::npos);
  CHECK(out.find("PCIe") == std::string::npos);
}

TEST_CASE("profile show --plot draws the panels" *
          doctest::skip(isim::test::absent(exp::find_plot_python().empty()))) {
  const fs::path d = test::scratch("profile-plot");
  const std::string png = (d / "p.png").string();
  std::string out, err;
  CHECK(test::run_bin("isim", "profile show " + write_profile(d, "cpu") + " --plot " + png, &out,
                      &err) == 0);
  CHECK(out.find("plot: " + png) != std::string::npos);
  CHECK(fs::file_size(png) > 10000);
}
