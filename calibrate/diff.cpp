#include "calibrate/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <tuple>

#include "core/input_error.h"

namespace isim::calib {

namespace {

double time_slowdown(double base, double next) {
  if (base == 0) return next == 0 ? 0 : std::numeric_limits<double>::infinity();
  return next / base - 1;
}

double bandwidth_slowdown(double base, double next) {
  if (next == 0) return base == 0 ? 0 : std::numeric_limits<double>::infinity();
  return base / next - 1;
}

class Collector {
 public:
  explicit Collector(DiffReport& r) : r_(r) {}

  void time(const std::string& table, const std::string& point, double base, double next) {
    r_.entries.push_back({table, point, base, next, false, time_slowdown(base, next)});
  }
  void bandwidth(const std::string& table, const std::string& point, double base, double next) {
    r_.entries.push_back({table, point, base, next, true, bandwidth_slowdown(base, next)});
  }

  // Shared points of two curves; returns how many there were.
  size_t curve(const std::string& table, const char* xkey, const sim::Curve1D& a,
               const sim::Curve1D& b, bool is_bandwidth) {
    size_t n = 0;
    for (size_t i = 0; i < a.x.size(); ++i) {
      const auto it = std::find(b.x.begin(), b.x.end(), a.x[i]);
      if (it == b.x.end()) continue;
      const double nb = b.y[static_cast<size_t>(it - b.x.begin())];
      const std::string point = fmt::format("{}={}", xkey, a.x[i]);
      if (is_bandwidth) {
        bandwidth(table, point, a.y[i], nb);
      } else {
        time(table, point, a.y[i], nb);
      }
      ++n;
    }
    return n;
  }

  size_t grid(const std::string& table, const char* xkey, const char* ykey, const sim::Grid2D& a,
              const sim::Grid2D& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.x.size(); ++i) {
      const auto bi = std::find(b.x.begin(), b.x.end(), a.x[i]);
      if (bi == b.x.end()) continue;
      const size_t ib = static_cast<size_t>(bi - b.x.begin());
      for (size_t j = 0; j < a.y.size(); ++j) {
        const auto bj = std::find(b.y.begin(), b.y.end(), a.y[j]);
        if (bj == b.y.end()) continue;
        const size_t jb = static_cast<size_t>(bj - b.y.begin());
        time(table, fmt::format("{}={} {}={}", xkey, a.x[i], ykey, a.y[j]), a.z[i * a.y.size() + j],
             b.z[ib * b.y.size() + jb]);
        ++n;
      }
    }
    return n;
  }

  // Shared cells of two 4-D grids (mixed prefill + decode attention).
  size_t grid4(const std::string& table, const sim::Grid4D& a, const sim::Grid4D& b) {
    static const char* keys[] = {"chunk", "kv_prefill", "decodes", "kv_per_decode"};
    const auto index = [](const std::vector<double>& axis, double v) -> std::ptrdiff_t {
      const auto it = std::find(axis.begin(), axis.end(), v);
      return it == axis.end() ? -1 : it - axis.begin();
    };
    const auto flat = [](const sim::Grid4D& g, const std::array<size_t, 4>& i) {
      return ((i[0] * g.axes[1].size() + i[1]) * g.axes[2].size() + i[2]) * g.axes[3].size() + i[3];
    };
    size_t n = 0;
    std::array<size_t, 4> ia{}, ib{};
    for (size_t c = 0; c < a.cells(); ++c) {
      size_t rest = c;
      bool shared = true;
      for (int d = 3; d >= 0; --d) {
        const auto du = static_cast<size_t>(d);
        ia[du] = rest % a.axes[du].size();
        rest /= a.axes[du].size();
        const std::ptrdiff_t j = index(b.axes[du], a.axes[du][ia[du]]);
        shared = shared && j >= 0;
        ib[du] = j < 0 ? 0 : static_cast<size_t>(j);
      }
      if (!shared) continue;
      std::string point;
      for (size_t d = 0; d < 4; ++d)
        point += fmt::format("{}{}={}", d ? " " : "", keys[d], a.axes[d][ia[d]]);
      time(table, point, a.z[flat(a, ia)], b.z[flat(b, ib)]);
      ++n;
    }
    return n;
  }

