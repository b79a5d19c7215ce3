// `deepinfer eval-golden`: placeholder until its issue lands (prints an error, exits 2).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/cli.h"

namespace deepinfer::tools {

void RegisterEvalGolden(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("eval-golden", "Run the model on a golden folder and write its results");
  cmd->allow_extras();
  cmd->callback([exit_code] {
    std::fprintf(stderr, "deepinfer eval-golden: not implemented yet\n");
    *exit_code = 2;
  });
}

}  // namespace deepinfer::tools
