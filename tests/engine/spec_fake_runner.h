// SpecFakeRunner: a ModelRunner with a toy drafter, for the speculative-decoding tests.
//
// Target: the logits of the row at position p are a pseudo-random function of tokens[0..p]
// (kHistory), so a verify row equals the plain decode row at that position, or one fixed vector
// whatever the history (kFixed, for distribution tests). The page table is checked as in
// FakeRunner: every position's slot holds the digest of the sequence's own prefix.
// Drafter: kGreedyNoisy proposes the target's greedy chain (or, given DraftRequest::choose, the
// chooser's pick from the target's logits of the drafted prefix) with some drafts replaced by
// other tokens (point-mass drafts, no probs); kSampled draws every draft from a fixed distribution
// q (given with the proposal), which differs from the target.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/model_runner.h"
#include "fake_runner.h"

namespace deepinfer::engine::testing {

class SpecFakeRunner : public ModelRunner {
 public:
  enum class Target { kHistory, kFixed };
  enum class Drafter { kGreedyNoisy, kSampled };

  SpecFakeRunner(int64_t vocab, int64_t page_tokens, Target target, Drafter drafter,
                 int64_t block = 4)
      : vocab_(vocab),
        page_tokens_(page_tokens),
        target_(target),
        drafter_(drafter),
        block_(block) {}

  std::vector<float> fixed_logits;  // kFixed: [vocab]
  std::vector<float> draft_q;       // kSampled: [vocab], sums to 1
  int miss_period = 3;              // kGreedyNoisy: about one draft in miss_period is wrong
  int draft_delay_us = 0;           // each Draft call sleeps this long (a costly drafter)
  int eos_draft_at = -1;            // kGreedyNoisy: draft j = this proposes EOS (1)

  int64_t vocab_size() const override { return vocab_; }
  int32_t eos_token_id() const override { return 1; }
  int64_t page_tokens() const override { return page_tokens_; }
  int64_t page_bytes() const override { return page_tokens_ * 8; }
  int64_t sequence_bytes() const override { return 64; }
  int64_t max_positions() const override { return 1 << 14; }

  Status InitPages(int64_t n_pages) override {
    slots_.assign(static_cast<size_t>(n_pages * page_tokens_), 0);
    return Status::Ok();
  }
  std::unique_ptr<RunnerSequence> NewSequence(int64_t /*prompt_len*/) override {
    return std::make_unique<FakeSequence>();
  }
  Status AdoptPrefix(RunnerSequence* rs, std::span<const int32_t> pages,
                     std::span<const int32_t> tokens) override {
    auto* s = static_cast<FakeSequence*>(rs);
    for (int32_t t : tokens) Push(s, t);
    return Check(*s, pages, s->length());
  }

  Status Forward(std::span<const RunnerInput> inputs, std::vector<float>* logits) override {
    size_t rows = 0;
    for (const RunnerInput& in : inputs) rows += static_cast<size_t>(in.logits_rows);
    logits->assign(rows * static_cast<size_t>(vocab_), 0.0f);
    size_t row = 0;
    for (const RunnerInput& in : inputs) {
      auto* s = static_cast<FakeSequence*>(in.seq);
      const auto n = static_cast<int64_t>(in.tokens.size());
      if (static_cast<int64_t>(in.pages.size()) * page_tokens_ < s->length() + n) {
        return Internal("spec fake runner: pages do not cover the call");
      }
      if (in.speculative != (in.logits_rows > 1) && n > 1) {
        return Internal("spec fake runner: a multi-row logits input must be speculative");
      }
      DI_RETURN_IF_ERROR(Check(*s, in.pages, s->length()));
      for (int64_t r = 0; r < n; ++r) {
        Push(s, in.tokens[static_cast<size_t>(r)]);
        Slot(in.pages, s->length() - 1) = s->digests.back();
        if (r >= n - in.logits_rows) {
          Logits(s->digests.back(), logits->data() + row * static_cast<size_t>(vocab_));
          ++row;
        }
      }
      ++rows_fed_;
      if (in.speculative) ++speculative_calls_;
    }
    return Status::Ok();
  }

