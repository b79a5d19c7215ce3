// The golden-folder runner behind `deepinfer eval-golden` (fixture README, protocols 1-3):
// runs the model on the golden's inputs and collects the engine's own results under the
// golden's tensor names for one index-key mode. Judging them is the tests' job.
#pragma once

#include <string>

#include "core/status.h"
#include "model/deepseek_v41/batch_context.h"
#include "model/deepseek_v41/model.h"
#include "tools/tensor_bundle.h"

namespace deepinfer::tools {

struct EvalGoldenOptions {
  std::string golden_dir;
  std::string mode;  // "official" or "owner"
};

// Fills `out`. Protocol 2/3 outputs are produced only when the golden carries their inputs.
Status EvalGolden(const model::Model& model, const EvalGoldenOptions& options, TensorBundle* out);

}  // namespace deepinfer::tools
