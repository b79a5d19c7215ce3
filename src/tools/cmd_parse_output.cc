// `deepinfer parse-output`: placeholder until its issue lands (prints an error, exits 2).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/cli.h"

namespace deepinfer::tools {

void RegisterParseOutput(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("parse-output", "Parse generated text into reasoning, content and tool calls (JSON Lines)");
  cmd->allow_extras();
  cmd->callback([exit_code] {
    std::fprintf(stderr, "deepinfer parse-output: not implemented yet\n");
    *exit_code = 2;
  });
}

}  // namespace deepinfer::tools
