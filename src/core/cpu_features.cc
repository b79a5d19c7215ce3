#include "core/cpu_features.h"

#include <cpuid.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace deepinfer {

namespace {
uint64_t Xgetbv() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures Probe() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char name[13];
    std::memcpy(name, &b, 4);
    std::memcpy(name + 4, &d, 4);
    std::memcpy(name + 8, &c, 4);
    name[12] = '\0';
    if (std::strcmp(name, "GenuineIntel") == 0) f.vendor = CpuVendor::kIntel;
    if (std::strcmp(name, "AuthenticAMD") == 0) f.vendor = CpuVendor::kAmd;
  }
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool fma = c & (1u << 12);
  if (!osxsave) return f;
  const uint64_t xcr0 = Xgetbv();
  const bool ymm_os = (xcr0 & 0x6) == 0x6;
  const bool zmm_os = (xcr0 & 0xE6) == 0xE6;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx2_fma = ymm_os && fma && (b & (1u << 5));
  const bool avx512f = b & (1u << 16), avx512dq = b & (1u << 17), avx512bw = b & (1u << 30),
             avx512vl = b & (1u << 31);
  f.avx512_core = zmm_os && avx512f && avx512dq && avx512bw && avx512vl;
  f.avx512_vbmi = f.avx512_core && (c & (1u << 1));
  f.avx512_vnni = f.avx512_core && (c & (1u << 11));
  f.gfni = f.avx512_core && (c & (1u << 8));
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1))
    f.avx512_bf16 = f.avx512_core && (a1 & (1u << 5));
  return f;
}
}  // namespace

CpuLevel CpuFeatures::BestLevel() const {
  if (avx512_core && avx512_bf16 && avx512_vbmi && avx512_vnni && gfni && avx2_fma)
    return CpuLevel::kAvx512;
  if (avx2_fma) return CpuLevel::kAvx2;
  return CpuLevel::kScalar;
}

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = Probe();
  return features;
}

CpuLevel ActiveCpuLevel() {
  static const CpuLevel level = [] {
    CpuLevel best = GetCpuFeatures().BestLevel();
    if (const char* env = std::getenv("DEEPINFER_CPU_LEVEL")) {
      CpuLevel cap = best;
      if (std::strcmp(env, "scalar") == 0) cap = CpuLevel::kScalar;
      if (std::strcmp(env, "avx2") == 0) cap = CpuLevel::kAvx2;
      if (static_cast<int>(cap) < static_cast<int>(best)) best = cap;
    }
    return best;
  }();
  return level;
}

const char* CpuLevelName(CpuLevel level) {
  switch (level) {
    case CpuLevel::kScalar:
      return "scalar";
    case CpuLevel::kAvx2:
      return "avx2";
    case CpuLevel::kAvx512:
      return "avx512";
  }
  return "?";
}

const char* CpuVendorName(CpuVendor vendor) {
  switch (vendor) {
    case CpuVendor::kIntel:
      return "intel";
    case CpuVendor::kAmd:
      return "amd";
    case CpuVendor::kOther:
      return "other";
  }
  return "?";
}

StreamPrefetch ChooseStreamPrefetch(const char* env, CpuVendor vendor) {
  if (env != nullptr && std::strcmp(env, "burst") == 0) return StreamPrefetch::kBurst;
  if (env != nullptr && std::strcmp(env, "spread") == 0) return StreamPrefetch::kSpread;
  return vendor == CpuVendor::kAmd ? StreamPrefetch::kBurst : StreamPrefetch::kSpread;
}

StreamPrefetch StreamPrefetchStyle() {
  static const StreamPrefetch style =
      ChooseStreamPrefetch(std::getenv("DEEPINFER_STREAM_PREFETCH"), GetCpuFeatures().vendor);
  return style;
}

const char* StreamPrefetchName(StreamPrefetch style) {
  return style == StreamPrefetch::kBurst ? "burst" : "spread";
}

}  // namespace deepinfer
