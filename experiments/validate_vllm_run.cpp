// Reading a vLLM run folder for isim validate --against vllm: meta.json, timeseries.csv, and the
// trace of its requests (with the dataset's prefix hashes when the dataset is the one it ran).
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/validate_vllm.h"
#include "traces/input_error.h"
#include "traces/json_shown.h"
#include "traces/llmservingsim.h"
#include "traces/sha256.h"

namespace isim::exp {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A strict reader of dotted key paths in meta.json.
class MetaReader {
 public:
  MetaReader(const json& root, std::string origin) : root_(root), origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& reason) const {
    throw InputError(origin_ + ": " + key + ": " + reason);
  }
  const json& at(const std::string& key) const {
    const json* node = &root_;
    std::string done;
    for (size_t start = 0; start <= key.size();) {
      const size_t dot = std::min(key.find('.', start), key.size());
      const std::string part = key.substr(start, dot - start);
      if (!node->is_object())
        fail(done, "expected an object (holding " + part + "), got " + trace::shown(*node));
      auto it = node->find(part);
      if (it == node->end()) fail(key, "missing");
      node = &*it;
      done = key.substr(0, dot);
      start = dot + 1;
    }
    return *node;
  }
  // Whether `key` is there and not null (every object on its path must be there).
  bool has(const std::string& key) const {
    const json* node = &root_;
    for (size_t start = 0; start <= key.size();) {
      const size_t dot = std::min(key.find('.', start), key.size());
      if (!node->is_object()) return false;
      auto it = node->find(key.substr(start, dot - start));
      if (it == node->end()) return false;
      node = &*it;
      start = dot + 1;
    }
    return !node->is_null();
  }
  int64_t integer(const std::string& key, int64_t min) const {
    const json& v = at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < min)
      fail(key, fmt::format("expected an integer >= {}, got {}", min, trace::shown(v)));
    return v.get<int64_t>();
  }
  std::optional<int64_t> integer_or_null(const std::string& key, int64_t min) const {
    if (at(key).is_null()) return std::nullopt;
    return integer(key, min);
  }
  double fraction(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1)
      fail(key, "expected a fraction in (0, 1], got " + trace::shown(v));
    return v.get<double>();
  }
  bool boolean(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_boolean()) fail(key, "expected true or false, got " + trace::shown(v));
    return v.get<bool>();
  }
  std::string text(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string() || v.get<std::string>().empty())
      fail(key, "expected a non-empty string, got " + trace::shown(v));
    return v.get<std::string>();
  }

 private:
  const json& root_;
  std::string origin_;
};

// What the simulator cannot replay yet, refused with what it would need.
void refuse_parallel(const MetaReader& m, const VllmMeta& meta) {
  const std::string k = "engine_kwargs.";
  auto where = [&](const std::string& key) {  // where read_stated found it
    return m.has(k + key) ? k + key : "resolved_config.parallel_config." + key;
  };
  if (meta.data_parallel_size > 1)
    m.fail(where("data_parallel_size"),
           fmt::format("{}: data parallelism is not simulated yet; isim replays one engine, and "
                       "this needs {} engine replicas behind vLLM's DP coordinator (its request "
                       "balancing across ranks and the lock-step steps of idle ranks)",
                       meta.data_parallel_size, meta.data_parallel_size));
  if (meta.pipeline_parallel_size > 1)
    m.fail(where("pipeline_parallel_size"),
           fmt::format("{}: pipeline parallelism is not simulated yet; it needs per-stage layer "
                       "costs, the activation transfer between stages and vLLM's queue of "
                       "micro-batches in flight",
                       meta.pipeline_parallel_size));
  if (!meta.enable_chunked_prefill)
    m.fail(k + "enable_chunked_prefill",
           "false: not simulated; the vllm-v1 scheduler always chunks prefills, and replaying "
           "without chunking needs vLLM's whole-prompt admission");
  if (meta.performance_mode != "balanced")
    m.fail(m.has(k + "performance_mode") ? k + "performance_mode"
                                         : std::string("resolved_config.performance_mode"),
           "\"" + meta.performance_mode +
               "\": only \"balanced\" (vLLM's default) is simulated; its effect on vLLM's "
               "batch defaults and CUDA-graph sizes is not written here");
}

