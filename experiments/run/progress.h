// ProgressLine: `isim run`'s progress on stderr while a policy's run goes, with an ETA.
//
// Contract:
// - `isim run` (cli_run.cpp) reads ProgressOptions from --progress / --no-progress (and the
//   hidden --progress-interval SECONDS, >= 0, for tests). By default the progress shows only
//   when stderr is a terminal; both flags at once are an InputError.
// - A ProgressLine is told cluster::Progress reports (its `fn()`). It prints at most one line
//   per `interval_s` of wall time (0: every report), and always the last report. On a terminal
//   the line is redrawn in place and `finish` clears it; elsewhere each print is a line:
//     LABEL: DONE/TOTAL sessions (P%), sim t=T s, E s elapsed, ETA R s
//   The ETA assumes the sessions left take as long each as those done so far ("ETA ?" before
//   the first one is done); it is wall time, so it is never part of a run's files.
// - Nothing is printed when disabled, and a run's outputs are the same with or without it.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "cluster/cluster.h"

namespace isim::exp {

struct ProgressOptions {
  bool enabled = false;
  bool terminal = false;     // redraw in place (stderr is a terminal)
  double interval_s = 1.0;   // at most one print per interval (the last report always)
};

// The text of one report, `elapsed_s` of wall time after the run started.
std::string progress_text(const std::string& label, const cluster::Progress& p, double elapsed_s);

class ProgressLine {
 public:
  ProgressLine(std::string label, ProgressOptions options, std::FILE* out = stderr);
  // The reporter to give run_policy (null when disabled).
  cluster::ProgressFn fn();
  // Clears a redrawn line, so the next message starts on a clean line.
  void finish();

 private:
  void report(const cluster::Progress& p);
  std::string label_;
  ProgressOptions o_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_;
  size_t width_ = 0;  // of the line last drawn in place
};

}  // namespace isim::exp
