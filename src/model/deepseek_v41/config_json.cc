#include "model/deepseek_v41/config_json.h"

#include <cmath>
#include <limits>

namespace deepinfer::model::internal {

using nlohmann::json;

std::string DescribeJsonValue(const json& v) {
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return std::string(v.type_name()) + " " + text;
}

const json* FieldReader::Find(Keys keys, std::string_view* found) const {
  if (!object_.is_object()) return nullptr;
  for (std::string_view key : keys) {
    auto it = object_.find(key);
    if (it != object_.end() && !it->is_null()) {
      if (found != nullptr) *found = key;
      return &*it;
    }
  }
  return nullptr;
}

std::string FieldReader::AliasNote(Keys keys) const {
  if (keys.size() < 2) return "";
  std::string note = " (also accepted as";
  bool first = true;
  for (auto it = keys.begin() + 1; it != keys.end(); ++it) {
    note += first ? " " : ", ";
    note += std::string(*it);
    first = false;
  }
  return note + ")";
}

namespace {

// An integral JSON number within [lo, hi]; integral floats (16.0) are accepted.
bool ToInteger(const json& v, int64_t lo, int64_t hi, int64_t* out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) return false;
    *out = i;
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(lo) ||
        d > static_cast<double>(hi)) {
      return false;
    }
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

}  // namespace

void FieldReader::Convert(const json& v, const std::string& name, int64_t* out) {
  if (!ToInteger(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                 out)) {
    Fail(name + ": expected an integer, got " + DescribeJsonValue(v));
  }
}

void FieldReader::Convert(const json& v, const std::string& name, int* out) {
  int64_t wide = 0;
  if (!ToInteger(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), &wide)) {
    Fail(name + ": expected a 32-bit integer, got " + DescribeJsonValue(v));
    return;
  }
  *out = static_cast<int>(wide);
}

void FieldReader::Convert(const json& v, const std::string& name, double* out) {
  if (!v.is_number()) {
    Fail(name + ": expected a number, got " + DescribeJsonValue(v));
    return;
  }
  *out = v.get<double>();
}

void FieldReader::Convert(const json& v, const std::string& name, bool* out) {
  if (!v.is_boolean()) {
    Fail(name + ": expected true or false, got " + DescribeJsonValue(v));
    return;
  }
  *out = v.get<bool>();
}

void FieldReader::Convert(const json& v, const std::string& name, std::string* out) {
  if (!v.is_string()) {
    Fail(name + ": expected a string, got " + DescribeJsonValue(v));
    return;
  }
  *out = v.get<std::string>();
}

namespace {

// Converts an array element by element; on failure names the array or the bad element.
template <typename T, typename Fn>
std::string ConvertList(const json& v, const std::string& name, const char* plural,
                        const char* what, std::vector<T>* out, Fn element) {
  if (!v.is_array()) {
    return name + ": expected an array of " + plural + ", got " + DescribeJsonValue(v);
  }
  std::vector<T> result;
  result.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    T x{};
    if (!element(v[i], &x)) {
      return name + "[" + std::to_string(i) + "]: expected " + what + ", got " +
             DescribeJsonValue(v[i]);
    }
    result.push_back(x);
  }
  *out = std::move(result);
  return "";
}

bool ToInt32(const json& e, int* x) {
  int64_t wide = 0;
  if (!ToInteger(e, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), &wide)) {
    return false;
  }
  *x = static_cast<int>(wide);
  return true;
}

bool ToInt64(const json& e, int64_t* x) {
  return ToInteger(e, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), x);
}

bool ToDouble(const json& e, double* x) {
  if (!e.is_number()) return false;
  *x = e.get<double>();
  return true;
}

}  // namespace

void FieldReader::Convert(const json& v, const std::string& name, std::vector<int>* out) {
  std::string error = ConvertList<int>(v, name, "integers", "an integer", out, ToInt32);
  if (!error.empty()) Fail(std::move(error));
}

void FieldReader::Convert(const json& v, const std::string& name, std::vector<int64_t>* out) {
  std::string error = ConvertList<int64_t>(v, name, "integers", "an integer", out, ToInt64);
  if (!error.empty()) Fail(std::move(error));
}

void FieldReader::Convert(const json& v, const std::string& name, std::vector<double>* out) {
  std::string error = ConvertList<double>(v, name, "numbers", "a number", out, ToDouble);
  if (!error.empty()) Fail(std::move(error));
}

}  // namespace deepinfer::model::internal
