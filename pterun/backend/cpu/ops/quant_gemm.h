#pragma once

// The CPU's int8 matrix product (quant_gemm.cpp), which the quantized
// linear and convolution kernels (quant_nn.cpp) share.

#include <cstdint>

namespace pterun::cpu {

/// c[i * ldc + j] = sum_k (a[i * lda + k] - a_zero_point) * w[j * ldw + k]
/// for i < m, j < n, exactly (int32). `a` holds int8 or (a_unsigned) uint8
/// bytes, `w` int8; `w_sums[j]` = sum_k w[j * ldw + k]. Rows are read in
/// place: weights stay as the program stores them ([N, K], one row per
/// output channel). AVX-512 VNNI where the build has it (vpdpbusd on
/// uint8 x int8, the activations shifted by 128 and the shift taken back
/// through w_sums), else AVX2 (int16 products), else plain loops.
struct QGemm {
  const uint8_t* a;
  int64_t lda;
  bool a_unsigned;
  int32_t a_zero_point;
  const int8_t* w;
  int64_t ldw;
  const int32_t* w_sums;
  int64_t m;
  int64_t n;
  int64_t k;
};

void qgemm(const QGemm& p, int32_t* c, int64_t ldc);

/// The instruction set qgemm uses in this build: "avx512-vnni", "avx2" or
/// "scalar".
const char* qgemm_isa();

}  // namespace pterun::cpu
