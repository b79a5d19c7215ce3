// FakeRunner: a ModelRunner that runs in microseconds and checks how the engine uses pages.
//
// Each position p of a sequence stores, in slot p % P of page p / P, a digest of tokens[0..p].
// Every Forward first re-reads all earlier positions through the page table and fails if any
// slot differs from the digest of the sequence's own tokens: a page shared with the wrong
// sequence, reused while still referenced, or missing shows up as an error. The logits are a
// pseudo-random function of the digests read from the pages, so they depend on the whole
// history, and so do the sampled outputs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/model_runner.h"

namespace deepinfer::engine::testing {

inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class FakeSequence : public RunnerSequence {
 public:
  int64_t length() const override { return static_cast<int64_t>(tokens.size()); }
  std::vector<int32_t> tokens;
  std::vector<uint64_t> digests;  // digest of tokens[0..p] per position
};

class FakeRunner : public ModelRunner {
 public:
  FakeRunner(int64_t vocab, int64_t page_tokens, int64_t max_positions = 1 << 14)
      : vocab_(vocab), page_tokens_(page_tokens), max_positions_(max_positions) {}

  int64_t vocab_size() const override { return vocab_; }
  int32_t eos_token_id() const override { return 1; }
  int64_t page_tokens() const override { return page_tokens_; }
  int64_t page_bytes() const override { return page_tokens_ * 8; }
  int64_t sequence_bytes() const override { return 64; }
  int64_t max_positions() const override { return max_positions_; }

  std::span<uint8_t> PageBytes(int32_t page) override {
    return {reinterpret_cast<uint8_t*>(slots_.data() + page * page_tokens_),
            static_cast<size_t>(page_bytes())};
  }
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
    if (!s->tokens.empty()) return InvalidArgument("adopt into a used sequence");
    for (int32_t t : tokens) Push(s, t);
    return Verify(*s, pages, s->length());
  }

  StatusOr<std::unique_ptr<RunnerSequence>> Fork(const RunnerSequence& parent) override {
    if (!fork_support_) return Unimplemented("fake runner: forking switched off");
    return std::unique_ptr<RunnerSequence>(
        std::make_unique<FakeSequence>(static_cast<const FakeSequence&>(parent)));
  }
  Status CopyPage(int32_t from, int32_t to) override {
    if (!fork_support_) return Unimplemented("fake runner: forking switched off");
    std::copy_n(slots_.begin() + from * page_tokens_, page_tokens_,
                slots_.begin() + to * page_tokens_);
    return Status::Ok();
  }
  void set_fork_support(bool on) { fork_support_ = on; }

  Status Forward(std::span<const RunnerInput> inputs, std::vector<float>* logits) override {
    ++forward_calls_;
    size_t n_rows = 0;
    for (const RunnerInput& in : inputs) {
      if (in.logits_rows < 1 || in.logits_rows > static_cast<int64_t>(in.tokens.size())) {
        return Internal("fake runner: bad logits_rows");
      }
      n_rows += static_cast<size_t>(in.logits_rows);
    }
    logits->assign(n_rows * static_cast<size_t>(vocab_), 0.0f);
    size_t out_row = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto* s = static_cast<FakeSequence*>(inputs[i].seq);
      const int64_t end = s->length() + static_cast<int64_t>(inputs[i].tokens.size());
      if (static_cast<int64_t>(inputs[i].pages.size()) * page_tokens_ < end) {
        return Internal("fake runner: pages do not cover the call");
      }
      DI_RETURN_IF_ERROR(Verify(*s, inputs[i].pages, s->length()));
      for (int32_t t : inputs[i].tokens) {
        Push(s, t);
        const int64_t p = s->length() - 1;
        Slot(inputs[i].pages, p) = s->digests.back();
      }
      // The logits of position p come from the digests of [0, p] as read back from the pages.
      const int64_t first = end - inputs[i].logits_rows;
      uint64_t h = 0x1234;
      for (int64_t p = 0; p < end; ++p) {
        h = Mix64(h ^ Slot(inputs[i].pages, p));
        if (p < first) continue;
        float* row = logits->data() + out_row++ * static_cast<size_t>(vocab_);
        for (int64_t v = 0; v < vocab_; ++v) {
          row[v] = static_cast<float>(Mix64(h + static_cast<uint64_t>(v)) >> 40) / 4194304.0f;
        }
      }
    }
    return Status::Ok();
  }

  int64_t forward_calls() const { return forward_calls_; }

 private:
  static void Push(FakeSequence* s, int32_t t) {
    const uint64_t prev = s->digests.empty() ? 0x9e37 : s->digests.back();
    s->tokens.push_back(t);
    s->digests.push_back(Mix64(prev * 31 + static_cast<uint64_t>(t) + 1));
  }
  uint64_t& Slot(std::span<const int32_t> pages, int64_t p) {
    return slots_[static_cast<size_t>(pages[static_cast<size_t>(p / page_tokens_)] * page_tokens_ +
                                      p % page_tokens_)];
  }
  Status Verify(const FakeSequence& s, std::span<const int32_t> pages, int64_t n) {
    for (int64_t p = 0; p < n; ++p) {
      if (Slot(pages, p) != s.digests[static_cast<size_t>(p)]) {
        return Internal("fake runner: page slot of position " + std::to_string(p) +
                        " holds another sequence's state");
      }
    }
    return Status::Ok();
  }

  int64_t vocab_, page_tokens_, max_positions_;
  std::vector<uint64_t> slots_;
  int64_t forward_calls_ = 0;
  bool fork_support_ = true;
};

}  // namespace deepinfer::engine::testing
