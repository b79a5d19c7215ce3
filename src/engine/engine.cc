#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <list>
#include <random>
#include <string>

#include "core/check.h"
#include "core/thread_pool.h"
#include "engine/spec/spec_decoder.h"

namespace deepinfer::engine {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
  }
  return "?";
}

StatusOr<std::unique_ptr<Engine>> Engine::Create(ModelRunner* runner, EngineOptions options,
                                                 ThreadPool* pool) {
  const SchedulerOptions& so = options.scheduler;
  if (so.max_batch_tokens < 1 || so.prefill_chunk < 1 || so.max_running < 1) {
    return InvalidArgument("engine: max batch tokens, prefill chunk and max running must be >= 1");
  }
  const int64_t per_seq = runner->sequence_bytes() * so.max_running;
  const int64_t n_pages = (options.kv_budget_bytes - per_seq) / runner->page_bytes();
  if (n_pages < 1) {
    return InvalidArgument("engine: a KV budget of " + std::to_string(options.kv_budget_bytes) +
                           " bytes holds no page (" + std::to_string(runner->page_bytes()) +
                           " bytes each) after the per-sequence state of " +
                           std::to_string(so.max_running) + " running sequences (" +
                           std::to_string(per_seq) + " bytes)");
  }
  if (options.spec.mode != spec::SpecMode::kOff) DI_RETURN_IF_ERROR(runner->EnableDrafts());
  DI_RETURN_IF_ERROR(runner->InitPages(n_pages));
  return std::unique_ptr<Engine>(
      new Engine(runner, options, n_pages, pool ? pool : &ThreadPool::Default()));
}

Engine::Engine(ModelRunner* runner, EngineOptions options, int64_t n_pages, ThreadPool* pool)
    : runner_(runner), options_(options), pool_(pool) {
  kv_ = std::make_unique<KvCacheManager>(n_pages, runner->page_tokens(), options.prefix_cache);
  scheduler_ = std::make_unique<Scheduler>(options.scheduler, kv_.get(), runner);
  if (options.spec.mode != spec::SpecMode::kOff) {
    spec_ = std::make_shared<spec::SpecDecoder>(options.spec, runner, options.scheduler);
  }
}

StatusOr<uint64_t> Engine::Add(Request request) {
  const int64_t vocab = runner_->vocab_size();
  const int64_t len = static_cast<int64_t>(request.prompt.size());
  if (len == 0) return InvalidArgument("the prompt is empty");
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= vocab) {
      return InvalidArgument("prompt token id " + std::to_string(t) + " is outside [0, " +
                             std::to_string(vocab) + ")");
    }
  }
  DI_RETURN_IF_ERROR(request.params.Validate(vocab));
  const int64_t limit = runner_->max_positions();
  const int64_t want = len + request.params.max_tokens.value_or(1);
  if (len >= limit || (request.params.max_tokens && want > limit)) {
    return InvalidArgument("the prompt (" + std::to_string(len) + " tokens) plus max_tokens (" +
                           std::to_string(request.params.max_tokens.value_or(0)) +
                           ") exceeds the context of " + std::to_string(limit) + " positions");
  }
  const int64_t p = runner_->page_tokens();
  if ((len + 1 + p - 1) / p > kv_->capacity()) {
    return InvalidArgument("the prompt needs more KV pages than the whole pool holds (" +
                           std::to_string(kv_->capacity()) + " pages of " + std::to_string(p) +
                           " positions); raise the KV budget");
  }
  if (request.grammar && request.grammar->vocabulary().size() != vocab) {
    return InvalidArgument("the grammar was compiled for a vocabulary of " +
                           std::to_string(request.grammar->vocabulary().size()) +
                           " tokens, the model has " + std::to_string(vocab));
  }
  // One seed for all samples of the request: they differ by sample_index.
  const uint64_t seed =
      request.params.seed ? *request.params.seed : std::random_device{}() * 0x9E3779B97F4A7C15ull;
  const int32_t n = request.params.n;
  std::vector<Request> samples;
  for (int32_t i = 1; i < n; ++i) {
    samples.push_back(request);
    samples.back().sample_index += i;
    if (request.prepare_sample) request.prepare_sample(&samples.back());
  }
  Sequence* lead = NewSequence(std::move(request), seed);
  scheduler_->AddWaiting(lead);
  for (Request& r : samples) {
    Sequence* s = NewSequence(std::move(r), seed);
    s->fork_of = lead->id;
    lead->fork_ids.push_back(s->id);
  }
  return lead->id;
}

