#include "calibrate/vllm_startup_log.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/input_file.h"

namespace isim::calib {

namespace {

struct Line {
  const std::string& path;
  int number;
  std::string_view text;
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}:{}: {}", path, number, what));
  }
};

// The number that starts `s` (digits, '.', ',' separators of thousands); fails naming `what`.
double number_at(const Line& l, std::string_view s, std::string_view what) {
  std::string digits;
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == 'e') {
      digits += c;
    } else if (c != ',' || digits.empty()) {
      break;
    }
  }
  char* end = nullptr;
  const double v = digits.empty() ? 0 : std::strtod(digits.c_str(), &end);
  if (digits.empty() || end != digits.c_str() + digits.size())
    l.fail(fmt::format("{}: expected a number, got '{}'", what, s.substr(0, 40)));
  return v;
}

// The number after `key` in the line, or nothing when the key is absent.
bool number_after(const Line& l, std::string_view key, double& out) {
  const size_t at = l.text.find(key);
  if (at == std::string_view::npos) return false;
  std::string_view name = key;  // "worker requested memory: " -> "worker requested memory"
  while (!name.empty() && (name.back() == ' ' || name.back() == ':')) name.remove_suffix(1);
  out = number_at(l, l.text.substr(at + key.size()), name);
  return true;
}

// A Python dict literal of flat values ('text', numbers, True/False/None; nested brackets kept
// as text), as vLLM logs its non-default args.
std::map<std::string, std::string> python_dict(const Line& l, std::string_view s) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  const auto skip = [&] {
    while (i < s.size() && s[i] == ' ') ++i;
  };
  const auto bad = [&](const char* what) {
    l.fail(fmt::format("non-default args: {} at column {}", what, i + 1));
  };
  const auto quoted = [&]() {
    const char q = s[i++];
    std::string v;
    while (i < s.size() && s[i] != q) {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      v += s[i++];
    }
    if (i >= s.size()) bad("unterminated string");
    ++i;
    return v;
  };
  skip();
  if (i >= s.size() || s[i] != '{') bad("expected '{'");
  ++i;
  for (;;) {
    skip();
    if (i < s.size() && s[i] == '}') return out;
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) bad("expected a quoted key");
    const std::string key = quoted();
    skip();
    if (i >= s.size() || s[i] != ':') bad("expected ':'");
    ++i;
    skip();
    std::string value;
    if (i < s.size() && (s[i] == '\'' || s[i] == '"')) {
      value = quoted();
    } else {
      int depth = 0;
      const size_t start = i;
      for (; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '{' || c == '[' || c == '(') ++depth;
        if ((c == ',' || c == '}') && depth == 0) break;
        if (c == '}' || c == ']' || c == ')') --depth;
      }
      value = std::string(s.substr(start, i - start));
      while (!value.empty() && value.back() == ' ') value.pop_back();
      if (value.empty()) bad("expected a value");
    }
    out[key] = value;
    skip();
    if (i < s.size() && s[i] == ',') {
      ++i;
    } else if (i >= s.size() || s[i] != '}') {
      bad("expected ',' or '}'");
    }
  }
}

// A whole number in [lo, hi] (checked before any cast), else FILE:LINE names `what`.
int64_t whole(const Line& l, double v, std::string_view what, double lo, double hi) {
  if (!(v >= lo && v <= hi) || v != std::floor(v))
    l.fail(fmt::format("{}: expected a whole number in [{}, {}], got {}", what, lo, hi, v));
  return static_cast<int64_t>(v);
}

constexpr double kMaxCount = 9007199254740992.0;  // 2^53: exact in a double

int64_t int_arg(const Line& l, const std::map<std::string, std::string>& a, const char* key,
                int64_t fallback, double lo, double hi) {
  const auto it = a.find(key);
  if (it == a.end()) return fallback;
  const std::string what = std::string("non-default args: ") + key;
  return whole(l, number_at(l, it->second, what), what, lo, hi);
}

std::string dtype_name(std::string t) {
  if (t.starts_with("torch.")) t = t.substr(6);
  if (t == "bfloat16") return "bf16";
  if (t == "float16" || t == "half") return "fp16";
  if (t == "float32" || t == "float") return "fp32";
  return t;
}

// `key=value,` of the engine config line ("" when absent).
std::string config_field(std::string_view text, std::string_view key) {
  const size_t at = text.find(key);
  if (at == std::string_view::npos) return "";
  const size_t from = at + key.size();
  const size_t to = text.find(',', from);
  return std::string(text.substr(from, to == std::string_view::npos ? to : to - from));
}

bool is_log_line(std::string_view s) {
  if (s.starts_with("(")) {
    const size_t close = s.find(") ");
    if (close == std::string_view::npos || s.substr(0, close).find(" pid=") == std::string::npos)
      return false;
    s = s.substr(close + 2);
  }
  for (const char* level : {"INFO ", "DEBUG ", "WARNING ", "ERROR ", "CRITICAL "})
    if (s.starts_with(level)) return s.find(" [") != std::string_view::npos;
  return false;
}

int stage_of(std::string_view s) {
  const size_t close = s.find(") ");
  const size_t at = s.substr(0, close).find("_PP");
  if (!s.starts_with("(") || at == std::string_view::npos) return 0;
  const std::string digits(s.substr(at + 3, close - at - 3));
  const long n = std::strtol(digits.c_str(), nullptr, 10);
  return n >= 0 && n < 65536 ? static_cast<int>(n) : 0;
}

}  // namespace

