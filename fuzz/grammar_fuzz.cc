// libFuzzer target: the grammar front ends (JSON Schema, regex, EBNF) and the matcher on
// arbitrary input, over a byte vocabulary (256 one-byte tokens + EOS).
//
// Input: byte 0 picks the front end (% 3: JSON Schema, regex, EBNF) and seeds the walk; the rest
// is the schema / pattern / grammar text. A JSON Schema is compiled and walked in both modes of
// JsonSchemaOptions::strict. Promises checked (a broken one aborts, which libFuzzer
// reports as a crash):
//   - compiling never crashes, hits UB (ASan/UBSan watch) or runs away: a hostile input is
//     refused with InvalidArgument (the front ends bound nesting, repetition counts and the
//     expanded grammar size);
//   - a compiled grammar's matcher, walked for up to 64 tokens picked from its own masks, keeps
//     its contract: a token is accepted exactly when its mask bit is set; after any accepted
//     token the mask is not empty until the stop token ended the walk (no dead ends); EOS is
//     allowed exactly when CanEnd(); Rollback returns to the same mask;
//   - when byte 0 has bit 3 set, the grammar also builds its mask entries ahead of use
//     (CompiledGrammar::Precompute, 20 ms budget) and every mask equals, token for token, that
//     of the same grammar compiled with entries built on first use.
// Built with clang -fsanitize=fuzzer when DEEPINFER_BUILD_FUZZ=ON (fuzz/CMakeLists.txt); the
// normal build replays fuzz/corpus/grammar through it with fuzz/replay_main.cc.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "structured/compiled_grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/vocabulary.h"

namespace {

using deepinfer::structured::CompiledGrammar;
using deepinfer::structured::GrammarCompiler;
using deepinfer::structured::GrammarMatcher;
using deepinfer::structured::Vocabulary;

constexpr int32_t kEos = 256;

std::shared_ptr<const Vocabulary> Bytes() {
  static const std::shared_ptr<const Vocabulary> v = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
    bytes.emplace_back("<eos>");
    std::vector<bool> usable(bytes.size(), true);
    return Vocabulary::Create(std::move(bytes), std::move(usable), {kEos}).value();
  }();
  return v;
}

bool Bit(const std::vector<uint32_t>& bits, int32_t id) { return (bits[id / 32] >> (id % 32)) & 1; }

// reference: the same grammar with lazily built entries, walked in lockstep (or null).
void Walk(const std::shared_ptr<const CompiledGrammar>& g, uint32_t seed,
          const std::shared_ptr<const CompiledGrammar>& reference) {
  GrammarMatcher m(g);
  std::unique_ptr<GrammarMatcher> ref;
  if (reference != nullptr) ref = std::make_unique<GrammarMatcher>(reference);
  std::vector<uint32_t> bits(static_cast<size_t>(m.n_words()));
  std::vector<uint32_t> again(bits.size()), lazy(bits.size());
  uint32_t state = seed * 2654435761u + 7;
  for (int step = 0; step < 64 && !m.IsTerminated(); ++step) {
    m.FillNextTokenBitmask(bits.data());
    if (ref != nullptr) {
      ref->FillNextTokenBitmask(lazy.data());
      CHECK(bits == lazy) << "a precomputed mask differs from the lazy one";
    }
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t <= kEos; ++t) {
      if (Bit(bits, t)) allowed.push_back(t);
    }
    CHECK(!allowed.empty()) << "dead end after " << m.n_accepted() << " tokens";
    CHECK_EQ(Bit(bits, kEos), m.CanEnd()) << "EOS allowed iff the grammar can end";
    state = state * 1103515245u + 12345u;
    // A token the mask forbids is refused and changes nothing.
    const auto probe = static_cast<int32_t>((state >> 8) % 256);
    if (!Bit(bits, probe)) {
      CHECK(!m.AcceptToken(probe)) << "accepted masked-out token " << probe;
    }
    const int32_t pick = allowed[(state >> 16) % allowed.size()];
    CHECK(m.AcceptToken(pick)) << "refused allowed token " << pick;
    if (ref != nullptr) CHECK(ref->AcceptToken(pick));
    if ((state & 7) == 0 && !m.IsTerminated()) {
      // Roll back and redo: the mask after the token must not change.
      m.FillNextTokenBitmask(again.data());
      m.Rollback(1);
      CHECK(m.AcceptToken(pick));
      m.FillNextTokenBitmask(bits.data());
      CHECK(bits == again) << "rollback changed the mask";
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool precompute = (mode & 8) != 0;
  GrammarCompiler compiler(Bytes(), /*max_cached=*/1), lazy(Bytes(), /*max_cached=*/1);
  if (precompute) compiler.set_precompute_seconds(0.02);
  using Compiled = deepinfer::StatusOr<std::shared_ptr<const CompiledGrammar>>;
  const auto check = [&](const auto& compile) {
    const Compiled g = compile(compiler);
    if (!g.ok()) {
      CHECK(g.status().code() == deepinfer::StatusCode::kInvalidArgument)
          << "a refused grammar must be InvalidArgument: " << g.status().ToString();
      return;
    }
    Walk(*g, mode, precompute ? compile(lazy).value() : nullptr);
  };
  if (mode % 3 == 0) {
    for (const bool strict : {true, false}) {
      deepinfer::structured::JsonSchemaOptions options;
      options.strict = strict;
      check([&](GrammarCompiler& c) { return c.CompileJsonSchema(text, options); });
    }
  } else if (mode % 3 == 1) {
    check([&](GrammarCompiler& c) { return c.CompileRegex(text); });
  } else {
    check([&](GrammarCompiler& c) { return c.CompileEbnf(text); });
  }
  return 0;
}
