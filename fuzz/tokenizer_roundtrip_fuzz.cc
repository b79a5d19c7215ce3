// libFuzzer target: the tokenizer round trip. For valid UTF-8 input s, decode(encode(s)) == s
// (special tokens kept), and the streaming detokenizer fed the same ids produces the same text;
// invalid UTF-8 must be rejected by Encode with an error, never crash.
//
// Needs the DeepSeek-V3 tokenizer directory: $DEEPINFER_TOKENIZER_DIR, else the build's
// DEEPINFER_TOKENIZER_DIR (scripts/install-deps.sh installs it).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

const deepinfer::tokenizer::Tokenizer& Tok() {
  static const deepinfer::tokenizer::Tokenizer* tok = [] {
    const char* env = std::getenv("DEEPINFER_TOKENIZER_DIR");
    const std::string dir = env != nullptr ? env : DEEPINFER_TOKENIZER_DIR;
    auto loaded = deepinfer::tokenizer::Tokenizer::Load(dir);
    if (!loaded.ok()) {
      std::fprintf(stderr, "tokenizer_roundtrip_fuzz: %s\n", loaded.status().ToString().c_str());
      std::abort();
    }
    return std::move(loaded).value().release();
  }();
  return *tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepinfer::tokenizer;
  if (size > 8192) return -1;  // long inputs add no new paths, only time
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Tokenizer& tok = Tok();
  auto ids = tok.Encode(text);
  if (!ValidateUtf8(text).ok()) {
    if (ids.ok()) {
      std::fprintf(stderr, "Encode accepted invalid UTF-8\n");
      std::abort();
    }
    return 0;
  }
  if (!ids.ok()) {
    std::fprintf(stderr, "Encode failed on valid UTF-8: %s\n", ids.status().ToString().c_str());
    std::abort();
  }
  auto decoded = tok.Decode(*ids, /*skip_special_tokens=*/false);
  if (!decoded.ok() || *decoded != text) {
    std::fprintf(stderr, "decode(encode(s)) != s\n");
    std::abort();
  }
  auto detok = StreamingDetokenizer::Create(tok, {}, /*skip_special_tokens=*/false);
  std::string streamed;
  for (int32_t id : *ids) streamed += detok->Push(id).value();
  streamed += detok->Finish();
  if (streamed != text) {
    std::fprintf(stderr, "streaming detokenizer != s\n");
    std::abort();
  }
  (void)tok.Decode(*ids, /*skip_special_tokens=*/true).value();
  return 0;
}
