// FieldReader: typed, named access to the fields of one JSON object, for the config parsers.
//
// Every read names the field in its error ("text_config.hidden_size: expected an integer, got
// string \"256\""); the reader keeps the first error and the caller checks status() once at the
// end. A key list gives accepted spellings in order of preference (the first one present wins).
// A null value counts as absent. Internal to model/deepseek_v41.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "nlohmann/json.hpp"

namespace deepinfer::model::internal {

using Keys = std::initializer_list<std::string_view>;

class FieldReader {
 public:
  // `prefix` is prepended to every key in messages, e.g. "text_config.".
  FieldReader(const nlohmann::json& object, std::string prefix)
      : object_(object), prefix_(std::move(prefix)) {}

  // The first of `keys` present with a non-null value, or nullptr. `*found` gets its key.
  const nlohmann::json* Find(Keys keys, std::string_view* found = nullptr) const;
  bool Has(Keys keys) const { return Find(keys) != nullptr; }

  // Required: a missing or null field is an error ("<name> is missing (required)").
  template <typename T>
  void Required(Keys keys, T* out) {
    std::string_view key;
    const nlohmann::json* value = Find(keys, &key);
    if (value == nullptr) {
      Fail(Name(*keys.begin()) + " is missing (required)" + AliasNote(keys));
      return;
    }
    Convert(*value, Name(key), out);
  }
  // Optional: *out keeps its value when the field is absent or null.
  template <typename T>
  void Optional(Keys keys, T* out) {
    std::string_view key;
    const nlohmann::json* value = Find(keys, &key);
    if (value != nullptr) Convert(*value, Name(key), out);
  }

  void Fail(std::string message) {
    if (status_.ok()) status_ = InvalidArgument(std::move(message));
  }
  std::string Name(std::string_view key) const { return prefix_ + std::string(key); }
  const Status& status() const { return status_; }

 private:
  std::string AliasNote(Keys keys) const;
  void Convert(const nlohmann::json& v, const std::string& name, int* out);
  void Convert(const nlohmann::json& v, const std::string& name, int64_t* out);
  void Convert(const nlohmann::json& v, const std::string& name, double* out);
  void Convert(const nlohmann::json& v, const std::string& name, bool* out);
  void Convert(const nlohmann::json& v, const std::string& name, std::string* out);
  void Convert(const nlohmann::json& v, const std::string& name, std::vector<int>* out);
  void Convert(const nlohmann::json& v, const std::string& name, std::vector<int64_t>* out);
  void Convert(const nlohmann::json& v, const std::string& name, std::vector<double>* out);

  const nlohmann::json& object_;
  std::string prefix_;
  Status status_;
};

// "string \"256\"", "number 2.5", "array [...]": what a bad value was, for messages.
std::string DescribeJsonValue(const nlohmann::json& v);

}  // namespace deepinfer::model::internal
