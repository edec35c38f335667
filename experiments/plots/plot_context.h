// plot_context.json: what the plot scripts (experiments/plot*.py, through plot_style.py) put in
// every figure's title: the GPU, the model, the workload and the arrival rate.
//
// Contract:
// - plot_context(experiments) collects, over the given experiments in order, the distinct GPU
//   names (the profiles' device.name, the fleet's groups' profiles included), model names
//   (model.name), workloads (workload_name) and one rate text (rate_text). A profile that cannot
//   be read leaves its GPU and model out (the run that uses it fails on its own, with its error).
// - workload_name: the trace source, with the trace's or generator's file stem in parentheses
//   when it names a file: "infercept (merged_exp_uniform)", "multiturn".
// - rate_text: "R sessions/s" or "LO-HI sessions/s" over the poisson runs; "N users" for the
//   users process; "the trace's arrival times" for replay; " x S" (or " x LO-HI") is added when
//   the trace's rate_scale is not 1.
// - plot_context_json: {"gpu": [...], "model": [...], "workload": [...], "rate": [TEXT]}, keys in
//   that order, one line; the same experiments give the same bytes.
// - write_plot_context(dir, ...) writes DIR/plot_context.json with write_file_atomic.
#pragma once

#include <string>
#include <vector>

#include "experiments/spec/experiment.h"

namespace isim::exp {

struct PlotContext {
  std::vector<std::string> gpu, model, workload, rate;
};

std::string workload_name(const TraceSpec& t);
std::string rate_text(const std::vector<const Experiment*>& experiments);
PlotContext plot_context(const std::vector<const Experiment*>& experiments);
std::string plot_context_json(const PlotContext& c);
void write_plot_context(const std::string& dir, const PlotContext& c);

}  // namespace isim::exp