 private:
  DiffReport& r_;
};

void same_shape(const sim::Profile& a, const sim::Profile& b, const std::string& an,
                const std::string& bn) {
  const sim::ModelShape& x = a.model;
  const sim::ModelShape& y = b.model;
  const auto check = [&](const char* key, auto va, auto vb) {
    if (va != vb)
      throw InputError(fmt::format(
          "{} and {}: model.{}: {} vs {}; profile diff compares profiles of the same model shape",
          an, bn, key, va, vb));
  };
  check("layers", x.layers, y.layers);
  check("hidden", x.hidden, y.hidden);
  check("heads", x.heads, y.heads);
  check("kv_heads", x.kv_heads, y.kv_heads);
  check("head_dim", x.head_dim, y.head_dim);
  check("ffn", x.ffn, y.ffn);
  check("vocab", x.vocab, y.vocab);
  check("dtype", x.dtype, y.dtype);
  check("params", x.params, y.params);
  check("tp", x.tp, y.tp);
}

std::string name_of(const sim::Profile& p, const char* fallback) {
  return p.path.empty() ? fallback : p.path;
}

std::string percent(double v) {
  if (std::isinf(v)) return v > 0 ? "+inf%" : "-inf%";
  return fmt::format("{:+.2f}%", v * 100);
}

}  // namespace

size_t DiffReport::regressions(double threshold) const {
  return static_cast<size_t>(std::count_if(
      entries.begin(), entries.end(), [&](const DiffEntry& e) { return e.slowdown > threshold; }));
}

DiffReport diff_profiles(const sim::Profile& base, const sim::Profile& next) {
  const std::string bn = name_of(base, "BASE"), nn = name_of(next, "NEW");
  if (base.form != next.form) {
    const auto form = [](const sim::Profile& p) {
      return p.form == sim::ForwardForm::kLinear ? "linear" : "tables";
    };
    throw InputError(
        fmt::format("{} and {}: forward: {} vs {}; profile diff compares profiles of "
                    "the same form",
                    bn, nn, form(base), form(next)));
  }
  same_shape(base, next, bn, nn);
  DiffReport r;
  Collector c(r);
  if (base.form == sim::ForwardForm::kLinear) {
    c.time("linear.base_ms", "", base.linear.base_ms, next.linear.base_ms);
    c.time("linear.slope_ms_per_token", "", base.linear.slope_ms_per_token,
           next.linear.slope_ms_per_token);
  } else {
    const sim::TablesForward& a = base.tables;
    const sim::TablesForward& b = next.tables;
    const auto need = [&](const char* table, size_t n) {
      if (n == 0)
        throw InputError(
            fmt::format("{} and {}: forward.tables.{}: no grid point in common; "
                        "nothing to compare",
                        bn, nn, table));
    };
    need("dense_us", c.curve("dense_us", "tokens", a.dense_us, b.dense_us, false));
    need("decode_attention_us", c.grid("decode_attention_us", "sequences", "kv_tokens",
                                       a.decode_attention_us, b.decode_attention_us));
    need("prefill_attention_us", c.grid("prefill_attention_us", "chunk", "kv_tokens",
                                        a.prefill_attention_us, b.prefill_attention_us));
    need("lm_head_us", c.curve("lm_head_us", "sequences", a.lm_head_us, b.lm_head_us, false));
    c.time("overhead_us", "", a.overhead_us, b.overhead_us);
    // Optional tables: compared where both profiles have them.
    if (!a.mixed_attention_us.empty() && !b.mixed_attention_us.empty())
      c.grid4("mixed_attention_us", a.mixed_attention_us, b.mixed_attention_us);
    if (!a.allreduce_us.x.empty() && !b.allreduce_us.x.empty())
      c.curve("allreduce_us", "bytes", a.allreduce_us, b.allreduce_us, false);
    if (!a.moe_us.empty() && !b.moe_us.empty())
      c.grid("moe_us", "tokens", "experts", a.moe_us, b.moe_us);
  }
  if (base.step_overhead.given() || next.step_overhead.given()) {
    c.time("step_overhead.fixed_us", "", base.step_overhead.fixed_us, next.step_overhead.fixed_us);
    c.time("step_overhead.per_sequence_us", "", base.step_overhead.per_sequence_us,
           next.step_overhead.per_sequence_us);
    c.time("step_overhead.per_token_us", "", base.step_overhead.per_token_us,
           next.step_overhead.per_token_us);
  }
  // A forward slowed by s beside copies takes (1 + s) times as long.
  if (base.swap.compute_slowdown != 0 || next.swap.compute_slowdown != 0)
    c.time("swap.compute_slowdown", "(1 + s)", 1 + base.swap.compute_slowdown,
           1 + next.swap.compute_slowdown);
  // One copy of each shared size, as the cost model prices it (per-copy overhead included).
  const auto effective = [](const sim::SwapSpec& s, const sim::Curve1D& curve) {
    sim::Curve1D e = curve;
    for (size_t i = 0; i < e.x.size(); ++i)
      e.y[i] = e.x[i] / (s.per_copy_overhead_us * 1e3 + e.x[i] / e.y[i]);
    return e;
  };
  c.curve("swap.h2d_gbps", "bytes", effective(base.swap, base.swap.h2d_gbps),
          effective(next.swap, next.swap.h2d_gbps), true);
  c.curve("swap.d2h_gbps", "bytes", effective(base.swap, base.swap.d2h_gbps),
          effective(next.swap, next.swap.d2h_gbps), true);
  c.bandwidth("swap.duplex_factor", "", base.swap.duplex_factor, next.swap.duplex_factor);
  // stable_sort keeps the table order above within equal slowdowns.
  std::stable_sort(r.entries.begin(), r.entries.end(),
                   [](const DiffEntry& x, const DiffEntry& y) { return x.slowdown > y.slowdown; });
  return r;
}

