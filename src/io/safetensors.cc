#include "io/safetensors.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "io/json_file.h"

namespace deepinfer::io {

namespace {

using Json = nlohmann::json;
constexpr std::string_view kMetadataKey = "__metadata__";

Status FileError(StatusCode code, std::string_view file, const std::string& what) {
  return Status(code, std::string(file) + ": " + what);
}

Status TensorError(std::string_view file, std::string_view tensor, const std::string& what) {
  return Status(StatusCode::kDataLoss,
                std::string(file) + ": tensor \"" + std::string(tensor) + "\": " + what);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  TensorView v;
  v.shape = shape;
  return v.ShapeString();
}

// A JSON value for a message, cut to a readable length.
std::string Brief(const Json& j) {
  constexpr size_t kMax = 64;
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

// A JSON integer >= 0 that fits in uint64 (nlohmann stores non-negative literals as unsigned).
bool AsUnsigned(const Json& j, uint64_t* out) {
  if (j.is_number_unsigned()) {
    *out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer() && j.get<int64_t>() >= 0) {
    *out = static_cast<uint64_t>(j.get<int64_t>());
    return true;
  }
  return false;
}

Status ParseMetadata(std::string_view file, const Json& j,
                     std::map<std::string, std::string>* metadata) {
  if (!j.is_object()) {
    return FileError(
        StatusCode::kDataLoss, file,
        "\"__metadata__\" must be an object of strings, got " + std::string(j.type_name()));
  }
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) {
      return FileError(StatusCode::kDataLoss, file,
                       "\"__metadata__\" entry \"" + key + "\" must be a string, got " +
                           std::string(value.type_name()));
    }
    (*metadata)[key] = value.get<std::string>();
  }
  return Status::Ok();
}

// Validates one header entry against a data section of `data_size` bytes starting at
// `data_begin`, and fills `t` (name excluded).
Status ParseTensor(std::string_view file, const std::string& name, const Json& j,
                   const std::byte* data_begin, uint64_t data_size, SafetensorsTensor* t) {
  if (!j.is_object()) {
    return TensorError(file, name,
                       "header entry must be an object, got " + std::string(j.type_name()));
  }
  // dtype
  auto it = j.find("dtype");
  if (it == j.end()) return TensorError(file, name, "missing \"dtype\"");
  if (!it->is_string()) {
    return TensorError(file, name,
                       "\"dtype\" must be a string, got " + std::string(it->type_name()));
  }
  const std::string& dtype_name = it->get_ref<const std::string&>();
  std::optional<DType> dtype = ParseDType(dtype_name);
  if (!dtype) return TensorError(file, name, "unknown dtype \"" + dtype_name + "\"");
  t->view.dtype = *dtype;

  // shape
  it = j.find("shape");
  if (it == j.end()) return TensorError(file, name, "missing \"shape\"");
  if (!it->is_array()) {
    return TensorError(file, name,
                       "\"shape\" must be an array, got " + std::string(it->type_name()));
  }
  if (it->size() > kMaxSafetensorsRank) {
    return TensorError(file, name,
                       "rank " + std::to_string(it->size()) + " exceeds the limit " +
                           std::to_string(kMaxSafetensorsRank));
  }
  int64_t numel = 1;
  t->view.shape.clear();
  for (const Json& d : *it) {
    if (d.is_number_integer() && !d.is_number_unsigned() && d.get<int64_t>() < 0) {
      return TensorError(
          file, name, "negative dimension " + std::to_string(d.get<int64_t>()) + " in \"shape\"");
    }
    uint64_t dim = 0;
    if (!AsUnsigned(d, &dim)) {
      return TensorError(file, name, "\"shape\" entries must be integers, got " + Brief(d));
    }
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return TensorError(file, name, "dimension " + std::to_string(dim) + " is too large");
    }
    t->view.shape.push_back(static_cast<int64_t>(dim));
  }
  for (int64_t dim : t->view.shape) {
    if (__builtin_mul_overflow(numel, dim, &numel)) {
      return TensorError(
          file, name,
          "element count of shape " + ShapeString(t->view.shape) + " overflows 64 bits");
    }
  }
  uint64_t n_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), DTypeSize(*dtype), &n_bytes)) {
    return TensorError(file, name,
                       "byte size of shape " + ShapeString(t->view.shape) + " overflows 64 bits");
  }

  // data_offsets
  it = j.find("data_offsets");
  if (it == j.end()) return TensorError(file, name, "missing \"data_offsets\"");
  uint64_t begin = 0, end = 0;
  if (!it->is_array() || it->size() != 2 || !AsUnsigned((*it)[0], &begin) ||
      !AsUnsigned((*it)[1], &end)) {
    return TensorError(file, name,
                       "\"data_offsets\" must be [begin, end] with non-negative "
                       "integers, got " +
                           Brief(*it));
  }
  const std::string offsets =
      "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "]";
  if (begin > end) return TensorError(file, name, offsets + " have begin > end");
  if (end - begin != n_bytes) {
    return TensorError(file, name,
                       offsets + " span " + std::to_string(end - begin) + " bytes but " +
                           std::string(DTypeName(*dtype)) + " " + ShapeString(t->view.shape) +
                           " needs " + std::to_string(n_bytes));
  }
  if (end > data_size) {
    return TensorError(
        file, name,
        offsets + " are out of range of the " + std::to_string(data_size) + "-byte data section");
  }
  t->begin = begin;
  t->end = end;
  t->view.data = data_begin + begin;
  t->view.n_bytes = static_cast<size_t>(n_bytes);
  return Status::Ok();
}

