// `deepinfer generate`: placeholder until its issue lands (prints an error, exits 2).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/cli.h"

namespace deepinfer::tools {

void RegisterGenerate(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt");
  cmd->allow_extras();
  cmd->callback([exit_code] {
    std::fprintf(stderr, "deepinfer generate: not implemented yet\n");
    *exit_code = 2;
  });
}

}  // namespace deepinfer::tools
