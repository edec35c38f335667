// isim run's work once its flags are read (run_experiment.h).
#include "experiments/run/run_experiment.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/interrupt.h"
#include "experiments/run/goodput.h"

namespace isim::exp {

RunReport run_experiment(const Experiment& e, const Inputs& in, const std::string& out,
                         cluster::Checks checks, const RunViews& views,
                         const ProgressOptions& progress,
                         const std::function<void(const std::string& dir)>& after_fleet_policy,
                         int32_t threads) {
  for (const auto& n : in.notes) fmt::print(stderr, "note: {}\n", n);
  for (const auto& w : in.warnings) fmt::print(stderr, "warning: {}\n", w);
  RunReport report;
  std::vector<TableRow>& rows = report.rows;
  std::vector<FleetRow>& fleet = report.fleet;
  size_t& skipped = report.skipped;
  bool capacity_shown = false;
  std::string done;  // the run folders written so far, for the interrupt note
  set_interrupt_note("no run folder was written to " + out);
  for (const auto& p : e.policies) {
    const auto trace = event_trace_for(views, e);
    ProgressLine line(p.name, progress);
    auto r =
        run_policy(e, in, p, checks, trace.get(), line.fn(), !views.metrics.file.empty(), threads);
    line.finish();
    if (!r.threads_note.empty()) fmt::print(stderr, "note: {}: {}\n", p.name, r.threads_note);
    // The capacity is the same under every policy: say once how it came about.
    for (size_t i = 0; !capacity_shown && i < r.replicas.size(); ++i)
      if (i == 0 || r.replicas[i].group != r.replicas[i - 1].group)
        fmt::print(stderr, "KV capacity{}: {}\n",
                   r.replicas[i].group.empty() ? "" : " (" + r.replicas[i].group + ")",
                   r.replicas[i].blocks.gpu_rule);
    capacity_shown = true;
    std::string dir = (std::filesystem::path(out) / p.name).string();
    set_interrupt_note((done.empty() ? "no run folder is complete" : "complete: " + done) + "; " +
                       dir + " was cut short (it has no summary.json)");
    write_run(dir, e, in, p, r);
    done += (done.empty() ? "" : ", ") + dir;
    set_interrupt_note("complete: " + done + "; the other policies were not run");
    fmt::print(stderr, "{}: {} sessions, {} iterations -> {}\n", p.name, r.summary.finished,
               r.summary.counters.iterations, dir);
    finish_run_views(views, e, in, p, dir, r.timeseries.size(), trace.get());
    write_metrics_out(views.metrics, e, in, p, r);
    if (r.summary.extrapolations > 0)
      fmt::print(stderr, "warning: {}: profile extrapolated beyond its grid {} times\n", p.name,
                 r.summary.extrapolations);
    if (r.summary.overloaded) {
      const Overload o = judge_overload(r.sessions, r.timeseries);
      fmt::print(stderr,
                 "warning: {}: overloaded: the queue of waiting sessions grew by {:.3g} sessions/s "
                 "while they arrived, more than {:.0f}% of their rate ({:.3g}/s), so it grows "
                 "without bound and latencies depend on the trace's length; lower arrival.rate "
                 "or add replicas\n",
                 p.name, o.growth_per_s, 100 * kOverloadFraction, o.rate);
    }
    if (!r.skipped.empty() && rows.empty())
      for (const auto& s : r.skipped) fmt::print(stderr, "error: {}\n", s);
    skipped = r.skipped.size();
    rows.push_back({p.name, r.summary});
    fleet.push_back({p.name, r.summary, r.fleet, r.disagg});
    if (e.cluster.given && e.cluster.replicas() > 1) after_fleet_policy(dir);
  }
  return report;
}

int print_run_report(const Experiment& e, const RunReport& r) {
  fmt::print("{}", summary_table(r.rows));
  if (e.cluster.given) fmt::print("\n{}", fleet_table(r.fleet));
  if (!r.fleet.empty() && r.fleet.front().disagg.enabled) fmt::print("\n{}", disagg_table(r.fleet));
  if (r.skipped > 0) {
    fmt::print(stderr,
               "isim: error: {} session(s) can never fit and were skipped (listed above and in "
               "summary.json); the other results were written\n",
               r.skipped);
    return 2;
  }
  return 0;
}

}  // namespace isim::exp