double parse_percent(const std::string& text, const std::string& what) {
  if (text.size() < 2 || text.back() != '%')
    throw InputError(fmt::format("{}: expected a percentage like 5%, got '{}'", what, text));
  double v = 0;
  const char* end = text.data() + text.size() - 1;
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || !(v >= 0) || !std::isfinite(v))
    throw InputError(
        fmt::format("{}: expected a non-negative percentage like 5%, got '{}'", what, text));
  return v / 100;
}

std::string format_diff(const DiffReport& r, double threshold, size_t rows,
                        const std::string& base_name, const std::string& next_name) {
  std::string out;
  auto w = std::back_inserter(out);
  const size_t bad = r.regressions(threshold);
  fmt::format_to(w, "profile diff: base {}, new {}\n", base_name, next_name);
  fmt::format_to(w, "{} entries compared; {} slower by more than {}{}\n", r.entries.size(), bad,
                 percent(threshold).substr(1), bad > 0 ? ": REGRESSION" : "");
  const size_t n = rows == 0 ? r.entries.size() : std::min(rows, r.entries.size());
  if (n == 0) return out;
  fmt::format_to(w, "worst first (change is in time: + is slower; bandwidths are inverted):\n");
  fmt::format_to(w, "  {:<28} {:<32} {:>12} {:>12} {:>9}\n", "table", "point", "base", "new",
                 "change");
  for (size_t i = 0; i < n; ++i) {
    const DiffEntry& e = r.entries[i];
    fmt::format_to(w, "  {:<28} {:<32} {:>12.6g} {:>12.6g} {:>9}{}\n", e.table,
                   e.point.empty() ? "-" : e.point, e.base, e.next, percent(e.slowdown),
                   e.slowdown > threshold ? "  !" : "");
  }
  if (n < r.entries.size())
    fmt::format_to(w, "  ... {} more (--top 0 lists all)\n", r.entries.size() - n);
  return out;
}

}  // namespace isim::calib
