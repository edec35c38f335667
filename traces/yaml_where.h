// Forwarder while the readers move to traces/strict_yaml.h, which now defines yaml_where and
// load_yaml_file (one definition, so every reader reports the same way).
#pragma once

#include "traces/strict_yaml.h"
