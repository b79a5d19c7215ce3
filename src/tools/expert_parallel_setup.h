// Expert parallelism for the commands that run the engine (docs/scaleout.md): under `mpirun`
// with more than one rank and `--expert-parallel on` (the default there), each rank loads only
// its own routed experts and every MoE call goes through a dist::MpiExpertExchange; the engine
// loop then ends every step with the exchange (RunEngineUntilIdle) so that all ranks step
// together. Started alone, or with --expert-parallel off, nothing changes.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "dist/expert_exchange_mpi.h"
#include "dist/expert_placement.h"
#include "engine/engine.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::tools {

struct EngineFlags;

// The placement the ranks start from (blocked), when this run is expert parallel.
StatusOr<std::optional<dist::ExpertPlacement>> InitialExpertPlacement(const std::string& model_dir,
                                                                      const EngineFlags& flags);

// Every rank must run the same model, config, CPU kernel level and engine flags: a rank that
// differs from rank 0 stops the start with the field and both values.
Status CheckRanksAgree(const std::string& model_dir, const EngineFlags& flags);

// The exchange over `placement` for a loaded model (installed into it).
std::unique_ptr<dist::MpiExpertExchange> AttachExpertExchange(model::Model* model,
                                                              dist::ExpertPlacement placement,
                                                              const EngineFlags& flags);

// engine->RunUntilIdle(), with every step ended in the exchange when there is one: a rank keeps
// joining the steps (serving its experts) until every rank is idle. An engine failure stops
// this rank's steps, not its part in the others'.
Status RunEngineUntilIdle(engine::Engine& engine, dist::MpiExpertExchange* experts);

// One line of EP figures for this run (rank 0 gathers every rank's; others return "").
std::string ExpertParallelReport(const dist::MpiExpertExchange& experts);

}  // namespace deepinfer::tools
