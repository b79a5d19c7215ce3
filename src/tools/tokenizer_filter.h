// The shape the tokenizer-level JSON Lines commands share (`tokenize`, `grammar-check`): a
// subcommand with a required --tokenizer DIR that loads DIR's tokenizer once, builds a handler
// over it, and answers each stdin line on stdout (json_lines.h). A tokenizer or handler that
// cannot be built prints `deepinfer NAME: why` and exits 2.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "core/status.h"
#include "tokenizer/tokenizer.h"
#include "tools/json_lines.h"

namespace deepinfer::tools {

// make_handler runs once, with the loaded tokenizer (which outlives the handler).
using TokenizerHandlerFactory =
    std::function<StatusOr<JsonLineHandler>(const tokenizer::Tokenizer& tok)>;

// Returns the subcommand (for its own flags, parsed before make_handler runs).
CLI::App* RegisterTokenizerFilter(CLI::App& app, int* exit_code, const char* name, const char* help,
                                  TokenizerHandlerFactory make_handler);

}  // namespace deepinfer::tools