  Status EnableDrafts() override {
    enabled_ = true;
    return Status::Ok();
  }
  int64_t max_drafts() const override { return enabled_ ? block_ : 0; }

  Status Draft(RunnerSequence* rs, const DraftRequest& request, DraftProposal* out) override {
    if (draft_delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(draft_delay_us));
    auto* s = static_cast<FakeSequence*>(rs);
    uint64_t d = Next(s->digests.empty() ? 0x9e37 : s->digests.back(), request.token);
    out->tokens.clear();
    out->confidence.clear();
    out->probs.clear();
    std::vector<float> row(static_cast<size_t>(vocab_));
    for (int64_t j = 0; j < request.max_drafts; ++j) {
      int32_t t;
      if (drafter_ == Drafter::kSampled) {
        const double u = static_cast<double>(Mix64(d ^ 0x5151) >> 11) * 0x1.0p-53;
        double cum = 0.0;
        t = static_cast<int32_t>(vocab_ - 1);
        for (int64_t v = 0; v < vocab_; ++v) {
          cum += draft_q[static_cast<size_t>(v)];
          if (cum > u) {
            t = static_cast<int32_t>(v);
            break;
          }
        }
        out->probs.insert(out->probs.end(), draft_q.begin(), draft_q.end());
      } else {
        Logits(d, row.data());
        if (request.choose) {
          DI_ASSIGN_OR_RETURN(const int64_t pick, request.choose(j, row));
          t = static_cast<int32_t>(pick);
        } else {
          t = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
        }
        if (Mix64(d ^ 0xabc) % static_cast<uint64_t>(miss_period) == 0) {
          t = static_cast<int32_t>((t + 1 + Mix64(d) % (vocab_ - 1)) % vocab_);
        }
        if (j == eos_draft_at) t = eos_token_id();
      }
      out->tokens.push_back(t);
      out->confidence.push_back(static_cast<float>(Mix64(d ^ 7) % 9) - 2.0f);
      d = Next(d, t);
    }
    ++draft_calls_;
    return Status::Ok();
  }

  Status EndSpeculation(RunnerSequence* rs, int64_t kept_length) override {
    auto* s = static_cast<FakeSequence*>(rs);
    if (kept_length > s->length() || kept_length < 1) return Internal("bad kept length");
    s->tokens.resize(static_cast<size_t>(kept_length));
    s->digests.resize(static_cast<size_t>(kept_length));
    return Status::Ok();
  }

  int64_t speculative_calls() const { return speculative_calls_; }
  int64_t draft_calls() const { return draft_calls_; }

 private:
  static uint64_t Next(uint64_t prev, int32_t t) {
    return Mix64(prev * 31 + static_cast<uint64_t>(t) + 1);
  }
  static void Push(FakeSequence* s, int32_t t) {
    s->digests.push_back(Next(s->digests.empty() ? 0x9e37 : s->digests.back(), t));
    s->tokens.push_back(t);
  }
  void Logits(uint64_t digest, float* row) const {
    for (int64_t v = 0; v < vocab_; ++v) {
      row[v] =
          target_ == Target::kFixed
              ? fixed_logits[static_cast<size_t>(v)]
              : static_cast<float>(Mix64(digest + static_cast<uint64_t>(v)) >> 40) / 1048576.0f;
    }
  }
  uint64_t& Slot(std::span<const int32_t> pages, int64_t p) {
    return slots_[static_cast<size_t>(pages[static_cast<size_t>(p / page_tokens_)] * page_tokens_ +
                                      p % page_tokens_)];
  }
  Status Check(const FakeSequence& s, std::span<const int32_t> pages, int64_t n) {
    for (int64_t p = 0; p < n; ++p) {
      if (Slot(pages, p) != s.digests[static_cast<size_t>(p)]) {
        return Internal("spec fake runner: page slot of position " + std::to_string(p) +
                        " holds another sequence's state");
      }
    }
    return Status::Ok();
  }

  int64_t vocab_, page_tokens_;
  Target target_;
  Drafter drafter_;
  int64_t block_;
  bool enabled_ = false;
  std::vector<uint64_t> slots_;
  int64_t rows_fed_ = 0, speculative_calls_ = 0, draft_calls_ = 0;
};

}  // namespace deepinfer::engine::testing
