#include "core/out_path.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/input_error.h"

namespace isim {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& flag, const std::string& path, const std::string& why) {
  throw InputError(flag + " " + path + ": " + why);
}

// `folder` (an existing folder) must be writable.
void check_writable(const fs::path& folder, const std::string& flag, const std::string& path) {
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    fail(flag, path, "cannot write into " + folder.string() + ": " + std::strerror(errno));
}

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

}  // namespace

void check_out_dir(const std::string& dir, const std::string& flag) {
  const fs::path p = fs::absolute(dir).lexically_normal();
  fs::path at = p;
  while (!present(at) && at.has_parent_path() && at != at.parent_path()) at = at.parent_path();
  std::error_code ec;
  if (!fs::is_directory(at, ec))
    fail(flag, dir, at == p ? "exists and is not a folder" : at.string() + " is not a folder");
  check_writable(at, flag, dir);
}

void make_out_dir(const std::string& dir, const std::string& flag) {
  check_out_dir(dir, flag);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(flag, dir, "cannot create: " + ec.message());
}

void check_out_file(const std::string& path, const std::string& flag) {
  const fs::path p = fs::absolute(path).lexically_normal();
  std::error_code ec;
  if (fs::is_directory(p, ec)) fail(flag, path, "is a folder; give a file to write");
  const fs::path folder = p.parent_path();
  if (!fs::is_directory(folder, ec)) fail(flag, path, "no such folder " + folder.string());
  check_writable(folder, flag, path);
  if (present(p) && ::access(p.c_str(), W_OK) != 0)
    fail(flag, path, std::string("cannot write: ") + std::strerror(errno));
}

void check_flag_file(const std::string& path, const std::string& flag) {
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::is_directory(dir, ec))
    throw InputError(fmt::format("{} {}: the folder {} does not exist", flag, path, dir.string()));
  check_out_file(path, flag);
}

std::string per_policy_file(const std::string& file, const std::string& ext,
                            const std::string& policy, size_t policies) {
  if (policies <= 1) return file;
  if (file.size() > ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0)
    return file.substr(0, file.size() - ext.size()) + "." + policy + ext;
  return file + "." + policy;
}

void check_not_input(const std::string& path, const std::string& flag,
                     const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (const auto& in : inputs) {
    if (!in.empty() && fs::equivalent(path, in, ec))
      fail(flag, path, "is the input " + in + "; writing it would replace it: give another file");
  }
}

std::string name_problem(const std::string& name) {
  if (!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos)
    return "";
  return "expected a file name (it names the folder results/NAME: no '/', not empty, '.' or "
         "'..'), got '" +
         name + "'";
}

std::string default_out_dir(const std::string& name, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return "results/" + name;
  std::string joined, all;
  for (const auto& o : overrides) {
    joined += joined.empty() ? "" : ",";
    all += o + "\n";
    for (char c : o) {
      const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '=' || c == '+' ||
                        c == '-';
      joined += keep ? c : '_';
    }
  }
  if (joined.size() > 64) joined = fmt::format("h{:08x}", fnv1a(all) >> 32);
  return "results/" + name + "-" + joined;
}

}  // namespace isim
