// The KV hand-off: bundle wire form, and the Engine methods that fill and take bundles
// (declared in engine.h, defined here beside the format they produce).
#include "engine/page_handoff.h"

#include <cstring>

#include <xxhash.h>

#include "engine/engine.h"

namespace deepinfer::engine {
namespace {

constexpr char kMagic[4] = {'D', 'I', 'K', 'V'};
constexpr uint32_t kVersion = 1;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Reads fixed-size values off the front of a byte view; false once it runs out.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool Take(size_t n, std::string* out) {
    if (in_.size() < n) return false;
    out->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  size_t left() const { return in_.size(); }

 private:
  std::string_view in_;
};

}  // namespace

uint64_t PageChecksum(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::string EncodeBundle(const PageBundle& bundle) {
  std::string out;
  out.reserve(64 + bundle.fingerprint.size() +
              bundle.blocks.size() * (24 + static_cast<size_t>(bundle.page_bytes)));
  out.append(kMagic, sizeof(kMagic));
  Put(&out, kVersion);
  Put(&out, static_cast<uint32_t>(bundle.fingerprint.size()));
  out += bundle.fingerprint;
  Put(&out, bundle.page_tokens);
  Put(&out, bundle.page_bytes);
  Put(&out, static_cast<uint32_t>(bundle.blocks.size()));
  for (const PageBlock& b : bundle.blocks) {
    CHECK_EQ(static_cast<int64_t>(b.bytes.size()), bundle.page_bytes);
    Put(&out, b.key.lo);
    Put(&out, b.key.hi);
    Put(&out, b.checksum);
    out += b.bytes;
  }
  return out;
}

StatusOr<PageBundle> DecodeBundle(std::string_view wire) {
  Reader r(wire);
  std::string magic;
  uint32_t version = 0, fp_len = 0, n_blocks = 0;
  if (!r.Take(sizeof(kMagic), &magic) || std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0) {
    return DataLoss("KV hand-off: not a page bundle (bad magic)");
  }
  if (!r.Get(&version) || version != kVersion) {
    return DataLoss("KV hand-off: bundle version " + std::to_string(version) + ", expected " +
                    std::to_string(kVersion));
  }
  PageBundle b;
  if (!r.Get(&fp_len) || !r.Take(fp_len, &b.fingerprint) || !r.Get(&b.page_tokens) ||
      !r.Get(&b.page_bytes) || !r.Get(&n_blocks)) {
    return DataLoss("KV hand-off: bundle header cut short");
  }
  if (b.page_bytes <= 0 || b.page_tokens <= 0 ||
      r.left() != n_blocks * (24 + static_cast<uint64_t>(b.page_bytes))) {
    return DataLoss("KV hand-off: bundle of " + std::to_string(wire.size()) +
                    " bytes does not hold " + std::to_string(n_blocks) + " pages of " +
                    std::to_string(b.page_bytes) + " bytes");
  }
  b.blocks.resize(n_blocks);
  for (PageBlock& blk : b.blocks) {
    CHECK(r.Get(&blk.key.lo) && r.Get(&blk.key.hi) && r.Get(&blk.checksum) &&
          r.Take(static_cast<size_t>(b.page_bytes), &blk.bytes));
  }
  return b;
}

StatusOr<PageBundle> Engine::ExportPromptPages(std::span<const int32_t> prompt,
                                               const std::string& fingerprint) const {
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
  return result;
}

}  // namespace deepinfer::engine
