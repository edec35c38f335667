#include "experiments/run/progress.h"

#include <cmath>

#include <fmt/format.h>


namespace isim::exp {

namespace {

// Seconds as a short text: "42.1 s", "12 min 5 s", "2 h 03 min".
std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  const auto whole = static_cast<int64_t>(std::llround(s));
  if (whole < 3600) return fmt::format("{} min {} s", whole / 60, whole % 60);
  const auto minutes = static_cast<int64_t>(std::llround(s / 60));
  return fmt::format("{} h {:02} min", minutes / 60, minutes % 60);
}

}  // namespace

std::string progress_text(const std::string& label, const cluster::Progress& p,
                          double elapsed_s) {
  const double share = p.total > 0 ? static_cast<double>(p.done) / p.total : 1.0;
  std::string eta = "ETA ?";
  if (p.last) {
    eta = "done";
  } else if (p.done > 0) {
    eta = "ETA " + duration_text(elapsed_s * static_cast<double>(p.total - p.done) / p.done);
  }
  return fmt::format("{}: {}/{} sessions ({:.1f}%), sim t={:.1f} s, {} elapsed, {}", label,
                     p.done, p.total, 100 * share, static_cast<double>(p.now) * 1e-9,
                     duration_text(elapsed_s), eta);
}

ProgressLine::ProgressLine(std::string label, ProgressOptions options, std::FILE* out)
    : label_(std::move(label)), o_(options), out_(out),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

cluster::ProgressFn ProgressLine::fn() {
  if (!o_.enabled) return nullptr;
  start_ = last_ = std::chrono::steady_clock::now();
  return [this](const cluster::Progress& p) { report(p); };
}

void ProgressLine::report(const cluster::Progress& p) {
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (!p.last && since < o_.interval_s) return;  // a run shorter than that prints its end only
  last_ = now;
  const std::string text =
      progress_text(label_, p, std::chrono::duration<double>(now - start_).count());
  if (o_.terminal) {
    // Redraw in place; pad over a longer previous line.
    const size_t pad = width_ > text.size() ? width_ - text.size() : 0;
    fmt::print(out_, "\r{}{}", text, std::string(pad, ' '));
    width_ = text.size();
  } else {
    fmt::print(out_, "{}\n", text);
  }
  std::fflush(out_);
}

void ProgressLine::finish() {
  if (o_.terminal && width_ > 0) {
    fmt::print(out_, "\r{}\r", std::string(width_, ' '));
    std::fflush(out_);
    width_ = 0;
  }
}

}  // namespace isim::exp
