#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>

namespace deepinfer {

void* AllocateLarge(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  if (bytes < kHugePageBytes) return std::aligned_alloc(64, rounded > 0 ? rounded : 64);
  // posix_memalign, not aligned_alloc: the size need not be a multiple of the alignment.
  void* p = nullptr;
  if (::posix_memalign(&p, kHugePageBytes, rounded) != 0) return nullptr;
  // Only the whole huge pages: the tail stays on small pages, so no allocation holds more memory
  // than it asked for. A hint; a refusal changes nothing.
  ::madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  return p;
}

}  // namespace deepinfer
