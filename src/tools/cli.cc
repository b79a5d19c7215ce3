#include "tools/cli.h"

#include <CLI/CLI.hpp>

namespace deepinfer::tools {

int Main(int argc, char** argv) {
  CLI::App app{"deepinfer: inference and serving engine for DeepSeek-V4.1-Flash"};
  app.require_subcommand(1);
  int exit_code = 0;
  RegisterCpuInfo(app, &exit_code);
  RegisterInspect(app, &exit_code);
  RegisterMakeCheckpoint(app, &exit_code);
  RegisterUnpackModel(app, &exit_code);
  RegisterEvalGolden(app, &exit_code);
  RegisterEvalNll(app, &exit_code);
  RegisterCpPrefill(app, &exit_code);
  RegisterGenerate(app, &exit_code);
  RegisterTokenize(app, &exit_code);
  RegisterGrammarCheck(app, &exit_code);
  RegisterRenderChat(app, &exit_code);
  RegisterParseOutput(app, &exit_code);
  RegisterServe(app, &exit_code);
  RegisterRoute(app, &exit_code);
  RegisterBench(app, &exit_code);
  RegisterBenchServe(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}

}  // namespace deepinfer::tools
