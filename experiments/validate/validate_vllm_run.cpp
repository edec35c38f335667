// Reading a vLLM run folder for isim validate --against vllm: timeseries.csv, the folder
// (meta.json in validate_vllm_meta.cpp), and the trace of its requests (with the dataset's
// prefix hashes when the dataset is the one it ran).
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/input_file.h"
#include "core/sha256.h"
#include "experiments/validate/validate_vllm.h"
#include "traces/llmservingsim.h"

namespace isim::exp {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(f);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

double csv_number(const std::string& s, const std::string& where, const std::string& column,
                  bool count) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  // A count (of running or waiting requests) becomes an int64: at most 10^9, far inside it.
  constexpr double kMaxCount = 1e9;
  const bool ok = used == s.size() && !s.empty() && std::isfinite(v) &&
                  (!count || (v >= 0 && v <= kMaxCount && v == std::floor(v)));
  if (!ok)
    throw InputError(
        fmt::format("{}: {}: expected {}, got '{}'", where, column,
                    count ? "a count, an integer from 0 to 1000000000" : "a finite number", s));
  return v;
}

}  // namespace

std::vector<VllmTick> parse_vllm_timeseries(std::istream& in, const std::string& origin) {
  std::string line;
  if (!std::getline(in, line)) {
    check_read(in, origin, 1);
    throw InputError(origin + ":1: header: missing");
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const auto header = split_csv(line);
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    throw InputError(fmt::format("{}:1: {}: missing column (header: {})", origin, name, line));
  };
  const size_t t = column("t"), running = column("running"), waiting = column("waiting");
  std::vector<VllmTick> out;
  int64_t n = 2;
  for (; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", origin, n);
    const auto f = split_csv(line);
    if (f.size() != header.size())
      throw InputError(fmt::format("{}: <row>: {} fields, but the header has {}", where, f.size(),
                                   header.size()));
    out.push_back({csv_number(f[t], where, "t", false),
                   static_cast<int64_t>(csv_number(f[running], where, "running", true)),
                   static_cast<int64_t>(csv_number(f[waiting], where, "waiting", true))});
  }
  check_read(in, origin, n);
  return out;
}

std::vector<VllmTick> read_vllm_timeseries(const std::string& path) {
  std::ifstream in = open_input_file(path, "a vLLM timeseries CSV", std::ios::in);
  return parse_vllm_timeseries(in, path);
}

VllmRun load_vllm_run(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw InputError(dir + ": not a folder (expected a vLLM run: meta.json, requests.jsonl)");
  VllmRun run;
  run.dir = dir;
  run.meta = read_vllm_meta((fs::path(dir) / "meta.json").string());
  run.requests = trace::read_vllm_requests((fs::path(dir) / "requests.jsonl").string());
  const fs::path ts = fs::path(dir) / "timeseries.csv";
  run.has_timeseries = fs::exists(ts);
  if (run.has_timeseries) run.timeseries = read_vllm_timeseries(ts.string());
  return run;
}

namespace {

// Line N of the dataset for request bench-N, checked to have the request's lengths.
void take_prefixes(const VllmRun& run, const trace::Trace& dataset, const std::string& data,
                   trace::Trace& t) {
  std::unordered_map<std::string, size_t> line_of;
  for (size_t i = 0; i < dataset.size(); ++i) line_of.emplace(dataset[i].id, i);
  const std::string req = (fs::path(run.dir) / "requests.jsonl").string();
  for (size_t i = 0; i < t.size(); ++i) {
    const auto& r = run.requests[i];
    const std::string where = fmt::format("{}:{}: request_id", req, r.line);
    const auto it = line_of.find(r.id);
    if (it == line_of.end())
      throw InputError(fmt::format("{}: '{}' names no line of {} (expected bench-N, N < {})", where,
                                   r.id, data, dataset.size()));
    const trace::Segment& d = dataset[it->second].segments[0];
    if (d.input != r.input || d.output != r.output)
      throw InputError(fmt::format(
          "{}: {} has {} input and {} output tokens, but its dataset line in {} has {} and {}",
          where, r.id, r.input, r.output, data, d.input, d.output));
    t[i].prefix = dataset[it->second].prefix;
  }
}

}  // namespace

RunTrace vllm_run_trace(const VllmRun& run) {
  RunTrace out;
  out.trace = trace::vllm_requests_to_trace(run.requests);
  const std::string name = fs::path(run.meta.dataset_path).filename().string();
  const std::string data = (fs::path(run.dir) / ".." / name).lexically_normal().string();
  if (!fs::exists(data)) {
    out.note = fmt::format(
        "the run's dataset {} is not at {}: simulating without prefix hashes (no prefix-cache "
        "hits)",
        run.meta.dataset_path, data);
    return out;
  }
  if (sha256_file_hex(data) != run.meta.dataset_hash) {
    out.note = fmt::format(
        "{} is not the run's dataset (its sha256 differs from meta.json dataset_hash {}): "
        "simulating without prefix hashes",
        data, run.meta.dataset_hash);
    return out;
  }
  take_prefixes(run, trace::import_llmservingsim(data), data, out.trace);
  out.prefix_hashes = true;
  out.note = fmt::format("prefix hashes from {} (sha256 matches meta.json dataset_hash)", data);
  return out;
}

}  // namespace isim::exp