VllmStartupLog parse_vllm_startup_log(const std::string& text, const std::string& path) {
  VllmStartupLog g;
  g.path = path;
  g.failed = path.ends_with(".FAILED.log");
  std::istringstream in(text);
  std::string raw;
  bool have_args = false, seqs_given = false, tokens_given = false;
  for (int n = 1; std::getline(in, raw); ++n) {
    const Line l{path, n, raw};
    if (n == 1 && !is_log_line(raw))
      l.fail(
          "not a vLLM log line (expected '(PROCESS pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] "
          "...')");
    double v = 0;
    if (const size_t at = l.text.find("non-default args: "); at != std::string_view::npos) {
      g.args = python_dict(l, l.text.substr(at + 18));
      have_args = true;
      const auto& a = g.args;
      if (a.count("model")) g.model = a.at("model");
      g.tp = static_cast<int>(int_arg(l, a, "tensor_parallel_size", 1, 1, 65536));
      g.pp = static_cast<int>(int_arg(l, a, "pipeline_parallel_size", 1, 1, 65536));
      g.dp = static_cast<int>(int_arg(l, a, "data_parallel_size", 1, 1, 65536));
      g.max_model_len = int_arg(l, a, "max_model_len", 0, 1, kMaxCount);
      g.max_num_batched_tokens = int_arg(l, a, "max_num_batched_tokens", 0, 1, kMaxCount);
      g.max_num_seqs = int_arg(l, a, "max_num_seqs", 0, 1, kMaxCount);
      tokens_given = g.max_num_batched_tokens > 0;
      seqs_given = g.max_num_seqs > 0;
      if (a.count("gpu_memory_utilization")) {
        g.gpu_memory_utilization =
            number_at(l, a.at("gpu_memory_utilization"), "gpu_memory_utilization");
        if (!(g.gpu_memory_utilization > 0 && g.gpu_memory_utilization <= 1))
          l.fail(fmt::format("non-default args: gpu_memory_utilization: expected (0, 1], got {}",
                             g.gpu_memory_utilization));
      }
      if (a.count("dtype")) g.dtype = dtype_name(a.at("dtype"));
      if (a.count("kv_cache_dtype")) g.kv_cache_dtype = a.at("kv_cache_dtype");
      if (a.count("quantization")) g.quantization = a.at("quantization");
    } else if (number_after(l, "Defaulting max_num_batched_tokens to ", v)) {
      const int64_t count = whole(l, v, "max_num_batched_tokens", 1, kMaxCount);
      if (!tokens_given) g.max_num_batched_tokens = count;
    } else if (number_after(l, "Defaulting max_num_seqs to ", v)) {
      const int64_t count = whole(l, v, "max_num_seqs", 1, kMaxCount);
      if (!seqs_given) g.max_num_seqs = count;
    } else if (const size_t e = l.text.find("Initializing a V1 LLM engine (v");
               e != std::string_view::npos) {
      const std::string_view rest = l.text.substr(e + 31);
      g.version = std::string(rest.substr(0, rest.find(')')));
      if (const std::string d = config_field(rest, ", dtype="); !d.empty()) g.dtype = dtype_name(d);
      if (const std::string q = config_field(rest, ", quantization="); q != "None")
        g.quantization = q;
      if (const std::string k = config_field(rest, "kv_cache_dtype="); !k.empty())
        g.kv_cache_dtype = k;
    } else if (number_after(l, "worker requested memory: ", v)) {
      if (g.requested_gib < 0) g.requested_gib = v;
    } else if (number_after(l, "Model loading took ", v)) {
      if (g.model_loading_gib < 0) g.model_loading_gib = v;
    } else if (number_after(l, "Estimated CUDA graph memory: ", v)) {
      if (g.cuda_graph_gib < 0) g.cuda_graph_gib = v;
    } else if (number_after(l, "Available KV cache memory: ", v)) {
      if (g.available_kv_gib < 0) g.available_kv_gib = v;
    } else if (number_after(l, "GPU KV cache size: ", v)) {
      const int64_t count = whole(l, v, "GPU KV cache size", 0, kMaxCount);
      if (g.kv_tokens < 0) g.kv_tokens = count;
    } else if (l.text.find("Memory profiling takes") != std::string_view::npos) {
      VllmMemoryProfile p;
      p.line = n;
      p.stage = stage_of(l.text);
      const bool all = number_after(l, "Total non KV cache memory: ", p.non_kv_gib) &&
                       number_after(l, "torch peak memory increase: ", p.torch_peak_gib) &&
                       number_after(l, "non-torch forward increase memory: ", p.non_torch_gib) &&
                       number_after(l, "weights memory: ", p.weights_gib);
      if (!all)
        l.fail(
            "memory profiling line without its four terms (total non KV cache, torch peak, "
            "non-torch, weights)");
      g.profiles.push_back(p);
    } else if (const size_t er = l.text.find("Error: "); er != std::string_view::npos) {
      if (g.error.empty()) {
        size_t from = er;
        while (from > 0 && l.text[from - 1] != ' ' && l.text[from - 1] != ']') --from;
        g.error = std::string(l.text.substr(from));
      }
    }
  }
  if (!have_args)
    throw InputError(
        fmt::format("{}:1: not a vLLM startup log: no 'non-default args: {{...}}' line", path));
  return g;
}

VllmStartupLog read_vllm_startup_log(const std::string& path) {
  return parse_vllm_startup_log(read_input_file(path, "a vLLM startup log"), path);
}

}  // namespace isim::calib
