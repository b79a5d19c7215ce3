// The KV hand-off's wire form (page_handoff.h): page bundles with their optional sequence tail,
// and their checksums. Pure functions; the Engine methods that fill and take bundles are in
// page_handoff.cc.
#include "engine/page_handoff.h"

#include <cstring>
#include <memory>

#include <xxhash.h>

#include "core/byte_io.h"
#include "core/check.h"

namespace deepinfer::engine {
namespace {

constexpr char kMagic[4] = {'D', 'I', 'K', 'V'};
constexpr uint32_t kVersion = 2;

}  // namespace

uint64_t PageChecksum(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

uint64_t TailChecksum(const SequenceTail& tail) {
  XXH3_state_t* st = XXH3_createState();
  CHECK(st != nullptr);
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, &tail.prompt_len, sizeof(tail.prompt_len));
  XXH3_64bits_update(st, tail.tokens.data(), tail.tokens.size() * sizeof(int32_t));
  XXH3_64bits_update(st, tail.state.data(), tail.state.size());
  XXH3_64bits_update(st, tail.partial_page.data(), tail.partial_page.size());
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

bool TailFitsBundle(const SequenceTail& tail, const PageBundle& bundle) {
  const auto n = static_cast<int64_t>(tail.tokens.size());
  const bool partial = n % bundle.page_tokens != 0;
  return tail.prompt_len == n + 1 &&
         n / bundle.page_tokens == static_cast<int64_t>(bundle.blocks.size()) &&
         static_cast<int64_t>(tail.partial_page.size()) == (partial ? bundle.page_bytes : 0);
}

std::string EncodeBundle(const PageBundle& bundle) {
  std::string out;
  out.reserve(64 + bundle.fingerprint.size() +
              bundle.blocks.size() * (24 + static_cast<size_t>(bundle.page_bytes)));
  out.append(kMagic, sizeof(kMagic));
  PutValue(&out, kVersion);
  PutValue(&out, static_cast<uint32_t>(bundle.fingerprint.size()));
  out += bundle.fingerprint;
  PutValue(&out, bundle.page_tokens);
  PutValue(&out, bundle.page_bytes);
  PutValue(&out, static_cast<uint32_t>(bundle.blocks.size()));
  for (const PageBlock& b : bundle.blocks) {
    CHECK_EQ(static_cast<int64_t>(b.bytes.size()), bundle.page_bytes);
    PutValue(&out, b.key.lo);
    PutValue(&out, b.key.hi);
    PutValue(&out, b.checksum);
    out += b.bytes;
  }
  PutValue(&out, static_cast<uint8_t>(bundle.tail ? 1 : 0));
  if (bundle.tail) {
    const SequenceTail& t = *bundle.tail;
    PutValue(&out, t.prompt_len);
    PutArray(&out, t.tokens);
    PutBytes(&out, t.state);
    PutBytes(&out, t.partial_page);
    PutValue(&out, t.checksum);
  }
  return out;
}

StatusOr<PageBundle> DecodeBundle(std::string_view wire) {
  ByteReader r(wire);
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
  // The blocks and at least the tail flag after them (no product that can wrap around).
  if (b.page_bytes <= 0 || b.page_tokens <= 0 || static_cast<uint64_t>(b.page_bytes) >= r.left() ||
      n_blocks > (r.left() - 1) / (24 + static_cast<uint64_t>(b.page_bytes))) {
    return DataLoss("KV hand-off: bundle of " + std::to_string(wire.size()) +
                    " bytes does not hold " + std::to_string(n_blocks) + " pages of " +
                    std::to_string(b.page_bytes) + " bytes");
  }
  b.blocks.resize(n_blocks);
  for (PageBlock& blk : b.blocks) {
    CHECK(r.Get(&blk.key.lo) && r.Get(&blk.key.hi) && r.Get(&blk.checksum) &&
          r.Take(static_cast<size_t>(b.page_bytes), &blk.bytes));
  }
  uint8_t has_tail = 0;
  CHECK(r.Get(&has_tail));
  if (has_tail > 1) return DataLoss("KV hand-off: bad tail flag");
  if (has_tail == 1) {
    auto t = std::make_shared<SequenceTail>();
    if (!r.Get(&t->prompt_len) || !r.GetArray(&t->tokens) || !r.GetBytes(&t->state) ||
        !r.GetBytes(&t->partial_page) || !r.Get(&t->checksum)) {
      return DataLoss("KV hand-off: the sequence tail is cut short");
    }
    b.tail = std::move(t);
  }
  if (r.left() != 0) {
    return DataLoss("KV hand-off: " + std::to_string(r.left()) + " bytes past the bundle's end");
  }
  return b;
}

}  // namespace deepinfer::engine
