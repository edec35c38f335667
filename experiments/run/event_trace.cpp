#include "experiments/run/event_trace.h"

#include <fmt/format.h>

#include "core/out_path.h"
#include "experiments/spec/experiment.h"

namespace isim::exp {

namespace {

// Microseconds with the nanoseconds kept: "12", "12.5", "0.001".
std::string us(sim::Nanos t) {
  std::string s = fmt::format("{}", t / 1000);
  if (const sim::Nanos frac = t % 1000; frac != 0) {
    s += fmt::format(".{:03}", frac);
    while (s.back() == '0') s.pop_back();
  }
  return s;
}

std::string json_str(const std::string& s) {
  return nlohmann::json(s).dump();
}

double ms(sim::Nanos t) {
  return static_cast<double>(t) / 1e6;
}

const char* iteration_name(const sim::IterationRecord& r) {
  if (r.prefills > 0 && r.decodes > 0) return "prefill+decode";
  if (r.prefills > 0) return "prefill";
  if (r.decodes > 0) return "decode";
  return "swap only";
}

// A span's name and category.
std::pair<std::string, const char*> span_name(sim::Activity a, const std::string& kind) {
  using A = sim::Activity;
  switch (a) {
    case A::kQueued:
      return {"queued", "queued"};
    case A::kPrefill:
      return {"prefill", "prefill"};
    case A::kRecompute:
      return {"recomputing", "recompute"};
    case A::kDecode:
      return {"decode", "decode"};
    case A::kPaused:
      return {"paused: " + kind, "paused"};
    case A::kPausedCpu:
      return {"swapped: " + kind, "swapped"};
    case A::kSwapInWait:
      return {"swapped: waiting for swap-in", "swapped"};
    case A::kExporting:
      return {"exporting KV", "transfer"};
    case A::kImporting:
      return {"importing KV", "transfer"};
    case A::kGone:
      break;
  }
  return {"", ""};
}

bool paused(sim::Activity a) {
  return a == sim::Activity::kPaused || a == sim::Activity::kPausedCpu;
}

std::string metadata(const char* what, int32_t pid, int32_t tid, const std::string& arg) {
  const bool sort = std::string(what).find("sort_index") != std::string::npos;
  return fmt::format(R"({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{{"{}":{}}}}})", what, pid,
                     tid, sort ? "sort_index" : "name", arg);
}

}  // namespace

EventTrace::EventTrace(std::vector<std::string> replica_names, int64_t limit)
    : replica_names_(std::move(replica_names)),
      limit_(limit),
      kv_(replica_names_.size(), {-1, -1}) {}

bool EventTrace::add(const std::string& event) {
  if (truncated_) return false;
  if (count_ >= limit_) {
    truncated_ = true;
    return false;
  }
  body_ += "\n";
  body_ += event;
  body_ += ",";
  ++count_;
  return true;
}

EventTrace::Track& EventTrace::track(int32_t idx) {
  if (static_cast<size_t>(idx) >= tracks_.size()) tracks_.resize(static_cast<size_t>(idx) + 1);
  return tracks_[static_cast<size_t>(idx)];
}

void EventTrace::iteration(const sim::IterationRecord& r) {
  last_t_ = std::max(last_t_, r.start);
  add(fmt::format(
      R"({{"name":"{}","cat":"iteration","ph":"X","ts":{},"dur":{},"pid":{},"tid":1,)"
      R"("args":{{"batch_size":{},"prefill_tokens":{},"decode_tokens":{},"recompute_tokens":{},)"
      R"("swap_out_tokens":{},"swap_in_tokens":{},"stall_ms":{},"duration_ms":{}}}}})",
      iteration_name(r), us(r.start), us(r.duration), r.replica + 1, r.decodes + r.prefills,
      r.batch_tokens - r.decodes, r.decodes, r.recompute_tokens, r.swap_out_tokens,
      r.swap_in_tokens, ms(r.stall), ms(r.duration)));
}

void EventTrace::close(int32_t idx, sim::Nanos t) {
  Track& k = track(idx);
  const Span sp = k.open;
  k.open = Span{};
  if (sp.a == sim::Activity::kGone || t <= sp.start) return;
  const auto [name, cat] = span_name(sp.a, sp.kind);
  std::string args = fmt::format(R"("replica":{},"session":{})", sp.replica, json_str(k.id));
  if (paused(sp.a)) args += fmt::format(R"(,"intercept":{})", json_str(sp.kind));
  if (add(fmt::format(R"({{"name":{},"cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},)"
                      R"("args":{{{}}}}})",
                      json_str(name), cat, us(sp.start), us(t - sp.start), sessions_pid(), idx + 1,
                      args)))
    k.named = true;
}

