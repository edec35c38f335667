// The KV managers (sim/kv_manager.h), registered by name.
//
// Contract: `kv_manager_registry()` lists every manager with a one-line description;
// `create(name, where, params)` builds one or throws InputError listing the valid names. A
// manager rejects parameters it does not know (Params::done), naming the key. One instance
// serves one replica.
//
// Adding a manager: one file in policies/kv_managers/ defining
// `void add_kv_manager_NAME(KvManagerRegistry&)` (one `reg.add(...)`), plus its NAME on the
// ISIM_KV_MANAGERS line below.
#pragma once

#include "core/params.h"
#include "core/registry.h"
#include "sim/kv_manager.h"

namespace isim::policy {

using KvManagerRegistry = Registry<sim::KvManager, const Params&>;

#define ISIM_KV_MANAGERS(X) X(local) X(global_lru) X(agent_aware) X(dynamo_agentic) X(oracle_belady)

#define ISIM_DECLARE_KV_MANAGER(name) void add_kv_manager_##name(KvManagerRegistry& reg);
ISIM_KV_MANAGERS(ISIM_DECLARE_KV_MANAGER)
#undef ISIM_DECLARE_KV_MANAGER

const KvManagerRegistry& kv_manager_registry();

}  // namespace isim::policy
