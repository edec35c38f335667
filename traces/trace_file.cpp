#include "traces/trace_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/input_error.h"
#include "core/input_file.h"

namespace isim::trace {

std::ifstream open_trace_file(const std::string& path, std::ios::openmode mode) {
  return open_input_file(path, "a trace file", mode);
}

void require_sessions(const Trace& t, const std::string& path, const char* why) {
  if (t.empty()) throw InputError(path + ": no sessions (" + why + ")");
}

}  // namespace isim::trace
