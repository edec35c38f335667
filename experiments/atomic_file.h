// The experiments layer's name for traces/atomic_file.h (whole files, fsynced journals).
#pragma once

#include "traces/atomic_file.h"

namespace isim::exp {
using isim::AppendFile;
using isim::remove_file;
using isim::write_file_atomic;
}  // namespace isim::exp
