// Scalar emulation of one lane of AVX-512 `vdpbf16ps` (the bf16 pair dot product), bit for bit.
//
// Measured on this Zen 5 (matches Intel's SDM pseudo-code):
//   acc = FTZ(fma(DAZ(a.odd),  DAZ(b.odd),  DAZ(acc)))     odd element (high half) first,
//   acc = FTZ(fma(DAZ(a.even), DAZ(b.even), acc))          then the even element (low half).
// Each step is a *fused* multiply-add with one RNE rounding (a product that overflows on its own
// can still give a finite sum); fp32 and bf16 subnormal inputs (the accumulator included) read as
// zero and a subnormal result is flushed to a zero of the same sign. MXCSR is not consulted.
//
// Every reference GEMM whose vector kernel uses vdpbf16ps builds its sums from DpBf16Step, so the
// reduction order is written down once. bf16×bf16 products are exact in fp32 unless they leave
// the normal range, so for e4m3×e2m1 / e4m3×e4m3 products (always normal and exact) a plain FMA
// chain in the order k1, k0, k3, k2, ... gives the same bits.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace deepinfer::kernels {

// Subnormal -> signed zero (denormals-are-zero on an input, flush-to-zero on an output).
inline float FlushSubnormal(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  return (u & 0x7F800000u) == 0 ? std::bit_cast<float>(u & 0x80000000u) : v;
}

// One vdpbf16ps lane: a and b are bf16 pairs (low 16 bits = even element, high = odd).
inline float DpBf16Step(float acc, uint32_t a, uint32_t b) {
  const float a_odd = FlushSubnormal(std::bit_cast<float>(a & 0xFFFF0000u));
  const float b_odd = FlushSubnormal(std::bit_cast<float>(b & 0xFFFF0000u));
  const float a_even = FlushSubnormal(std::bit_cast<float>(a << 16));
  const float b_even = FlushSubnormal(std::bit_cast<float>(b << 16));
  acc = FlushSubnormal(std::fma(a_odd, b_odd, FlushSubnormal(acc)));
  return FlushSubnormal(std::fma(a_even, b_even, acc));
}

// Loads the bf16 pair (x[0] even, x[1] odd) as the dword vdpbf16ps reads from memory.
inline uint32_t LoadBf16Pair(const uint16_t* x) {
  return static_cast<uint32_t>(x[0]) | (static_cast<uint32_t>(x[1]) << 16);
}

// Packs two separate bf16 elements into the pair dword (even in the low half).
inline uint32_t MakeBf16Pair(uint16_t even, uint16_t odd) {
  return static_cast<uint32_t>(even) | (static_cast<uint32_t>(odd) << 16);
}

// dot(a, b) over n (even) contiguous bf16 elements in vdpbf16ps order: pairs ascending, odd first.
inline float DotBf16PairOrder(const uint16_t* a, const uint16_t* b, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; i += 2)
    acc = DpBf16Step(acc, LoadBf16Pair(a + i), LoadBf16Pair(b + i));
  return acc;
}

}  // namespace deepinfer::kernels
