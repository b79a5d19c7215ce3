// What two instances must share to exchange KV pages or stand behind one router
// (docs/disaggregation.md): the same weights, the same page layout, the same kernel level (kernel
// levels may round differently) and the same index-key mode and drafter. GET /internal/info
// shows it; a KV hand-off and the router's registration refuse a mismatch.
#pragma once

#include <string>

#include "core/status.h"
#include "tools/engine_setup.h"

namespace deepinfer::tools {

// "<16 hex digits> (<level>, <page tokens>x<page bytes> B pages, <mode>, spec <on|off>)": the
// hex digits are XXH3-64 over config.json, each *.safetensors file's name, size and first and
// last MiB (the header names every tensor, the tail holds the last tensor's bytes), and every
// part in brackets.
StatusOr<std::string> InstanceFingerprint(const std::string& model_dir, const LoadedEngine& e,
                                          const EngineFlags& flags);

}  // namespace deepinfer::tools