Sequence* Engine::NewSequence(Request request, uint64_t seed) {
  auto seq = std::make_shared<Sequence>();
  seq->id = next_id_++;
  seq->arrival = seq->id;
  seq->seed = seed;
  seq->tokens = request.prompt;
  seq->prompt_len = static_cast<int64_t>(request.prompt.size());
  if (request.grammar && !request.grammar_start_token) {
    seq->matcher = std::make_unique<structured::GrammarMatcher>(request.grammar);
  }
  seq->history.AddPrompt(request.prompt);
  seq->request = std::move(request);
  Sequence* raw = seq.get();
  sequences_.emplace(raw->id, std::move(seq));
  return raw;
}

void Engine::ReleaseForks(Sequence* lead) {
  for (uint64_t id : lead->fork_ids) {
    auto it = sequences_.find(id);
    if (it == sequences_.end() || it->second->finish) continue;
    it->second->fork_of = 0;
    scheduler_->AddWaiting(it->second.get());
  }
  lead->fork_ids.clear();
}

bool Engine::Fork(Sequence* lead, Sequence* seq) {
  if (!scheduler_->has_running_slot()) return false;
  const int64_t p = kv_->block_tokens();
  const int64_t full = lead->computed / p;
  std::vector<int32_t> pages(lead->pages.begin(), lead->pages.begin() + full);
  for (int32_t page : pages) kv_->AddRef(page);
  auto give_back = [&] {
    for (int32_t page : pages) kv_->Release(page);
    return false;
  };
  if (lead->computed % p != 0) {
    // The partly written last page: the fork writes its own positions into it, so it gets a copy.
    const int32_t page = kv_->Allocate();
    if (page < 0) return give_back();
    pages.push_back(page);
    if (!runner_->CopyPage(lead->pages[static_cast<size_t>(full)], page).ok()) return give_back();
  }
  StatusOr<std::unique_ptr<RunnerSequence>> runner = runner_->Fork(*lead->runner);
  if (!runner.ok()) return give_back();
  seq->runner = std::move(*runner);
  seq->pages = std::move(pages);
  seq->computed = lead->computed;
  seq->block_keys.assign(
      lead->block_keys.begin(),
      lead->block_keys.begin() +
          std::min<int64_t>(full, static_cast<int64_t>(lead->block_keys.size())));
  seq->registered_blocks = std::min(lead->registered_blocks, full);
  seq->prefix_hit_tokens = lead->prefix_hit_tokens;
  seq->prompt_logprobs = lead->prompt_logprobs;
  seq->prompt_logprobs_done = lead->prompt_logprobs_done;
  if (seq->matcher) seq->mask = lead->mask;  // the same grammar state: nothing accepted yet
  seq->fork_of = 0;
  scheduler_->AddRunning(seq);
  return true;
}

void Engine::Retire(Sequence* seq) {
  // Samples still waiting for this one's prompt compute it themselves.
  ReleaseForks(seq);
  seq->status = SequenceStatus::kFinished;
  scheduler_->Remove(seq);
  sequences_.erase(seq->id);  // pending deliveries keep the object alive
}

void Engine::Finish(Sequence* seq, FinishReason reason, Status error) {
  // Earlier tokens first (no forward call is in flight when Finish runs).
  for (Sequence* stopped : DeliverPending()) {
    if (stopped != seq) Retire(stopped);
  }
  seq->finish = reason;
  if (seq->request.on_output) {
    RequestOutput out;
    out.request_id = seq->id;
    out.sample_index = seq->request.sample_index;
    out.n_output = seq->n_output();
    out.finished = reason;
    out.error = std::move(error);
    out.seed = seq->seed;
    out.prefix_hit_tokens = seq->prefix_hit_tokens;
    seq->request.on_output(out);
  }
  Retire(seq);
}

