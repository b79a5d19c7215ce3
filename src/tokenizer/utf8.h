// UTF-8 helpers shared by the tokenizer: strict validation (encode input), lossy conversion with
// Rust's rule (decode output), and code point iteration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace deepinfer::tokenizer {

// Strict UTF-8: no overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
// The error names the byte offset of the first invalid sequence.
Status ValidateUtf8(std::string_view bytes);

// Length of the longest prefix of `bytes` that is valid UTF-8 and ends on a character boundary.
size_t ValidUtf8PrefixLength(std::string_view bytes);

// Appends `bytes` to `out` converted the way Rust's String::from_utf8_lossy does: every maximal
// invalid subsequence (the longest prefix of a would-be valid sequence, or one lone byte) becomes
// one U+FFFD. A valid sequence cut off at the end of `bytes` is also one U+FFFD.
void AppendLossyUtf8(std::string_view bytes, std::string* out);

// Length of the "maximal subpart" starting at bytes[0] when it does not start a valid
// character: 1..3 bytes that are a proper prefix of some valid sequence, else 1. Returns 0 when
// bytes[0..] starts a complete valid character (use Utf8SequenceLength for its length).
// `incomplete` (optional) is set when the subpart runs to the end of `bytes`, i.e. more input
// could still complete it.
size_t InvalidUtf8PrefixLength(std::string_view bytes, bool* incomplete);

// Decodes the valid character at the start of `bytes` (precondition: valid UTF-8 there) and
// stores its byte length in *length.
char32_t DecodeUtf8(std::string_view bytes, size_t* length);

// Appends the UTF-8 encoding of `cp` (a Unicode scalar value).
void AppendUtf8(char32_t cp, std::string* out);

}  // namespace deepinfer::tokenizer
