#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "test_files.h"

namespace deepinfer::io {
namespace {

using testing::BuildSafetensors;
using testing::RawSafetensors;
using testing::RawTensor;
using testing::TempDir;
using testing::WriteFile;

std::string Hex(const TensorView& v, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n && i < v.n_bytes; ++i) {
    uint8_t b = static_cast<uint8_t>(v.data[i]);
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

uint64_t ByteSum(const TensorView& v) {
  uint64_t s = 0;
  for (size_t i = 0; i < v.n_bytes; ++i) s += static_cast<uint8_t>(v.data[i]);
  return s;
}

TEST(SafetensorsFixture, CountsByDtypeAndOrder) {
  StatusOr<SafetensorsFile> f = SafetensorsFile::Open(testing::kFixtureFile);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::map<DType, int> counts;
  for (const SafetensorsTensor& t : f->tensors()) counts[t.view.dtype]++;
  EXPECT_EQ(counts[DType::kBF16], 59);
  EXPECT_EQ(counts[DType::kF32], 56);
  EXPECT_EQ(counts[DType::kF8E4M3], 64);
  EXPECT_EQ(counts[DType::kF8E8M0], 148);
  EXPECT_EQ(counts[DType::kI8], 84);
  EXPECT_EQ(f->num_tensors(), 411u);
  // File order, not name order.
  EXPECT_EQ(f->tensors().front().name, "embed.weight");
  EXPECT_EQ(f->tensors()[1].name, "layers.0.hc_attn_fn");
  EXPECT_EQ(f->tensors().back().name, "mtp.0.confidence_head.proj.weight");
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->data_offset(), 8u + 40176u);
  // The fixture's data section is packed: tensor bytes = file size - header.
  EXPECT_EQ(f->tensor_bytes(), 5685324u);
  EXPECT_EQ(f->file_bytes().size(), 8u + 40176u + 5685324u);
}

TEST(SafetensorsFixture, KnownShapesAndBytes) {
  StatusOr<SafetensorsFile> f = SafetensorsFile::Open(testing::kFixtureFile);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  struct Expect {
    const char* name;
    DType dtype;
    std::vector<int64_t> shape;
    const char* first_bytes_hex;  // first 16 bytes, from Python's reading of the file
    uint64_t byte_sum;
  };
  const Expect expects[] = {
      {"layers.1.attn.wkv.weight",
       DType::kF8E4M3,
       {64, 256},
       "685c7268cd69695f61e86f42614bdfe9",
       2708497},
      {"layers.1.attn.wkv.scale", DType::kF8E8M0, {2, 8}, "76757575757576757576767575757575", 1876},
      {"embed.weight", DType::kBF16, {512, 256}, "0abe0ebef6bc55bdd13daa3d1bbd82be", 31782637},
      {"norm.weight", DType::kBF16, {256}, "853f6a3f863f613f843f8a3f913f7d3f", 47608},
  };
  for (const Expect& e : expects) {
    SCOPED_TRACE(e.name);
    StatusOr<TensorView> v = f->Get(e.name);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->dtype, e.dtype);
    EXPECT_EQ(v->shape, e.shape);
    EXPECT_EQ(v->n_bytes, static_cast<size_t>(v->NumElements()) * DTypeSize(e.dtype));
    EXPECT_EQ(Hex(*v, 16), e.first_bytes_hex);
    EXPECT_EQ(ByteSum(*v), e.byte_sum);
  }
  const TensorView* w1 = f->Find("layers.0.ffn.experts.0.w1.weight");  // packed FP4 pairs
  ASSERT_NE(w1, nullptr);
  EXPECT_EQ(w1->dtype, DType::kI8);
  EXPECT_EQ(w1->shape, (std::vector<int64_t>{128, 128}));
  const TensorView* fn = f->Find("layers.0.hc_attn_fn");
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn->dtype, DType::kF32);
  EXPECT_EQ(fn->shape, (std::vector<int64_t>{24, 1024}));
  EXPECT_EQ(fn->data, f->file_bytes().data() + f->data_offset() + 262144);
}

TEST(SafetensorsFixture, ViewsInsideMappingAndAligned) {
  StatusOr<SafetensorsFile> f = SafetensorsFile::Open(testing::kFixtureFile);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_NE(f->mapping(), nullptr);
  const std::byte* lo = f->mapping()->data() + f->data_offset();
  const std::byte* hi = f->mapping()->data() + f->mapping()->size();
  for (const SafetensorsTensor& t : f->tensors()) {
    EXPECT_GE(t.view.data, lo) << t.name;
    EXPECT_LE(t.view.data + t.view.n_bytes, hi) << t.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.view.data) % DTypeSize(t.view.dtype), 0u) << t.name;
    EXPECT_EQ(f->Find(t.name), &t.view);
  }
}

