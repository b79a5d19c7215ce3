// Large allocations on transparent huge pages (core/huge_pages.h).
#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace deepinfer {
namespace {

struct Mapping {
  uintptr_t begin = 0, end = 0;
  int64_t anon_huge_kb = -1;
};

// The /proc/self/smaps entry of the mapping that holds `p`.
Mapping MappingOf(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  Mapping found;
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t b = 0, e = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> b >> dash >> e && dash == '-' && line.find(':') > line.find(' ')) {
      inside = b <= addr && addr < e;
      if (inside) found = {b, e, -1};
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      found.anon_huge_kb = std::stoll(line.substr(14));
    }
  }
  return found;
}

// "always", "madvise" or "never" (empty when the setting cannot be read).
std::string ThpMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  const auto open = s.find('['), close = s.find(']');
  return open == std::string::npos || close == std::string::npos
             ? std::string()
             : s.substr(open + 1, close - open - 1);
}

TEST(AllocateLarge, SmallAllocationsAreCacheLineAligned) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, kHugePageBytes - 1}) {
    void* p = AllocateLarge(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 1, (bytes + 63) / 64 * 64);  // whole lines are the caller's
    std::free(p);
  }
}

TEST(AllocateLarge, WholeHugePagesAreAdvisedAndTheTailIsNot) {
  const size_t bytes = 4 * kHugePageBytes + 100 * 1024;
  auto* p = static_cast<uint8_t*>(AllocateLarge(bytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  std::memset(p, 7, bytes);
  // madvise splits the advised range into a mapping of its own: the four whole huge pages.
  const Mapping head = MappingOf(p);
  EXPECT_EQ(head.begin, reinterpret_cast<uintptr_t>(p));
  EXPECT_EQ(head.end - head.begin, 4 * kHugePageBytes);
  EXPECT_GE(MappingOf(p + bytes - 1).begin, head.end);  // the tail is outside it
  const std::string mode = ThpMode();
  if (mode == "always" || mode == "madvise") {
    // The kernel may refuse a huge page when memory is fragmented; it rarely refuses all four.
    EXPECT_GT(head.anon_huge_kb, 0) << "THP mode " << mode;
  }
  std::free(p);
}

}  // namespace
}  // namespace deepinfer