void EventTrace::session(int32_t replica, const sim::SessionState& s, sim::Activity a,
                         sim::Nanos t) {
  last_t_ = std::max(last_t_, t);
  Track& k = track(s.idx);
  if (k.id.empty()) k.id = s.id();
  const bool other = k.open.a != sim::Activity::kGone && k.open.replica != replica;
  // While its KV lands on another replica, the source's view of it is stale; gone from another
  // replica than the one holding it, it has already arrived elsewhere.
  if (other && (k.open.importing || a == sim::Activity::kGone)) return;
  if (k.open.a == a && !other) {
    k.open.importing = s.phase == sim::Phase::kImporting;
    return;
  }
  close(s.idx, t);
  if (a == sim::Activity::kGone) return;
  if (k.last_replica >= 0 && k.last_replica != replica)
    add(fmt::format(
        R"({{"name":"moved to replica {}","cat":"migration","ph":"i","s":"t","ts":{},"pid":{},)"
        R"("tid":{},"args":{{"from":{},"to":{}}}}})",
        replica, us(t), sessions_pid(), s.idx + 1, k.last_replica, replica));
  k.last_replica = replica;
  k.open = {a, replica, t, paused(a) ? s.intercept_kind() : std::string(),
            s.phase == sim::Phase::kImporting};
  if (paused(a) && k.open.kind.empty()) k.open.kind = "intercept";
}

void EventTrace::kv_use(int32_t replica, sim::Nanos t, int64_t gpu_blocks, int64_t cpu_blocks) {
  last_t_ = std::max(last_t_, t);
  auto& [gpu, cpu] = kv_[static_cast<size_t>(replica)];
  if (gpu != gpu_blocks &&
      add(fmt::format(
          R"({{"name":"KV GPU blocks","ph":"C","ts":{},"pid":{},"args":{{"used":{}}}}})", us(t),
          replica + 1, gpu_blocks)))
    gpu = gpu_blocks;
  if (cpu != cpu_blocks &&
      add(fmt::format(
          R"({{"name":"KV CPU blocks","ph":"C","ts":{},"pid":{},"args":{{"used":{}}}}})", us(t),
          replica + 1, cpu_blocks)))
    cpu = cpu_blocks;
}

std::string EventTrace::text(nlohmann::ordered_json other) {
  for (size_t i = 0; i < tracks_.size() && !truncated_; ++i)
    close(static_cast<int32_t>(i), last_t_);
  std::string out = "{\"traceEvents\":[";
  auto meta = [&out](const std::string& m) { out += "\n" + m + ","; };
  for (size_t r = 0; r < replica_names_.size(); ++r) {
    const auto pid = static_cast<int32_t>(r) + 1;
    meta(metadata("process_name", pid, 0, json_str(replica_names_[r])));
    meta(metadata("process_sort_index", pid, 0, std::to_string(pid)));
    meta(metadata("thread_name", pid, 1, json_str("iterations")));
  }
  meta(metadata("process_name", sessions_pid(), 0, json_str("sessions")));
  meta(metadata("process_sort_index", sessions_pid(), 0, std::to_string(sessions_pid())));
  for (size_t i = 0; i < tracks_.size(); ++i) {
    if (!tracks_[i].named) continue;
    const auto tid = static_cast<int32_t>(i) + 1;
    meta(metadata("thread_name", sessions_pid(), tid, json_str(tracks_[i].id)));
    meta(metadata("thread_sort_index", sessions_pid(), tid, std::to_string(i)));
  }
  out += body_;
  out.pop_back();  // the last event's comma (there is always a metadata event before)
  other["events"] = count_;
  other["limit"] = limit_;
  other["truncated"] = truncated_;
  out += "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" + other.dump() + "\n}\n";
  return out;
}

std::vector<std::string> replica_names(const Experiment& e) {
  if (!e.cluster.given) return {"replica 0"};
  std::vector<std::string> out;
  for (const auto& g : e.cluster.groups)
    for (int32_t k = 0; k < g.count; ++k) {
      const std::string group = g.name.empty() ? "" : " (" + g.name + ")";
      out.push_back(fmt::format("replica {}{}", out.size(), group));
    }
  return out;
}

std::string event_trace_path(const std::string& file, const std::string& policy, size_t policies) {
  return per_policy_file(file, ".json", policy, policies);
}

}  // namespace isim::exp
