#include "engine/spec/spec_decoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/check.h"
#include "engine/next_token_row.h"
#include "engine/sampling/philox.h"
#include "engine/sampling/sampler.h"
#include "engine/spec/verify.h"
#include "engine/token_append.h"

namespace deepinfer::engine::spec {
namespace {

// Largest ratio one step adds to SpecDecoder::pays_: the mean is what decides, a cap only keeps
// one outlying prediction from holding the gate open. (A cap of 1.25 made it a vote: a step whose
// drafts are all declined, 0.89 on the default model, weighed as much as one that triples the
// tokens, ~2.3, and a short reply's few declined steps closed the gate for later requests.)
constexpr double kPaysRatioCap = 3.0;

// Weight of the newest step in SpecDecoder::pays_ (about the last ten steps decide). Tried 0.03
// (2026-12-06, 512 requests per server): one request 1.80-1.85x against 1.77-1.81x, 4 and 8 in
// flight -4.3% and -3.6% against -2.0 to -2.6% and -3.0 to -3.2%: a gate slow to close stays
// open through more of the steps that lose under load. Kept at 0.1.
constexpr double kPaysWeight = 0.1;

// Per verify call, the weight of the earlier calls in SpecDecoder::gain() (about the last ten).
constexpr double kGainDecay = 0.9;

// Drafts a sequence can still use: the output budget and the context, less the token every
// verify call yields on its own.
int64_t DraftRoom(const Sequence& seq, int64_t max_positions) {
  int64_t room = max_positions - static_cast<int64_t>(seq.tokens.size()) - 1;
  if (seq.request.params.max_tokens) {
    room = std::min(room, *seq.request.params.max_tokens - seq.n_output() - 1);
  }
  return std::max<int64_t>(room, 0);
}

// Drafts worth verifying: up to and including the first that would end the output (EOS or a
// stop id, StopsOutput); the ones after it are never used if it is accepted, and would only
// take verify rows (and, observed as rejections, bias the calibration down).
int64_t UsefulDrafts(const Sequence& seq, std::span<const int32_t> drafts, int32_t eos_id) {
  const int64_t n_out = seq.n_output();
  for (size_t j = 0; j < drafts.size(); ++j) {
    if (StopsOutput(seq.request.params, drafts[j], n_out + static_cast<int64_t>(j) + 1, eos_id))
      return static_cast<int64_t>(j) + 1;
  }
  return static_cast<int64_t>(drafts.size());
}

// Coupled drafts (spec_decoder.h): draft i is the sampler's draw from the drafter's logits,
// with the request's temperature / top_k / top_p / min_p (no penalties, bias, mask or
// suppression: the drafter's ids are not the vocabulary) and the uniform the sampler will use
// for the token at position `first_position + i`.
DraftRequest::Chooser CoupledChooser(const Sequence& seq) {
  SamplingParams params;
  const SamplingParams& req = seq.request.params;
  params.temperature = req.temperature;
  params.top_k = req.top_k;
  params.top_p = req.top_p;
  params.min_p = req.min_p;
  const uint64_t seed = seq.seed;
  const int64_t sample_index = seq.request.sample_index;
  const auto first_position = static_cast<int64_t>(seq.tokens.size());
  return [params, seed, sample_index, first_position](
             int64_t draft, std::span<const float> logits) -> StatusOr<int64_t> {
    static const TokenHistory kNoHistory;
    SampleResult r;
    DI_RETURN_IF_ERROR(SampleOne(logits.data(), static_cast<int64_t>(logits.size()), params,
                                 kNoHistory, seed, sample_index, first_position + draft, nullptr,
                                 {}, &r));
    return static_cast<int64_t>(r.token);
  };
}

// The sampler's view of the sequence's next token (as the engine builds it for a plain decode
// row): min_tokens suppression and the grammar mask of the matcher's current state.
struct RowContext {
  std::vector<int32_t> suppressed;
  std::vector<uint32_t> mask;
  const uint32_t* allowed = nullptr;
};

RowContext MakeRowContext(Sequence* seq, int32_t eos) {
  RowContext ctx;
  ctx.suppressed = SuppressedIds(*seq, eos);
  if (seq->matcher) {
    ctx.mask.assign(static_cast<size_t>(seq->matcher->n_words()), 0);
    seq->matcher->FillNextTokenBitmask(ctx.mask.data());
    ctx.allowed = ctx.mask.data();
  }
  return ctx;
}

// The logprob of `token` (and the top list when asked) from a target distribution p.
void FillLogprobs(const std::vector<double>& p, const SamplingParams& sp, SampleResult* r) {
  r->logprob = static_cast<float>(std::log(p[static_cast<size_t>(r->token)]));
  r->top.clear();
  if (!sp.logprobs || sp.top_logprobs <= 0) return;
  std::vector<int32_t> ids;
  for (size_t v = 0; v < p.size(); ++v) {
    if (p[v] > 0.0) ids.push_back(static_cast<int32_t>(v));
  }
  const size_t k = std::min<size_t>(ids.size(), static_cast<size_t>(sp.top_logprobs));
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [&](int32_t a, int32_t b) {
                      return p[static_cast<size_t>(a)] != p[static_cast<size_t>(b)]
                                 ? p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)]
                                 : a < b;
                    });
  for (size_t i = 0; i < k; ++i) {
    r->top.push_back({ids[i], static_cast<float>(std::log(p[static_cast<size_t>(ids[i])]))});
  }
}

}  // namespace

