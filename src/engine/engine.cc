#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <list>
#include <random>
#include <string>

#include "core/check.h"
#include "core/task_thread.h"
#include "core/thread_pool.h"
#include "engine/logit_rows.h"
#include "engine/next_token_row.h"
#include "engine/spec/spec_decoder.h"
#include "engine/token_append.h"

namespace deepinfer::engine {

Engine::~Engine() = default;

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
  scheduler_ =
      std::make_unique<Scheduler>(options.scheduler, kv_.get(), runner->prompt_sensitive());
  if (options.spec.mode != spec::SpecMode::kOff) {
    spec_ = std::make_shared<spec::SpecDecoder>(options.spec, runner, options.scheduler);
  }
}

Status Engine::CheckPromptTokens(std::span<const int32_t> prompt) const {
  const int64_t vocab = runner_->vocab_size();
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  for (int32_t t : prompt) {
    if (t < 0 || t >= vocab) {
      return InvalidArgument("prompt token id " + std::to_string(t) + " is outside [0, " +
                             std::to_string(vocab) + ")");
    }
  }
  return Status::Ok();
}

StatusOr<uint64_t> Engine::Add(Request request) {
  const int64_t vocab = runner_->vocab_size();
  const int64_t len = static_cast<int64_t>(request.prompt.size());
  DI_RETURN_IF_ERROR(CheckPromptTokens(request.prompt));
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
  if (request.leg_of_prompt_len != 0 &&
      (request.leg_of_prompt_len != len + 1 || request.params.n != 1)) {
    return InvalidArgument("a prefill leg computes all but the last token of a prompt (" +
                           std::to_string(len) + " tokens of " +
                           std::to_string(request.leg_of_prompt_len) + "), with one sample");
  }
  std::shared_ptr<const SequenceTail> tail = TakeTail(request);
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
  lead->tail_in = std::move(tail);
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
  if (seq->request.leg_of_prompt_len > 0 && seq->runner && EndedAsAsked(seq->finish)) {
    seq->tail_out = CaptureTail(*seq);
  }
  // Samples still waiting for this one's prompt compute it themselves.
  ReleaseForks(seq);
  seq->status = SequenceStatus::kFinished;
  scheduler_->Remove(seq);
  sequences_.erase(seq->id);  // pending deliveries keep the object alive
}

void Engine::Finish(Sequence* seq, FinishReason reason, Status error) {
  // Earlier tokens first (no forward call is in flight when Finish runs).
  for (Sequence* stopped : deliveries_.Deliver()) {
    if (stopped != seq) Retire(stopped);
  }
  seq->finish = reason;
  DeliverFinish(*seq, reason, std::move(error));
  Retire(seq);
}

void Engine::DeliverAndRetire() {
  for (Sequence* seq : deliveries_.Deliver()) Retire(seq);
}

