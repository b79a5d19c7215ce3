// Model::Forward: the prompt boundary of fresh sequences, and the split of a call into passes
// where official-mode rows depend on later layers of earlier rows (index_key_schedule.h).
#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "core/phase_timer.h"
#include "model/deepseek_v41/model.h"

namespace deepinfer::model {
namespace {

// Where one input's rows sit in the caller's batch and how far the passes got.
struct InputProgress {
  int64_t row0 = 0;  // first row in the caller's batch
  int64_t done = 0;  // rows computed by earlier passes
};

}  // namespace

Status Model::Forward(std::span<const ForwardInput> inputs, const ForwardOptions& options,
                      ForwardOutput* out) const {
  ScopedPhase phase_forward("forward");
  std::set<const SequenceState*> seen;
  for (const ForwardInput& in : inputs) {
    if (in.state == nullptr || in.tokens.empty()) {
      return InvalidArgument("forward: every input needs a sequence and at least one token");
    }
    if (!seen.insert(in.state).second) {
      return InvalidArgument("forward: a sequence appears twice in one batch");
    }
    for (int32_t t : in.tokens) {
      if (t < 0 || t >= config_.vocab_size) {
        return InvalidArgument("forward: token id " + std::to_string(t) + " outside [0, " +
                               std::to_string(config_.vocab_size) + ")");
      }
    }
  }
  for (const ForwardInput& in : inputs) {
    if (in.state->prompt_length == 0) {
      in.state->prompt_length = in.state->length + static_cast<int64_t>(in.tokens.size());
    }
  }
  auto rows_now = [&](const ForwardInput& in, int64_t done) {
    const auto n = static_cast<int64_t>(in.tokens.size()) - done;
    if (options.index_key_mode == IndexKeyMode::kOwner) return n;
    return index_keys_.MaxRowsPerCall(in.state->length, n, in.state->prompt_length);
  };
  bool one_pass = true;
  for (const ForwardInput& in : inputs) {
    one_pass = one_pass && rows_now(in, 0) == static_cast<int64_t>(in.tokens.size());
  }
  if (one_pass) return ForwardPass(inputs, options, out);
  if (options.hooks != nullptr) {
    return InvalidArgument(
        "forward: hooks see one batch, but these inputs need more than one pass (generated rows "
        "after the prompt in one call)");
  }

  // Several passes: each takes every unfinished input's next rows that can run together.
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, vocab = c.vocab_size;
  const int64_t tap_width = static_cast<int64_t>(c.dspark_target_layer_ids.size()) * dim;
  std::vector<InputProgress> progress(inputs.size());
  int64_t total_rows = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    progress[i].row0 = total_rows;
    total_rows += static_cast<int64_t>(inputs[i].tokens.size());
  }
  out->final_hidden.assign(total_rows * dim, 0);
  if (options.want_taps) out->taps.assign(total_rows * tap_width, 0);
  std::vector<std::pair<int64_t, std::vector<float>>> logits;  // (caller's row, [vocab])
  for (;;) {
    std::vector<ForwardInput> pass;
    std::vector<size_t> owner;  // pass input -> caller's input
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ForwardInput& in = inputs[i];
      const auto n = static_cast<int64_t>(in.tokens.size());
      const int64_t done = progress[i].done;
      if (done == n) continue;
      const int64_t m = rows_now(in, done);
      ForwardInput sub = in;
      sub.tokens = in.tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(m));
      // The caller's logit rows are the input's last logits_rows rows: a suffix of this piece.
      const int64_t first_logit = n - std::clamp<int64_t>(in.logits_rows, 1, n);
      sub.logits_rows = done + m - std::max(done, first_logit);
      sub.want_logits = in.want_logits && sub.logits_rows > 0;
      sub.logits_rows = std::max<int64_t>(sub.logits_rows, 1);
      pass.push_back(sub);
      owner.push_back(i);
    }
    if (pass.empty()) break;
    ForwardOutput po;
    DI_RETURN_IF_ERROR(ForwardPass(pass, options, &po));
    int64_t pass_row0 = 0;
    size_t next_logit = 0;
    for (size_t s = 0; s < pass.size(); ++s) {
      InputProgress& pr = progress[owner[s]];
      const auto m = static_cast<int64_t>(pass[s].tokens.size());
      const int64_t row0 = pr.row0 + pr.done;  // the caller's row of this piece's first row
      std::copy_n(po.final_hidden.data() + pass_row0 * dim, m * dim,
                  out->final_hidden.data() + row0 * dim);
      if (options.want_taps) {
        std::copy_n(po.taps.data() + pass_row0 * tap_width, m * tap_width,
                    out->taps.data() + row0 * tap_width);
      }
      for (; next_logit < po.logit_rows.size() && po.logit_rows[next_logit] < pass_row0 + m;
           ++next_logit) {
        const float* l = po.logits.data() + static_cast<int64_t>(next_logit) * vocab;
        logits.emplace_back(row0 + po.logit_rows[next_logit] - pass_row0,
                            std::vector<float>(l, l + vocab));
      }
      pr.done += m;
      pass_row0 += m;
    }
  }
  std::sort(logits.begin(), logits.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out->logit_rows.clear();
  out->logits.resize(logits.size() * static_cast<size_t>(vocab));
  for (size_t i = 0; i < logits.size(); ++i) {
    out->logit_rows.push_back(logits[i].first);
    std::copy(logits[i].second.begin(), logits[i].second.end(),
              out->logits.begin() + static_cast<std::ptrdiff_t>(i) * vocab);
  }
  return Status::Ok();
}

}  // namespace deepinfer::model
