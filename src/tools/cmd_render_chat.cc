// `deepinfer render-chat`: placeholder until its issue lands (prints an error, exits 2).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/cli.h"

namespace deepinfer::tools {

void RegisterRenderChat(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("render-chat", "Render chat messages to a V4.1 prompt (JSON Lines)");
  cmd->allow_extras();
  cmd->callback([exit_code] {
    std::fprintf(stderr, "deepinfer render-chat: not implemented yet\n");
    *exit_code = 2;
  });
}

}  // namespace deepinfer::tools
