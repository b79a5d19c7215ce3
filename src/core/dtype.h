// Element types of stored tensors, with the safetensors spelling of each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace deepinfer {

enum class DType : uint8_t {
  kBool,
  kU8,
  kI8,
  kI16,
  kU16,
  kI32,
  kU32,
  kI64,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF8E4M3,  // float8_e4m3fn (FP8 weights, Engram table)
  kF8E8M0,  // float8_e8m0fnu (ue8m0 block scales)
};

// Bytes per element (all release dtypes are whole bytes; MXFP4 is stored as I8 nibble pairs).
size_t DTypeSize(DType t);
// "BF16", "F8_E4M3", ... as in the safetensors header.
std::string_view DTypeName(DType t);
std::optional<DType> ParseDType(std::string_view safetensors_name);

}  // namespace deepinfer
