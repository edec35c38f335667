// The merge of shard journals into one results.csv (sweep_shards.h: merge_shards).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/sweep/journal_record.h"
#include "experiments/sweep/sweep_shards.h"

namespace isim::exp {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

// What one journal's header says.
struct Head {
  std::string file, spec, isim;
  size_t runs = 0, k = 0, n = 0;
  std::vector<std::string> columns;
};

Head read_head(const Json& h, const std::string& file) {
  Head head;
  head.file = file;
  auto bad = [&](const char* what) {
    return InputError(fmt::format("{}:1: {}: expected {} in the journal's header", file, what,
                                  std::string(what) == "shard"     ? "[K, N] with 1 <= K <= N"
                                  : std::string(what) == "columns" ? "a list of strings"
                                  : std::string(what) == "runs"    ? "an integer >= 0"
                                                                   : "a string"));
  };
  auto str = [&](const char* key) {
    auto it = h.find(key);
    if (it == h.end() || !it->is_string()) throw bad(key);
    return it->get<std::string>();
  };
  head.spec = str("spec");
  head.isim = str("isim");
  auto runs = h.find("runs");
  if (runs == h.end() || !runs->is_number_unsigned()) throw bad("runs");
  head.runs = runs->get<size_t>();
  // The merge walks 0..runs-1: no more than a sweep may have.
  if (head.runs > kMaxSweepRuns)
    throw InputError(fmt::format("{}:1: runs: {} is more than the {} runs a sweep may have", file,
                                 head.runs, kMaxSweepRuns));
  auto sh = h.find("shard");
  if (sh == h.end() || !sh->is_array() || sh->size() != 2 || !(*sh)[0].is_number_unsigned() ||
      !(*sh)[1].is_number_unsigned())
    throw bad("shard");
  head.k = (*sh)[0].get<size_t>();
  head.n = (*sh)[1].get<size_t>();
  if (head.k < 1 || head.k > head.n) throw bad("shard");
  auto cols = h.find("columns");
  if (cols == h.end() || !cols->is_array()) throw bad("columns");
  for (const auto& c : *cols) {
    if (!c.is_string()) throw bad("columns");
    head.columns.push_back(c.get<std::string>());
  }
  return head;
}

// InputError unless `h` belongs to the same sweep as `first`.
void check_same_sweep(const Head& h, const Head& first) {
  auto differ = [&](const char* what, const std::string& mine, const std::string& theirs) {
    return InputError(
        fmt::format("{}:1: {} {} differs from {}'s {}: the journals come from different {}", h.file,
                    what, mine, first.file, theirs,
                    std::string(what) == "isim" ? "builds of isim"
                                                : "specs (or -p overrides, or shard counts)"));
  };
  if (h.isim != first.isim) throw differ("isim", h.isim, first.isim);
  if (h.spec != first.spec) throw differ("spec fingerprint", h.spec, first.spec);
  if (h.n != first.n) throw differ("shard count", std::to_string(h.n), std::to_string(first.n));
  if (h.runs != first.runs || h.columns != first.columns)
    throw differ("header", "(runs, columns)", "(runs, columns)");
}

std::string list_some(const std::vector<size_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 20; ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  if (v.size() > 20) s += ", ...";
  return s;
}

struct Where {
  std::string file;
  size_t line;
};

}  // namespace

bool is_journal(const std::string& path) {
  if (fs::is_directory(path) || fs::path(path).extension() == ".jsonl") return true;
  if (!fs::is_regular_file(path)) return false;  // a FIFO or device: never opened (it may block)
  std::ifstream f(path, std::ios::binary);
  char head[4] = {};
  f.read(head, 4);
  const bool bom = std::string(head, 3) == "\xEF\xBB\xBF";  // a UTF-8 byte-order mark
  return f.gcount() > (bom ? 3 : 0) && head[bom ? 3 : 0] == '{';
}

std::string merge_shards(const std::vector<std::string>& given) {
  const std::vector<std::string> paths = journal_paths(given, "shard-");
  if (paths.empty()) throw InputError("sweep merge: no journals given");
  std::vector<Head> heads;
  std::map<size_t, RunRecord> rows;
  std::map<size_t, Where> row_at;
  std::map<std::string, Where> key_at;
  std::map<size_t, std::string> shard_file;  // K -> the journal that holds it
  for (const auto& p : paths) {
    const JournalText jt = split_journal(read_journal_text(p), p);
    heads.push_back(read_head(jt.header, p));
    const Head& h = heads.back();
    if (heads.size() > 1) check_same_sweep(h, heads.front());
    if (auto [it, fresh] = shard_file.emplace(h.k, p); !fresh)
      throw InputError(fmt::format("{}: shard {}/{} is also {}", p, h.k, h.n, it->second));
    if (jt.torn)
      throw InputError(fmt::format(
          "{}: its last line is cut short: shard {}/{} was interrupted; rerun it with --resume "
          "to finish it, then merge",
          p, h.k, h.n));
    for (const auto& [line, json] : jt.records) {
      RunRecord r = parse_record(json, p, line);
      if (r.index >= h.runs)
        throw InputError(fmt::format("{}:{}: index {}: the sweep has {} run(s) (0..{})", p, line,
                                     r.index, h.runs, h.runs ? h.runs - 1 : 0));
      if (auto [it, fresh] = key_at.emplace(r.key, Where{p, line}); !fresh)
        throw InputError(fmt::format("{}:{}: run '{}' is also at {}:{}", p, line, r.key,
                                     it->second.file, it->second.line));
      if (auto [it, fresh] = row_at.emplace(r.index, Where{p, line}); !fresh)
        throw InputError(fmt::format("{}:{}: run index {} is also at {}:{}", p, line, r.index,
                                     it->second.file, it->second.line));
      rows.emplace(r.index, std::move(r));
    }
  }
  const Head& first = heads.front();
  std::vector<size_t> absent;
  for (size_t k = 1; k <= first.n; ++k)
    if (!shard_file.count(k)) absent.push_back(k);
  if (!absent.empty())
    throw InputError(
        fmt::format("sweep merge: shard(s) {} of {} missing: no journal given for "
                    "them (shard-K-of-{}.jsonl)",
                    list_some(absent), first.n, first.n));
  for (size_t i = 0; i < first.runs; ++i)
    if (!rows.count(i)) absent.push_back(i);
  if (!absent.empty())
    throw InputError(fmt::format(
        "sweep merge: {} of {} run(s) missing (run index {}): a shard has not finished; rerun it "
        "with --resume, then merge",
        absent.size(), first.runs, list_some(absent)));
  std::string out = join_csv(first.columns);
  for (const auto& [index, r] : rows) out += join_csv(results_row(first.columns, r));
  return out;
}

}  // namespace isim::exp
