// `sweep.variants`: a sweep dimension whose values are named bundles of overrides, for
// comparisons where several keys change together (a fleet's roles and its planner) and the
// cartesian product of separate keys would make invalid pairs. Also the per-axis helpers that
// expand_sweep (experiments/sweep/sweep.cpp) uses for every sweep key.
//
// Contract (see experiments/sweep/sweep.h for the sweep as a whole):
// - Syntax: `variants: [{name: NAME, set: {dotted.key: value, ...}}, ...]` under `sweep:`. The
//   values in `set` may be scalars, lists or maps; each is applied as its YAML flow text, exactly
//   like `-p dotted.key=value` (apply_override), in the order given.
// - `variants` is one dimension, at its position among the sweep keys (file order), like any
//   other key; its values are the variants in list order.
// - A variant's keys may not overlap a swept key (equal, or one a dotted prefix of the other),
//   nor be policy/policies/sweep/plot/name; so no run's values depend on which is applied first.
//   A plain `-p KEY=...` of a key a variant sets is refused like one of a swept key.
// - results.csv has a `variant` column holding the name; SweepRun::point holds ("variant", NAME)
//   and label() shows variant=NAME.
// - Errors are InputError "FILE:LINE: sweep.variants...: reason" (LINE where the YAML has one).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "experiments/spec/experiment.h"

namespace isim::exp {

using Overrides = std::vector<std::pair<std::string, std::string>>;  // dotted key -> YAML text

bool is_variants(const SweepAxis& ax);
// Parses `sweep.variants` (`k` its key node, `list` its value) into an axis.
SweepAxis parse_sweep_variants(const YAML::Node& k, const YAML::Node& list,
                               const std::string& file);
// InputError when a variant's key overlaps another sweep key.
void check_variant_keys(const std::vector<SweepAxis>& axes, const std::string& file);
// InputError "-p KEY: ..." when a plain override's key overlaps a key that a variant sets.
void check_plain_overrides(const std::vector<SweepAxis>& axes,
                           const std::vector<std::string>& keys);

// The results.csv column and SweepRun::point key of an axis: its dotted key, or "variant".
std::string axis_column(const SweepAxis& ax);
// The overrides that value `i` of `ax` applies, in order: {key, value}, or the variant's `set`.
Overrides axis_overrides(const SweepAxis& ax, size_t i);
// Every dotted key an axis sets: its key, or each variant's `set` keys.
std::vector<std::string> axis_keys(const SweepAxis& ax);
// The axis as a spec writes it (a list of values, or of {name, set}), for resolved().
YAML::Node axis_yaml(const SweepAxis& ax);

// Parses the spec with these overrides applied; throws InputError as parse_experiment does.
using ParseOverrides = std::function<void(const Overrides&)>;
// Checks value `i` of `ax` alone on the spec, so that an error names one key and value:
// "FILE:LINE: sweep.KEY = VALUE: reason", or for a variant "FILE:LINE: sweep.variants[I].set.KEY
// = VALUE: reason", KEY being the first of its keys whose overrides so far fail to parse.
void check_axis_value(const SweepAxis& ax, size_t i, const std::string& file,
                      const ParseOverrides& parse);

// Shared with sweep.cpp: "FILE:LINE: " or "FILE: " (line 0 = unknown); "KEY=VALUE"; and the
// reason of a run spec's parse error without its origin ("-p KV: " or "FILE:LINE: "), which
// names a line of rewritten YAML that means nothing to the user.
std::string sweep_at(const std::string& file, int line);
std::string kv_text(const std::string& key, const std::string& value);
std::string strip_origin(const std::string& msg, const std::string& file, const std::string& kv);

}  // namespace isim::exp
