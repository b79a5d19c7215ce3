#include "engine/engine.h"

#include <algorithm>
#include <future>
#include <random>
#include <string>

#include "core/check.h"
#include "core/thread_pool.h"

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
  DI_RETURN_IF_ERROR(runner->InitPages(n_pages));
  return std::unique_ptr<Engine>(
      new Engine(runner, options, n_pages, pool ? pool : &ThreadPool::Default()));
}

Engine::Engine(ModelRunner* runner, EngineOptions options, int64_t n_pages, ThreadPool* pool)
    : runner_(runner), options_(options), pool_(pool) {
  kv_ = std::make_unique<KvCacheManager>(n_pages, runner->page_tokens(), options.prefix_cache);
  scheduler_ = std::make_unique<Scheduler>(options.scheduler, kv_.get(), runner);
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
  auto seq = std::make_shared<Sequence>();
  seq->id = next_id_++;
  seq->arrival = seq->id;
  seq->seed =
      request.params.seed ? *request.params.seed : std::random_device{}() * 0x9E3779B97F4A7C15ull;
  seq->tokens = request.prompt;
  seq->prompt_len = len;
  if (request.grammar) {
    if (request.grammar->vocabulary().size() != vocab) {
      return InvalidArgument("the grammar was compiled for a vocabulary of " +
                             std::to_string(request.grammar->vocabulary().size()) +
                             " tokens, the model has " + std::to_string(vocab));
    }
    if (!request.grammar_start_token) {
      seq->matcher = std::make_unique<structured::GrammarMatcher>(request.grammar);
    }
  }
  seq->history.AddPrompt(request.prompt);
  seq->request = std::move(request);
  Sequence* raw = seq.get();
  sequences_.emplace(raw->id, std::move(seq));
  scheduler_->AddWaiting(raw);
  return raw->id;
}

void Engine::Retire(Sequence* seq) {
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
  for (Pending& d : pending) {
    Sequence* seq = d.seq.get();
    // Tokens after a stop string are dropped (they were sampled before the check ran).
    if (seq->finish && !d.finish) continue;
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
        stopped.push_back(seq);
      }
    }
    if (seq->request.on_output) {
      RequestOutput out;
      out.request_id = seq->id;
      out.new_tokens = {d.sample.token};
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
  seq->UpdateBlockKeys(p);
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

Status Engine::RunForward(const ScheduledBatch& batch, const std::vector<RunnerInput>& inputs,
                          std::vector<float>* logits, std::vector<Sequence*>* stopped) {
  if (!options_.async_schedule) {
    FillMasks(batch);
    return runner_->Forward(inputs, logits);
  }
  // The forward call on a worker thread; meanwhile the grammar masks of the rows it will
  // sample (their matchers already hold every earlier token) and the previous step's
  // deliveries.
  std::future<Status> forward = std::async(
      std::launch::async, [this, &inputs, logits] { return runner_->Forward(inputs, logits); });
  *stopped = DeliverPending();
  FillMasks(batch);
  return forward.get();
}

Status Engine::Step() {
  HandleCancels();
  ScheduledBatch batch = scheduler_->Schedule();
  if (scheduler_->running().empty() && !scheduler_->waiting().empty() &&
      (batch.empty() || !batch.preempted.empty())) {
    // Nothing else holds pages, yet a sequence cannot get the pages it needs: it does not fit
    // the whole pool (preempted with the pool to itself, or not admissible into an empty one).
    Sequence* seq =
        batch.preempted.empty() ? scheduler_->waiting().front() : batch.preempted.back();
    Finish(seq, FinishReason::kError,
           ResourceExhausted("the sequence needs more KV pages than the pool holds"));
  }
  if (batch.empty()) {
    for (Sequence* seq : DeliverPending()) Retire(seq);
    return Status::Ok();
  }
  ++steps_;
  // Retiring drops the engine's reference; the batch's sequences must outlive this step.
  std::vector<std::shared_ptr<Sequence>> alive;
  for (const ScheduledEntry& e : batch.entries) alive.push_back(sequences_.at(e.seq->id));
  std::vector<RunnerInput> inputs;
  inputs.reserve(batch.entries.size());
  for (const ScheduledEntry& e : batch.entries) {
    RunnerInput in;
    in.seq = e.seq->runner.get();
    CHECK_EQ(in.seq->length(), e.seq->computed);
    in.tokens = std::span<const int32_t>(e.seq->tokens)
                    .subspan(static_cast<size_t>(e.seq->computed), static_cast<size_t>(e.n_tokens));
    in.pages = e.seq->pages;
    in.want_logits = e.n_tokens == e.seq->remaining();
    inputs.push_back(in);
  }
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
  const int64_t vocab = runner_->vocab_size();
  // Rows that choose a next token.
  std::vector<SampleRow> rows;
  std::vector<Sequence*> row_seq;
  std::vector<std::vector<int32_t>> suppressed(batch.entries.size());
  for (size_t i = 0; i < batch.entries.size(); ++i) {
    Sequence* seq = batch.entries[i].seq;
    if (seq->finish) continue;
    seq->computed += batch.entries[i].n_tokens;
    tokens_computed_ += batch.entries[i].n_tokens;
    RegisterBlocks(seq);
    if (seq->remaining() > 0) continue;
    const SamplingParams& sp = seq->request.params;
    if (seq->n_output() < sp.min_tokens) {
      if (!sp.ignore_eos) suppressed[i].push_back(runner_->eos_token_id());
      suppressed[i].insert(suppressed[i].end(), sp.stop_token_ids.begin(), sp.stop_token_ids.end());
    }
    SampleRow r;
    r.logits = logits.data() + static_cast<int64_t>(i) * vocab;
    r.params = &sp;
    r.history = &seq->history;
    r.seed = seq->seed;
    r.sample_index = seq->request.sample_index;
    r.position = static_cast<int64_t>(seq->tokens.size());
    r.suppressed = suppressed[i];
    if (seq->matcher) r.allowed_bits = seq->mask.data();
    rows.push_back(r);
    row_seq.push_back(seq);
  }
  std::vector<SampleResult> samples(rows.size());
  std::vector<Status> row_status(rows.size());
  if (!SampleBatch(rows, vocab, samples, pool_).ok()) {
    // Some row failed (e.g. a grammar left no token): find which, the others go on.
    for (size_t k = 0; k < rows.size(); ++k) {
      const SampleRow& r = rows[k];
      row_status[k] = SampleOne(r.logits, vocab, *r.params, *r.history, r.seed, r.sample_index,
                                r.position, r.allowed_bits, r.suppressed, &samples[k]);
    }
  }
  for (size_t k = 0; k < row_seq.size(); ++k) {
    Sequence* seq = row_seq[k];
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
  if (!options_.async_schedule) {
    for (Sequence* seq : DeliverPending()) Retire(seq);
  }
  if (options_.check_integrity) DI_RETURN_IF_ERROR(CheckIntegrity());
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
  s.steps = steps_;
  s.preemptions = scheduler_->n_preemptions();
  s.tokens_computed = tokens_computed_;
  s.tokens_generated = tokens_generated_;
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
