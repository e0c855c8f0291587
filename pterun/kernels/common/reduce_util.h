#pragma once

// Reduction planning shared by the front-ends (ops/reduce.h) and both
// backends: dim-list parsing, reduced shapes and iteration plans over any
// strides and dim orders (Odometer, ReducePlan, LinePlan). The CPU engine
// that folds over these plans is backend/cpu/engine/reduce.h.

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <span>

#include "pterun/core/tensor.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::kernels {

/// Walks a row-major index space of `rank` dimensions, keeping one offset
/// per stride set (input, outputs ...) in step.
template <size_t N>
struct Odometer {
  size_t rank = 0;
  std::array<int64_t, kMaxRank> sizes{};
  std::array<std::array<int64_t, kMaxRank>, N> strides{};
  std::array<int64_t, kMaxRank> coord{};
  std::array<int64_t, N> offset{};

  int64_t count() const {
    int64_t n = 1;
    for (size_t d = 0; d < rank; ++d) n *= sizes[d];
    return n;
  }
  void push(int64_t size, const std::array<int64_t, N>& s) {
    sizes[rank] = size;
    for (size_t k = 0; k < N; ++k) strides[k][rank] = s[k];
    ++rank;
  }
  /// Appends a dim, or folds it into the last one when every stride set
  /// continues that one (size-1 dims are dropped).
  void push_merged(int64_t size, const std::array<int64_t, N>& s) {
    if (size == 1) return;
    if (rank > 0) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k) merge = merge && strides[k][rank - 1] == s[k] * size;
      if (merge) {
        sizes[rank - 1] *= size;
        for (size_t k = 0; k < N; ++k) strides[k][rank - 1] = s[k];
        return;
      }
    }
    push(size, s);
  }
  /// Positions the odometer at row-major index `linear`.
  void seek(int64_t linear) {
    offset.fill(0);
    if (linear == 0) {  // also the only valid position when a size is 0
      coord.fill(0);
      return;
    }
    for (size_t d = rank; d-- > 0;) {
      coord[d] = linear % sizes[d];
      linear /= sizes[d];
      for (size_t k = 0; k < N; ++k) offset[k] += coord[d] * strides[k][d];
    }
  }
  void next() {
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) offset[k] += strides[k][d];
      if (++coord[d] < sizes[d]) return;
      for (size_t k = 0; k < N; ++k) offset[k] -= sizes[d] * strides[k][d];
      coord[d] = 0;
    }
  }
};

using DimMask = std::bitset<kMaxRank>;

/// The dims of an `int[]? dim` argument as a mask over `rank` dims: None or
/// an empty list select every dim. Negative dims wrap; a repeated dim is
/// Error InvalidArgument, an out-of-range one IndexOutOfRange.
DimMask reduce_dim_mask(std::optional<std::span<const int64_t>> dims, int64_t rank, const char* op);

/// `in`'s shape with the masked dims removed, or set to 1 with keepdim.
Shape reduced_shape(const Tensor& in, DimMask mask, bool keepdim);

/// Number of elements each output of a reduction over `mask` combines.
int64_t reduced_count(const Tensor& in, DimMask mask);

/// out's stride for each of in's dims when out is `in` reduced over `mask`
/// (0 for reduced dims).
std::array<int64_t, kMaxRank> reduced_out_strides(const Tensor& in, const Tensor& out, DimMask mask,
                                                  bool keepdim);

/// How a reduction walks memory: the kept dims (input and output strides)
/// and the reduced dims (input strides), each ordered outermost first,
/// with size-1 dims dropped and contiguous neighbours merged.
struct ReducePlan {
  Odometer<2> kept;
  Odometer<1> reduced;
  int64_t num_out = 1;
  int64_t count = 1;
};

ReducePlan make_reduce_plan(const Tensor& in, const Tensor& out, DimMask mask, bool keepdim);

/// Iteration along one dim of `in` (size `len`, strides `in_step` and
/// `out_step[k]` in each out), for softmax, scans and arg-reductions.
/// Every other position is a "line"; lines are grouped as `outer` x `vec`,
/// where vec is the other dim with the smallest input stride, so that a
/// block of lines can be processed side by side with unit-stride loads.
template <size_t NOut>
struct LinePlan {
  int64_t len = 1;
  int64_t in_step = 0;
  std::array<int64_t, NOut> out_step{};
  int64_t vec = 1;
  int64_t vec_in = 0;
  std::array<int64_t, NOut> vec_out{};
  Odometer<NOut + 1> outer;
};

/// Builds a LinePlan over `in` and outputs whose stride for each of in's
/// dims is given (0 for dims the output does not have).
template <size_t NOut>
LinePlan<NOut> make_line_plan(const Tensor& in, size_t dim,
                              const std::array<std::span<const int64_t>, NOut>& out_strides) {
  LinePlan<NOut> p;
  const size_t rank = in.dim();
  p.len = rank == 0 ? 1 : in.size(dim);
  p.in_step = rank == 0 ? 0 : in.stride(dim);
  for (size_t k = 0; k < NOut; ++k) p.out_step[k] = rank == 0 ? 0 : out_strides[k][dim];
  // Other dims by decreasing input stride, size-1 dims dropped.
  std::array<size_t, kMaxRank> order{};
  size_t n = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (d != dim && in.size(d) != 1) order[n++] = d;
  }
  kernels::sort_dims_by_stride(order.data(), n, [&](size_t d) { return in.stride(d); });
  Odometer<NOut + 1> all;
  for (size_t i = 0; i < n; ++i) {
    size_t d = order[i];
    std::array<int64_t, NOut + 1> s{};
    s[0] = in.stride(d);
    for (size_t k = 0; k < NOut; ++k) s[k + 1] = out_strides[k][d];
    all.push_merged(in.size(d), s);
  }
  if (all.rank > 0) {
    size_t q = all.rank - 1;
    p.vec = all.sizes[q];
    p.vec_in = all.strides[0][q];
    for (size_t k = 0; k < NOut; ++k) p.vec_out[k] = all.strides[k + 1][q];
    all.rank = q;
  }
  p.outer = all;
  return p;
}

}  // namespace pterun::kernels
