// `deepinfer generate --batch FILE.jsonl`: every line a request, all submitted to one engine
// (continuous batching), results printed in input order (cmd_generate.cc documents the format).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/engine_setup.h"

namespace deepinfer::tools {

Status GenerateBatch(const std::string& model_dir, const std::string& tokenizer_dir,
                     const EngineFlags& flags, const std::string& batch_file);

// The batch run on an already loaded engine: reads `in`, writes one line per input line to `out`.
Status RunBatch(LoadedEngine& e, std::istream& in, std::ostream& out);

// One input line and its place in the input (the output's "index").
struct BatchLine {
  int64_t index = 0;
  std::string text;
};
// The non-empty lines of `in`, numbered from 0.
std::vector<BatchLine> ReadBatchLines(std::istream& in);
// A line's prompt as its request will hold it, and whether it asks for prompt logprobs (an error
// for a line whose prompt or sampling fields the request would refuse).
struct LinePrompt {
  std::vector<int32_t> ids;
  std::optional<int32_t> prompt_logprobs;
};
StatusOr<LinePrompt> ReadLinePrompt(const LoadedEngine& e, const std::string& line);
// Runs `lines` on the loaded engine (all submitted, then run until idle); returns one output
// line (JSON, no newline) per input line, in the same order.
StatusOr<std::vector<std::string>> RunBatchLines(LoadedEngine& e,
                                                 const std::vector<BatchLine>& lines);

}  // namespace deepinfer::tools
