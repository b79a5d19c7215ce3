// The KV hand-off: the Engine methods that fill and take page bundles (declared in engine.h; the
// wire form is page_handoff_wire.cc).
#include "engine/page_handoff.h"

#include <algorithm>
#include <cstring>

#include "engine/engine.h"

namespace deepinfer::engine {
namespace {

// Tails an engine holds for requests still to come, and their bytes at most (the released
// model's tail is ~10 MB: window rings of 40 layers and a page); the oldest go first.
constexpr size_t kHeldTails = 16;
constexpr size_t kHeldTailBytes = size_t{256} << 20;

size_t TailBytes(const SequenceTail& t) {
  return t.state.size() + t.partial_page.size() + t.tokens.size() * sizeof(int32_t);
}

}  // namespace

StatusOr<PageBundle> Engine::ExportPromptPages(std::span<const int32_t> prompt,
                                               const std::string& fingerprint,
                                               std::shared_ptr<const SequenceTail> tail) const {
  PageBundle bundle;
  bundle.fingerprint = fingerprint;
  bundle.page_tokens = runner_->page_tokens();
  bundle.page_bytes = runner_->page_bytes();
  std::vector<BlockKey> keys;
  AppendBlockKeys(prompt, static_cast<int64_t>(prompt.size()), bundle.page_tokens,
                  runner_->prompt_sensitive(), &keys);
  const std::vector<int32_t> pages = kv_->Find(keys);
  bundle.blocks.reserve(pages.size());
  for (size_t i = 0; i < pages.size(); ++i) {
    const std::span<uint8_t> bytes = runner_->PageBytes(pages[i]);
    if (static_cast<int64_t>(bytes.size()) != bundle.page_bytes) {
      return Unimplemented("KV hand-off: this model runner cannot read its pages");
    }
    PageBlock& b = bundle.blocks.emplace_back();
    b.key = keys[i];
    b.bytes.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    b.checksum = PageChecksum(b.bytes);
  }
  // The tail continues the pages only when all of its complete pages are among them.
  if (tail && std::ranges::equal(tail->tokens, prompt) && TailFitsBundle(*tail, bundle)) {
    bundle.tail = std::move(tail);
  }
  return bundle;
}

StatusOr<ImportResult> Engine::ImportPages(const PageBundle& bundle,
                                           const std::string& fingerprint) {
  if (bundle.fingerprint != fingerprint) {
    return InvalidArgument("KV hand-off: the sender's fingerprint " + bundle.fingerprint +
                           " differs from this engine's " + fingerprint +
                           " (model, page layout, kernel level or index-key mode)");
  }
  if (bundle.page_tokens != runner_->page_tokens() || bundle.page_bytes != runner_->page_bytes()) {
    return InvalidArgument("KV hand-off: pages of " + std::to_string(bundle.page_tokens) +
                           " positions / " + std::to_string(bundle.page_bytes) +
                           " bytes, this engine's hold " + std::to_string(runner_->page_tokens()) +
                           " / " + std::to_string(runner_->page_bytes()));
  }
  if (!kv_->prefix_cache()) {
    return InvalidArgument("KV hand-off: the receiving engine runs without the prefix cache");
  }
  // Every checksum before any page is touched: a corrupt bundle changes nothing.
  for (size_t i = 0; i < bundle.blocks.size(); ++i) {
    const PageBlock& b = bundle.blocks[i];
    if (PageChecksum(b.bytes) != b.checksum) {
      return DataLoss("KV hand-off: page " + std::to_string(i) + " of " +
                      std::to_string(bundle.blocks.size()) + " fails its checksum");
    }
  }
  if (bundle.tail) {
    const SequenceTail& t = *bundle.tail;
    if (TailChecksum(t) != t.checksum) {
      return DataLoss("KV hand-off: the sequence tail (" + std::to_string(t.tokens.size()) +
                      " positions) fails its checksum");
    }
    if (!TailFitsBundle(t, bundle)) {
      return DataLoss("KV hand-off: a tail of " + std::to_string(t.tokens.size()) +
                      " positions of a " + std::to_string(t.prompt_len) +
                      "-token prompt does not fit " + std::to_string(bundle.blocks.size()) +
                      " pages");
    }
  }
  ImportResult result;
  // The pages written so far keep their reference until the end, so that allocating the next
  // one evicts older cached pages, never this bundle's head.
  std::vector<int32_t> held;
  Status error;
  for (size_t i = 0; i < bundle.blocks.size(); ++i) {
    const PageBlock& b = bundle.blocks[i];
    if (kv_->Peek(std::span<const BlockKey>(&b.key, 1)) == 1) {
      ++result.cached;
      continue;
    }
    const int32_t page = kv_->Allocate();
    if (page < 0) {
      result.dropped = static_cast<int64_t>(bundle.blocks.size() - i);
      break;
    }
    held.push_back(page);
    const std::span<uint8_t> dst = runner_->PageBytes(page);
    if (dst.size() != b.bytes.size()) {
      error = Unimplemented("KV hand-off: this model runner cannot write its pages");
      break;
    }
    std::memcpy(dst.data(), b.bytes.data(), dst.size());
    kv_->Register(page, b.key);
    ++result.imported;
  }
  // Ref 0 and registered: cached pages, as after a colocated prefill.
  for (int32_t page : held) kv_->Release(page);
  if (!error.ok()) return error;
  if (bundle.tail && result.dropped == 0) {
    // The newest tail for a prompt replaces an older one; the oldest go first.
    std::erase_if(tails_, [&](const std::shared_ptr<const SequenceTail>& t) {
      return t->tokens == bundle.tail->tokens;
    });
    tails_.push_back(bundle.tail);
    size_t bytes = 0;
    for (const auto& t : tails_) bytes += TailBytes(*t);
    while (tails_.size() > 1 && (tails_.size() > kHeldTails || bytes > kHeldTailBytes)) {
      bytes -= TailBytes(*tails_.front());
      tails_.pop_front();
    }
    result.tail_held = true;
  }
  return result;
}

std::shared_ptr<const SequenceTail> Engine::CaptureTail(const Sequence& seq) const {
  StatusOr<std::string> state = runner_->SaveSequence(*seq.runner);
  if (!state.ok()) return nullptr;
  auto tail = std::make_shared<SequenceTail>();
  tail->tokens.assign(seq.tokens.begin(), seq.tokens.begin() + seq.computed);
  tail->prompt_len = seq.request.leg_of_prompt_len;
  tail->state = *std::move(state);
  const int64_t p = runner_->page_tokens();
  if (seq.computed % p != 0) {
    const std::span<uint8_t> bytes =
        runner_->PageBytes(seq.pages[static_cast<size_t>(seq.computed / p)]);
    if (bytes.empty()) return nullptr;
    tail->partial_page.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  tail->checksum = TailChecksum(*tail);
  return tail;
}

std::shared_ptr<const SequenceTail> Engine::TakeTail(const Request& request) {
  const auto len = static_cast<int64_t>(request.prompt.size());
  if (tails_.empty() || len < 2) return nullptr;
  const std::span<const int32_t> head(request.prompt.data(), static_cast<size_t>(len - 1));
  for (auto it = tails_.begin(); it != tails_.end(); ++it) {
    // Prompt logprobs read every prompt position: only a tail that carries them will do.
    if ((*it)->prompt_len == len && std::ranges::equal((*it)->tokens, head) &&
        (*it)->prompt_logprobs_k == request.params.prompt_logprobs) {
      std::shared_ptr<const SequenceTail> t = *it;
      tails_.erase(it);
      return t;
    }
  }
  return nullptr;
}

}  // namespace deepinfer::engine
