#include "traces/generator.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <set>

#include "traces/input_error.h"
#include "traces/rng.h"

namespace isim::trace {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Dist normal(double mean, double sd, double min = 0, double max = kInf) {
  return Dist{"normal", mean, sd, min, max};
}
Dist lognormal(double mean, double sd, double min = 0, double max = kInf) {
  return Dist{"lognormal", mean, sd, min, max};
}

// ---- YAML ----------------------------------------------------------------------------------

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key,
                         const std::string& reason) const {
    const YAML::Mark m = at.Mark();
    const std::string where = m.is_null() ? file_ : fmt::format("{}:{}", file_, m.line + 1);
    throw InputError(where + ": " + key + ": " + reason);
  }

  // `map` must be a map whose keys are all in `valid`.
  void expect_map(const YAML::Node& map, const std::string& path,
                  std::initializer_list<const char*> valid) const {
    if (!map.IsMap()) fail(map, path.empty() ? "<root>" : path, "expected a map");
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
      std::string list;
      for (const char* v : valid) list += (list.empty() ? "" : ", ") + std::string(v);
      fail(kv.first, join(path, key), "unknown key; valid: " + list);
    }
  }

  YAML::Node required(const YAML::Node& map, const std::string& path, const char* key) const {
    YAML::Node n = map[key];
    if (!n) fail(map, join(path, key), "missing");
    return n;
  }

  double number(const YAML::Node& n, const std::string& path) const {
    try {
      if (n.IsScalar()) return n.as<double>();
    } catch (const YAML::Exception&) {
    }
    fail(n, path, "expected a number, got '" + YAML::Dump(n) + "'");
  }

  std::string text(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, path, "expected a string");
    return n.as<std::string>();
  }

  Dist dist(const YAML::Node& n, const std::string& path) const {
    expect_map(n, path, {"dist", "mean", "sd", "min", "max"});
    Dist d;
    d.mean = number(required(n, path, "mean"), path + ".mean");
    d.sd = number(required(n, path, "sd"), path + ".sd");
    if (n["dist"]) d.dist = text(n["dist"], path + ".dist");
    if (n["min"]) d.min = number(n["min"], path + ".min");
    if (n["max"]) d.max = number(n["max"], path + ".max");
    return d;
  }

  InterceptSpec intercept(const YAML::Node& n, const std::string& path) const {
    expect_map(n, path, {"kind", "duration_s", "returned"});
    InterceptSpec s;
    s.kind = text(required(n, path, "kind"), path + ".kind");
    s.duration_s = dist(required(n, path, "duration_s"), path + ".duration_s");
    s.returned = dist(required(n, path, "returned"), path + ".returned");
    return s;
  }

  SessionKind kind(const YAML::Node& n, const std::string& path) const {
    expect_map(n, path, {"name", "share", "calls", "prompt", "output", "intercept", "human_turn"});
    SessionKind k;
    k.name = text(required(n, path, "name"), path + ".name");
    k.share = number(required(n, path, "share"), path + ".share");
    k.calls = dist(required(n, path, "calls"), path + ".calls");
    k.prompt = dist(required(n, path, "prompt"), path + ".prompt");
    k.output = dist(required(n, path, "output"), path + ".output");
    k.intercept = intercept(required(n, path, "intercept"), path + ".intercept");
    if (n["human_turn"]) k.human_turn = intercept(n["human_turn"], path + ".human_turn");
    return k;
  }

 private:
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  std::string file_;
};

// ---- validation ------------------------------------------------------------------------------

void check_dist(const Dist& d, const std::string& where, const std::string& key) {
  auto fail = [&](const std::string& field, const std::string& reason) {
    throw InputError(where + ": " + key + field + ": " + reason);
  };
  if (d.dist != "normal" && d.dist != "lognormal")
    fail(".dist", "unknown distribution '" + d.dist + "'; valid: normal, lognormal");
  if (!std::isfinite(d.mean)) fail(".mean", "must be finite");
  if (d.dist == "lognormal" && d.mean <= 0) fail(".mean", "must be > 0 for a lognormal");
  if (!std::isfinite(d.sd) || d.sd < 0) fail(".sd", "must be finite and >= 0");
  if (!std::isfinite(d.min) || d.min < 0) fail(".min", "must be finite and >= 0");
  if (std::isnan(d.max) || d.max < d.min) fail(".max", "must be >= min");
}

