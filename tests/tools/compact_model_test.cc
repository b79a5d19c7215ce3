// `deepinfer unpack-model` (tools/compact_model.h): a compact file made from a random checkpoint of
// the fixture config expands into the manifest's layout with every tied table row-gathered (kept
// ids their own rows, every other id the shared row) and every other tensor copied byte for byte;
// malformed compact files are refused with a message naming the problem.
#include "tools/compact_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "../io/test_files.h"
#include "core/check.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/random_checkpoint.h"
#include "model/deepseek_v41/weight_manifest.h"

// A named namespace: the unity build merges the anonymous namespaces of the test files.
namespace deepinfer::tools::compact_model_test {
namespace {

using io::testing::TempDir;

const std::string kFixture = std::string(DEEPINFER_SHARED_DIR) + "/fixtures/v41-tiny-a";
const std::vector<std::string> kTied = {"embed.weight", "head.weight",
                                        "mtp.0.markov_head.embed.weight",
                                        "mtp.0.markov_head.head.weight"};
constexpr int kTailSource = 1;  // the shared row is this id's row of the random checkpoint

model::ModelConfig Config() {
  StatusOr<model::ModelConfig> c = LoadConfigFile(kFixture + "/config.json");
  CHECK(c.ok()) << c.status().ToString();
  return *c;
}

std::string Bytes(const TensorView& v) {
  return std::string(reinterpret_cast<const char*>(v.data), v.n_bytes);
}

bool IsTied(const std::string& name) {
  for (const std::string& t : kTied) {
    if (t == name) return true;
  }
  return false;
}

// A compact file built from `random`'s tensors; `edit` may change the tensor list and metadata.
struct CompactSpec {
  std::vector<int32_t> kept;
  std::map<std::string, std::string> metadata;
  std::vector<io::TensorEntry> entries;
  std::vector<std::string> data;
};

CompactSpec MakeSpec(const io::SafetensorsFile& random, std::vector<int32_t> kept) {
  CompactSpec s;
  s.kept = std::move(kept);
  const int64_t k = static_cast<int64_t>(s.kept.size());
  s.metadata = {{"format", "deepinfer-compact"},
                {"version", "1"},
                {"vocab_size", "512"},
                {"tied_tables",
                 "embed.weight,head.weight,mtp.0.markov_head.embed.weight,"
                 "mtp.0.markov_head.head.weight"}};
  for (const io::SafetensorsTensor& t : random.tensors()) {
    if (!IsTied(t.name)) {
      s.entries.push_back({t.name, t.view.dtype, t.view.shape});
      s.data.push_back(Bytes(t.view));
      continue;
    }
    const size_t row = t.view.n_bytes / static_cast<size_t>(t.view.shape[0]);
    std::string rows;
    for (int32_t id : s.kept) rows.append(Bytes(t.view).substr(id * row, row));
    rows.append(Bytes(t.view).substr(kTailSource * row, row));
    s.entries.push_back({t.name, t.view.dtype, {k + 1, t.view.shape[1]}});
    s.data.push_back(rows);
  }
  s.entries.push_back({"kept_ids", DType::kI32, {k}});
  s.data.emplace_back(reinterpret_cast<const char*>(s.kept.data()), s.kept.size() * 4);
  return s;
}

void Write(const CompactSpec& s, const std::string& path) {
  auto w = io::SafetensorsWriter::Create(path, s.entries, s.metadata);
  CHECK(w.ok()) << w.status().ToString();
  for (const std::string& d : s.data) {
    CHECK((*w)->Append(std::as_bytes(std::span<const char>(d.data(), d.size()))).ok());
  }
  CHECK((*w)->Finish().ok());
}

class CompactModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model::RandomCheckpointOptions o;
    o.seed = 11;
    o.show_progress = false;
    CHECK(model::WriteRandomCheckpoint(Config(), dir_->File("random"), o).ok());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static io::SafetensorsFile Random() {
    auto f = io::SafetensorsFile::Open(dir_->File("random/model.safetensors"));
    CHECK(f.ok()) << f.status().ToString();
    return std::move(f).value();
  }
  static std::vector<int32_t> EveryThird() {
    std::vector<int32_t> kept;
    for (int32_t id = 0; id < 512; id += 3) kept.push_back(id);
    return kept;
  }
  // Unpacks a compact file made from `spec` and returns the status.
  static Status Unpack(const CompactSpec& spec, const std::string& name) {
    const std::string path = dir_->File(name + ".safetensors");
    Write(spec, path);
    return UnpackCompactModel(path, Config(), dir_->File(name)).status();
  }
  static TempDir* dir_;
};
TempDir* CompactModel::dir_ = nullptr;

TEST_F(CompactModel, ExpandsTiedRowsAndCopiesEverythingElse) {
  const io::SafetensorsFile random = Random();
  const std::vector<int32_t> kept = EveryThird();
  Write(MakeSpec(random, kept), dir_->File("good.safetensors"));
  StatusOr<UnpackSummary> s =
      UnpackCompactModel(dir_->File("good.safetensors"), Config(), dir_->File("good"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->kept, static_cast<int64_t>(kept.size()));
  EXPECT_EQ(s->kept_ids, kept);  // unpack-model writes them as the DSpark draft vocabulary
  EXPECT_EQ(s->vocab, 512);
  EXPECT_EQ(s->tied_tables, kTied);

  auto out = io::SafetensorsFile::Open(dir_->File("good/model.safetensors"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->metadata().at("format"), "pt");
  const std::vector<model::TensorSpec> specs = model::ExpectedTensors(Config());
  ASSERT_EQ(out->num_tensors(), specs.size());
  std::set<int32_t> kept_set(kept.begin(), kept.end());
  for (size_t i = 0; i < specs.size(); ++i) {
    const io::SafetensorsTensor& t = out->tensors()[i];
    ASSERT_EQ(t.name, specs[i].name);  // manifest order
    const TensorView& want = *random.Find(t.name);
    ASSERT_EQ(t.view.dtype, want.dtype) << t.name;
    ASSERT_EQ(t.view.shape, want.shape) << t.name;
    if (!IsTied(t.name)) {
      EXPECT_EQ(Bytes(t.view), Bytes(want)) << t.name;
      continue;
    }
    const size_t row = want.n_bytes / static_cast<size_t>(want.shape[0]);
    for (int32_t id = 0; id < 512; ++id) {
      const int32_t src = kept_set.count(id) ? id : kTailSource;
      ASSERT_EQ(std::memcmp(t.view.data + id * row, want.data + src * row, row), 0)
          << t.name << " row " << id;
    }
  }
  // A compact file that keeps every id (the shared row unused) reproduces the random checkpoint
  // exactly, header included.
  std::vector<int32_t> all(512);
  for (int32_t i = 0; i < 512; ++i) all[i] = i;
  ASSERT_TRUE(Unpack(MakeSpec(random, all), "all").ok());
  auto a = io::SafetensorsFile::Open(dir_->File("all/model.safetensors"));
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(std::equal(a->file_bytes().begin(), a->file_bytes().end(),
                         random.file_bytes().begin(), random.file_bytes().end()));
}

TEST_F(CompactModel, RefusesMalformedFiles) {
  const io::SafetensorsFile random = Random();
  auto expect_error = [&](const CompactSpec& spec, const std::string& name,
                          const std::string& fragment) {
    const Status s = Unpack(spec, name);
    EXPECT_FALSE(s.ok()) << name;
    EXPECT_NE(s.message().find(fragment), std::string::npos) << name << ": " << s.message();
  };
  CompactSpec spec = MakeSpec(random, EveryThird());
  spec.metadata["format"] = "pt";
  expect_error(spec, "plain", "not a compact model");

  spec = MakeSpec(random, EveryThird());
  spec.metadata["vocab_size"] = "513";
  expect_error(spec, "vocab", "vocab_size 513");

  spec = MakeSpec(random, {5, 3, 9});
  expect_error(spec, "unsorted", "kept_ids[1] = 3");

  spec = MakeSpec(random, {5, 511});
  const int32_t out_of_range[2] = {5, 512};
  spec.data.back().assign(reinterpret_cast<const char*>(out_of_range), sizeof(out_of_range));
  expect_error(spec, "range", "kept_ids[1] = 512");

  spec = MakeSpec(random, EveryThird());
  spec.entries.erase(spec.entries.begin() + 1);
  spec.data.erase(spec.data.begin() + 1);
  expect_error(spec, "missing", "layers.0.hc_attn_fn (F32 [24, 1024]) is missing");

  spec = MakeSpec(random, EveryThird());
  spec.entries.push_back({"extra", DType::kU8, {1}});
  spec.data.push_back("x");
  expect_error(spec, "extra", "unexpected tensor extra");

  spec = MakeSpec(random, EveryThird());
  spec.metadata["tied_tables"] = "embed.weight,mtp.0.markov_head.embed.weight";  // head not tied
  expect_error(spec, "untied", "tensor head.weight is BF16 [172, 256], expected BF16 [512, 256]");
}

}  // namespace
}  // namespace deepinfer::tools::compact_model_test