std::optional<FinishReason> Engine::Append(Sequence* seq, const SampleResult& sample) {
  const std::optional<FinishReason> fin =
      AppendToken(seq, sample.token, runner_->eos_token_id(), runner_->max_positions());
  ++tokens_generated_;
  deliveries_.Push(sequences_.at(seq->id), sample, fin);
  return fin;
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

// Stage 3 (forward): one call for the batch. With async scheduling it runs on a worker thread
// while this thread fills the grammar masks of the rows it will sample (their matchers already
// hold every earlier token) and delivers the previous step's tokens; sequences a stop string
// ended meanwhile are retired when the call has returned, their results ignored. A failed call
// fails the requests of its batch (false).
bool Engine::RunForward(const ScheduledBatch& batch, const StepInputs& in,
                        std::vector<float>* logits) {
  auto timed_forward = [this, &in, logits] {
    const auto start = std::chrono::steady_clock::now();
    Status s = runner_->Forward(in.inputs, logits);
    forward_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return s;
  };
  Status fs;
  if (options_.async_schedule) {
    // forward_seconds_ and fs are written on the forward thread only until Wait() returns.
    if (!forward_thread_) forward_thread_ = std::make_unique<TaskThread>();
    forward_thread_->Start([&] { fs = timed_forward(); });
    const std::vector<Sequence*> stopped = deliveries_.Deliver();
    FillMasks(batch);
    forward_thread_->Wait();
    for (Sequence* seq : stopped) Retire(seq);
  } else {
    FillMasks(batch);
    fs = timed_forward();
  }
  if (fs.ok()) return true;
  for (const ScheduledEntry& e : batch.entries) {
    if (!e.seq->finish) Finish(e.seq, FinishReason::kError, fs);
  }
  return false;
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

// Stage 2 (prepare): the sequences admitted this step get their model state; one whose
// cached prefix the runner cannot adopt fails alone (its entry leaves the batch).
void Engine::StartAdmitted(ScheduledBatch* batch) {
  std::vector<ScheduledEntry> kept;
  kept.reserve(batch->entries.size());
  for (const ScheduledEntry& e : batch->entries) {
    if (!e.seq->runner) {
      tails_continued_ += e.seq->tail_in ? 1 : 0;
      const Status s = StartRunnerSequence(*runner_, e.seq);
      if (!s.ok()) {
        batch->n_tokens -= e.n_tokens;
        Finish(e.seq, FinishReason::kError, s);
        continue;
      }
    }
    kept.push_back(e);
  }
  batch->entries.swap(kept);
}

void Engine::AddSampleRow(Sequence* seq, const float* row_logits, SampleRows* rows) {
  const std::vector<int32_t>& sup =
      rows->suppressed.emplace_back(SuppressedIds(*seq, runner_->eos_token_id()));
  rows->rows.push_back(
      NextTokenRow(*seq, row_logits, seq->matcher ? seq->mask.data() : nullptr, sup));
  rows->seqs.push_back(seq);
}

// Stage 4 (commit computed positions): every plain entry's positions count as computed, its
// full pages are registered and its prompt logprobs gathered; an entry that reached the end of
// its tokens gets a row to sample, and so do the samples that fork from its prompt. Verify
// entries are left to speculation (their indices in *verify).
void Engine::CommitComputed(const ScheduledBatch& batch, const StepInputs& in,
                            const std::vector<float>& logits, SampleRows* rows,
                            std::vector<size_t>* verify,
                            std::vector<std::shared_ptr<Sequence>>* alive) {
  const int64_t vocab = runner_->vocab_size();
  for (size_t i = 0; i < batch.entries.size(); ++i) {
    Sequence* seq = batch.entries[i].seq;
    const int64_t n_rows = in.inputs[i].logits_rows;
    const float* entry_logits = logits.data() + in.logit_row[i] * vocab;
    if (seq->finish) continue;
    if (spec_ && spec::SpecDecoder::IsVerify(batch.entries[i])) {
      verify->push_back(i);
      continue;
    }
    seq->computed += batch.entries[i].n_tokens;
    tokens_computed_ += batch.entries[i].n_tokens;
    RegisterBlocks(seq);
    if (seq->request.params.prompt_logprobs) {
      const Status st = GatherPromptLogprobs(seq, entry_logits, n_rows, vocab, pool_);
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
  StartAdmitted(&batch);
  if (batch.empty()) {
    DeliverAndRetire();
    return Status::Ok();
  }
  ++steps_;
  // Retiring drops the engine's reference; the batch's sequences must outlive this step.
  std::vector<std::shared_ptr<Sequence>> alive;
  for (const ScheduledEntry& e : batch.entries) alive.push_back(sequences_.at(e.seq->id));
  // Every entry decodes or verifies (no prompt rows): the spec cost model's observation.
  bool decode_only = true;
  for (const ScheduledEntry& e : batch.entries) decode_only &= e.seq->remaining() == 1;
  const StepInputs in = BuildStepInputs(batch, spec_.get());
  // The buffer is the previous step's: the runner overwrites every row that has logits.
  std::vector<float>& logits = step_logits_;
  if (!RunForward(batch, in, &logits)) return Status::Ok();
  SampleRows rows;
  std::vector<size_t> verify;  // entries that verify drafts
  CommitComputed(batch, in, logits, &rows, &verify, &alive);
  SampleAndAppend(rows);
  if (spec_) DI_RETURN_IF_ERROR(SpecVerifyAndDraft(batch, in, logits, verify));
  if (!options_.async_schedule) DeliverAndRetire();
  if (options_.check_integrity) DI_RETURN_IF_ERROR(CheckIntegrity());
  const double step_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
  step_seconds_ += step_s;
  if (spec_) spec_->EndStep(batch.n_tokens, step_s, decode_only);
  return Status::Ok();
}

// Stage 6 (speculate): verifies the batch's verify entries (accepted tokens appended with the
// end-of-output rules) and drafts for every sequence that goes on decoding.
Status Engine::SpecVerifyAndDraft(const ScheduledBatch& batch, const StepInputs& in,
                                  const std::vector<float>& logits,
                                  const std::vector<size_t>& verify) {
  const auto spec_start = std::chrono::steady_clock::now();
  const int64_t vocab = runner_->vocab_size();
  for (size_t i : verify) {
    const ScheduledEntry& e = batch.entries[i];
    Sequence* seq = e.seq;
    tokens_computed_ += e.n_tokens;
    std::optional<FinishReason> fin;
    const Status vs = spec_->Verify(
        e, logits.data() + in.logit_row[i] * vocab,
        [&](const SampleResult& sample) { return Append(seq, sample); }, &fin);
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
  spec_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - spec_start).count();
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
  s.tails_continued = tails_continued_;
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
