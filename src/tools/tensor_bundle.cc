#include "tools/tensor_bundle.h"

#include <cstring>

#include "core/bf16.h"
#include "core/check.h"
#include "io/safetensors_writer.h"

namespace deepinfer::tools {
namespace {

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

template <typename T>
std::vector<std::byte> Bytes(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

void TensorBundle::AddF32(const std::string& name, std::vector<int64_t> shape,
                          const std::vector<float>& values) {
  CHECK_EQ(Numel(shape), static_cast<int64_t>(values.size())) << name;
  entries_.push_back({name, DType::kF32, std::move(shape), Bytes(values)});
}

void TensorBundle::AddI64(const std::string& name, std::vector<int64_t> shape,
                          const std::vector<int64_t>& values) {
  CHECK_EQ(Numel(shape), static_cast<int64_t>(values.size())) << name;
  entries_.push_back({name, DType::kI64, std::move(shape), Bytes(values)});
}

void TensorBundle::AddBf16AsF32(const std::string& name, std::vector<int64_t> shape,
                                const std::vector<uint16_t>& values) {
  std::vector<float> f(values.size());
  for (size_t i = 0; i < values.size(); ++i) f[i] = Bf16ToFloat(values[i]);
  AddF32(name, std::move(shape), f);
}

Status TensorBundle::Write(const std::string& path) const {
  std::vector<io::TensorEntry> decl;
  for (const Entry& e : entries_) decl.push_back({e.name, e.dtype, e.shape});
  DI_ASSIGN_OR_RETURN(auto writer, io::SafetensorsWriter::Create(path, decl));
  for (const Entry& e : entries_) DI_RETURN_IF_ERROR(writer->Append(e.bytes));
  return writer->Finish();
}

}  // namespace deepinfer::tools
