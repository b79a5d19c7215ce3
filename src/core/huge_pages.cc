#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>

namespace deepinfer {

void* AllocateLarge(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  if (bytes < kHugePageBytes) return std::aligned_alloc(64, rounded > 0 ? rounded : 64);
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  // Only the whole huge pages: the tail stays on small pages, so no allocation holds more memory
  // than it asked for. A hint; a refusal changes nothing.
  if (p != nullptr) ::madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  return p;
}

}  // namespace deepinfer