std::optional<FinishReason> Engine::Append(Sequence* seq, const SampleResult& sample) {
  const int32_t t = sample.token;
  seq->tokens.push_back(t);
  seq->history.Append(t);
  ++tokens_generated_;
  if (seq->matcher) {
    // The mask allowed it, so the matcher accepts it (checked: a violation is a bug).
    CHECK(seq->matcher->AcceptToken(t)) << "sampled token " << t << " outside the grammar";
    // A finished grammar (its stop token accepted) ends the output even with ignore_eos.
    if (seq->matcher->IsTerminated()) return FinishReason::kStop;
  } else if (seq->request.grammar && t == *seq->request.grammar_start_token) {
    seq->matcher = std::make_unique<structured::GrammarMatcher>(seq->request.grammar);
  }
  const SamplingParams& sp = seq->request.params;
  const int64_t n_out = seq->n_output();
  if (n_out >= sp.min_tokens) {
    if (!sp.ignore_eos && t == runner_->eos_token_id()) return FinishReason::kStop;
    if (std::find(sp.stop_token_ids.begin(), sp.stop_token_ids.end(), t) !=
        sp.stop_token_ids.end()) {
      return FinishReason::kStop;
    }
  }
  if (sp.max_tokens && n_out >= *sp.max_tokens) return FinishReason::kLength;
  if (static_cast<int64_t>(seq->tokens.size()) >= runner_->max_positions()) {
    return FinishReason::kLength;
  }
  return std::nullopt;
}

std::vector<Sequence*> Engine::DeliverPending() {
  std::vector<Pending> pending;
  pending.swap(pending_);
  std::vector<Sequence*> stopped;
  // Sequences a stop string ended in this call, at which output count: their later tokens
  // (a step can append several with speculative decoding) are dropped.
  std::map<const Sequence*, int64_t> cut;
  for (Pending& d : pending) {
    Sequence* seq = d.seq.get();
    // Tokens after a stop string are dropped (they were sampled before the check ran).
    if (const auto it = cut.find(seq); it != cut.end() && d.n_output > it->second) continue;
    std::optional<FinishReason> finish = d.finish;
    // The stop check sees every token (it may keep state, e.g. a detokenizer); its verdict
    // counts from min_tokens on, like EOS and the stop ids.
    if (seq->request.stop_check) {
      const bool hit = seq->request.stop_check(
          std::span<const int32_t>(seq->tokens)
              .subspan(static_cast<size_t>(seq->prompt_len), static_cast<size_t>(d.n_output)));
      if (hit && !finish && d.n_output >= seq->request.params.min_tokens) {
        finish = FinishReason::kStop;
        seq->finish = finish;
        cut[seq] = d.n_output;
        // (A sequence whose later token already ended it is retired: nothing more to do.)
        if (seq->status != SequenceStatus::kFinished) stopped.push_back(seq);
      }
    }
    if (seq->request.on_output) {
      RequestOutput out;
      out.request_id = seq->id;
      out.sample_index = seq->request.sample_index;
      out.new_tokens = {d.sample.token};
      if (d.n_output == 1 && seq->request.params.prompt_logprobs) {
        out.prompt_logprobs = seq->prompt_logprobs;
      }
      if (seq->request.params.logprobs) out.samples.push_back(std::move(d.sample));
      out.n_output = d.n_output;
      out.finished = finish;
      out.seed = seq->seed;
      out.prefix_hit_tokens = seq->prefix_hit_tokens;
      seq->request.on_output(out);
    }
  }
  return stopped;
}

