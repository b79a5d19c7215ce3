#include "tools/tokenizer_filter.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

namespace deepinfer::tools {

CLI::App* RegisterTokenizerFilter(CLI::App& app, int* exit_code, const char* name, const char* help,
                                  TokenizerHandlerFactory make_handler) {
  CLI::App* cmd = app.add_subcommand(name, help);
  auto dir = std::make_shared<std::string>();
  cmd->add_option("--tokenizer", *dir, "directory with tokenizer.json (+ tokenizer_config.json)")
      ->required();
  cmd->callback([exit_code, dir, name, make_handler = std::move(make_handler)] {
    const auto fail = [&](const Status& s) {
      std::fprintf(stderr, "deepinfer %s: %s\n", name, s.message().c_str());
      *exit_code = 2;
    };
    StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = tokenizer::Tokenizer::Load(*dir);
    if (!tok.ok()) return fail(tok.status());
    StatusOr<JsonLineHandler> handler = make_handler(**tok);
    if (!handler.ok()) return fail(handler.status());
    RunJsonLines(std::cin, std::cout, *handler);
    *exit_code = 0;
  });
  return cmd;
}

}  // namespace deepinfer::tools
