// Hyper-connection passes over the residual stream X [rows][hc][dim] bf16 (model/deepseek_v41/
// mhc.h), the element-wise parts that run over every stream element twice per block:
//
//   collapse: y[r][d] = bf16(pre[r][0]·X0[d] + pre[r][1]·X1[d] + ...)          (c ascending)
//   post:     out[r][k][d] = bf16(post[r][k]·y[r][d] + (comb[r][0][k]·X0[d] + comb[r][1][k]·X1[d]
//                                                       + ...))                 (j ascending)
//
// Every product and sum is a separate fp32 rounding (no fma), in the order written; the AVX-512
// and AVX2 paths evaluate exactly these operations per element, 16 / 8 columns at a time, so both
// paths give the same bits for every input. Single-threaded: callers split rows.
#pragma once

#include <cstdint>

namespace deepinfer::kernels {

struct HcStreamShape {
  int hc = 4;
  int64_t dim = 0;
};

// x [rows][hc][dim], pre [rows][hc] -> y [rows][dim].
void HcCollapseRowsRef(const HcStreamShape& s, const uint16_t* x, const float* pre, int64_t rows,
                       uint16_t* y);
void HcCollapseRowsAvx512(const HcStreamShape& s, const uint16_t* x, const float* pre, int64_t rows,
                          uint16_t* y);
void HcCollapseRowsAvx2(const HcStreamShape& s, const uint16_t* x, const float* pre, int64_t rows,
                        uint16_t* y);
void HcCollapseRows(const HcStreamShape& s, const uint16_t* x, const float* pre, int64_t rows,
                    uint16_t* y);  // dispatches on ActiveCpuLevel()

// y [rows][dim], x [rows][hc][dim], post [rows][hc], comb [rows][hc][hc] -> out [rows][hc][dim]
// (must not alias x or y).
void HcPostRowsRef(const HcStreamShape& s, const uint16_t* y, const uint16_t* x, const float* post,
                   const float* comb, int64_t rows, uint16_t* out);
void HcPostRowsAvx512(const HcStreamShape& s, const uint16_t* y, const uint16_t* x,
                      const float* post, const float* comb, int64_t rows, uint16_t* out);
void HcPostRowsAvx2(const HcStreamShape& s, const uint16_t* y, const uint16_t* x, const float* post,
                    const float* comb, int64_t rows, uint16_t* out);
void HcPostRows(const HcStreamShape& s, const uint16_t* y, const uint16_t* x, const float* post,
                const float* comb, int64_t rows, uint16_t* out);  // dispatches

}  // namespace deepinfer::kernels
