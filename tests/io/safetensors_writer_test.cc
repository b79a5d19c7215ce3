// SafetensorsWriter / CheckpointWriter: files written in chunks read back through the project's
// reader (SafetensorsFile, Checkpoint) with the same names, order, dtypes, shapes and bytes; the
// single-file layout is byte-identical to the independent builder in test_files.h; shards follow
// the packing rule; misuse is an error and leaves no finished-looking file behind.
#include "io/safetensors_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "test_files.h"

namespace deepinfer::io {
namespace {

using testing::BuildSafetensors;
using testing::RawTensor;
using testing::TempDir;

struct Sample {
  std::vector<TensorEntry> entries;
  std::vector<std::string> data;  // bytes per tensor
};

// Tensors of several dtypes and sizes (one empty, one odd-sized), random contents.
Sample MakeSample() {
  Sample s;
  s.entries = {{"embed.weight", DType::kBF16, {7, 5}}, {"a.scale", DType::kF8E8M0, {3, 1}},
               {"empty", DType::kF32, {0, 4}},         {"layers.0.w", DType::kF8E4M3, {33, 17}},
               {"experts.w1", DType::kI8, {9, 8}},     {"bias", DType::kF32, {11}},
               {"quote\"name", DType::kU8, {1}}};
  std::mt19937 rng(7);
  for (const TensorEntry& e : s.entries) {
    std::string bytes(e.ByteSize(), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    s.data.push_back(bytes);
  }
  return s;
}

// Appends the concatenated data in chunks of `chunk` bytes.
template <typename Writer>
void AppendAll(Writer& w, const Sample& s, size_t chunk) {
  std::string all;
  for (const std::string& d : s.data) all += d;
  for (size_t i = 0; i < all.size(); i += chunk) {
    const size_t n = std::min(chunk, all.size() - i);
    ASSERT_TRUE(w.Append(std::as_bytes(std::span<const char>(all.data() + i, n))).ok());
  }
}

void ExpectTensor(const TensorView& v, const TensorEntry& e, const std::string& bytes) {
  EXPECT_EQ(v.dtype, e.dtype) << e.name;
  EXPECT_EQ(v.shape, e.shape) << e.name;
  ASSERT_EQ(v.n_bytes, bytes.size()) << e.name;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.data), v.n_bytes), bytes) << e.name;
}

TEST(SafetensorsWriter, SingleFileRoundTripsAndMatchesIndependentBuilder) {
  TempDir dir;
  const Sample s = MakeSample();
  const std::string path = dir.File("x.safetensors");
  StatusOr<std::unique_ptr<SafetensorsWriter>> w = SafetensorsWriter::Create(path, s.entries);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  AppendAll(**w, s, 5);
  EXPECT_FALSE(std::filesystem::exists(path)) << "visible before Finish";
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  StatusOr<SafetensorsFile> f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(f->data_offset() % 8, 0u);
  ASSERT_EQ(f->num_tensors(), s.entries.size());
  for (size_t i = 0; i < s.entries.size(); ++i) {
    EXPECT_EQ(f->tensors()[i].name, s.entries[i].name);  // header order = declaration order
    ExpectTensor(f->tensors()[i].view, s.entries[i], s.data[i]);
  }

  std::vector<RawTensor> raw;
  for (size_t i = 0; i < s.entries.size(); ++i) {
    const TensorEntry& e = s.entries[i];
    std::string name = e.name == "quote\"name" ? "quote\\\"name" : e.name;  // JSON-escaped
    raw.push_back({name, std::string(DTypeName(e.dtype)), e.shape, s.data[i]});
  }
  const std::string expected = BuildSafetensors(raw, R"({"format":"pt"})");
  const std::span<const std::byte> got = f->file_bytes();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(got.data()), got.size()), expected);
}

TEST(SafetensorsWriter, RewritesTheFixtureTensorForTensor) {
  StatusOr<SafetensorsFile> src = SafetensorsFile::Open(testing::kFixtureFile);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::vector<TensorEntry> entries;
  for (const SafetensorsTensor& t : src->tensors()) {
    entries.push_back({t.name, t.view.dtype, t.view.shape});
  }
  TempDir dir;
  auto w = SafetensorsWriter::Create(dir.File("m.safetensors"), entries);
  ASSERT_TRUE(w.ok());
  for (const SafetensorsTensor& t : src->tensors()) {
    ASSERT_TRUE((*w)->Append({t.view.data, t.view.n_bytes}).ok());
  }
  ASSERT_TRUE((*w)->Finish().ok());
  StatusOr<SafetensorsFile> back = SafetensorsFile::Open(dir.File("m.safetensors"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->num_tensors(), src->num_tensors());
  // The data section is the fixture's, byte for byte (both pack without gaps in header order).
  const auto a = src->file_bytes().subspan(src->data_offset());
  const auto b = back->file_bytes().subspan(back->data_offset());
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0);
}

