// `deepinfer make-checkpoint`: placeholder until its issue lands (prints an error, exits 2).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/cli.h"

namespace deepinfer::tools {

void RegisterMakeCheckpoint(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("make-checkpoint", "Write a random checkpoint in the released format");
  cmd->allow_extras();
  cmd->callback([exit_code] {
    std::fprintf(stderr, "deepinfer make-checkpoint: not implemented yet\n");
    *exit_code = 2;
  });
}

}  // namespace deepinfer::tools
