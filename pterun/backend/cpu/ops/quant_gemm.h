#pragma once

// The CPU's int8 matrix product (quant_gemm.cpp), which the quantized
// linear and convolution kernels (quant_nn.cpp, quant_conv.cpp) share.

#include <cstddef>
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
  /// Optional, qgemm_packed only (an implicit im2col): row i's group of 4
  /// inputs q is the 4 bytes at a_rows[i] + a_groups[q]; k is a multiple
  /// of 4, a and lda are not read, and int8 rows come with their sums.
  const uint8_t* const* a_rows = nullptr;
  const int32_t* a_groups = nullptr;
  /// Optional, qgemm_packed only (required with a_rows): a_sums[i] = sum_k
  /// of row i's bytes as int8, which int8 rows owe.
  const int32_t* a_sums = nullptr;
  /// qgemm_packed only: every row of `a` may be read to the next multiple
  /// of 64 bytes past its start (AMX tiles then load the last inputs in
  /// place; the bytes past k are multiplied by the panels' zeros).
  bool a_padded = false;
};

void qgemm(const QGemm& p, int32_t* c, int64_t ldc);

/// Whether this build has qgemm_packed's kernel (AVX-512 VNNI); without it
/// qgemm_packed runs qgemm.
bool qgemm_packs();

/// Bytes of one packed panel (16 output channels) of a depth of k: at least
/// one group of 4 past k, rounded up to 16 groups.
int64_t qgemm_panel_bytes(int64_t k);

/// Packs panels [panel_begin, panel_end) of n rows of k bytes (row stride
/// ldw) into `out` (panel i at i * qgemm_panel_bytes(k)): for each group of
/// 4 inputs, 16 rows x 4 bytes; with shift128 every byte + 128 (an int8
/// value as the uint8 operand; quant_gemm_packed.cpp). Zeros past n, and
/// past k up to a whole number of 16 groups (so that AMX tiles read whole
/// steps of 64 inputs in place).
void qgemm_pack(const int8_t* w, int64_t ldw, int64_t n, int64_t k, bool shift128,
                int64_t panel_begin, int64_t panel_end, uint8_t* out);

/// qgemm with the weights read from `panels` (qgemm_pack of p.w's rows,
/// shifted when !p.a_unsigned; p.w is not read): the same exact sums. Worth its
/// packing from a few rows of activations on.
void qgemm_packed(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc);

/// The requantization of a product's int32 sums (quant_requant.h): per
/// output channel the multiplier input_scale * weight_scale and the bias,
/// as float32; the output's reciprocal scale, zero point and clamp.
struct Requant {
  const float* mult;
  const float* bias;
  float inv;
  float zero_point;
  int32_t lo;
  int32_t hi;
};

/// Where qgemm_packed_requant puts its outputs: row i's channel j (of the
/// product's n) requantized by `terms` (from its channel j) as
/// requantize_run does (the sum times mult[j], plus bias[j], times inv,
/// rounded half to even, plus the zero point, clamped to [lo, hi]) as one
/// byte, int8 or (is_unsigned) uint8, at rows[i] + j.
struct QGemmOut {
  uint8_t* const* rows;
  Requant terms;
  bool is_unsigned;
};

/// qgemm_packed with the requantization in its stores (no int32 sums
/// written and read back). AVX-512 VNNI builds only (qgemm_packs()); for p
/// without gathered rows elsewhere (the sums through qgemm, then
/// requantized).
void qgemm_packed_requant(const QGemm& p, const uint8_t* panels, const QGemmOut& out);

/// qgemm for few activation rows, packed once (so that rows shared by
/// several products are packed once): `panels` holds p's rows as
/// qgemm_pack made them (qgemm_panel_bytes(p.k) per 16 rows, shifted when
/// !p.a_unsigned; p.a is not read), and the weights are read in place, 4
/// bytes at a time. Needs 16 * ldc < 2^31. Without the packed kernel
/// (qgemm_packs() false) it runs qgemm on p.a.
void qgemm_rows_on_panels(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc);

