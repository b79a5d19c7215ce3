// Little-endian binary records for the wire forms between processes (the KV hand-off's bundle,
// a sequence's state): fixed-size values and length-prefixed arrays appended to a string, and a
// reader that takes them off the front of a byte view, saying false when the bytes run out.
// Both ends are x86-64 builds of this code, so values travel in their memory form.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace deepinfer {

template <typename T>
void PutValue(std::string* out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// u64 element count, then the elements.
template <typename T>
void PutArray(std::string* out, const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  PutValue(out, static_cast<uint64_t>(v.size()));
  if (!v.empty()) out->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// u64 byte count, then the bytes.
inline void PutBytes(std::string* out, std::string_view bytes) {
  PutValue(out, static_cast<uint64_t>(bytes.size()));
  out->append(bytes);
}

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}

  template <typename T>
  bool Get(T* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool Take(size_t n, std::string* out) {
    if (in_.size() < n) return false;
    out->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  // An array PutArray wrote; false (nothing taken) when its count is larger than what is left.
  template <typename T>
  bool GetArray(std::vector<T>* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    uint64_t n = 0;
    if (!Get(&n) || n > in_.size() / sizeof(T)) return false;
    v->resize(static_cast<size_t>(n));
    if (n > 0) std::memcpy(v->data(), in_.data(), static_cast<size_t>(n) * sizeof(T));
    in_.remove_prefix(static_cast<size_t>(n) * sizeof(T));
    return true;
  }
  // Bytes PutBytes wrote.
  bool GetBytes(std::string* out) {
    uint64_t n = 0;
    return Get(&n) && n <= in_.size() && Take(static_cast<size_t>(n), out);
  }
  size_t left() const { return in_.size(); }

 private:
  std::string_view in_;
};

}  // namespace deepinfer