void Engine::RegisterBlocks(Sequence* seq) {
  if (!kv_->prefix_cache()) return;
  const int64_t p = kv_->block_tokens();
  const int64_t complete = seq->computed / p;
  if (complete <= seq->registered_blocks) return;
  seq->UpdateBlockKeys(p, runner_->prompt_sensitive());
  for (int64_t b = seq->registered_blocks; b < complete; ++b) {
    kv_->Register(seq->pages[static_cast<size_t>(b)], seq->block_keys[static_cast<size_t>(b)]);
  }
  seq->registered_blocks = complete;
}

void Engine::HandleCancels() {
  std::vector<Sequence*> cancelled;
  for (auto& [id, seq] : sequences_) {
    if (seq->request.cancelled && seq->request.cancelled->load()) cancelled.push_back(seq.get());
  }
  for (Sequence* seq : cancelled) Finish(seq, FinishReason::kAbort);
}

void Engine::FillMasks(const ScheduledBatch& batch) {
  for (const ScheduledEntry& e : batch.entries) {
    Sequence* seq = e.seq;
    if (!seq->matcher || seq->finish || e.n_tokens != seq->remaining()) continue;
    seq->mask.assign(static_cast<size_t>(seq->matcher->n_words()), 0);
    seq->matcher->FillNextTokenBitmask(seq->mask.data());
  }
}

int64_t Engine::LogitRows(const Sequence& seq, int64_t n_tokens) const {
  const int64_t end = seq.computed + n_tokens;
  // Prompt logprobs: the rows from the first prompt position not yet scored (each row scores
  // the token after it) to the end of the call.
  const int64_t first = std::max(seq.computed, seq.prompt_logprobs_done);
  if (seq.request.params.prompt_logprobs && first < std::min(end, seq.prompt_len - 1)) {
    return end - first;
  }
  return end == static_cast<int64_t>(seq.tokens.size()) ? 1 : 0;
}

Status Engine::GatherPromptLogprobs(Sequence* seq, const float* logits, int64_t n_rows) {
  // Row r of `logits` is position first_pos + r; it scores the token after it, the prompt token
  // it stands for being entry (position) of prompt_logprobs.
  const int64_t first_pos = seq->computed - n_rows;
  const int64_t begin = std::max(first_pos, seq->prompt_logprobs_done);
  const int64_t end = std::min(seq->computed, seq->prompt_len - 1);
  if (end > begin) {
    seq->prompt_logprobs.resize(static_cast<size_t>(seq->prompt_len - 1));
    const int64_t vocab = runner_->vocab_size();
    const size_t n = static_cast<size_t>(end - begin);
    DI_RETURN_IF_ERROR(ComputePromptLogprobs(
        logits + (begin - first_pos) * vocab, end - begin, vocab, vocab,
        std::span<const int32_t>(seq->tokens).subspan(static_cast<size_t>(begin + 1), n),
        *seq->request.params.prompt_logprobs,
        std::span<SampleResult>(seq->prompt_logprobs).subspan(static_cast<size_t>(begin), n),
        pool_));
  }
  seq->prompt_logprobs_done = std::max(seq->prompt_logprobs_done, end);
  return Status::Ok();
}

Status Engine::RunForward(const ScheduledBatch& batch, const std::vector<RunnerInput>& inputs,
                          std::vector<float>* logits, std::vector<Sequence*>* stopped) {
  auto timed_forward = [this, &inputs, logits] {
    const auto start = std::chrono::steady_clock::now();
    Status s = runner_->Forward(inputs, logits);
    forward_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return s;
  };
  if (!options_.async_schedule) {
    FillMasks(batch);
    return timed_forward();
  }
  // The forward call on a worker thread; meanwhile the grammar masks of the rows it will
  // sample (their matchers already hold every earlier token) and the previous step's
  // deliveries. forward_seconds_ is written there only until get() returns.
  std::future<Status> forward = std::async(std::launch::async, timed_forward);
  *stopped = DeliverPending();
  FillMasks(batch);
  return forward.get();
}

