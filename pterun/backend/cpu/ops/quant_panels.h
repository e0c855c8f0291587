#pragma once

// Packed int8 weight panels (quant_gemm.h's qgemm_pack) kept between calls,
// for the quantized convolution and linear kernels (quant_conv.cpp,
// quant_nn.cpp): per thread, by weight address and what the packing
// depends on, with the bytes they were packed from, so constant weights
// are packed once and changed ones again.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "pterun/backend/cpu/ops/kept_bytes.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"

namespace pterun::cpu {

class PackedWeights {
 public:
  explicit PackedWeights(size_t bytes) : bytes_(bytes + 63) {}
  /// The panels, from a 64-byte boundary (AMX tiles and vectors load whole
  /// lines).
  uint8_t* panels() {
    const auto at = reinterpret_cast<uintptr_t>(bytes_.data());
    return bytes_.data() + ((64 - at % 64) % 64);
  }
  /// True when the panels were packed from `w`'s `n` bytes
  /// (KeptBytes::same; `id` the weights' Tensor::constant_id).
  bool packed_from(const int8_t* w, size_t n, uint64_t id) { return from_.same(w, n, id); }
  void remember(const int8_t* w, size_t n, uint64_t id) { from_.take(w, n, id); }
  /// Before the panels change: they match no weights until remember().
  void forget() { from_.forget(); }

 private:
  std::vector<uint8_t> bytes_;
  KeptBytes from_;
};

/// The calling thread's panels for the weights at `weight`, packed as
/// `shape` says (sizes and flags: whatever changes the packing), made
/// `bytes` long on first use. The reference stays valid until the thread's
/// next call. Room for the int8 layers of a deep network (a ResNet-101 has
/// about 100 convolutions), so that a call does not evict the next one's.
PackedWeights& kept_panels(const int8_t* weight, std::initializer_list<int64_t> shape,
                           size_t bytes);

/// The largest weights (bytes) a linear layer keeps packed: it compares
/// them with their copy on every call and keeps two copies per thread,
/// which pays while they are small and cached; larger layers of few rows
/// are memory-bound and read their weights in place.
inline constexpr int64_t kKeptWeightBytes = int64_t{1} << 20;

/// How an int8 linear layer (static or dynamic 8-bit) of m rows against
/// [n, k] weights multiplies them:
/// - PackedRows: with 16 rows and more, weights over kKeptWeightBytes or
///   AMX paying: the rows packed once per call and the weights read in
///   place against them (qgemm_rows_on_panels), the outputs transposed (a
///   scatter per register on AVX-512: 11-18% of mlp1k's call on Zen 4
///   when it took every product of 16 rows);
/// - KeptPanels: otherwise, weights of up to kKeptWeightBytes packed once
///   and kept (kept_weight_panels), the rows broadcast against them
///   (qgemm_packed) in tasks of whole panels of 16 outputs;
/// - InPlace: larger weights of few rows, or no packed kernel in this
///   build (qgemm).
enum class QLinearForm { PackedRows, KeptPanels, InPlace };

inline QLinearForm qlinear_form(int64_t m, int64_t n, int64_t k) {
  if (!qgemm_packs()) return QLinearForm::InPlace;
  if (m >= kQgemmPackRows && (qgemm_amx_pays(n, k) || n * k > kKeptWeightBytes)) {
    return QLinearForm::PackedRows;
  }
  return n * k <= kKeptWeightBytes ? QLinearForm::KeptPanels : QLinearForm::InPlace;
}

/// The calling thread's panels of the [n, k] int8 weights at `weight`
/// for qgemm_packed against activation rows of int8 (shifted panels) or
/// (a_unsigned) uint8: packed on first use and again whenever the weight
/// bytes changed. Valid until the thread's next kept_panels call.
const uint8_t* kept_weight_panels(const int8_t* weight, uint64_t constant_id, int64_t n, int64_t k,
                                  bool a_unsigned);

}  // namespace pterun::cpu
