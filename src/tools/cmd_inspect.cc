// `deepinfer inspect --model DIR`: placeholder until the checkpoint reader lands.
#include <CLI/CLI.hpp>

#include "tools/cli.h"

namespace deepinfer::tools {

void RegisterInspect(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("inspect", "Validate a checkpoint and print its layout");
  cmd->callback([exit_code] { *exit_code = 1; });
}

}  // namespace deepinfer::tools