// engine_kwargs keys both schemas may leave out (null reads as not stated, as the runner writes
// None): read when there, else listed in meta.unstated for apply_vllm_defaults.
void read_stated(const MetaReader& m, VllmMeta& meta, bool older) {
  const std::string k = "engine_kwargs.";
  auto stated = [&](const std::string& key) {
    if (m.has(k + key)) return true;
    meta.unstated.push_back(key);
    return false;
  };
  // A parallel size engine_kwargs leaves out is in the full schema's resolved parallel_config.
  auto parallel = [&](const std::string& key) {
    const std::string resolved = "resolved_config.parallel_config." + key;
    if (m.has(k + key)) return k + key;
    if (!older && m.has(resolved)) return resolved;
    meta.unstated.push_back(key);
    return std::string();
  };
  if (auto key = parallel("tensor_parallel_size"); !key.empty())
    meta.tensor_parallel_size = m.integer(key, 1);
  if (auto key = parallel("data_parallel_size"); !key.empty())
    meta.data_parallel_size = m.integer(key, 1);
  if (auto key = parallel("pipeline_parallel_size"); !key.empty())
    meta.pipeline_parallel_size = m.integer(key, 1);
  if (auto key = parallel("enable_expert_parallel"); !key.empty())
    meta.enable_expert_parallel = m.boolean(key);
  if (m.has(k + "max_model_len")) meta.max_model_len = m.integer(k + "max_model_len", 1);
  if (m.has(k + "performance_mode"))
    meta.performance_mode = m.text(k + "performance_mode");
  else if (!older && m.has("resolved_config.performance_mode"))
    meta.performance_mode = m.text("resolved_config.performance_mode");
  if (!older) return;
  // vLLM's count, when the run fixed it (the full schema states it in kv_cache).
  if (m.has(k + "num_gpu_blocks_override"))
    meta.num_gpu_blocks = m.integer(k + "num_gpu_blocks_override", 1);
  if (m.has(k + "kv_cache_memory_bytes"))
    meta.assumptions.push_back(fmt::format(
        "engine_kwargs.kv_cache_memory_bytes {}: vLLM sized its KV cache from this byte count, "
        "not from gpu_memory_utilization; the predicted block count does not know it (-p "
        "engine.gpu_blocks=N replays at the count it gave)",
        m.integer(k + "kv_cache_memory_bytes", 1)));
  if (stated("max_num_seqs")) meta.max_num_seqs = m.integer(k + "max_num_seqs", 1);
  if (stated("max_num_batched_tokens"))
    meta.max_num_batched_tokens = m.integer(k + "max_num_batched_tokens", 1);
  if (stated("gpu_memory_utilization"))
    meta.gpu_memory_utilization = m.fraction(k + "gpu_memory_utilization");
  if (stated("enable_prefix_caching"))
    meta.enable_prefix_caching = m.boolean(k + "enable_prefix_caching");
  if (stated("enable_chunked_prefill"))
    meta.enable_chunked_prefill = m.boolean(k + "enable_chunked_prefill");
  if (stated("block_size")) meta.block_size = m.integer(k + "block_size", 1);
  if (stated("async_scheduling")) meta.async_scheduling = m.boolean(k + "async_scheduling");
  if (stated("long_prefill_token_threshold"))
    meta.long_prefill_token_threshold = m.integer(k + "long_prefill_token_threshold", 0);
  if (stated("max_num_partial_prefills"))
    meta.max_num_partial_prefills = m.integer(k + "max_num_partial_prefills", 1);
  if (stated("max_long_partial_prefills"))
    meta.max_long_partial_prefills = m.integer(k + "max_long_partial_prefills", 1);
}

