// Sweeps beyond one machine: shards chosen by a stable hash, resumable shard journals, their
// merge, and the shard a scheduler's environment names.
//
// Contract:
// - A run's key (SweepRun::key, set by expand_sweep) is its label() with the policy's
//   parameters: "policy=swap{budget=2} arrival.rate=4 seed=1"; a run whose key repeats an
//   earlier one (the same policy entry listed twice) gets " #2", " #3", ... Keys are unique in
//   a sweep. shard_hash(key) is FNV-1a 64 of the key's bytes: run r is in shard K of N when
//   shard_hash(r.key) % N == K - 1. So adding runs to a spec never moves a finished run to
//   another shard.
// - A run's fingerprint is FNV-1a 64 (16 hex digits) of YAML::Dump of its resolved experiment
//   (every default filled in, paths absolute): runs with equal fingerprints compute the same
//   thing. The spec fingerprint covers the results header, every run's key and fingerprint in
//   run-index order, and the isim version and git sha that compute them.
// - The journal of shard K/N is OUT/shards/shard-K-of-N.jsonl. Line 1 is a header:
//   {"isim_sweep_shard":1,"isim":VERSION,"spec":FP,"runs":TOTAL,"shard":[K,N],"columns":[...]};
//   every other line is one finished run: {"index","key","fingerprint","policy","point":[...],
//   "estimator","metrics":{column: value},"warning","skipped"}. Records are appended in the
//   shard's run-index order (a finished run waits for the earlier ones of its shard, so the
//   file is byte-identical for any --jobs), each with one write and an fsync.
// - open_journal: without `resume` the journal starts anew (the count of records it held is
//   returned, so the caller can say so). With `resume`, the records of the current spec's runs
//   in this shard whose key and fingerprint match are kept (taking the run's current index),
//   any others are dropped and counted, and a torn last line (no newline: the process died while
//   writing) is dropped. An isim version other than this one, or a line that is not a record,
//   is an InputError naming the file and line. The journal is then rewritten (atomically) to
//   hold the header of the current spec and the kept records.
// - merge_shards(paths): each path is a journal or a folder of them (its *.jsonl, by name).
//   InputError (exit 2) unless: every file starts with a header; all have one spec fingerprint,
//   isim version and shard count N; no shard K twice; every K in 1..N present; no run index or
//   key twice; every index < runs and every run 0..runs-1 present; no torn line. Returns the
//   results.csv text an unsharded run of the spec writes, byte for byte.
// - shard_from_env(get): Slurm arrays first: with ISIM_SHARDS set (the scripts isim writes set
//   it), K = SLURM_ARRAY_TASK_ID + 1 of N = ISIM_SHARDS, so that a task resubmitted alone
//   (`sbatch --array=T`, where Slurm sets MIN = T and COUNT = 1) is still shard T+1 of N;
//   without it, K = id - SLURM_ARRAY_TASK_MIN + 1 of N = SLURM_ARRAY_TASK_COUNT. Then Kubernetes
//   Indexed Jobs
//   (JOB_COMPLETION_INDEX, 0-based, of ISIM_SHARDS, which the manifests isim writes set to the
//   job's completions). InputError "--shard auto: ..." naming the variable when none is set, one
//   is not a whole number, or the index is out of range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/sweep/sweep.h"

namespace isim::exp {

uint64_t fnv1a64(const std::string& bytes);  // isim::fnv1a (core/hash.h)
inline uint64_t shard_hash(const std::string& key) {
  return fnv1a64(key);
}

// The identity of run `r`: its fingerprint (16 hex digits).
std::string run_fingerprint(const SweepRun& r);
// The spec fingerprint (16 hex digits) of a sweep whose runs have fingerprints `fps`.
std::string spec_fingerprint(const Sweep& s, const std::vector<std::string>& fps);

std::string journal_path(const std::string& out_dir, const Shard& shard);

struct Journal {
  std::string path;
  std::string header_line;                // the header, as written (ends in '\n')
  std::map<size_t, RunRecord> kept;       // run index -> finished record
  std::vector<std::string> fingerprints;  // of every run, by run index
  size_t dropped = 0;                     // records not kept (other spec, or starting anew)
  bool torn = false;                      // its last line was cut short, and was dropped
};
// kFresh starts anew (the records held are counted in `dropped`); kResume keeps the records that
// match (contract above); kAuto resumes when the journal's spec fingerprint is this spec's, starts
// anew when the journal holds no record, and otherwise is an InputError (exit 2) naming the
// folder, the journal, both fingerprints and the count of finished runs, and saying to give
// --resume, --fresh or another --out: a sweep never silently discards another sweep's runs.
enum class JournalMode { kAuto, kResume, kFresh };
Journal open_journal(const std::string& out_dir, const Sweep& s, const Shard& shard,
                     JournalMode mode);
inline Journal open_journal(const std::string& out_dir, const Sweep& s, const Shard& shard,
                            bool resume) {
  return open_journal(out_dir, s, shard, resume ? JournalMode::kResume : JournalMode::kFresh);
}
// One journal line (ends in '\n').
std::string record_line(const RunRecord& r);

std::string merge_shards(const std::vector<std::string>& paths);
// Whether `path` is a journal (or a folder): a folder, a file named *.jsonl (so that a damaged
// journal is reported as one, not as a results.csv), or one whose first byte (after a UTF-8
// byte-order mark) is '{'.
bool is_journal(const std::string& path);

Shard shard_from_env(const std::function<const char*(const char*)>& get);

}  // namespace isim::exp
