// Fitting the roofline's efficiency factors from a measured tables profile (calibrate/analytic.h).
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "calibrate/analytic.h"
#include "core/input_error.h"

namespace isim::calib {

namespace {

// Least-squares k for y = k x (through the origin) over the chosen points.
double slope_through_origin(const std::vector<double>& x, const std::vector<double>& y,
                            const std::vector<bool>& use) {
  double xy = 0, xx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!use[i]) continue;
    xy += x[i] * y[i];
    xx += x[i] * x[i];
  }
  return xx > 0 ? xy / xx : 0;
}

size_t count(const std::vector<bool>& v) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), true));
}

}  // namespace

FitResult fit_efficiency(const sim::Profile& measured, const GpuSpec& measured_gpu,
                         const Efficiency& start) {
  const std::string origin = measured.path.empty() ? "(measured profile)" : measured.path;
  if (measured.form != sim::ForwardForm::kTables)
    throw InputError(
        origin + ": forward: --fit-from needs a tables profile (a linear one has no grid to fit)");
  FitResult fit;
  fit.eff = start;
  Efficiency& e = fit.eff;
  const sim::TablesForward& t = measured.tables;
  // Roofline terms at efficiency 1 are independent of the factors.
  const Roofline unit(measured_gpu, measured.model, Efficiency{1, 1, 1, 1, 0, 0, 0, 1});

  // Dense: y = max(c / compute, m / memory).
  {
    std::vector<double> c, m, y;
    for (size_t i = 0; i < t.dense_us.x.size(); ++i) {
      c.push_back(unit.dense_compute_us(t.dense_us.x[i]));
      m.push_back(unit.dense_memory_us(t.dense_us.x[i]));
      y.push_back(t.dense_us.y[i]);
    }
    std::vector<bool> on_compute(c.size(), false);
    for (int iter = 0; iter < 100; ++iter) {
      std::vector<bool> split(c.size());
      for (size_t i = 0; i < c.size(); ++i) split[i] = c[i] / e.compute >= m[i] / e.memory;
      std::vector<bool> on_memory(c.size());
      for (size_t i = 0; i < c.size(); ++i) on_memory[i] = !split[i];
      const double kc = slope_through_origin(c, y, split);
      const double km = slope_through_origin(m, y, on_memory);
      if (kc > 0) e.compute = 1.0 / kc;
      if (km > 0) e.memory = 1.0 / km;
      if (iter > 0 && split == on_compute) break;
      on_compute = split;
    }
    const size_t nc = count(on_compute), nm = on_compute.size() - nc;
    if (nc == 0) fit.kept.emplace_back("compute: no compute-bound dense point");
    if (nm == 0) fit.kept.emplace_back("memory: no memory-bound dense point");
    fit.notes.push_back(fmt::format("compute: {} dense points, memory: {} dense points", nc, nm));
  }

  // Prefill attention: y = max(c / attention, m / memory), memory already fitted.
  {
    const sim::Grid2D& g = t.prefill_attention_us;
    std::vector<double> c, m, y;
    for (size_t i = 0; i < g.x.size(); ++i)
      for (size_t j = 0; j < g.y.size(); ++j) {
        c.push_back(unit.prefill_compute_us(g.x[i], g.y[j]));
        m.push_back(unit.prefill_memory_us(g.x[i], g.y[j]));
        y.push_back(g.z[i * g.y.size() + j]);
      }
    std::vector<bool> used(c.size(), false);
    for (int iter = 0; iter < 100; ++iter) {
      std::vector<bool> split(c.size());
      for (size_t i = 0; i < c.size(); ++i) split[i] = c[i] / e.attention >= m[i] / e.memory;
      const double k = slope_through_origin(c, y, split);
      if (k > 0) e.attention = 1.0 / k;
      if (iter > 0 && split == used) break;
      used = split;
    }
    if (count(used) == 0) fit.kept.emplace_back("attention: no FLOP-bound prefill attention point");
    fit.notes.push_back(fmt::format("attention: {} prefill attention points", count(used)));
  }

  // Decode attention: y - kv_read / memory = sequences * per_seq.
  {
    const sim::Grid2D& g = t.decode_attention_us;
    std::vector<double> s, r;
    for (size_t i = 0; i < g.x.size(); ++i)
      for (size_t j = 0; j < g.y.size(); ++j) {
        s.push_back(g.x[i]);
        r.push_back(g.z[i * g.y.size() + j] - unit.decode_kv_us(g.y[j]) / e.memory);
      }
    const double k = slope_through_origin(s, r, std::vector<bool>(s.size(), true));
    e.attention_per_seq_us = std::max(0.0, k);
    fit.notes.push_back(fmt::format("attention_per_seq_us: {} decode attention points", s.size()));
  }

  // PCIe: copy time in us = latency + bytes / (1e3 x pcie_gbps x pcie).
  {
    std::vector<double> b, us;
    for (const sim::Curve1D* c : {&measured.swap.h2d_gbps, &measured.swap.d2h_gbps})
      for (size_t i = 0; i < c->x.size(); ++i) {
        b.push_back(c->x[i]);
        us.push_back(c->x[i] / c->y[i] / 1e3);
      }
    const double n = static_cast<double>(b.size());
    double sb = 0, st = 0, sbb = 0, sbt = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      sb += b[i];
      st += us[i];
      sbb += b[i] * b[i];
      sbt += b[i] * us[i];
    }
    const double den = n * sbb - sb * sb;
    const double slope = den > 0 ? (n * sbt - sb * st) / den : 0;
    if (slope > 0) {
      e.pcie = 1.0 / (slope * 1e3 * measured_gpu.pcie_gbps);
      e.pcie_latency_us = std::max(0.0, (st - slope * sb) / n) + measured.swap.per_copy_overhead_us;
      fit.notes.push_back(fmt::format("pcie: {} copy points", b.size()));
    } else {
      fit.kept.emplace_back("pcie: copy time does not grow with size");
    }
  }
  for (auto [name, f] : {std::pair<const char*, double*>{"compute", &e.compute},
                         {"memory", &e.memory},
                         {"attention", &e.attention},
                         {"pcie", &e.pcie}}) {
    if (*f > 1) {
      fit.notes.push_back(fmt::format(
          "{}: fitted {:.4g} > 1 (faster than the spec's peak; check --fit-gpu), clamped to 1",
          name, *f));
      *f = 1;
    }
  }
  e.overhead_us = t.overhead_us;
  e.duplex = measured.swap.duplex_factor;
  return fit;
}

}  // namespace isim::calib