// The schema with kv_cache, hardware and resolved_config: every engine setting is read.
void read_engine(const MetaReader& m, VllmMeta& meta) {
  meta.max_num_seqs = m.integer("engine_kwargs.max_num_seqs", 1);
  meta.max_num_batched_tokens = m.integer("engine_kwargs.max_num_batched_tokens", 1);
  meta.gpu_memory_utilization = m.fraction("kv_cache.gpu_memory_utilization");
  meta.enable_prefix_caching = m.boolean("kv_cache.enable_prefix_caching");
  meta.block_size = m.integer("kv_cache.block_size", 1);
  meta.num_gpu_blocks = m.integer_or_null("kv_cache.num_gpu_blocks", 1);
  const std::string s = "resolved_config.scheduler_config.";
  meta.long_prefill_token_threshold = m.integer(s + "long_prefill_token_threshold", 0);
  meta.max_num_partial_prefills = m.integer(s + "max_num_partial_prefills", 1);
  meta.max_long_partial_prefills = m.integer(s + "max_long_partial_prefills", 1);
  meta.async_scheduling = m.boolean(s + "async_scheduling");
  if (m.has(s + "enable_chunked_prefill"))
    meta.enable_chunked_prefill = m.boolean(s + "enable_chunked_prefill");
}

}  // namespace

VllmMeta parse_vllm_meta(const std::string& text, const std::string& origin) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(origin + ": <json>: " + e.what());
  }
  if (!root.is_object()) throw InputError(origin + ": <json>: expected an object");
  const MetaReader m(root, origin);
  if (m.integer("schema_version", 0) != 1)
    m.fail("schema_version", "expected 1, got " + trace::shown(root["schema_version"]));
  VllmMeta meta;
  meta.path = origin;
  meta.vllm_version = m.text("vllm_version");
  meta.model = m.text("model");
  // Before April 2026 LLMServingSim's scripts wrote none of these three sections.
  meta.older_schema =
      !root.contains("kv_cache") && !root.contains("hardware") && !root.contains("resolved_config");
  if (!m.at("engine_kwargs").is_object())
    m.fail("engine_kwargs", "expected an object, got " + trace::shown(root["engine_kwargs"]));
  read_stated(m, meta, meta.older_schema);
  if (!meta.older_schema) {
    meta.device_name = m.text("hardware.device_name");
    read_engine(m, meta);
  }
  if (meta.max_long_partial_prefills > meta.max_num_partial_prefills)
    m.fail(meta.older_schema ? "engine_kwargs.max_long_partial_prefills"
                             : "resolved_config.scheduler_config.max_long_partial_prefills",
           fmt::format("{} is more than max_num_partial_prefills {}",
                       meta.max_long_partial_prefills, meta.max_num_partial_prefills));
  refuse_parallel(m, meta);
  meta.dataset_path = m.text("dataset_path");
  meta.dataset_hash = m.text("dataset_hash");
  if (meta.dataset_hash.size() != 64 ||
      meta.dataset_hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    m.fail("dataset_hash",
           "expected a sha256 (64 lowercase hex digits), got \"" + meta.dataset_hash + "\"");
  return meta;
}

VllmMeta read_vllm_meta(const std::string& path) {
  return parse_vllm_meta(slurp(path), path);
}

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
  if (!std::getline(in, line)) throw InputError(origin + ":1: header: missing");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const auto header = split_csv(line);
  auto column = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    throw InputError(fmt::format("{}:1: {}: missing column (header: {})", origin, name, line));
  };
  const size_t t = column("t"), running = column("running"), waiting = column("waiting");
  std::vector<VllmTick> out;
  for (int64_t n = 2; std::getline(in, line); ++n) {
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
  return out;
}

std::vector<VllmTick> read_vllm_timeseries(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno));
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
  if (trace::sha256_file_hex(data) != run.meta.dataset_hash) {
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
