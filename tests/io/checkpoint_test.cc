#include "io/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "test_files.h"

namespace deepinfer::io {
namespace {

using testing::BuildSafetensors;
using testing::RawTensor;
using testing::TempDir;
using testing::WriteFile;

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

RawTensor Copy(const SafetensorsTensor& t) {
  return {t.name, std::string(DTypeName(t.view.dtype)), t.view.shape,
          std::string(reinterpret_cast<const char*>(t.view.data), t.view.n_bytes)};
}

// Splits the fixture's tensors into shard 1 (first `split`) and shard 2 (the rest), and writes
// an index mapping them; `edit` may change the weight map before it is written.
struct ShardedFixture {
  TempDir dir;
  std::vector<std::string> names;

  explicit ShardedFixture(
      const std::function<void(std::map<std::string, std::string>&)>& edit = nullptr,
      const std::function<void(std::vector<RawTensor>&, std::vector<RawTensor>&)>& edit_shards =
          nullptr) {
    StatusOr<SafetensorsFile> f =
        SafetensorsFile::Open(testing::kFixtureDir + "/model.safetensors");
    CHECK(f.ok()) << f.status().ToString();
    std::vector<RawTensor> a, b;
    std::map<std::string, std::string> weight_map;
    const size_t split = f->num_tensors() / 2;
    for (size_t i = 0; i < f->num_tensors(); ++i) {
      const SafetensorsTensor& t = f->tensors()[i];
      names.push_back(t.name);
      (i < split ? a : b).push_back(Copy(t));
      weight_map[t.name] = i < split ? kShard1 : kShard2;
    }
    if (edit_shards) edit_shards(a, b);
    if (edit) edit(weight_map);
    WriteFile(dir.File(kShard1), BuildSafetensors(a, R"({"format":"pt"})"));
    WriteFile(dir.File(kShard2), BuildSafetensors(b, R"({"format":"pt"})"));
    std::string index = "{\"metadata\": {\"total_size\": 5685324}, \"weight_map\": {";
    bool first = true;
    for (const auto& [name, shard] : weight_map) {
      index += std::string(first ? "" : ",") + "\n  \"" + name + "\": \"" + shard + "\"";
      first = false;
    }
    index += "\n}}\n";
    WriteFile(dir.File("model.safetensors.index.json"), index);
  }
  static constexpr const char* kShard1 = "model-00001-of-00002.safetensors";
  static constexpr const char* kShard2 = "model-00002-of-00002.safetensors";
};

TEST(Checkpoint, OpensFixtureDirectoryAsSingleFile) {
  // The fixture folder also holds golden.safetensors: model.safetensors alone must be chosen.
  StatusOr<Checkpoint> c = Checkpoint::Open(testing::kFixtureDir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->files().size(), 1u);
  EXPECT_EQ(c->num_tensors(), 411u);
  EXPECT_EQ(c->total_bytes(), 5685324u);
  EXPECT_EQ(c->names().front(), "embed.weight");
  const TensorView* v = c->Find("layers.1.attn.wkv.scale");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->shape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(c->FileOf("layers.1.attn.wkv.scale")->path(),
            testing::kFixtureDir + "/model.safetensors");
  StatusOr<TensorView> missing = c->Get("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status(), "\"nope\" not found"));
  EXPECT_TRUE(Contains(missing.status(), testing::kFixtureDir));
}

TEST(Checkpoint, OpensASingleFilePath) {
  StatusOr<Checkpoint> c = Checkpoint::Open(testing::kFixtureDir + "/golden.safetensors");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GT(c->num_tensors(), 0u);
  EXPECT_EQ(c->files().size(), 1u);
}

TEST(Checkpoint, ShardedEqualsUnshardedByteForByte) {
  ShardedFixture sharded;
  StatusOr<Checkpoint> whole = Checkpoint::Open(testing::kFixtureDir);
  StatusOr<Checkpoint> split = Checkpoint::Open(sharded.dir.path());
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ASSERT_EQ(split->files().size(), 2u);
  EXPECT_EQ(split->num_tensors(), whole->num_tensors());
  EXPECT_EQ(split->total_bytes(), whole->total_bytes());
  // Shards in order, tensors in file order: the same order as the unsharded file.
  ASSERT_EQ(split->names().size(), sharded.names.size());
  for (size_t i = 0; i < sharded.names.size(); ++i) {
    EXPECT_EQ(split->names()[i], sharded.names[i]);
  }
  for (std::string_view name : whole->names()) {
    const TensorView* a = whole->Find(name);
    const TensorView* b = split->Find(name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(a->dtype, b->dtype) << name;
    EXPECT_EQ(a->shape, b->shape) << name;
    ASSERT_EQ(a->n_bytes, b->n_bytes) << name;
    EXPECT_EQ(std::memcmp(a->data, b->data, a->n_bytes), 0) << name;
    EXPECT_NE(a->data, b->data);
  }
  EXPECT_EQ(split->FileOf("embed.weight")->path(), sharded.dir.File(ShardedFixture::kShard1));
  EXPECT_EQ(split->FileOf(sharded.names.back())->path(), sharded.dir.File(ShardedFixture::kShard2));

  // Page-in covers both files; progress advances by bytes.
  std::ostringstream sink;
  ProgressBar::Options po;
  po.out = &sink;
  po.total = split->file_bytes();
  ProgressBar bar(po);
  EXPECT_EQ(split->PageIn(&bar), split->file_bytes());
  EXPECT_EQ(bar.done(), split->file_bytes());

  // Views stay valid after the checkpoint is moved.
  const std::byte* p = split->Find("norm.weight")->data;
  Checkpoint moved = std::move(split).value();
  EXPECT_EQ(moved.Find("norm.weight")->data, p);
}

TEST(Checkpoint, IndexToMissingShard) {
  ShardedFixture s([](auto& wm) { wm["norm.weight"] = "model-00003-of-00002.safetensors"; });
  StatusOr<Checkpoint> c = Checkpoint::Open(s.dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status(), "model.safetensors.index.json")) << c.status().message();
  EXPECT_TRUE(Contains(c.status(), "model-00003-of-00002.safetensors")) << c.status().message();
  EXPECT_TRUE(Contains(c.status(), "norm.weight")) << c.status().message();
  EXPECT_TRUE(Contains(c.status(), "No such file")) << c.status().message();
}

TEST(Checkpoint, IndexToMissingTensor) {
  ShardedFixture s([](auto& wm) { wm["layers.9.ghost.weight"] = ShardedFixture::kShard2; });
  StatusOr<Checkpoint> c = Checkpoint::Open(s.dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status(), "\"layers.9.ghost.weight\" is mapped to"))
      << c.status().message();
  EXPECT_TRUE(Contains(c.status(), ShardedFixture::kShard2)) << c.status().message();
}

