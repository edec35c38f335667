#include "traces/trace_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/input_error.h"

namespace isim::trace {

std::ifstream open_trace_file(const std::string& path, std::ios::openmode mode) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path + ": is a directory; expected a trace file");
  std::ifstream in(path, mode);
  if (!in) throw InputError(path + ": cannot open: " + std::strerror(errno));
  return in;
}

void require_sessions(const Trace& t, const std::string& path, const char* why) {
  if (t.empty()) throw InputError(path + ": no sessions (" + why + ")");
}

}  // namespace isim::trace
