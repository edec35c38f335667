// aiconfigurator's all-reduce tables (custom_allreduce_perf.csv, nccl_perf_*.csv) as a profile's
// allreduce_us curve; see import_aiconfigurator.h.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "calibrate/import_aiconfigurator.h"
#include "calibrate/import_common.h"
#include "core/input_error.h"

namespace isim::calib {

std::string aiconfigurator_nccl_file(const std::string& dir, const std::string& purpose) {
  std::set<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("nccl_perf", 0) == 0 && e.path().extension() == ".csv") found.insert(name);
  }
  if (found.size() != 1) {
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
    throw InputError(fmt::format("{}: expected one nccl_perf*.csv for {}, found {}", dir, purpose,
                                 found.empty() ? "none" : list));
  }
  return dir + "/" + *found.begin();
}

AllreduceCurve aiconfigurator_allreduce(const std::string& dir, int tp, const std::string& dtype,
                                        const std::string& backend) {
  if (backend != "vllm_graph" && backend != "vllm_eager" && backend != "nccl") {
    throw InputError(
        fmt::format("--allreduce: unknown '{}' (valid: vllm_graph, vllm_eager, nccl)", backend));
  }
  if (dtype != "bf16" && dtype != "fp16") {
    throw InputError(fmt::format(
        "{}: allreduce_dtype: only bf16 and fp16 models are covered (the tables hold 2-byte "
        "elements), got {}",
        dir, dtype));
  }
  const bool nccl = backend == "nccl";
  const std::string file =
      nccl ? aiconfigurator_nccl_file(dir, "--allreduce nccl") : dir + "/custom_allreduce_perf.csv";
  const CsvTable t = read_csv(file);
  const std::size_t cop = t.column("op_name"), cg = t.column("num_gpus"),
                    cs = t.column("message_size"), cl = t.column("latency"),
                    cd = t.column(nccl ? "nccl_dtype" : "allreduce_dtype");
  const std::size_t cb = nccl ? t.column("kernel_source") : t.column("backend");
  const std::string want_dtype = nccl ? "half" : (dtype == "bf16" ? "bfloat16" : "float16");
  const std::string want_backend = nccl ? "NCCL" : backend;
  std::map<double, double> by_bytes;
  std::set<int64_t> degrees;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.text(r, cop) != "all_reduce" || t.text(r, cd) != want_dtype ||
        t.text(r, cb) != want_backend)
      continue;
    const int64_t gpus = t.integer(r, cg, 1, std::numeric_limits<int32_t>::max());
    degrees.insert(gpus);
    if (gpus != tp) continue;
    const double elements = t.number(r, cs), ms = t.number(r, cl);
    if (!(elements > 0) || ms < 0) {
      throw InputError(t.where(r) + ": message_size must be > 0 and latency >= 0");
    }
    // message_size counts elements (aiconfigurator's collectors: a tensor of that many
    // elements; nccl-tests bytes / element size): 2 bytes each here.
    if (!by_bytes.emplace(2 * elements, round_us(ms * 1000)).second) {
      throw InputError(t.where(r) + ": duplicate row for this num_gpus and message_size");
    }
  }
  if (by_bytes.size() < 2) {
    std::string list;
    for (const int64_t d : degrees) list += (list.empty() ? "" : ", ") + std::to_string(d);
    throw InputError(fmt::format(
        "{}: num_gpus: needs at least two all_reduce rows for tp {} ({} {}); num_gpus present: {}",
        file, tp, want_backend, want_dtype, list.empty() ? "none" : list));
  }
  AllreduceCurve out;
  for (const auto& [bytes, us] : by_bytes) {
    out.us.x.push_back(bytes);
    out.us.y.push_back(us);
  }
  out.rule = fmt::format(
      "{} rows with op_name all_reduce, {} {}, {} {}, num_gpus {} ({} rows, {} to {} "
      "elements); "
      "message_size counts elements, so bytes = 2 x message_size; latency ms x 1000; per layer "
      "2 all-reduces (after o_proj and after down_proj) of tokens x hidden x 2 bytes",
      std::filesystem::path(file).filename().string(), nccl ? "kernel_source" : "backend",
      want_backend, nccl ? "nccl_dtype" : "allreduce_dtype", want_dtype, tp, by_bytes.size(),
      by_bytes.begin()->first / 2, by_bytes.rbegin()->first / 2);
  return out;
}

}  // namespace isim::calib