SpecDecoder::SpecDecoder(SpecOptions options, ModelRunner* runner,
                         const SchedulerOptions& scheduler)
    : options_(options),
      runner_(runner),
      scheduler_(scheduler),
      cost_(options.cost_fixed_s, options.cost_per_row_s) {
  counters_.accept_histogram.assign(static_cast<size_t>(runner->max_drafts()) + 1, 0);
}

void SpecDecoder::Plan(std::span<Sequence* const> running) {
  std::vector<LengthCandidate> candidates;
  std::vector<Sequence*> owners;
  int64_t base_rows = 0;
  double base_tokens = 0.0;
  for (Sequence* seq : running) {
    seq->draft_rows = 0;
    const int64_t left = seq->remaining();
    if (left != 1) {
      base_rows += std::min(left, scheduler_.prefill_chunk);
      continue;
    }
    base_rows += 1;
    base_tokens += 1.0;
    if (!seq->spec || seq->finish ||
        seq->spec->drafted_at != static_cast<int64_t>(seq->tokens.size()) ||
        seq->spec->proposal.tokens.empty()) {
      continue;
    }
    const DraftProposal& d = seq->spec->proposal;
    LengthCandidate c;
    c.confidence = d.confidence;
    c.survival = calibration_.Survival(d.confidence);
    c.max_len = std::min(UsefulDrafts(*seq, d.tokens, runner_->eos_token_id()),
                         DraftRoom(*seq, runner_->max_positions()));
    candidates.push_back(std::move(c));
    owners.push_back(seq);
  }
  if (candidates.empty()) return;
  // The fit is of steps without their draft calls; this step's drafting sequences will draft
  // again after it whatever the lengths (a cycle is one draft call and one verify step).
  const double drafting_s = cost_.fixed() ? 0.0 : draft_s_ * static_cast<double>(owners.size());
  double theta = 0.0;
  const std::vector<int64_t> len =
      ChooseLengths(options_, cost_, candidates, base_rows, base_tokens,
                    scheduler_.max_batch_tokens, drafting_s, &theta);
  if (options_.policy == SpecPolicy::kCostModel && !cost_.fixed() && cost_.observed() &&
      base_tokens > 0.0) {
    // theta: the chosen rows and this step's draft calls; against the step with neither.
    const double ratio = theta / (base_tokens / cost_.Seconds(base_rows));
    pays_ = (1.0 - kPaysWeight) * pays_ + kPaysWeight * std::min(ratio, kPaysRatioCap);
  }
  for (size_t r = 0; r < owners.size(); ++r) {
    int64_t n = len[r];
    if (owners[r]->spec->explore)
      n = std::max<int64_t>(n, std::min<int64_t>(1, candidates[r].max_len));
    owners[r]->draft_rows = n;
  }
}

void SpecDecoder::FillInput(const ScheduledEntry& e, RunnerInput* in) {
  Sequence* seq = e.seq;
  CHECK_EQ(seq->remaining(), 1);
  SpecSequence& sp = *seq->spec;
  const auto drafts = static_cast<size_t>(e.n_tokens - 1);
  CHECK_LE(drafts, sp.proposal.tokens.size());
  sp.input.assign(1, seq->tokens.back());
  sp.input.insert(sp.input.end(), sp.proposal.tokens.begin(),
                  sp.proposal.tokens.begin() + static_cast<std::ptrdiff_t>(drafts));
  in->tokens = sp.input;
  in->want_logits = true;
  in->logits_rows = e.n_tokens;
  in->speculative = true;
}

