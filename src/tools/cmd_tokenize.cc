// `deepinfer tokenize`: placeholder until its issue lands (prints an error, exits 2).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/cli.h"

namespace deepinfer::tools {

void RegisterTokenize(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("tokenize", "Encode/decode JSON Lines records with a tokenizer");
  cmd->allow_extras();
  cmd->callback([exit_code] {
    std::fprintf(stderr, "deepinfer tokenize: not implemented yet\n");
    *exit_code = 2;
  });
}

}  // namespace deepinfer::tools
