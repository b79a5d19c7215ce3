// libFuzzer target: arbitrary bytes as a .safetensors file.
//
// The parser must never crash or hit UB (ASan/UBSan watch), and every file it accepts must keep
// the promises of io/safetensors.h: each view lies inside the data section of the buffer, has
// numel * dtype-size bytes, no two non-empty views overlap, names are unique and Find() agrees.
// A refusal must name the file. Broken promises abort (a crash for libFuzzer).
//
// Built with clang -fsanitize=fuzzer when DEEPINFER_BUILD_FUZZ=ON (fuzz/CMakeLists.txt); the
// normal build replays fuzz/corpus/safetensors_header through it with fuzz/replay_main.cc.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/check.h"
#include "io/safetensors.h"

namespace {

constexpr std::string_view kName = "fuzz-input.safetensors";

void CheckAccepted(const deepinfer::io::SafetensorsFile& f, std::span<const std::byte> bytes) {
  using deepinfer::DTypeSize;
  const std::byte* lo = bytes.data() + f.data_offset();
  const std::byte* hi = bytes.data() + bytes.size();
  CHECK(f.data_offset() >= 8 && f.data_offset() <= bytes.size()) << f.data_offset();
  std::unordered_set<std::string> names;
  std::vector<std::pair<const std::byte*, const std::byte*>> ranges;
  uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    const deepinfer::TensorView& v = t.view;
    CHECK(names.insert(t.name).second) << "duplicate " << t.name;
    CHECK(f.Find(t.name) == &v) << t.name;
    CHECK(v.data >= lo && v.data <= hi) << t.name;
    CHECK(v.n_bytes <= static_cast<size_t>(hi - v.data)) << t.name;
    CHECK(v.data == lo + t.begin && t.end - t.begin == v.n_bytes) << t.name;
    int64_t numel = 1;
    for (int64_t d : v.shape) {
      CHECK(d >= 0) << t.name;
      CHECK(!__builtin_mul_overflow(numel, d, &numel)) << t.name;
    }
    CHECK(static_cast<uint64_t>(numel) * DTypeSize(v.dtype) == v.n_bytes) << t.name;
    if (v.n_bytes > 0) ranges.emplace_back(v.data, v.data + v.n_bytes);
    total += v.n_bytes;
    // Touch the first and last byte: ASan reports any read outside the buffer.
    if (v.n_bytes > 0) {
      volatile std::byte first = v.data[0];
      volatile std::byte last = v.data[v.n_bytes - 1];
      (void)first;
      (void)last;
    }
  }
  CHECK(total == f.tensor_bytes());
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    CHECK(ranges[i - 1].second <= ranges[i].first) << "overlap";
  }
  CHECK(!f.Get("\x01not-a-tensor-name").ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto file = deepinfer::io::SafetensorsFile::FromBuffer(bytes, kName);
  if (file.ok()) {
    CheckAccepted(*file, bytes);
  } else {
    CHECK(file.status().message().rfind(std::string(kName) + ": ", 0) == 0)
        << file.status().message();
  }
  return 0;
}
