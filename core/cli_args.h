// Argument parsing shared by the isim verbs (Boost.Program_options).
//
// Contract: parse_args stores and notifies the verb's options and positionals; Boost's errors
// (unknown option, missing value) propagate to main, which reports them with exit 2. The
// one-name form takes a single positional argument under that option name.
// Numeric flags are declared as strings and read with flag_value, by the rules `-p` values and
// component parameters follow (core/params.h: finite numbers; whole decimal integers in
// range, so `--jobs -1` is no SIZE_MAX): "--NAME: expected WHAT, got 'TEXT'" (InputError,
// exit 2) when the text is not one or fails the check.
// An option given an empty value (`--out ''`, `--name=`) is refused before the verb sees it:
// "--NAME: expected a value, got ''" (InputError, exit 2); no option takes '' to mean anything.
#pragma once

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/input_error.h"
#include "core/params.h"

namespace isim {

using Args = std::vector<std::string>;  // a verb's own arguments (after the verb)

// Thrown for usage errors (exit 2 with the verb's usage text).
struct UsageError {
  std::string message;
  std::string usage;
};

// Refuses an option whose value is empty, named as the user wrote it (-p, --out, --out=).
inline const boost::program_options::parsed_options& no_empty_values(
    const boost::program_options::parsed_options& parsed) {
  for (const auto& o : parsed.options) {
    if (o.position_key >= 0 || o.original_tokens.empty()) continue;  // positionals
    for (const auto& v : o.value) {
      if (!v.empty()) continue;
      const std::string& tok = o.original_tokens.front();
      throw InputError(tok.substr(0, tok.find('=')) + ": expected a value, got ''");
    }
  }
  return parsed;
}

inline boost::program_options::variables_map parse_args(
    const Args& args, const boost::program_options::options_description& opts,
    const boost::program_options::positional_options_description& pos) {
  namespace po = boost::program_options;
  po::variables_map vm;
  po::store(no_empty_values(po::command_line_parser(args).options(opts).positional(pos).run()), vm);
  po::notify(vm);
  return vm;
}

inline boost::program_options::variables_map parse_args(
    const Args& args, const boost::program_options::options_description& opts,
    const char* positional) {
  boost::program_options::positional_options_description pos;
  pos.add(positional, 1);
  return parse_args(args, opts, pos);
}

// The value of flag --NAME (declared po::value<std::string>) as T, or `def` when not given.
template <class T, class Ok>
T flag_value(const boost::program_options::variables_map& vm, const std::string& name, T def,
             const std::string& expected, Ok ok) {
  if (!vm.count(name)) return def;
  const auto& text = vm[name].as<std::string>();
  const std::optional<T> v = parse_param<T>(text);
  if (!v || !ok(*v))
    throw InputError("--" + name + ": expected " + expected + ", got '" + text + "'");
  return *v;
}

// The values of -p/--set (add = false) and --add (add = true), collected into `overrides` in the
// order apply_overrides takes them, whichever order notify runs in: every --add first, as
// "+KEY=V" (a new entry is meant; experiment.h: apply_override), then every -p.
inline boost::program_options::typed_value<std::vector<std::string>>* override_flag(
    std::vector<std::string>& overrides, bool add) {
  namespace po = boost::program_options;
  return po::value<std::vector<std::string>>()->composing()->notifier(
      [&overrides, add](const std::vector<std::string>& v) {
        if (!add) {
          overrides.insert(overrides.end(), v.begin(), v.end());
          return;
        }
        std::vector<std::string> plus;
        for (const auto& kv : v) plus.push_back("+" + kv);
        overrides.insert(overrides.begin(), plus.begin(), plus.end());
      });
}
inline const char* const kAddHelp =
    "like -p, but may create a new entry of a map of names or append to a list: "
    "--add deployments.h200b='{gpu: H200, profile: p.yaml}'";

// --jobs: worker threads, in 1..kMaxJobs (each a thread with its own simulation's memory);
// the number of cores when not given.
inline constexpr uint64_t kMaxJobs = 1024;
inline size_t jobs_flag(const boost::program_options::variables_map& vm) {
  const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  return flag_value<uint64_t>(vm, "jobs", std::min<uint64_t>(cores, kMaxJobs),
                              "an integer in 1..1024 (worker threads)",
                              [](uint64_t j) { return j >= 1 && j <= kMaxJobs; });
}

}  // namespace isim
