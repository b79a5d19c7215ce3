// The `deepinfer` command line: one subcommand per file (cmd_*.cc), registered here.
#pragma once

namespace CLI {  // NOLINT(readability-identifier-naming): the library's own name
class App;
}

namespace deepinfer::tools {

int Main(int argc, char** argv);

// Each subcommand adds itself to the app and returns the exit code through *exit_code when run.
void RegisterCpuInfo(CLI::App& app, int* exit_code);
void RegisterInspect(CLI::App& app, int* exit_code);
void RegisterMakeCheckpoint(CLI::App& app, int* exit_code);
void RegisterUnpackModel(CLI::App& app, int* exit_code);
void RegisterEvalGolden(CLI::App& app, int* exit_code);
void RegisterGenerate(CLI::App& app, int* exit_code);
void RegisterTokenize(CLI::App& app, int* exit_code);
void RegisterGrammarCheck(CLI::App& app, int* exit_code);
void RegisterRenderChat(CLI::App& app, int* exit_code);
void RegisterParseOutput(CLI::App& app, int* exit_code);
void RegisterServe(CLI::App& app, int* exit_code);
void RegisterRoute(CLI::App& app, int* exit_code);
void RegisterBench(CLI::App& app, int* exit_code);
void RegisterBenchServe(CLI::App& app, int* exit_code);
void RegisterEvalNll(CLI::App& app, int* exit_code);
void RegisterCpPrefill(CLI::App& app, int* exit_code);

}  // namespace deepinfer::tools