void check_intercept(const InterceptSpec& s, const std::string& where, const std::string& key) {
  if (s.kind.empty()) throw InputError(where + ": " + key + ".kind: must be a non-empty string");
  check_dist(s.duration_s, where, key + ".duration_s");
  check_dist(s.returned, where, key + ".returned");
}

// ---- drawing ---------------------------------------------------------------------------------

double draw(const Dist& d, Rng& rng) {
  double x = d.mean;
  if (d.sd > 0 && d.dist == "lognormal") {
    // Parameters of the underlying normal that give the requested mean and sd of the values.
    const double s2 = std::log1p((d.sd / d.mean) * (d.sd / d.mean));
    x = std::exp(rng.normal(std::log(d.mean) - s2 / 2, std::sqrt(s2)));
  } else if (d.sd > 0) {
    x = rng.normal(d.mean, d.sd);
  }
  return std::clamp(x, d.min, d.max);
}

int64_t draw_count(const Dist& d, Rng& rng) {
  return std::llround(std::min(draw(d, rng), 1e15));
}

const SessionKind& pick(const std::vector<SessionKind>& mix, double total_share, Rng& rng) {
  const double u = rng.uniform01() * total_share;
  double cumulative = 0;
  for (const auto& k : mix) {
    cumulative += k.share;
    if (u < cumulative) return k;
  }
  // Rounding in the running sum can leave u just above it: the last kind with a share wins.
  for (auto it = mix.rbegin(); it != mix.rend(); ++it)
    if (it->share > 0) return *it;
  return mix.back();
}

Session generate_one(const SessionKind& k, int64_t max_context, Rng& rng) {
  Session s;
  const int64_t calls = draw_count(k.calls, rng);
  s.segments.push_back(Segment{draw_count(k.prompt, rng), 0, std::nullopt});
  int64_t context = 0;
  for (int64_t j = 0;; ++j) {
    Segment& seg = s.segments.back();
    seg.output = draw_count(k.output, rng);
    context += seg.input + seg.output;
    // Past max_context the rest would be truncated anyway; stopping also bounds the work.
    if (j == calls || context >= max_context) break;
    const InterceptSpec& spec = (k.human_turn && j % 2 == 1) ? *k.human_turn : k.intercept;
    seg.intercept = Intercept{spec.kind, draw(spec.duration_s, rng)};
    s.segments.push_back(Segment{draw_count(spec.returned, rng), 0, std::nullopt});
  }
  truncate_to_context(s, max_context);
  return s;
}

}  // namespace

GeneratorConfig default_generator_config() {
  // Keep identical to traces/generators/infercept-mix.yaml, which documents each figure's source.
  const Dist human_duration = lognormal(28.3, 18.2, 0, 60);
  const Dist human_returned = lognormal(30, 47);
  GeneratorConfig c;
  c.max_context = 2048;
  c.mix = {
      {"math",
       98,
       normal(2.8, 1.3, 1),
       normal(405, 18),
       lognormal(125, 139, 1),
       {"math", normal(8.3e-5, 4.8e-5), normal(21, 4.9)},
       std::nullopt},
      {"chat",
       65,
       normal(4.7, 2.0, 1),
       lognormal(99, 246, 1),
       lognormal(100, 125, 1),
       {"chat", lognormal(23.6, 17.4, 0, 60), lognormal(36, 83)},
       std::nullopt},
      {"qa",
       50,
       normal(3.1, 1.2, 1),
       normal(933, 7),
       lognormal(183, 137, 1),
       {"qa", normal(0.71, 0.2), normal(57, 8.5)},
       std::nullopt},
      {"tts",
       65,
       normal(6.9, 3.9, 1),
       lognormal(99, 246, 1),
       lognormal(30.5, 24.9, 1),
       {"tts", normal(6.1, 2.7), normal(8, 0)},
       InterceptSpec{"chat", human_duration, human_returned}},
      {"ve",
       54,
       normal(5.4, 1.0, 1),
       normal(1973, 0),
       normal(4, 0, 1),
       {"ve", normal(0.085, 0.015), lognormal(8.8, 9.1, 1)},
       std::nullopt},
      {"image",
       65,
       normal(6.7, 3.9, 1),
       lognormal(99, 246, 1),
       lognormal(30.5, 24.9, 1),
       {"image", normal(11.5, 0.9), normal(7, 0)},
       InterceptSpec{"chat", human_duration, human_returned}},
  };
  return c;
}

