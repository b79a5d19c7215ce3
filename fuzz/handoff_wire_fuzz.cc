// libFuzzer target: arbitrary bytes as what a decode instance receives over UCX for a KV hand-off
// (the first byte picks the reader): a page bundle (engine::DecodeBundle), or a sequence's state
// (model::RestoreSequenceState into a fresh state of a small fixed shape).
//
// Neither reader may crash or hit UB (ASan/UBSan watch); each must refuse with a Status or accept
// bytes that its writer reproduces exactly (the wire forms have one encoding per value), and a
// state restored from bytes must describe that shape (its rings and groups keep their sizes).
// Broken promises abort (a crash for libFuzzer).
//
// Built with clang -fsanitize=fuzzer when DEEPINFER_BUILD_FUZZ=ON (fuzz/CMakeLists.txt); the
// normal build replays fuzz/corpus/handoff_wire through it with fuzz/replay_main.cc.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "engine/page_handoff.h"
#include "model/deepseek_v41/sequence_snapshot.h"

namespace {

// Two backbone layers (the second with a pooling compressor of ratio 2) and one DSpark stage,
// rings of 4 positions x 8 lanes: the shape every restored state must keep.
deepinfer::model::SequenceState FreshState() {
  deepinfer::model::SequenceState s;
  s.layers.resize(2);
  for (auto& c : s.layers) c.ring.assign(32, 0);
  s.layers[1].group_kv.assign(16, 0.0f);
  s.layers[1].group_score.assign(16, 0.0f);
  s.dspark.assign(1, std::vector<uint16_t>(32, 0));
  return s;
}

void CheckBundle(std::string_view wire) {
  auto bundle = deepinfer::engine::DecodeBundle(wire);
  if (!bundle.ok()) {
    CHECK(!bundle.status().message().empty());
    return;
  }
  for (const auto& b : bundle->blocks) {
    CHECK_EQ(static_cast<int64_t>(b.bytes.size()), bundle->page_bytes);
  }
  CHECK(deepinfer::engine::EncodeBundle(*bundle) == wire) << "a bundle has two encodings";
}

void CheckState(std::string_view wire) {
  deepinfer::model::SequenceState s = FreshState();
  const deepinfer::Status st = deepinfer::model::RestoreSequenceState(wire, &s);
  if (!st.ok()) {
    CHECK(!st.message().empty());
    return;
  }
  const deepinfer::model::SequenceState shape = FreshState();
  for (size_t i = 0; i < s.layers.size(); ++i) {
    CHECK_EQ(s.layers[i].ring.size(), shape.layers[i].ring.size());
    CHECK_EQ(s.layers[i].group_kv.size(), shape.layers[i].group_kv.size());
    CHECK_EQ(s.layers[i].group_score.size(), shape.layers[i].group_score.size());
  }
  CHECK_EQ(s.dspark.size(), 1u);
  CHECK_EQ(static_cast<int64_t>(s.tokens.size()), s.length);
  CHECK(s.dspark_length >= 0 && s.dspark_length <= s.length);
  CHECK(deepinfer::model::EncodeSequenceState(s) == wire) << "a state has two encodings";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    CheckBundle(rest);
  } else {
    CheckState(rest);
  }
  return 0;
}
