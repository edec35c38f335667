// Shards of a sweep: run identity, the shard journal and its resumption, --shard K/N and auto
// (sweep_shards.h). The merge of journals is in sweep_merge.cpp.
#include "experiments/sweep/sweep_shards.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/hash.h"
#include "core/input_error.h"
#include "experiments/sweep/journal_record.h"
#include "experiments/version.h"

namespace isim::exp {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

uint64_t fnv1a64(const std::string& bytes) {
  return isim::fnv1a(bytes);
}

std::string run_fingerprint(const SweepRun& r) {
  return fmt::format("{:016x}", fnv1a64(YAML::Dump(r.experiment.resolved())));
}

std::string spec_fingerprint(const Sweep& s, const std::vector<std::string>& fps) {
  std::string text = isim_identity() + "\n";
  for (const auto& c : results_header(s)) text += c + '\x1f';
  text += '\n';
  for (size_t i = 0; i < s.runs.size(); ++i) text += s.runs[i].key + '\x1f' + fps[i] + '\n';
  return fmt::format("{:016x}", fnv1a64(text));
}

std::string journal_path(const std::string& out_dir, const Shard& shard) {
  return (fs::path(out_dir) / "shards" / fmt::format("shard-{}-of-{}.jsonl", shard.k, shard.n))
      .string();
}

std::string record_line(const RunRecord& r) {
  return record_json(r).dump() + "\n";
}

namespace {

std::string header_line(const Sweep& s, const Shard& shard, const std::string& spec_fp) {
  Json h;
  h["isim_sweep_shard"] = 1;
  h["isim"] = isim_identity();
  h["spec"] = spec_fp;
  h["runs"] = s.runs.size();
  h["shard"] = {shard.k, shard.n};
  h["columns"] = results_header(s);
  return h.dump() + "\n";
}

// The journal's records, kept when a run of this shard has their key and fingerprint.
void resume_records(const JournalText& jt, const Sweep& s, const Shard& shard,
                    const std::vector<std::string>& fps, Journal& j) {
  check_header_identity(jt.header, j.path);
  std::map<std::string, const SweepRun*> mine;
  for (const auto& r : s.runs)
    if (shard.contains(r)) mine.emplace(r.key, &r);
  for (const auto& [line, json] : jt.records) {
    RunRecord rec = parse_record(json, j.path, line);
    auto it = mine.find(rec.key);
    if (it == mine.end() || fps[it->second->index] != rec.fingerprint ||
        j.kept.count(it->second->index)) {
      ++j.dropped;
      continue;
    }
    rec.index = it->second->index;
    j.kept.emplace(rec.index, std::move(rec));
  }
  j.torn = jt.torn;
}

// kAuto on an existing journal: kResume when it is this spec's, kFresh when it holds no record,
// else the refusal of the contract.
JournalMode auto_mode(const JournalText& jt, const std::string& out_dir, const Journal& j,
                      const std::string& spec_fp) {
  if (jt.records.empty()) return JournalMode::kFresh;
  const auto it = jt.header.find("spec");
  const std::string theirs = it != jt.header.end() && it->is_string() ? it->get<std::string>() : "";
  if (theirs == spec_fp) return JournalMode::kResume;
  throw InputError(fmt::format(
      "{}: holds {} finished run(s) of another sweep spec (journal {}: spec {}; this spec: {}); "
      "give --resume to keep those that still match, --fresh to start anew, or another --out",
      out_dir, jt.records.size(), j.path, theirs.empty() ? "?" : theirs, spec_fp));
}

}  // namespace

Journal open_journal(const std::string& out_dir, const Sweep& s, const Shard& shard,
                     JournalMode mode) {
  Journal j;
  std::vector<std::string>& fps = j.fingerprints;
  fps.reserve(s.runs.size());
  for (const auto& r : s.runs) fps.push_back(run_fingerprint(r));
  j.path = journal_path(out_dir, shard);
  const std::string spec_fp = spec_fingerprint(s, fps);
  j.header_line = header_line(s, shard, spec_fp);
  fs::create_directories(fs::path(j.path).parent_path());
  if (fs::exists(j.path)) {
    const std::string text = read_journal_text(j.path);
    // Read once for the decision and the records; --fresh reads none (any text is dropped).
    std::optional<JournalText> jt;
    if (mode != JournalMode::kFresh) jt = split_journal(text, j.path);
    if (mode == JournalMode::kAuto) mode = auto_mode(*jt, out_dir, j, spec_fp);
    if (mode == JournalMode::kResume) {
      resume_records(*jt, s, shard, fps, j);
    } else {
      const auto lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
      j.dropped = lines > 0 ? lines - 1 : 0;  // every line but the header
    }
  }
  std::string text = j.header_line;
  for (const auto& [index, rec] : j.kept) text += record_line(rec);
  write_file_atomic(j.path, text);
  return j;
}

Shard parse_shard(const std::string& text) {
  auto bad = [&]() {
    return InputError("--shard " + text + ": expected K/N with 1 <= K <= N (e.g. 2/4), or auto");
  };
  auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= text.size()) throw bad();
  auto number = [&](const std::string& s) {
    if (s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) throw bad();
    return static_cast<size_t>(std::stoul(s));
  };
  Shard sh;
  sh.k = number(text.substr(0, slash));
  sh.n = number(text.substr(slash + 1));
  if (sh.k < 1 || sh.n < 1 || sh.k > sh.n) throw bad();
  return sh;
}