TEST(Checkpoint, IndexMapsTensorToTheWrongShard) {
  ShardedFixture s([](auto& wm) { wm["embed.weight"] = ShardedFixture::kShard2; });
  StatusOr<Checkpoint> c = Checkpoint::Open(s.dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status(), "\"embed.weight\" is mapped to")) << c.status().message();
  EXPECT_TRUE(Contains(c.status(), ShardedFixture::kShard2)) << c.status().message();
}

TEST(Checkpoint, TensorInTwoShards) {
  ShardedFixture s(nullptr, [](auto& a, auto& b) { b.push_back(a.front()); });  // embed.weight
  StatusOr<Checkpoint> c = Checkpoint::Open(s.dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status(), "\"embed.weight\" appears in two files"))
      << c.status().message();
  EXPECT_TRUE(Contains(c.status(), ShardedFixture::kShard1)) << c.status().message();
  EXPECT_TRUE(Contains(c.status(), ShardedFixture::kShard2)) << c.status().message();
}

TEST(Checkpoint, ShardTensorMissingFromIndex) {
  ShardedFixture s([](auto& wm) { wm.erase("norm.weight"); });
  StatusOr<Checkpoint> c = Checkpoint::Open(s.dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status(), "\"norm.weight\" is not listed in")) << c.status().message();
}

TEST(Checkpoint, BadIndexFiles) {
  TempDir dir;
  const std::string index = dir.File("model.safetensors.index.json");
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"{\"weight_map\": {\"a\": 1,}}", "JSON parse error at line 1"},
      {"[]", "must be a JSON object"},
      {"{\"metadata\": {}}", "missing \"weight_map\""},
      {"{\"weight_map\": {}}", "\"weight_map\" is empty"},
      {"{\"weight_map\": {\"a.w\": 3}}", "tensor \"a.w\": shard must be a string"},
      {"{\"weight_map\": {\"a.w\": \"../x.safetensors\"}}", "not a relative path"},
      {"{\"weight_map\": {\"a.w\": \"/etc/x.safetensors\"}}", "not a relative path"},
      {"{\"weight_map\": {\"a.w\": \"x.safetensors\", \"a.w\": \"y.safetensors\"}}",
       "duplicate key \"a.w\""},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.text);
    WriteFile(index, k.text);
    StatusOr<Checkpoint> c = Checkpoint::Open(dir.path());
    ASSERT_FALSE(c.ok());
    EXPECT_TRUE(Contains(c.status(), index)) << c.status().message();
    EXPECT_TRUE(Contains(c.status(), k.expect)) << c.status().message();
  }
}

TEST(Checkpoint, UnindexedShardsAreSortedAndMustBeDisjoint) {
  TempDir dir;
  WriteFile(dir.File("b.safetensors"), BuildSafetensors({{"y", "U8", {2}, "yy"}}));
  WriteFile(dir.File("a.safetensors"), BuildSafetensors({{"x", "U8", {1}, "x"}}));
  WriteFile(dir.File("notes.txt"), "not a shard");
  StatusOr<Checkpoint> c = Checkpoint::Open(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->names(), (std::vector<std::string_view>{"x", "y"}));
  EXPECT_EQ(c->total_bytes(), 3u);

  WriteFile(dir.File("c.safetensors"), BuildSafetensors({{"x", "U8", {1}, "z"}}));
  c = Checkpoint::Open(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status(), "\"x\" appears in two files")) << c.status().message();
  EXPECT_TRUE(Contains(c.status(), "a.safetensors")) << c.status().message();
  EXPECT_TRUE(Contains(c.status(), "c.safetensors")) << c.status().message();

  // A corrupt shard's error names that shard.
  WriteFile(dir.File("c.safetensors"), "garbage!");
  c = Checkpoint::Open(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status(), dir.File("c.safetensors"))) << c.status().message();
}

TEST(Checkpoint, NothingToOpen) {
  TempDir dir;
  StatusOr<Checkpoint> c = Checkpoint::Open(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(c.status(), dir.path()));
  c = Checkpoint::Open(dir.File("missing"));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status(), "missing: no such file or directory"));
}

}  // namespace
}  // namespace deepinfer::io
