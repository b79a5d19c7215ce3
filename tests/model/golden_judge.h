// The golden judge: compares the file written by `deepinfer eval-golden` with a golden fixture
// (golden.safetensors + golden.json + config.json in one folder) under the limits of golden.json
// `tolerances`, following the three protocols of the fixture README.
//
// The OUT file holds the engine's results under the golden's tensor names (mode-dependent names
// as golden.json `modes` maps them), plus:
//   tf.run.<golden name>     teacher-forced runs of logits / DSpark outputs (protocols 2 and 3)
//   tf.engram.prefill_block_in  [n_engram_layers, P, hc, dim]: the engine's Engram applied to the
//                            golden input of each Engram layer (in engram_layer_ids order)
// `JudgeReport::outputs` lists every tensor the judge read or looked for, with its shape and the
// golden tensor an exact engine would reproduce, so callers (and the judge's own tests) know the
// contract.
//
// Checks whose golden tensors are absent and marked `optional` in golden.json are reported as
// skipped with a note; absent non-optional golden tensors, absent or misshapen OUT tensors and
// tolerance keys the judge does not understand are failed checks, never silently dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "golden_metrics.h"

namespace deepinfer::model::test {

inline constexpr std::string_view kTierBf16Emulated = "bf16_rounding_emulated";
inline constexpr std::string_view kTierFp32Activations = "fp32_activations";

struct ExpectedOutput {
  std::string name;  // tensor name in OUT
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  // The golden tensor an exact engine reproduces; when golden_slices is non-empty, OUT[i] is
  // golden[golden_slices[i]] along dimension 0 (the Engram check).
  std::string golden_name;
  std::vector<int64_t> golden_slices;
};

struct JudgeReport {
  std::vector<MetricCheck> checks;
  std::vector<ExpectedOutput> outputs;
};

// Runs every check that applies to `mode` ("official" / "owner", a key of golden.json `modes`)
// and `tier` (a key of the tier-dependent tolerance tables). Errors (Status) only for a golden
// folder or OUT file that cannot be read, or an unknown mode / tier.
StatusOr<JudgeReport> JudgeGolden(const std::string& golden_dir, const std::string& out_file,
                                  std::string_view mode, std::string_view tier = kTierBf16Emulated);

}  // namespace deepinfer::model::test