namespace {

// The whole number in environment variable `name`, at most 10^9.
size_t env_number(const std::function<const char*(const char*)>& get, const char* name) {
  const char* v = get(name);
  const std::string text = v ? v : "";
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError(fmt::format("--shard auto: {}='{}': expected a whole number", name, text));
  return std::stoul(text);
}

}  // namespace

Shard shard_from_env(const std::function<const char*(const char*)>& get) {
  Shard sh;
  if (get("SLURM_ARRAY_TASK_ID") && get("ISIM_SHARDS")) {
    // isim's own scripts: the array is 0..N-1, and a task resubmitted alone (--array=T, where
    // Slurm says MIN=T and COUNT=1) still knows N.
    const size_t id = env_number(get, "SLURM_ARRAY_TASK_ID");
    sh.n = env_number(get, "ISIM_SHARDS");
    if (sh.n < 1 || id >= sh.n)
      throw InputError(fmt::format(
          "--shard auto: SLURM_ARRAY_TASK_ID={} is out of range: ISIM_SHARDS={} allows 0..{}", id,
          sh.n, sh.n > 0 ? sh.n - 1 : 0));
    sh.k = id + 1;
    return sh;
  }
  if (get("SLURM_ARRAY_TASK_ID")) {
    const size_t id = env_number(get, "SLURM_ARRAY_TASK_ID");
    const size_t min = get("SLURM_ARRAY_TASK_MIN") ? env_number(get, "SLURM_ARRAY_TASK_MIN") : 0;
    sh.n = env_number(get, "SLURM_ARRAY_TASK_COUNT");
    if (sh.n < 1 || id < min || id - min >= sh.n)
      throw InputError(fmt::format(
          "--shard auto: SLURM_ARRAY_TASK_ID={} is out of range: the array has {} task(s) from "
          "{} (SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT); submit it as --array=0-{}",
          id, sh.n, min, sh.n > 0 ? sh.n - 1 : 0));
    sh.k = id - min + 1;
    return sh;
  }
  if (get("JOB_COMPLETION_INDEX")) {
    const size_t index = env_number(get, "JOB_COMPLETION_INDEX");
    sh.n = env_number(get, "ISIM_SHARDS");
    if (sh.n < 1 || index >= sh.n)
      throw InputError(fmt::format(
          "--shard auto: JOB_COMPLETION_INDEX={} is out of range: ISIM_SHARDS={} (the Indexed "
          "Job's completions) allows 0..{}",
          index, sh.n, sh.n > 0 ? sh.n - 1 : 0));
    sh.k = index + 1;
    return sh;
  }
  throw InputError(
      "--shard auto: no shard in the environment: expected SLURM_ARRAY_TASK_ID and "
      "SLURM_ARRAY_TASK_COUNT (a Slurm job array), or JOB_COMPLETION_INDEX and ISIM_SHARDS (a "
      "Kubernetes Indexed Job); give --shard K/N otherwise");
}

}  // namespace isim::exp