TEST(SafetensorsFixture, ViewsSurviveMove) {
  StatusOr<SafetensorsFile> f = SafetensorsFile::Open(testing::kFixtureFile);
  ASSERT_TRUE(f.ok());
  const std::byte* before = f->Find("norm.weight")->data;
  SafetensorsFile moved = std::move(f).value();
  ASSERT_NE(moved.Find("norm.weight"), nullptr);
  EXPECT_EQ(moved.Find("norm.weight")->data, before);
  EXPECT_EQ(Hex(*moved.Find("norm.weight"), 4), "853f6a3f");
}

TEST(SafetensorsFile, GetMissingNamesFileAndTensor) {
  StatusOr<SafetensorsFile> f = SafetensorsFile::Open(testing::kFixtureFile);
  ASSERT_TRUE(f.ok());
  StatusOr<TensorView> v = f->Get("layers.99.nope");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_NE(v.status().message().find("model.safetensors"), std::string::npos);
  EXPECT_NE(v.status().message().find("layers.99.nope"), std::string::npos);
  EXPECT_EQ(f->Find("layers.99.nope"), nullptr);
}

TEST(SafetensorsFile, SyntheticValidFile) {
  TempDir dir;
  std::string bytes = BuildSafetensors({{"a", "F32", {2, 2}, std::string(16, '\x01')},
                                        {"empty", "BF16", {0, 7}, ""},
                                        {"scalar", "I64", {}, std::string(8, '\x02')},
                                        {"b", "U8", {3}, "xyz"}},
                                       R"({"format":"pt","note":"hi"})");
  WriteFile(dir.File("ok.safetensors"), bytes);
  StatusOr<SafetensorsFile> f = SafetensorsFile::Open(dir.File("ok.safetensors"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->num_tensors(), 4u);
  EXPECT_EQ(f->tensors()[1].name, "empty");
  EXPECT_EQ(f->Find("empty")->n_bytes, 0u);
  EXPECT_EQ(f->Find("scalar")->NumElements(), 1);
  EXPECT_EQ(f->Find("scalar")->n_bytes, 8u);
  EXPECT_EQ(std::memcmp(f->Find("b")->data, "xyz", 3), 0);
  EXPECT_EQ(f->metadata().at("note"), "hi");
  EXPECT_EQ(f->tensor_bytes(), 27u);

  // The same bytes parse identically from memory.
  std::span<const std::byte> span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  StatusOr<SafetensorsFile> m = SafetensorsFile::FromBuffer(span, "mem");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->mapping(), nullptr);
  EXPECT_EQ(m->Find("b")->data, span.data() + m->data_offset() + 24);
}

// Each malformed file must be refused with a message naming the file and (where there is one)
// the tensor.
struct BadCase {
  const char* id;
  std::string bytes;
  std::vector<std::string> expect;  // substrings of the message besides the file name
};