TEST(CheckpointWriter, ShardedRoundTripThroughCheckpointOpen) {
  const Sample s = MakeSample();
  // Sizes: 70, 3, 0, 561, 72, 44, 1. Limit 100: [70 3 0] [561] [72] [44 1].
  const std::vector<std::vector<size_t>> plan = PlanShards(s.entries, 100);
  EXPECT_EQ(plan, (std::vector<std::vector<size_t>>{{0, 1, 2}, {3}, {4}, {5, 6}}));
  for (size_t chunk : {size_t{1}, size_t{64}, size_t{100000}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    TempDir dir;
    CheckpointWriterOptions options;
    options.max_shard_bytes = 100;
    auto w = CheckpointWriter::Create(dir.path(), s.entries, options);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    AppendAll(**w, s, chunk);
    ASSERT_TRUE((*w)->Finish().ok());
    EXPECT_EQ((*w)->file_names(),
              (std::vector<std::string>{
                  "model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors",
                  "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors"}));
    EXPECT_FALSE(std::filesystem::exists(dir.File("model.safetensors")));
    CheckpointOptions copts;
    copts.show_progress = false;
    StatusOr<Checkpoint> c = Checkpoint::Open(dir.path(), copts);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_EQ(c->files().size(), 4u);
    ASSERT_EQ(c->num_tensors(), s.entries.size());
    for (size_t i = 0; i < s.entries.size(); ++i) {
      const TensorView* v = c->Find(s.entries[i].name);
      ASSERT_NE(v, nullptr) << s.entries[i].name;
      ExpectTensor(*v, s.entries[i], s.data[i]);
    }
  }
}

TEST(CheckpointWriter, UnshardedWritesModelSafetensors) {
  const Sample s = MakeSample();
  TempDir dir;
  auto w = CheckpointWriter::Create(dir.path() + "/sub/dir", s.entries, {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  AppendAll(**w, s, 13);
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/sub/dir/model.safetensors.index.json"));
  StatusOr<Checkpoint> c = Checkpoint::Open(dir.path() + "/sub/dir");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->files().size(), 1u);
  for (size_t i = 0; i < s.entries.size(); ++i) {
    ExpectTensor(*c->Find(s.entries[i].name), s.entries[i], s.data[i]);
  }
}

TEST(CheckpointWriter, ReplacesAnEarlierCheckpointInTheDirectory) {
  const Sample s = MakeSample();
  TempDir dir;
  testing::WriteFile(dir.File("notes.txt"), "kept");
  CheckpointWriterOptions sharded;
  sharded.max_shard_bytes = 100;
  for (const CheckpointWriterOptions& o : {sharded, CheckpointWriterOptions{}, sharded}) {
    auto w = CheckpointWriter::Create(dir.path(), s.entries, o);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    AppendAll(**w, s, 1000);
    ASSERT_TRUE((*w)->Finish().ok());
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      files += e.path().filename() != "notes.txt";
    }
    EXPECT_EQ(files, o.max_shard_bytes ? 5u : 1u);  // 4 shards + index, or model.safetensors
    StatusOr<Checkpoint> c = Checkpoint::Open(dir.path());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->files().size(), o.max_shard_bytes ? 4u : 1u);
  }
  EXPECT_TRUE(std::filesystem::exists(dir.File("notes.txt")));
}

TEST(SafetensorsWriter, MisuseIsAnErrorAndLeavesNoFile) {
  TempDir dir;
  const std::vector<TensorEntry> two = {{"a", DType::kU8, {4}}, {"b", DType::kBF16, {2}}};
  const std::byte bytes[16] = {};
  {
    auto w = SafetensorsWriter::Create(dir.File("short.safetensors"), two);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append({bytes, 5}).ok());
    const Status s = (*w)->Finish();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("only 5 of 8"), std::string::npos) << s.message();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("short.safetensors")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("short.safetensors.tmp")));
  {
    auto w = SafetensorsWriter::Create(dir.File("long.safetensors"), two);
    ASSERT_TRUE(w.ok());
    EXPECT_FALSE((*w)->Append({bytes, 9}).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("long.safetensors.tmp")));
  const std::vector<TensorEntry> dup = {{"a", DType::kU8, {4}}, {"a", DType::kU8, {4}}};
  StatusOr<std::unique_ptr<CheckpointWriter>> c = CheckpointWriter::Create(dir.path(), dup, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("declared twice"), std::string::npos);
  auto more = CheckpointWriter::Create(dir.File("c"), two, {});
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE((*more)->Append({bytes, 16}).ok());
}

}  // namespace
}  // namespace deepinfer::io
