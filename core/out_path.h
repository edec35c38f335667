// Output paths, checked before any work starts: a run, sweep, plan or validation that computes
// for minutes must not then fail to write (nor exit 3 on a filesystem error).
//
// Contract (every failure is an InputError "FLAG PATH: reason", exit 2):
// - check_out_dir: PATH is a folder that can be written, or does not exist yet and its nearest
//   existing ancestor is a folder that can be written (it is created later). Reasons: "exists
//   and is not a folder", "ANCESTOR is not a folder", "cannot write into FOLDER: <system
//   reason>".
// - make_out_dir: check_out_dir, then creates PATH with its parents ("cannot create: <system
//   reason>" should that still fail).
// - check_out_file: PATH is not a folder, and its folder exists and can be written ("no such
//   folder FOLDER" when it does not: files are written where told, folders are not made for
//   them).
// "Can be written" is access(2) W_OK|X_OK: what the process's own permissions allow.
// - check_flag_file: a file a flag of isim run writes (--trace-events, --metrics): its folder
//   must exist ("FLAG PATH: the folder FOLDER does not exist"), then check_out_file.
// - per_policy_file(file, ext, policy, policies): the file of one policy of a run that writes
//   one per policy (--trace-events, --metrics, --bench-json): FILE itself with one policy; with
//   several, FILE with ".POLICY" before its extension `ext` (".json"), or appended when FILE
//   does not end in it: t.json -> t.swap.json, trace -> trace.swap.
// - check_not_input: PATH (a file to write) is none of INPUTS, however spelt (fs::equivalent:
//   ./x, a link), so that writing it never replaces a file the command reads: "is the input
//   INPUT; writing it would replace it: give another file". Inputs that do not exist are skipped.
// - default_out_dir(name, overrides): the folder a command writes to without --out:
//   "results/NAME" without overrides; else "results/NAME-" plus the overrides joined by ','
//   (characters other than letters, digits and . _ = + - become '_'), or, when that is longer
//   than 64 characters, "results/NAME-" plus 'h' and 8 hex digits of FNV-1a 64 of the overrides
//   joined by '\n'. So runs with other overrides never overwrite each other's results.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace isim {

void check_out_dir(const std::string& dir, const std::string& flag);
void make_out_dir(const std::string& dir, const std::string& flag);
void check_out_file(const std::string& path, const std::string& flag);
void check_flag_file(const std::string& path, const std::string& flag);
std::string per_policy_file(const std::string& file, const std::string& ext,
                            const std::string& policy, size_t policies);
void check_not_input(const std::string& path, const std::string& flag,
                     const std::vector<std::string>& inputs);
std::string default_out_dir(const std::string& name, const std::vector<std::string>& overrides);
// - name_problem(name): "" when NAME can be the folder results/NAME (a file name: not empty,
//   not "." or "..", no '/'), else the reason, for the spec reader to report at its `name`
//   key: "expected a file name (it names the folder results/NAME: no '/', not empty, '.' or
//   '..'), got '../x'". A name with '/' would write outside results/.
std::string name_problem(const std::string& name);

}  // namespace isim