// Stage 1 (capacity): a waiting sequence that cannot get its pages with nothing else running
// would wait forever; it fails instead.
void Engine::FailUnfittable(const ScheduledBatch& batch) {
  if (scheduler_->running().empty() && !scheduler_->waiting().empty() &&
      (batch.empty() || !batch.preempted.empty())) {
    // Nothing else holds pages, yet a sequence cannot get the pages it needs: it does not fit
    // the whole pool (preempted with the pool to itself, or not admissible into an empty one).
    Sequence* seq =
        batch.preempted.empty() ? scheduler_->waiting().front() : batch.preempted.back();
    Finish(seq, FinishReason::kError,
           ResourceExhausted("the sequence needs more KV pages than the pool holds"));
  }
}

// Stage 2 (prepare): one runner input per scheduled entry.
std::vector<RunnerInput> Engine::PrepareInputs(const ScheduledBatch& batch) {
  std::vector<RunnerInput> inputs;
  inputs.reserve(batch.entries.size());
  for (const ScheduledEntry& e : batch.entries) {
    RunnerInput in;
    in.seq = e.seq->runner.get();
    CHECK_EQ(in.seq->length(), e.seq->computed);
    in.tokens = std::span<const int32_t>(e.seq->tokens)
                    .subspan(static_cast<size_t>(e.seq->computed), static_cast<size_t>(e.n_tokens));
    in.pages = e.seq->pages;
    const int64_t rows = LogitRows(*e.seq, e.n_tokens);
    in.want_logits = rows > 0;
    in.logits_rows = std::max<int64_t>(rows, 1);
    if (spec_ && spec::SpecDecoder::IsVerify(e)) spec_->FillInput(e, &in);
    // Prompt logprobs need every prompt row: no decoder-side replay may skip one.
    if (e.seq->remaining() > 1 && !e.seq->request.params.prompt_logprobs) {
      in.prefill_end = static_cast<int64_t>(e.seq->tokens.size());
    }
    inputs.push_back(in);
  }
  return inputs;
}

void Engine::AddSampleRow(Sequence* seq, const float* row_logits, SampleRows* rows) {
  const SamplingParams& sp = seq->request.params;
  std::vector<int32_t>& sup = rows->suppressed.emplace_back();
  if (seq->n_output() < sp.min_tokens) {
    if (!sp.ignore_eos) sup.push_back(runner_->eos_token_id());
    sup.insert(sup.end(), sp.stop_token_ids.begin(), sp.stop_token_ids.end());
  }
  SampleRow r;
  r.logits = row_logits;
  r.params = &sp;
  r.history = &seq->history;
  r.seed = seq->seed;
  r.sample_index = seq->request.sample_index;
  r.position = static_cast<int64_t>(seq->tokens.size());
  r.suppressed = sup;
  if (seq->matcher) r.allowed_bits = seq->mask.data();
  rows->rows.push_back(r);
  rows->seqs.push_back(seq);
}

// Stage 4 (commit computed positions): every plain entry's positions count as computed, its
// full pages are registered and its prompt logprobs gathered; an entry that reached the end of
// its tokens gets a row to sample, and so do the samples that fork from its prompt. Verify
// entries are left to speculation (their indices in *verify).
void Engine::CommitComputed(const ScheduledBatch& batch, const std::vector<RunnerInput>& inputs,
                            const std::vector<float>& logits, const std::vector<int64_t>& logit_row,
                            SampleRows* rows, std::vector<size_t>* verify,
                            std::vector<std::shared_ptr<Sequence>>* alive) {
  const int64_t vocab = runner_->vocab_size();
  for (size_t i = 0; i < batch.entries.size(); ++i) {
    Sequence* seq = batch.entries[i].seq;
    const int64_t n_rows = inputs[i].logits_rows;
    const float* entry_logits = logits.data() + logit_row[i] * vocab;
    if (seq->finish) continue;
    if (spec_ && spec::SpecDecoder::IsVerify(batch.entries[i])) {
      verify->push_back(i);
      continue;
    }
    seq->computed += batch.entries[i].n_tokens;
    tokens_computed_ += batch.entries[i].n_tokens;
    RegisterBlocks(seq);
    if (seq->request.params.prompt_logprobs) {
      const Status st = GatherPromptLogprobs(seq, entry_logits, n_rows);
      if (!st.ok()) {
        Finish(seq, FinishReason::kError, st);
        continue;
      }
    }
    if (seq->remaining() > 0) continue;
    const float* last = entry_logits + (n_rows - 1) * vocab;
    const bool first_token = seq->n_output() == 0;
    AddSampleRow(seq, last, rows);
    if (first_token && !seq->fork_ids.empty()) ForkSamples(seq, last, rows, alive);
  }
}