Status SpecDecoder::Verify(const ScheduledEntry& e, const float* logits, const AppendFn& append,
                           std::optional<FinishReason>* finish) {
  Sequence* seq = e.seq;
  SpecSequence& sp = *seq->spec;
  const int64_t vocab = runner_->vocab_size();
  const int64_t drafts = e.n_tokens - 1;
  const int64_t l0 = seq->computed;
  const SamplingParams& params = seq->request.params;
  const bool point_mass = sp.proposal.probs.empty();
  int64_t accepted = 0;
  // The output ended at an accepted draft: the drafts after it got no verdict.
  bool moot_tail = false;
  Status status;
  std::vector<double> p;
  for (int64_t j = 0; j <= drafts; ++j) {
    const float* row = logits + j * vocab;
    RowContext ctx = MakeRowContext(seq, runner_->eos_token_id());
    const auto position = static_cast<int64_t>(seq->tokens.size());
    SampleResult r;
    bool ok = false;
    if (j == drafts || point_mass) {
      // The bonus row, or a greedy draft: the sampler's own draw (verify.h).
      status = SampleValidatedRow(NextTokenRow(*seq, row, ctx.allowed, ctx.suppressed), vocab, &r);
      if (!status.ok()) break;
      ok = j < drafts && r.token == sp.input[static_cast<size_t>(j + 1)];
    } else {
      status =
          TargetDistribution(row, vocab, params, seq->history, ctx.allowed, ctx.suppressed, &p);
      if (!status.ok()) break;
      const int32_t d = sp.input[static_cast<size_t>(j + 1)];
      const std::span<const float> q(sp.proposal.probs.data() + j * vocab,
                                     static_cast<size_t>(vocab));
      const uint64_t seed = seq->seed;
      const int64_t idx = seq->request.sample_index;
      const DraftVerdict v =
          VerifyDraft(p, q, d, PhiloxUniformDouble(seed, idx, position, kAcceptLane),
                      PhiloxUniformDouble(seed, idx, position, kResampleLane));
      r.token = v.token;
      FillLogprobs(p, params, &r);
      ok = v.accepted;
    }
    *finish = append(r);
    if (ok) ++accepted;
    moot_tail = ok && finish->has_value();
    if (!ok || *finish) break;
  }
  ++counters_.verify_calls;
  counters_.verified += drafts;
  counters_.accepted += accepted;
  if (static_cast<size_t>(accepted) >= counters_.accept_histogram.size()) {
    counters_.accept_histogram.resize(static_cast<size_t>(accepted) + 1, 0);
  }
  ++counters_.accept_histogram[static_cast<size_t>(accepted)];
  const int64_t judged = moot_tail ? accepted : drafts;  // drafts that got a verdict
  calibration_.Observe(sp.proposal.confidence, judged, accepted);
  gain_accepted_ = kGainDecay * gain_accepted_ + static_cast<double>(accepted);
  gain_verified_ = kGainDecay * gain_verified_ + static_cast<double>(judged);
  sp.proposal = DraftProposal{};
  sp.drafted_at = -1;
  seq->draft_rows = 0;
  const int64_t kept = l0 + accepted + 1;
  DI_RETURN_IF_ERROR(runner_->EndSpeculation(seq->runner.get(), kept));
  seq->computed = kept;
  return status;
}

Status SpecDecoder::Draft(Sequence* seq) {
  if (!seq->request.speculative || seq->finish || !seq->runner || seq->remaining() != 1) {
    return Status::Ok();
  }
  if (!seq->spec) seq->spec = std::make_shared<SpecSequence>();
  SpecSequence& sp = *seq->spec;
  sp.proposal = DraftProposal{};
  sp.drafted_at = -1;
  sp.explore = false;
  int64_t n = runner_->max_drafts();
  if (options_.max_drafts > 0) n = std::min(n, options_.max_drafts);
  n = std::min(n, DraftRoom(*seq, runner_->max_positions()));
  if (n <= 0) return Status::Ok();  // before the gate: no room spends no exploration
  if (options_.policy == SpecPolicy::kCostModel && (gain() < options_.min_gain || pays_ < 1.0)) {
    // Gate closed: one sequence explores per explore_period decode opportunities (counted over
    // all sequences, so the cost per generated token does not grow with the batch).
    if (options_.explore_period <= 0 || --explore_countdown_ > 0) return Status::Ok();
    if (explore_debt_s_ > 0.0) {  // earlier explorations not yet paid for: ask again next time
      explore_countdown_ = 1;
      return Status::Ok();
    }
    explore_countdown_ = options_.explore_period;
    sp.explore = true;
  }
  DraftRequest request;
  request.token = seq->tokens.back();
  request.max_drafts = n;
  if (options_.coupled_drafts && !seq->request.params.greedy()) {
    request.choose = CoupledChooser(*seq);
  }
  const auto start = std::chrono::steady_clock::now();
  DI_RETURN_IF_ERROR(runner_->Draft(seq->runner.get(), request, &sp.proposal));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  draft_s_ = draft_s_ > 0.0 ? 0.9 * draft_s_ + 0.1 * took : took;
  step_draft_s_ += took;
  if (sp.explore && options_.explore_budget > 0.0)
    explore_debt_s_ += took / options_.explore_budget;
  ++counters_.draft_calls;
  counters_.drafted += static_cast<int64_t>(sp.proposal.tokens.size());
  sp.drafted_at = static_cast<int64_t>(seq->tokens.size());
  return Status::Ok();
}

void SpecDecoder::EndStep(int64_t rows, double seconds, bool decode_only) {
  ++steps_;
  explore_debt_s_ = std::max(0.0, explore_debt_s_ - seconds);
  // The fit is of the step without its draft calls (Plan adds them per drafting sequence).
  if (decode_only) cost_.Observe(rows, std::max(seconds - step_draft_s_, 1e-9));
  step_draft_s_ = 0.0;
}

}  // namespace deepinfer::engine::spec
