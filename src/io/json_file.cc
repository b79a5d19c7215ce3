#include "io/json_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <unordered_set>

namespace deepinfer::io {

namespace {

using Json = nlohmann::json;

// A SAX pass that builds nothing: it checks syntax, nesting depth and duplicate keys, and
// records the top-level key order. The DOM is built afterwards by nlohmann's own parser (its
// callback parser would do both at once, but rescans the parent object at every nested object
// end, which is quadratic in the number of tensors of a header).
class KeyCheckSax {
 public:
  explicit KeyCheckSax(std::vector<std::string>* top_level_keys)
      : top_level_keys_(top_level_keys) {}

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(Json::number_integer_t) { return true; }
  bool number_unsigned(Json::number_unsigned_t) { return true; }
  bool number_float(Json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(Json::binary_t&) { return true; }

  bool start_object(size_t) { return Push(true); }
  bool end_object() { return Pop(); }
  bool start_array(size_t) { return Push(false); }
  bool end_array() { return Pop(); }

  bool key(std::string& k) {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) {
      error_ = "duplicate key \"" + k + "\" in object at " + Path();
      return false;
    }
    f.current_key = k;
    if (frames_.size() == 1 && top_level_keys_ != nullptr) top_level_keys_->push_back(k);
    return true;
  }

  bool parse_error(size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    error_position_ = position;
    std::string what = ex.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep its description.
    if (size_t p = what.find("] "); p != std::string::npos && what.front() == '[') {
      what = what.substr(p + 2);
    }
    error_ = what;
    return false;
  }

  const std::string& error() const { return error_; }
  // Byte offset of a syntax error, or npos for other errors.
  size_t error_position() const { return error_position_; }

 private:
  struct Frame {
    bool is_object;
    std::unordered_set<std::string> keys;
    std::string current_key;
  };

  bool Push(bool is_object) {
    if (static_cast<int>(frames_.size()) >= kMaxJsonDepth) {
      error_ = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels";
      return false;
    }
    frames_.push_back(Frame{is_object, {}, {}});
    return true;
  }
  bool Pop() {
    frames_.pop_back();
    return true;
  }
  std::string Path() const {
    std::string path;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      path += frames_[i].is_object ? "/" + frames_[i].current_key : "/[]";
    }
    return path.empty() ? "/" : path;
  }

  std::vector<std::string>* top_level_keys_;
  std::vector<Frame> frames_;
  std::string error_;
  size_t error_position_ = std::string::npos;
};

}  // namespace

std::string JsonPositionString(std::string_view text, size_t byte) {
  if (byte > text.size()) byte = text.size();
  size_t line = 1, column = 1;
  for (size_t i = 0; i < byte; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

StatusOr<Json> ParseJson(std::string_view text, std::string_view display_name,
                         const JsonParseOptions& options) {
  if (options.top_level_keys != nullptr) options.top_level_keys->clear();
  KeyCheckSax sax(options.top_level_keys);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const std::exception& e) {  // e.g. out_of_range from a malformed number
    return InvalidArgument(std::string(display_name) + ": JSON parse error: " + e.what());
  }
  if (!ok) {
    std::string where;
    if (sax.error_position() != std::string::npos) {
      // nlohmann reports the count of bytes read, i.e. one past the offending byte.
      size_t byte = sax.error_position() > 0 ? sax.error_position() - 1 : 0;
      where = " at " + JsonPositionString(text, byte) + " (byte " + std::to_string(byte) + ")";
    }
    return InvalidArgument(std::string(display_name) + ": JSON parse error" + where + ": " +
                           sax.error());
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const std::exception& e) {  // not expected after the SAX pass accepted the text
    return InvalidArgument(std::string(display_name) + ": JSON parse error: " + e.what());
  }
}

StatusOr<Json> LoadJsonFile(const std::string& path, const JsonParseOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    Status s(err == ENOENT ? StatusCode::kNotFound : StatusCode::kInvalidArgument,
             path + ": cannot open: " + ErrnoMessage(err));
    return s;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  std::string text;
  text.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return DataLoss(path + ": read failed: " + ErrnoMessage(err));
    }
    if (n == 0) break;  // file shrank while reading
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(done);
  return ParseJson(text, path, options);
}

}  // namespace deepinfer::io