// The prompt of `lead` is computed: its other samples start from here (sharing the row of
// logits), or compute the prompt themselves when they cannot fork.
void Engine::ForkSamples(Sequence* lead, const float* row_logits, SampleRows* rows,
                         std::vector<std::shared_ptr<Sequence>>* alive) {
  std::vector<uint64_t> ids;
  ids.swap(lead->fork_ids);
  for (uint64_t id : ids) {
    auto it = sequences_.find(id);
    if (it == sequences_.end() || it->second->finish) continue;
    Sequence* sample = it->second.get();
    alive->push_back(it->second);
    if (Fork(lead, sample)) {
      AddSampleRow(sample, row_logits, rows);
    } else {
      sample->fork_of = 0;
      scheduler_->AddWaiting(sample);
    }
  }
}

// Stage 5 (sample + commit tokens): draws every row at once; a failed row fails its request,
// each drawn token is appended (stop conditions checked) and queued for delivery.
void Engine::SampleAndAppend(const SampleRows& rows) {
  std::vector<SampleResult> samples(rows.rows.size());
  // A failed row (e.g. a grammar that leaves no token) fails its request; the others go on.
  const std::vector<Status> row_status =
      SampleBatch(rows.rows, runner_->vocab_size(), samples, pool_);
  for (size_t k = 0; k < rows.seqs.size(); ++k) {
    Sequence* seq = rows.seqs[k];
    if (!row_status[k].ok()) {
      Finish(seq, FinishReason::kError, row_status[k]);
      continue;
    }
    const std::optional<FinishReason> fin = Append(seq, samples[k]);
    pending_.push_back({sequences_.at(seq->id), std::move(samples[k]), seq->n_output(), fin});
    if (fin) {
      seq->finish = fin;
      Retire(seq);
    }
  }
}

Status Engine::Step() {
  const auto step_start = std::chrono::steady_clock::now();
  HandleCancels();
  if (spec_) spec_->Plan(scheduler_->running());
  ScheduledBatch batch = scheduler_->Schedule();
  FailUnfittable(batch);
  if (batch.empty()) {
    for (Sequence* seq : DeliverPending()) Retire(seq);
    return Status::Ok();
  }
  ++steps_;
  // Retiring drops the engine's reference; the batch's sequences must outlive this step.
  std::vector<std::shared_ptr<Sequence>> alive;
  for (const ScheduledEntry& e : batch.entries) alive.push_back(sequences_.at(e.seq->id));
  const std::vector<RunnerInput> inputs = PrepareInputs(batch);
  std::vector<float> logits;
  std::vector<Sequence*> stopped;
  const Status fs = RunForward(batch, inputs, &logits, &stopped);
  // Sequences a stop string ended while the call ran: retire them now, ignore their results.
  for (Sequence* seq : stopped) Retire(seq);
  if (!fs.ok()) {
    for (const ScheduledEntry& e : batch.entries) {
      if (!e.seq->finish) Finish(e.seq, FinishReason::kError, fs);
    }
    return Status::Ok();
  }
  // First logits row of each input (a verify input has one per token).
  std::vector<int64_t> logit_row(inputs.size());
  for (size_t i = 1; i < inputs.size(); ++i) {
    logit_row[i] = logit_row[i - 1] + inputs[i - 1].logits_rows;
  }
  SampleRows rows;
  std::vector<size_t> verify;  // entries that verify drafts
  CommitComputed(batch, inputs, logits, logit_row, &rows, &verify, &alive);
  SampleAndAppend(rows);
  if (spec_) {
    const auto spec_start = std::chrono::steady_clock::now();
    DI_RETURN_IF_ERROR(SpecVerifyAndDraft(batch, logits, logit_row, verify));
    spec_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - spec_start).count();
  }
  if (!options_.async_schedule) {
    for (Sequence* seq : DeliverPending()) Retire(seq);
  }
  if (options_.check_integrity) DI_RETURN_IF_ERROR(CheckIntegrity());
  const double step_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
  step_seconds_ += step_s;
  if (spec_) spec_->EndStep(batch.n_tokens, step_s);
  return Status::Ok();
}

