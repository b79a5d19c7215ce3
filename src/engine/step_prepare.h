// The prepare stage of Engine::Step (docs/engine_contract.md, "The step"): what the scheduler
// decided becomes the forward call's inputs.
//
//   StartRunnerSequence  admission's model work: a sequence the scheduler admitted (pages taken,
//                        `computed` = its prefix-cache hit, no runner sequence yet) gets a runner
//                        sequence that adopts the hit pages, or, admitted at the end of a
//                        handed-over tail, the tail's partial page and state (page_handoff.h)
//   BuildStepInputs      one RunnerInput per scheduled entry, in batch order: the tokens
//                        [computed, computed + n), a view of the page table, how many rows of
//                        logits the engine reads (the last row to sample; every row from the
//                        first unscored prompt position for prompt logprobs; every row of a
//                        verify input), and where each entry's rows start in the call's logits
// Nothing here changes what a sequence has computed: a failed StartRunnerSequence leaves the
// sequence without a runner sequence (the engine fails its request).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "engine/model_runner.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"

namespace deepinfer::engine {

namespace spec {
class SpecDecoder;
}

struct StepInputs {
  std::vector<RunnerInput> inputs;  // per scheduled entry
  std::vector<int64_t> logit_row;   // first row of each input in the call's logits
};

Status StartRunnerSequence(ModelRunner& runner, Sequence* seq);

// `spec`: null with speculation off (no entry verifies).
StepInputs BuildStepInputs(const ScheduledBatch& batch, spec::SpecDecoder* spec);

}  // namespace deepinfer::engine
