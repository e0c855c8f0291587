#pragma once

// The seam between the operator front-ends (pterun/ops/*.cpp: unpack, check,
// resize, then call one slot) and the backends (pterun/backend/<device>/:
// compute only). Each backend fills one OpBackend; a family it does not
// compute stays null, and the operators of that family are then not
// registered for its device, so a method using one is refused at load.

#include <array>
#include <cstddef>
#include <cstdint>

#include "pterun/core/device.h"
#include "pterun/core/dtype.h"
#include "pterun/kernels/kernel.h"

namespace pterun::ops {

/// Operator families: the unit a backend provides or lacks.
enum class OpFamily : uint8_t {
  Prim,         // sizes, Python number arithmetic, views: metadata only
  Shape,        // views, concatenation, rearrangement (Mover)
  Copy,         // copies, casts, dim-order copies
  Creation,     // full, arange, zeros ...
  Elementwise,  // binary, unary, compare, activation
  Reduce,       // sum, mean, amax, argmax, var ...
  Softmax,      // softmax, log_softmax
  Norm,         // layer, batch and group norm
  Matmul,       // mm, bmm, addmm, linear
  Conv,         // convolution
  Pool,         // max / avg / adaptive pooling, upsampling
  Index,        // embedding, index, gather, scatter ...
  Nonzero,      // nonzero
  Quant,        // quantize, dequantize, choose_qparams; integer linear / conv / mean
  Attention,    // attention over a KV cache, cache writes at positions held in tensors
};
inline constexpr size_t kNumOpFamilies = 15;

/// "shape", "norm" ...
const char* op_family_name(OpFamily family);

struct Mover;
struct CopyBackend;
struct CreationBackend;
struct ElementwiseBackend;
struct ReduceBackend;
struct SoftmaxBackend;
struct NormBackend;
struct MatmulBackend;
struct ConvBackend;
struct PoolBackend;
struct IndexBackend;
struct NonzeroBackend;
struct QuantBackend;
struct AttentionBackend;

/// One backend's compute functions, one struct per family (declared in
/// pterun/ops/<family>.h).
struct OpBackend {
  const Mover* shape = nullptr;
  const CopyBackend* copy = nullptr;
  const CreationBackend* creation = nullptr;
  const ElementwiseBackend* elementwise = nullptr;
  const ReduceBackend* reduce = nullptr;
  const SoftmaxBackend* softmax = nullptr;
  const NormBackend* norm = nullptr;
  const MatmulBackend* matmul = nullptr;
  const ConvBackend* conv = nullptr;
  const PoolBackend* pool = nullptr;
  const IndexBackend* index = nullptr;
  const NonzeroBackend* nonzero = nullptr;
  const QuantBackend* quant = nullptr;
  const AttentionBackend* attention = nullptr;

  /// Per family, the dtypes of an operator's first tensor argument that this
  /// backend computes, where it computes fewer than the front-end accepts.
  std::array<DTypeSet, kNumOpFamilies> dtypes = all_dtypes();

  /// True when the backend computes `family`.
  bool provides(OpFamily family) const;

 private:
  static constexpr std::array<DTypeSet, kNumOpFamilies> all_dtypes() {
    std::array<DTypeSet, kNumOpFamilies> a{};
    a.fill(DTypeSet::all());
    return a;
  }
};

namespace detail {
/// The table of each device kind, set when that backend registers.
extern const OpBackend* g_backends[kNumDevices];
}  // namespace detail

/// The backend table of the device a kernel runs on. Front-ends call it
/// only from kernels registered for that device, so it is always set.
inline const OpBackend& backend(const kernels::KernelContext& ctx) {
  return *detail::g_backends[static_cast<size_t>(ctx.device)];
}

}  // namespace pterun::ops
