// `deepinfer eval-golden --model DIR --golden DIR --mode official|owner --out OUT.safetensors`:
// runs the model on a golden folder's inputs and writes the engine's results under the golden's
// tensor names (tools/eval_golden.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "model/deepseek_v41/model.h"
#include "tools/cli.h"
#include "tools/eval_golden.h"

namespace deepinfer::tools {

void RegisterEvalGolden(CLI::App& app, int* exit_code) {
  CLI::App* cmd =
      app.add_subcommand("eval-golden", "Run the model on a golden folder and write its results");
  auto model_dir = std::make_shared<std::string>();
  auto out_path = std::make_shared<std::string>();
  auto opts = std::make_shared<EvalGoldenOptions>();
  opts->mode = "official";
  cmd->add_option("--model", *model_dir, "model folder")->required();
  cmd->add_option("--golden", opts->golden_dir, "golden folder (golden.json + golden.safetensors)")
      ->required();
  cmd->add_option("--mode", opts->mode, "index-key mode: official or owner");
  cmd->add_option("--out", *out_path, "output .safetensors")->required();
  cmd->callback([=] {
    auto m = model::Model::Load(*model_dir);
    if (!m.ok()) {
      std::fprintf(stderr, "eval-golden: %s\n", m.status().ToString().c_str());
      *exit_code = 1;
      return;
    }
    TensorBundle bundle;
    Status s = EvalGolden(**m, *opts, &bundle);
    if (s.ok()) s = bundle.Write(*out_path);
    if (!s.ok()) {
      std::fprintf(stderr, "eval-golden: %s\n", s.ToString().c_str());
      *exit_code = 1;
      return;
    }
    std::fprintf(stderr, "eval-golden: wrote %zu tensors to %s\n", bundle.size(),
                 out_path->c_str());
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
