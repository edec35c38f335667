#include "experiments/sweep/journal_record.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/input_file.h"
#include "experiments/run/outputs.h"
#include "core/json_unique.h"
#include "experiments/version.h"

namespace isim::exp {

using Json = nlohmann::ordered_json;

std::string isim_identity() {
  return fmt::format("{} ({})", ISIM_VERSION, ISIM_GIT_SHA);
}

Json record_json(const RunRecord& r) {
  Json j;
  j["index"] = r.index;
  j["key"] = r.key;
  j["fingerprint"] = r.fingerprint;
  j["policy"] = r.policy;
  j["point"] = r.point;
  j["estimator"] = r.estimator;
  Json m = Json::object();
  for (const auto& [k, v] : r.metrics) m[k] = v;
  j["metrics"] = std::move(m);
  j["warning"] = r.warning;
  j["skipped"] = r.skipped;
  return j;
}

namespace {

[[noreturn]] void bad_field(const std::string& file, size_t line, const char* key,
                            const char* type) {
  throw InputError(fmt::format("{}:{}: {}: expected {}", file, line, key, type));
}

const Json& field(const Json& j, const char* key, const std::string& file, size_t line,
                  bool (Json::*is)() const noexcept, const char* type) {
  auto it = j.find(key);
  if (it == j.end() || !((*it).*is)()) bad_field(file, line, key, type);
  return *it;
}

std::string text_field(const Json& j, const char* key, const std::string& file, size_t line) {
  return field(j, key, file, line, &Json::is_string, "a string").get<std::string>();
}

// The metric columns a run always writes as a number (or leaves empty): summary.json's numbers,
// flags and statistics, taken from the summary of an empty run with every fleet block on.
const std::set<std::string>& numeric_metrics() {
  static const std::set<std::string> names = [] {
    cluster::RunResult none;
    none.disagg.enabled = true;
    none.tiers.enabled = true;
    none.summary.recovery_s = {0};
    Json j = summary_json(none.summary, "");
    add_fleet_json(j, none, /*per_replica=*/false);
    std::set<std::string> out;
    auto walk = [&out](auto&& self, const Json& v, const std::string& prefix) -> void {
      for (const auto& [k, x] : v.items()) {
        const std::string name = prefix.empty() ? k : prefix + "." + k;
        if (x.is_object()) self(self, x, name);
        // null: a statistic of no samples (a number in a run that has some)
        if (x.is_number() || x.is_boolean() || x.is_null()) out.insert(name);
      }
    };
    walk(walk, j, "");
    return out;
  }();
  return names;
}

bool is_number_text(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::vector<std::string> text_list(const Json& j, const char* key, const std::string& file,
                                   size_t line) {
  std::vector<std::string> out;
  for (const auto& v : field(j, key, file, line, &Json::is_array, "a list of strings")) {
    if (!v.is_string()) bad_field(file, line, key, "a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

RunRecord parse_record(const Json& j, const std::string& file, size_t line) {
  if (!j.is_object())
    throw InputError(
        fmt::format("{}:{}: not a journal record (expected a JSON object)", file, line));
  RunRecord r;
  r.index = field(j, "index", file, line, &Json::is_number_unsigned, "a run index (integer >= 0)")
                .get<size_t>();
  r.key = text_field(j, "key", file, line);
  r.fingerprint = text_field(j, "fingerprint", file, line);
  r.policy = text_field(j, "policy", file, line);
  r.point = text_list(j, "point", file, line);
  r.estimator = text_field(j, "estimator", file, line);
  for (const auto& [k, v] :
       field(j, "metrics", file, line, &Json::is_object, "an object of strings").items()) {
    if (!v.is_string()) bad_field(file, line, "metrics", "an object of strings");
    const std::string& text = v.get_ref<const std::string&>();
    if (!text.empty() && numeric_metrics().count(k) && !is_number_text(text))
      throw InputError(fmt::format(
          "{}:{}: metrics.{}: expected a number (or nothing), as every run writes it, got {}: "
          "the journal was edited; remove the record to rerun it",
          file, line, k, v.dump()));
    r.metrics.emplace_back(k, text);
  }
  r.warning = text_field(j, "warning", file, line);
  r.skipped = field(j, "skipped", file, line, &Json::is_boolean, "true or false").get<bool>();
  return r;
}

JournalText split_journal(const std::string& text, const std::string& file,
                          const std::string& kind) {
  const std::string what = kind == "isim_plan_shard" ? "plan" : "sweep";
  JournalText out;
  size_t at = 0, line = 0;
  while (at < text.size()) {
    ++line;
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) {  // the process died while writing this line
      out.torn = true;
      break;
    }
    Json j;  // null when the line is not JSON; a key twice is refused with both places
    try {
      j = parse_json_unique<Json>(std::string_view(text).substr(at, nl - at), file,
                                  static_cast<int64_t>(line));
    } catch (const Json::parse_error&) {
      j = Json();
    }
    at = nl + 1;
    if (line == 1) {
      auto v = j.is_object() ? j.find(kind) : j.end();
      if (!j.is_object() || v == j.end() || *v != 1)
        throw InputError(
            fmt::format("{}:1: not an isim {} shard journal (expected a header line "
                        "{{\"{}\": 1, ...}})",
                        file, what, kind));
      out.header = std::move(j);
    } else if (j.is_discarded() || !j.is_object()) {
      throw InputError(
          fmt::format("{}:{}: not a journal record (expected a JSON object)", file, line));
    } else {
      out.records.emplace_back(line, std::move(j));
    }
  }
  if (line == 0 || out.header.is_null())
    throw InputError(fmt::format(
        "{}:1: not an isim {} shard journal (it is empty, or its header line is cut short)", file,
        what));
  return out;
}

void check_header_identity(const Json& header, const std::string& file) {
  auto v = header.find("isim");
  const std::string theirs = v != header.end() && v->is_string() ? v->get<std::string>() : "?";
  if (theirs != isim_identity())
    throw InputError(fmt::format(
        "{}:1: written by isim {}, and this is isim {}: its results may differ; rerun the shard "
        "with the build that wrote it, or remove the journal to start it anew",
        file, theirs, isim_identity()));
}

std::string read_journal_text(const std::string& path) {
  return read_input_file(path, "a journal", kMaxWholeDataBytes);
}

std::vector<std::string> journal_paths(const std::vector<std::string>& paths,
                                       const std::string& prefix) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& p : paths) {
    if (!fs::is_directory(p)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(p)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && name.rfind(prefix, 0) == 0 && e.path().extension() == ".jsonl")
        found.push_back(e.path().string());
    }
    if (found.empty())
      throw InputError(fmt::format("{}: a folder with no {}*.jsonl journals", p, prefix));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace isim::exp
