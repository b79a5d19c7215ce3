// Which x86-64 vector extensions this CPU (and OS) supports, probed once at start-up.
// Kernels pick their implementation from this at run time (kernels/cpu/dispatch.h).
#pragma once

#include <string>

namespace deepinfer {

enum class CpuLevel { kScalar, kAvx2, kAvx512 };  // kAvx512 = F+BW+VL+DQ+BF16+VBMI+VNNI+GFNI
enum class CpuVendor { kOther, kIntel, kAmd };

struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512_core = false;  // F, BW, VL, DQ
  bool avx512_bf16 = false;
  bool avx512_vbmi = false;
  bool avx512_vnni = false;
  bool gfni = false;  // GF(2^8) affine byte transforms (the FP8 GEMV's decode), 512-bit
  CpuVendor vendor = CpuVendor::kOther;

  CpuLevel BestLevel() const;
};

const CpuFeatures& GetCpuFeatures();

// The level kernels use: the best the CPU has, capped by DEEPINFER_CPU_LEVEL=scalar|avx2|avx512
// (for testing the fallbacks on an AVX-512 machine).
CpuLevel ActiveCpuLevel();
const char* CpuLevelName(CpuLevel level);
const char* CpuVendorName(CpuVendor vendor);

// How the batch-1 GEMVs of decode (FP8 dense, MXFP4 experts, the bf16 head: each weight read once
// per step) issue their software prefetches, a fixed distance ahead of the weight stream:
//   kBurst:  every line of the next block(s) at once, before their compute (FP8: 64 lines; the
//            bf16 tile: one line per row step into L1 only);
//   kSpread: one line per line consumed, interleaved with the compute, into L1 and (further ahead)
//            into L2.
// Measured (docs/performance.md, "The GEMVs' prefetch by CPU" and the sections after it): on the
// Zen 5 host the FP8 bursts reach 96% of the paired read and the spread form 72%; on an Intel Xeon
// (Emerald Rapids) bursts hold it at 62-65% and the spread form reads 87-91% (a burst wants more
// lines in flight than the core's L1 fill buffers hold, and the prefetches behind them stall the
// pipeline; L2 prefetches are not held in them); there the MXFP4 GEMV reads 78-80% spread against
// 70-71% burst, and the bf16 GEMV 100% with its L2 prefetch against 94%.
// The AVX2 GEMVs (FP8, MXFP4, the bf16 tile) prefetch only in the spread form (Intel, AVX2 level:
// FP8 48% -> 87% of the paired read, bf16 75% -> 100%+) and leave kBurst hosts to the hardware
// prefetcher (Zen 1's AVX2 FP8 GEMV lost 15% to a prefetch of every line).
// Default: kBurst on AMD, kSpread otherwise; DEEPINFER_STREAM_PREFETCH=burst|spread overrides. Same
// bits either way.
enum class StreamPrefetch { kBurst, kSpread };
StreamPrefetch StreamPrefetchStyle();  // chosen once per process
// The rule: env "burst" / "spread" wins (nullptr or any other value: none given), else the
// vendor's.
StreamPrefetch ChooseStreamPrefetch(const char* env, CpuVendor vendor);
const char* StreamPrefetchName(StreamPrefetch style);

}  // namespace deepinfer