GeneratorConfig load_generator_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno));
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}: <yaml>: {}", path, e.mark.line + 1, e.msg));
  }
  const YamlReader r(path);
  r.expect_map(root, "", {"max_context", "mix"});
  GeneratorConfig c;
  if (root["max_context"]) {
    const double m = r.number(root["max_context"], "max_context");
    if (m != std::floor(m) || m < 2 || m > 1e15)
      r.fail(root["max_context"], "max_context", "expected an integer >= 2");
    c.max_context = static_cast<int64_t>(m);
  }
  const YAML::Node mix = r.required(root, "", "mix");
  if (!mix.IsSequence()) r.fail(mix, "mix", "expected a list of session kinds");
  for (size_t i = 0; i < mix.size(); ++i)
    c.mix.push_back(r.kind(mix[i], fmt::format("mix[{}]", i)));
  validate_generator_config(c, path);
  return c;
}

void validate_generator_config(const GeneratorConfig& c, const std::string& where) {
  if (c.max_context < 2) throw InputError(where + ": max_context: must be >= 2");
  if (c.mix.empty()) throw InputError(where + ": mix: needs at least one session kind");
  std::set<std::string> names;
  double total = 0;
  for (size_t i = 0; i < c.mix.size(); ++i) {
    const SessionKind& k = c.mix[i];
    const std::string key = fmt::format("mix[{}]", i);
    if (k.name.empty()) throw InputError(where + ": " + key + ".name: must be a non-empty string");
    if (!names.insert(k.name).second)
      throw InputError(where + ": " + key + ".name: duplicate name '" + k.name + "'");
    if (!std::isfinite(k.share) || k.share < 0)
      throw InputError(where + ": " + key + ".share: must be finite and >= 0");
    total += k.share;
    check_dist(k.calls, where, key + ".calls");
    check_dist(k.prompt, where, key + ".prompt");
    check_dist(k.output, where, key + ".output");
    check_intercept(k.intercept, where, key + ".intercept");
    if (k.human_turn) check_intercept(*k.human_turn, where, key + ".human_turn");
  }
  if (!(total > 0) || !std::isfinite(total))
    throw InputError(where + ": mix: the shares must add up to a finite number > 0");
}

Trace generate(const GeneratorConfig& c, int64_t sessions, uint64_t seed) {
  validate_generator_config(c, "generator");
  if (sessions < 0)
    throw InputError(fmt::format("generator: sessions: must be >= 0, got {}", sessions));
  double total = 0;
  for (const auto& k : c.mix) total += k.share;
  Rng rng(seed);
  Trace t;
  t.reserve(static_cast<size_t>(sessions));
  for (int64_t i = 0; i < sessions; ++i) {
    const SessionKind& k = pick(c.mix, total, rng);
    t.push_back(generate_one(k, c.max_context, rng));
    t.back().id = fmt::format("g{}", i);
  }
  return t;
}

Trace bootstrap(const Trace& source, int64_t n, uint64_t seed) {
  if (n < 0) throw InputError(fmt::format("bootstrap: n: must be >= 0, got {}", n));
  if (n > 0 && source.empty()) throw InputError("bootstrap: the source trace has no sessions");
  Rng rng(seed);
  Trace t;
  t.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    t.push_back(source[rng.below(source.size())]);
    t.back().id += fmt::format("#{}", k);
    t.back().arrival_s = 0;
  }
  return t;
}

void truncate_to_context(Session& s, int64_t max_context) {
  if (max_context < 2)
    throw InputError(fmt::format("max_context: must be >= 2, got {}", max_context));
  if (s.segments.empty()) return;
  s.segments[0].input = std::min(s.segments[0].input, max_context - 1);
  int64_t context = 0;
  for (size_t k = 0; k < s.segments.size(); ++k) {
    Segment& seg = s.segments[k];
    const int64_t room = max_context - context - seg.input;  // tokens left to decode
    if (room < 1) {                                          // k > 0: the prompt always fits
      s.segments.resize(k);
      break;
    }
    if (seg.output >= room) {
      seg.output = room;
      s.segments.resize(k + 1);
      break;
    }
    context += seg.input + seg.output;
  }
  s.segments.back().intercept.reset();
}

}  // namespace isim::trace
