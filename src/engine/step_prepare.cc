#include "engine/step_prepare.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "core/check.h"
#include "engine/logit_rows.h"
#include "engine/spec/spec_decoder.h"

namespace deepinfer::engine {

Status StartRunnerSequence(ModelRunner& runner, Sequence* seq) {
  CHECK(!seq->runner) << "sequence " << seq->id << " already has model state";
  const int64_t prompt_len =
      seq->request.leg_of_prompt_len > 0 ? seq->request.leg_of_prompt_len : seq->prompt_len;
  std::unique_ptr<RunnerSequence> rs = runner.NewSequence(prompt_len);
  const int64_t hit = seq->computed;
  if (seq->tail_in) {
    // A handed-over tail (the scheduler admitted the sequence at its end): its partly written
    // page into the page reserved for those positions, then the state.
    std::shared_ptr<const SequenceTail> tail = std::move(seq->tail_in);
    CHECK_EQ(hit, static_cast<int64_t>(tail->tokens.size()));
    if (!tail->partial_page.empty()) {
      const std::span<uint8_t> dst =
          runner.PageBytes(seq->pages[static_cast<size_t>(hit / runner.page_tokens())]);
      if (dst.size() != tail->partial_page.size()) {
        return Internal("KV hand-off: the tail's partial page does not fit this engine's pages");
      }
      std::memcpy(dst.data(), tail->partial_page.data(), dst.size());
    }
    DI_RETURN_IF_ERROR(runner.RestoreSequence(rs.get(), seq->pages, tail->state));
    if (tail->prompt_logprobs_k) {
      seq->prompt_logprobs = tail->prompt_logprobs;
      seq->prompt_logprobs_done = hit;
    }
  } else if (hit > 0) {
    const int64_t blocks = hit / runner.page_tokens();
    DI_RETURN_IF_ERROR(runner.AdoptPrefix(
        rs.get(), std::span<const int32_t>(seq->pages).subspan(0, static_cast<size_t>(blocks)),
        std::span<const int32_t>(seq->tokens).subspan(0, static_cast<size_t>(hit))));
  }
  seq->runner = std::move(rs);
  return Status::Ok();
}

StepInputs BuildStepInputs(const ScheduledBatch& batch, spec::SpecDecoder* spec) {
  StepInputs out;
  out.inputs.reserve(batch.entries.size());
  int64_t row = 0;
  for (const ScheduledEntry& e : batch.entries) {
    Sequence* seq = e.seq;
    RunnerInput in;
    in.seq = seq->runner.get();
    CHECK_EQ(in.seq->length(), seq->computed);
    in.tokens = std::span<const int32_t>(seq->tokens)
                    .subspan(static_cast<size_t>(seq->computed), static_cast<size_t>(e.n_tokens));
    in.pages = seq->pages;
    const int64_t rows = LogitRows(*seq, e.n_tokens);
    in.want_logits = rows > 0;
    in.logits_rows = std::max<int64_t>(rows, 1);
    if (spec && spec::SpecDecoder::IsVerify(e)) spec->FillInput(e, &in);
    // Prompt logprobs need every prompt row: no decoder-side replay may skip one.
    if (seq->remaining() > 1 && !seq->request.params.prompt_logprobs) {
      in.prefill_end = static_cast<int64_t>(seq->tokens.size());
    }
    out.logit_row.push_back(row);
    row += in.logits_rows;
    out.inputs.push_back(in);
  }
  return out;
}

}  // namespace deepinfer::engine