// Sorted by begin, consecutive non-empty ranges must not intersect.
Status CheckNoOverlap(std::string_view file, const std::vector<SafetensorsTensor>& tensors) {
  std::vector<const SafetensorsTensor*> order;
  order.reserve(tensors.size());
  for (const SafetensorsTensor& t : tensors) {
    if (t.end > t.begin) order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (size_t i = 1; i < order.size(); ++i) {
    const SafetensorsTensor& a = *order[i - 1];
    const SafetensorsTensor& b = *order[i];
    if (a.end > b.begin) {
      return FileError(StatusCode::kDataLoss, file,
                       "tensors \"" + a.name + "\" [" + std::to_string(a.begin) + ", " +
                           std::to_string(a.end) + ") and \"" + b.name + "\" [" +
                           std::to_string(b.begin) + ", " + std::to_string(b.end) +
                           ") overlap in the data section");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<SafetensorsHeader> SafetensorsFile::ParseHeader(std::span<const std::byte> bytes,
                                                         std::string_view file) {
  if (bytes.size() < 8) {
    return FileError(StatusCode::kDataLoss, file,
                     "truncated: " + std::to_string(bytes.size()) +
                         " bytes, too short for the 8-byte header length");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  const uint64_t available = bytes.size() - 8;
  if (n > kMaxSafetensorsHeaderBytes) {
    return FileError(StatusCode::kDataLoss, file,
                     "header length " + std::to_string(n) + " is absurd (limit " +
                         std::to_string(kMaxSafetensorsHeaderBytes) +
                         " bytes); not a safetensors file?");
  }
  if (n > available) {
    return FileError(StatusCode::kDataLoss, file,
                     "truncated: header length " + std::to_string(n) + " exceeds the " +
                         std::to_string(available) + " bytes that follow it");
  }
  SafetensorsHeader header;
  header.header_bytes = n;
  header.data_offset = 8 + n;
  const std::byte* data_begin = bytes.data() + header.data_offset;
  const uint64_t data_size = available - n;

  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<size_t>(n));
  std::vector<std::string> keys;
  JsonParseOptions options;
  options.top_level_keys = &keys;
  StatusOr<Json> json = ParseJson(text, std::string(file) + ": header", options);
  if (!json.ok()) return Status(StatusCode::kDataLoss, json.status().message());
  if (!json->is_object()) {
    return FileError(StatusCode::kDataLoss, file,
                     "header must be a JSON object, got " + std::string(json->type_name()));
  }
  header.tensors.reserve(keys.size());
  for (const std::string& key : keys) {
    auto it = json->find(key);
    if (it == json->end()) {  // not reachable: ParseJson reported every top-level key
      return FileError(StatusCode::kInternal, file, "header key \"" + key + "\" vanished");
    }
    if (key == kMetadataKey) {
      DI_RETURN_IF_ERROR(ParseMetadata(file, *it, &header.metadata));
      continue;
    }
    SafetensorsTensor t;
    t.name = key;
    DI_RETURN_IF_ERROR(ParseTensor(file, key, *it, data_begin, data_size, &t));
    header.tensors.push_back(std::move(t));
  }
  DI_RETURN_IF_ERROR(CheckNoOverlap(file, header.tensors));
  return header;
}

StatusOr<SafetensorsFile> SafetensorsFile::Build(MappedFile mapping,
                                                 std::span<const std::byte> bytes,
                                                 std::string_view display_name) {
  DI_ASSIGN_OR_RETURN(SafetensorsHeader header, ParseHeader(bytes, display_name));
  SafetensorsFile f;
  f.path_ = std::string(display_name);
  f.mapping_ = std::move(mapping);
  f.bytes_ = bytes;
  f.header_ = std::move(header);
  f.index_.reserve(f.header_.tensors.size());
  for (size_t i = 0; i < f.header_.tensors.size(); ++i) {
    const SafetensorsTensor& t = f.header_.tensors[i];
    if (!f.index_.emplace(t.name, i).second) {  // ParseJson refuses duplicate keys already
      return TensorError(display_name, t.name, "duplicate tensor name");
    }
    f.tensor_bytes_ += t.view.n_bytes;
  }
  return f;
}

StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  DI_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::Open(path));
  std::span<const std::byte> bytes = mapping.bytes();
  return Build(std::move(mapping), bytes, path);
}

StatusOr<SafetensorsFile> SafetensorsFile::FromBuffer(std::span<const std::byte> file_bytes,
                                                      std::string_view display_name) {
  return Build(MappedFile(), file_bytes, display_name);
}

const SafetensorsTensor* SafetensorsFile::FindTensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

const TensorView* SafetensorsFile::Find(std::string_view name) const {
  const SafetensorsTensor* t = FindTensor(name);
  return t ? &t->view : nullptr;
}

StatusOr<TensorView> SafetensorsFile::Get(std::string_view name) const {
  const TensorView* v = Find(name);
  if (v == nullptr) {
    return NotFound(path_ + ": tensor \"" + std::string(name) + "\" not found");
  }
  return *v;
}

}  // namespace deepinfer::io
