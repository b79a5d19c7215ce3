// `deepinfer generate --batch FILE.jsonl`: every line a request, all submitted to one engine
// (continuous batching), results printed in input order (cmd_generate.cc documents the format).
#pragma once

#include <iosfwd>
#include <string>

#include "core/status.h"
#include "tools/engine_setup.h"

namespace deepinfer::tools {

Status GenerateBatch(const std::string& model_dir, const std::string& tokenizer_dir,
                     const EngineFlags& flags, const std::string& batch_file);

// The batch run on an already loaded engine: reads `in`, writes one line per input line to `out`.
Status RunBatch(LoadedEngine& e, std::istream& in, std::ostream& out);

}  // namespace deepinfer::tools