Status Engine::SpecVerifyAndDraft(const ScheduledBatch& batch, const std::vector<float>& logits,
                                  const std::vector<int64_t>& logit_row,
                                  const std::vector<size_t>& verify) {
  const int64_t vocab = runner_->vocab_size();
  for (size_t i : verify) {
    const ScheduledEntry& e = batch.entries[i];
    Sequence* seq = e.seq;
    tokens_computed_ += e.n_tokens;
    std::optional<FinishReason> fin;
    const Status vs = spec_->Verify(
        e, logits.data() + logit_row[i] * vocab,
        [&](const SampleResult& sample) {
          const std::optional<FinishReason> f = Append(seq, sample);
          pending_.push_back({sequences_.at(seq->id), sample, seq->n_output(), f});
          return f;
        },
        &fin);
    if (!vs.ok()) {
      Finish(seq, FinishReason::kError, vs);
      continue;
    }
    RegisterBlocks(seq);
    if (fin) {
      seq->finish = fin;
      Retire(seq);
    }
  }
  // Drafts for every sequence of the batch that goes on decoding.
  for (const ScheduledEntry& e : batch.entries) {
    Sequence* seq = e.seq;
    if (seq->finish || seq->status != SequenceStatus::kRunning) continue;
    const Status ds = spec_->Draft(seq);
    if (!ds.ok()) Finish(seq, FinishReason::kError, ds);
  }
  return Status::Ok();
}

Status Engine::RunUntilIdle() {
  while (!idle()) DI_RETURN_IF_ERROR(Step());
  return Status::Ok();
}

EngineStats Engine::stats() const {
  EngineStats s;
  s.kv = kv_->counters();
  s.running = static_cast<int64_t>(scheduler_->running().size());
  s.waiting = static_cast<int64_t>(scheduler_->waiting().size());
  for (const auto& [id, seq] : sequences_) s.waiting += seq->fork_of != 0 ? 1 : 0;
  s.steps = steps_;
  s.preemptions = scheduler_->n_preemptions();
  s.tokens_computed = tokens_computed_;
  s.tokens_generated = tokens_generated_;
  s.step_seconds = step_seconds_;
  s.forward_seconds = forward_seconds_;
  s.spec_seconds = spec_seconds_;
  if (spec_) s.spec = spec_->counters();
  return s;
}

Status Engine::CheckIntegrity() const {
  std::vector<int32_t> refs(static_cast<size_t>(kv_->capacity()), 0);
  const int64_t p = kv_->block_tokens();
  for (const auto& [id, seq] : sequences_) {
    const std::string who = "sequence " + std::to_string(id);
    const bool running = seq->status == SequenceStatus::kRunning;
    if (!running && !seq->pages.empty()) return Internal(who + " waits but holds pages");
    if (running) {
      if (!seq->runner || seq->runner->length() != seq->computed) {
        return Internal(who + ": the model state disagrees with `computed`");
      }
      if (static_cast<int64_t>(seq->pages.size()) * p < seq->computed) {
        return Internal(who + " has fewer pages than its computed positions need");
      }
    }
    for (int32_t page : seq->pages) ++refs[static_cast<size_t>(page)];
  }
  return kv_->CheckIntegrity(&refs);
}

}  // namespace deepinfer::engine
