// libFuzzer target: arbitrary bytes as V4.1 generated text for the output parser.
//
// Input: byte 0 picks thinking mode (bit 0) and seeds the split pattern; the rest is the text.
// Promises checked (a broken one aborts, which libFuzzer reports as a crash):
//   - neither parser crashes or hits UB (ASan/UBSan watch), whatever the bytes;
//   - the streaming parser, fed the text in pieces, reaches the same verdict as the one-shot
//     parser, and when that accepts, the concatenated deltas equal its result exactly (the
//     streaming parser CHECKs its emitted prefixes itself; this compares the totals);
//   - feeding one byte at a time gives the same totals as feeding the pseudo-random pieces.
// Built with clang -fsanitize=fuzzer when DEEPINFER_BUILD_FUZZ=ON (fuzz/CMakeLists.txt); the
// normal build replays fuzz/corpus/output_parser through it with fuzz/replay_main.cc.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "tokenizer/chat/output_parser.h"
#include "tokenizer/chat/output_stream_parser.h"

namespace {

using deepinfer::Status;
using deepinfer::tokenizer::OutputStreamParser;
using deepinfer::tokenizer::ParseCompletionV41;
using deepinfer::tokenizer::ParseDelta;
using deepinfer::tokenizer::ParsedToolCall;

struct Totals {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> calls;
  Status status;
};

Totals Stream(std::string_view text, bool thinking, uint32_t seed, bool bytewise) {
  OutputStreamParser parser(thinking);
  Totals t;
  auto add = [&t](const ParseDelta& d) {
    t.reasoning += d.reasoning_content;
    t.content += d.content;
    t.calls.insert(t.calls.end(), d.tool_calls.begin(), d.tool_calls.end());
  };
  uint32_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < text.size();) {
    state = state * 1103515245u + 12345u;
    const size_t n = bytewise ? 1 : (state >> 16) % 17;  // 0..16 bytes, empty pieces included
    add(parser.Feed(text.substr(i, n)));
    i += n;
  }
  add(parser.Finish(&t.status));
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool thinking = (data[0] & 1) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  const auto one_shot = ParseCompletionV41(text, thinking);
  const Totals pieces = Stream(text, thinking, data[0], /*bytewise=*/false);
  const Totals bytes = Stream(text, thinking, 0, /*bytewise=*/true);
  for (const Totals* t : {&pieces, &bytes}) {
    CHECK(t->status.ok() == one_shot.ok()) << "verdicts differ: " << t->status.message();
    if (!one_shot.ok()) {
      CHECK(t->status.message() == one_shot.status().message()) << t->status.message();
      continue;
    }
    CHECK(t->reasoning == one_shot->reasoning_content) << "reasoning differs";
    CHECK(t->content == one_shot->content) << "content differs";
    CHECK(t->calls == one_shot->tool_calls) << "tool calls differ";
  }
  // The lenient flush is deterministic too: both splittings end with the same text.
  CHECK(pieces.reasoning == bytes.reasoning && pieces.content == bytes.content &&
        pieces.calls == bytes.calls)
      << "splittings disagree";
  return 0;
}
