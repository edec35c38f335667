// Opening a trace file, for every trace reader that reads one file (traces/jsonl.h and the
// importers): the checks that do not depend on the format.
//
// Contract:
// - open_trace_file returns the open stream, or throws InputError "PATH: cannot open: <system
//   reason>", or "PATH: is a directory; expected a regular file (a trace file)" (likewise a
//   FIFO, never opened, or a device: core/input_file.h). Readers call isim::check_read after
//   their loop, so a read that fails half-way is an error, not the end of the trace.
// - require_sessions throws InputError "PATH: no sessions (WHY)" for an empty trace: a file
//   that holds no session is a mistake (a wrong path, a truncated copy), never a workload.
#pragma once

#include <fstream>
#include <string>

#include "traces/session.h"

namespace isim::trace {

std::ifstream open_trace_file(const std::string& path, std::ios::openmode mode = std::ios::in);

void require_sessions(const Trace& t, const std::string& path,
                      const char* why = "the file is empty or holds only blank lines");

}  // namespace isim::trace
