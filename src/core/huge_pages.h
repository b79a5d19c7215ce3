// Large, read-mostly heap arrays (the packed weights, the read probe's buffer) on transparent huge
// pages where the kernel allows it.
//
// A decode step streams every weight byte once. On 4 KiB pages that is one TLB entry (and a page
// walk) per 4 KiB, and the core's hardware stream prefetchers stop at every page boundary. With
// transparent huge pages in the common `madvise` mode (/sys/kernel/mm/transparent_hugepage) a
// region gets 2 MiB pages only when asked. AllocateLarge asks for the whole huge pages of any
// allocation of at least one; the tail stays on small pages, so an allocation holds no more memory
// than it asked for. The request is a hint: where the kernel refuses (THP `never`, no free huge
// page) the memory is ordinary pages and nothing else changes. Pages are faulted in, and made
// huge, by the first write.
#pragma once

#include <cstddef>
#include <cstdlib>

namespace deepinfer {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` of uninitialised memory rounded up to whole 64-byte lines (0 gives one line), 64-byte
// aligned; from kHugePageBytes up, aligned to a huge page and its whole huge pages advised
// MADV_HUGEPAGE. Release with std::free (FreeLarge). nullptr when out of memory.
void* AllocateLarge(size_t bytes);

// The deleter of a std::unique_ptr that owns AllocateLarge memory.
struct FreeLarge {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace deepinfer