/// Whether the AMX kernels may run (quant_gemm_amx.cpp; qgemm_rows_on_panels
/// takes them where qgemm_amx_pays, qgemm_packed's callers choose them):
/// the build targets AMX-INT8, the CPU has it, Linux granted this process
/// its tile registers, and neither PTERUN_AMX=0 nor qgemm_use_amx(false)
/// turned it off.
bool qgemm_amx();

/// Whether AMX tiles pay for a product of n output channels (or, for
/// qgemm_rows_on_panels, weight rows) over a depth of k: qgemm_amx() and
/// at least two panels of channels and one step of 64 inputs.
bool qgemm_amx_pays(int64_t n, int64_t k);

/// Turns the AMX kernels on (where available) or off for the process, for
/// tests of both paths; returns whether they were on.
bool qgemm_use_amx(bool on);

/// qgemm_rows_on_panels and qgemm_packed on AMX tiles, whatever
/// qgemm_amx() says, where the build and CPU have them (else, and for
/// gathered rows, the vector kernels): the same exact sums.
void qgemm_rows_on_panels_amx(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc);
void qgemm_packed_amx(const QGemm& p, const uint8_t* panels, int32_t* c, int64_t ldc);

/// What the raw sums of the packed kernels (vector and AMX; AVX-512 builds,
/// qgemm_packs()) owe, as int32 with wrap-around, for `count` entries:
/// - qgemm_row_terms, activation rows [i0, ...) of qgemm_packed: 128 times
///   each int8 row's sum (a_sums, else counted), 0 for uint8 rows;
/// - qgemm_channel_terms, output channels [j0, ...) of qgemm_packed: the
///   zero point times each weight row's sum;
/// - qgemm_weight_row_terms, weight rows [j0, ...) of qgemm_rows_on_panels:
///   (128 for int8 activations, + the zero point) times each row's sum.
void qgemm_row_terms(const QGemm& p, int64_t i0, int count, int32_t* out);
void qgemm_channel_terms(const QGemm& p, int64_t j0, int count, int32_t* out);
void qgemm_weight_row_terms(const QGemm& p, int64_t j0, int count, int32_t* out);

/// out[i * groups + g] = the sum of the `run` int8 bytes of group g of
/// pixel i (at image + i * stride + g * run), for pixels [begin, end): the
/// sums qgemm_packed's gathered int8 rows owe (QGemm::a_sums).
void qgemm_pixel_sums(const uint8_t* image, int64_t stride, int64_t groups, int64_t run,
                      int64_t begin, int64_t end, int32_t* out);

/// The product of uint8 rows with int8 weights quantized in blocks (4-bit
/// layers with their nibbles - 8 packed by qgemm_pack, unshifted), for
/// many rows: c[i * ldc + j] = sum over blocks b of
/// scales[b * ld_scales + j] * sum_{k in b} a[i * lda + k] * w[j][k], the
/// block sums exact (int32), each scaled and added in float32. bs (the
/// block) and k are multiples of 4, k of bs; n at most 32 (two panels).
/// AVX-512 VNNI only (qgemm_packs()).
struct QBlockGemm {
  const uint8_t* a;
  int64_t lda;
  int64_t m;
  int64_t k;
  int64_t bs;
  const uint8_t* panels;
  int64_t n;
  const float* scales;
  int64_t ld_scales;
  float* c;
  int64_t ldc;
};
void qgemm_blocks(const QBlockGemm& p);

/// From this many rows of activations on, packing an operand pays for
/// itself (qgemm_packed, qgemm_rows_on_panels).
constexpr int64_t kQgemmPackRows = 16;

/// Bytes of the panels qgemm_pack makes of m rows of depth k (those of
/// qgemm_rows_on_panels): 0 where this
/// build packs nothing or m is below kQgemmPackRows.
size_t qgemm_rows_bytes(int64_t m, int64_t k);

/// The instruction set qgemm uses in this build: "avx512-vnni", "avx2" or
/// "scalar".
const char* qgemm_isa();

}  // namespace pterun::cpu