std::vector<BadCase> BadCases() {
  const std::string f32x4(16, '\0');
  auto one = [&](const std::string& entry, const std::string& data = std::string(16, '\0')) {
    return RawSafetensors("{\"t.weight\":" + entry + "}", data);
  };
  return {
      {"too_short", "\x05\x00\x00", {"truncated", "8-byte"}},
      {"absurd_length",
       RawSafetensors("{}", "", 200'000'000),
       {"header length 200000000", "absurd"}},
      {"header_past_eof", RawSafetensors("{}", "", 64), {"truncated", "header length 64"}},
      {"json_syntax",
       RawSafetensors("{\"a\": {\"dtype\": \"F32\",,}}", ""),
       {"JSON parse error", "line 1, column"}},
      {"json_empty", RawSafetensors("", ""), {"JSON parse error"}},
      {"not_object", RawSafetensors("[1,2,3]", ""), {"must be a JSON object", "array"}},
      {"entry_not_object", one("[1]"), {"t.weight", "must be an object"}},
      {"unknown_dtype",
       one(R"({"dtype":"F4","shape":[4],"data_offsets":[0,16]})"),
       {"t.weight", "unknown dtype \"F4\""}},
      {"missing_dtype",
       one(R"({"shape":[4],"data_offsets":[0,16]})"),
       {"t.weight", "missing \"dtype\""}},
      {"dtype_not_string",
       one(R"({"dtype":7,"shape":[4],"data_offsets":[0,16]})"),
       {"t.weight", "\"dtype\" must be a string"}},
      {"missing_shape",
       one(R"({"dtype":"F32","data_offsets":[0,16]})"),
       {"t.weight", "missing \"shape\""}},
      {"shape_not_array",
       one(R"({"dtype":"F32","shape":4,"data_offsets":[0,16]})"),
       {"t.weight", "\"shape\" must be an array"}},
      {"shape_float",
       one(R"({"dtype":"F32","shape":[4.0],"data_offsets":[0,16]})"),
       {"t.weight", "must be integers"}},
      {"shape_bool",
       one(R"({"dtype":"F32","shape":[true],"data_offsets":[0,16]})"),
       {"t.weight", "must be integers"}},
      {"shape_long_string",
       one(R"({"dtype":"F32","shape":[")" + std::string(500, 'x') + R"("],"data_offsets":[0,16]})"),
       {"t.weight", "must be integers, got \"xxxx", "..."}},
      {"shape_negative",
       one(R"({"dtype":"F32","shape":[-4],"data_offsets":[0,16]})"),
       {"t.weight", "negative dimension -4"}},
      {"shape_dim_huge",
       one(R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,16]})"),
       {"t.weight", "too large"}},
      {"shape_product_overflow",
       one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]})"),
       {"t.weight", "overflows 64 bits"}},
      {"bytes_overflow",
       one(R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,16]})"),
       {"t.weight", "byte size", "overflows"}},
      {"missing_offsets",
       one(R"({"dtype":"F32","shape":[4]})"),
       {"t.weight", "missing \"data_offsets\""}},
      {"offsets_one",
       one(R"({"dtype":"F32","shape":[4],"data_offsets":[16]})"),
       {"t.weight", "[begin, end]"}},
      {"offsets_three",
       one(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16,32]})"),
       {"t.weight", "[begin, end]"}},
      {"offsets_negative",
       one(R"({"dtype":"F32","shape":[4],"data_offsets":[-16,0]})"),
       {"t.weight", "non-negative"}},
      {"offsets_string",
       one(R"({"dtype":"F32","shape":[4],"data_offsets":[0,"16"]})"),
       {"t.weight", "[begin, end]"}},
      {"offsets_reversed",
       one(R"({"dtype":"F32","shape":[0],"data_offsets":[16,0]})"),
       {"t.weight", "begin > end"}},
      {"size_mismatch",
       one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,16]})"),
       {"t.weight", "span 16 bytes", "needs 12"}},
      {"out_of_range",
       one(R"({"dtype":"F32","shape":[4],"data_offsets":[8,24]})"),
       {"t.weight", "out of range", "16-byte data section"}},
      {"truncated_data",
       one(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})", f32x4.substr(0, 10)),
       {"t.weight", "out of range"}},
      {"overlap",
       RawSafetensors(R"({"x.a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("x.b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                      f32x4),
       {"x.a", "x.b", "overlap"}},
      {"overlap_unsorted",
       RawSafetensors(R"({"x.b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]},)"
                      R"("x.c":{"dtype":"U8","shape":[2],"data_offsets":[12,14]},)"
                      R"("x.a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})",
                      f32x4),
       {"x.a", "x.b", "overlap"}},
      {"duplicate_name",
       RawSafetensors(R"({"dup.w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                      R"("dup.w":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                      f32x4),
       {"dup.w", "duplicate"}},
      {"metadata_not_object",
       RawSafetensors(R"({"__metadata__":[1]})", ""),
       {"__metadata__", "must be an object"}},
      {"metadata_not_string",
       RawSafetensors(R"({"__metadata__":{"format":1}})", ""),
       {"__metadata__", "\"format\"", "must be a string"}},
  };
}

TEST(SafetensorsFile, MalformedFilesAreRefusedWithNames) {
  TempDir dir;
  for (const BadCase& c : BadCases()) {
    SCOPED_TRACE(c.id);
    const std::string path = dir.File(std::string("bad_") + c.id + ".safetensors");
    WriteFile(path, c.bytes);
    StatusOr<SafetensorsFile> f = SafetensorsFile::Open(path);
    ASSERT_FALSE(f.ok());
    const std::string& msg = f.status().message();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const std::string& e : c.expect) EXPECT_NE(msg.find(e), std::string::npos) << msg;
  }
}

TEST(SafetensorsFile, EmptyAndMissingFiles) {
  TempDir dir;
  WriteFile(dir.File("empty.safetensors"), "");
  StatusOr<SafetensorsFile> f = SafetensorsFile::Open(dir.File("empty.safetensors"));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("empty.safetensors: file is empty"), std::string::npos);
  f = SafetensorsFile::Open(dir.File("absent.safetensors"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("absent.safetensors"), std::string::npos);
}

TEST(SafetensorsFile, EveryPrefixOfTheFixtureHeaderIsRefusedCleanly) {
  // Truncations anywhere in the length or header must be errors, never crashes; past the
  // header, they are "out of range" for the last tensors.
  StatusOr<MappedFile> m = MappedFile::Open(testing::kFixtureFile);
  ASSERT_TRUE(m.ok());
  for (size_t n : {size_t{0}, size_t{7}, size_t{8}, size_t{100}, size_t{40183}, size_t{40184},
                   size_t{40185}, size_t{5725507}}) {
    SCOPED_TRACE(n);
    StatusOr<SafetensorsFile> f = SafetensorsFile::FromBuffer(m->bytes().first(n), "prefix");
    EXPECT_FALSE(f.ok());
    EXPECT_EQ(f.status().message().rfind("prefix: ", 0), 0u) << f.status().message();
  }
  EXPECT_TRUE(SafetensorsFile::FromBuffer(m->bytes(), "whole").ok());
}

}  // namespace
}  // namespace deepinfer::io
