#pragma once

// The one elementwise engine of the CPU backend. Kernels give it an output,
// up to three inputs and a per-element functor in a compute type C; it
// broadcasts, walks any strides and dim orders, converts each input's
// dtype to C on load and the functor's result R to the output's dtype on
// store, and splits large work over threads. Contiguous inputs of dtype C
// feed the functor in place, so the common case is a plain vectorisable
// loop.

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {

namespace detail {

constexpr int64_t kChunk = 1024;

/// Iteration space over the output in its memory order, with per-operand
/// strides (0 where an input broadcasts), size-1 dimensions dropped and
/// contiguous dimensions merged.
template <size_t N>
struct Plan {
  size_t rank = 0;
  // Entries from rank on are never read (left unset: a call fills a few).
  std::array<int64_t, kMaxRank> sizes;
  std::array<std::array<int64_t, kMaxRank>, N + 1> strides;  // [0] = output
};

/// Builds the plan; Error InvalidArgument when an input does not broadcast
/// to the output's shape.
template <size_t N>
Plan<N> make_plan(const Tensor& out, const std::array<const Tensor*, N>& ins, const char* op);

/// True when every input has out's sizes and strides (tensors are dense:
/// the same memory order) and, with `dtype`, that dtype.
template <size_t N>
bool same_layout(const Tensor& out, const std::array<const Tensor*, N>& ins,
                 std::optional<DType> dtype = std::nullopt) {
  for (const Tensor* t : ins) {
    if ((dtype && t->dtype() != *dtype) || !kernels::same_dims(t->sizes(), out.sizes()) ||
        !kernels::same_dims(t->strides(), out.strides())) {
      return false;
    }
  }
  return true;
}

/// dst[i] = op(src[0][i], ...) for i in [0, n).
template <size_t N, typename C, typename R, typename Op>
inline void apply(R* dst, const std::array<const C*, N>& src, int64_t n, Op& op) {
  if constexpr (N == 0) {
    for (int64_t i = 0; i < n; ++i) dst[i] = op();
  } else if constexpr (N == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = op(src[0][i]);
  } else if constexpr (N == 2) {
    for (int64_t i = 0; i < n; ++i) dst[i] = op(src[0][i], src[1][i]);
  } else {
    static_assert(N == 3, "map_elements takes up to 3 inputs");
    for (int64_t i = 0; i < n; ++i) dst[i] = op(src[0][i], src[1][i], src[2][i]);
  }
}

template <typename C>
void load(const void* base, DType dtype, int64_t offset, int64_t stride, int64_t n, C* dst);

template <typename R>
void store(void* base, DType dtype, int64_t offset, int64_t stride, int64_t n, const R* src);

}  // namespace detail

/// out[i] = op(in[0][i], ..., in[N-1][i]) over the broadcast shape, which
/// `out` must already have. C is the compute type the inputs are converted
/// to; R the functor's result type, converted to out's dtype.
template <typename C, typename R, size_t N, typename Op>
void map_elements(const kernels::KernelContext& ctx, Tensor& out,
                  const std::array<const Tensor*, N>& ins, Op op, const char* op_name) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  constexpr DType kC = kernels::dtype_of<C>();
  constexpr DType kR = kernels::dtype_of<R>();
  if (out.dtype() == kR && detail::same_layout(out, ins, kC)) {
    // One layout, no conversions (the common case): one loop over memory.
    R* dst = out.data_as<R>();
    std::array<const C*, N> src;
    for (size_t k = 0; k < N; ++k) src[k] = ins[k]->template data_as<const C>();
    parallel_for(ctx, numel, 1, [&](int64_t begin, int64_t end) {
      std::array<const C*, N> from;
      for (size_t k = 0; k < N; ++k) from[k] = src[k] + begin;
      detail::apply<N>(dst + begin, from, end - begin, op);
    });
    return;
  }
  const detail::Plan<N> plan = detail::make_plan<N>(out, ins, op_name);
  const size_t r = plan.rank;
  const int64_t inner = r == 0 ? 1 : plan.sizes[r - 1];
  const int64_t rows = numel / inner;
  const int64_t chunks_per_row = (inner + detail::kChunk - 1) / detail::kChunk;

  const DType out_dtype = out.dtype();
  std::array<DType, N> in_dtypes;
  std::array<const char*, N> in_base;
  for (size_t k = 0; k < N; ++k) {
    in_dtypes[k] = ins[k]->dtype();
    in_base[k] = static_cast<const char*>(ins[k]->data());
  }
  char* out_base = static_cast<char*>(out.data());

  auto run = [&](int64_t begin, int64_t end) {
    alignas(64) C in_buf[N == 0 ? 1 : N][detail::kChunk];
    alignas(64) R out_buf[detail::kChunk];
    for (int64_t item = begin; item < end; ++item) {
      int64_t row = item / chunks_per_row;
      int64_t start = (item % chunks_per_row) * detail::kChunk;
      int64_t n = std::min(detail::kChunk, inner - start);
      // Offsets of this row, from its index over the outer dimensions.
      std::array<int64_t, N + 1> off{};
      int64_t rem = row;
      for (size_t d = r == 0 ? 0 : r - 1; d-- > 0;) {
        int64_t i = rem % plan.sizes[d];
        rem /= plan.sizes[d];
        for (size_t k = 0; k <= N; ++k) off[k] += i * plan.strides[k][d];
      }
      const int64_t inner_stride_out = r == 0 ? 1 : plan.strides[0][r - 1];
      std::array<const C*, N> src;
      for (size_t k = 0; k < N; ++k) {
        int64_t stride = r == 0 ? 1 : plan.strides[k + 1][r - 1];
        int64_t o = off[k + 1] + start * stride;
        if (in_dtypes[k] == kC && stride == 1) {
          src[k] = reinterpret_cast<const C*>(in_base[k]) + o;
        } else {
          detail::load<C>(in_base[k], in_dtypes[k], o, stride, n, in_buf[k]);
          src[k] = in_buf[k];
        }
      }
      int64_t o_out = off[0] + start * inner_stride_out;
      bool direct = out_dtype == kR && inner_stride_out == 1;
      R* dst = direct ? reinterpret_cast<R*>(out_base) + o_out : out_buf;
      detail::apply<N>(dst, src, n, op);
      if (!direct) detail::store<R>(out_base, out_dtype, o_out, inner_stride_out, n, out_buf);
    }
  };
  parallel_for(ctx, rows * chunks_per_row, std::min<int64_t>(inner, detail::kChunk), run);
}

/// out[i] = op() for every element (fills, arange-like ops use an index
/// variant below).
template <typename R, typename Op>
void fill_elements(const kernels::KernelContext& ctx, Tensor& out, Op op, const char* op_name) {
  map_elements<R, R, 0>(ctx, out, {}, op, op_name);
}

// ---- implementation ------------------------------------------------------

namespace detail {

template <size_t N>
Plan<N> make_plan(const Tensor& out, const std::array<const Tensor*, N>& ins, const char* op) {
  const size_t rank = out.dim();
  Plan<N> plan;
  if (same_layout(out, ins)) {
    // One memory order: one flat run, whatever the dtypes.
    plan.rank = 1;
    plan.sizes[0] = out.numel();
    for (size_t k = 0; k <= N; ++k) plan.strides[k][0] = 1;
    return plan;
  }
  // Per-operand strides over the output's logical dimensions.
  std::array<std::array<int64_t, kMaxRank>, N + 1> logical{};
  for (size_t d = 0; d < rank; ++d) logical[0][d] = out.stride(d);
  for (size_t k = 0; k < N; ++k) {
    const Tensor& t = *ins[k];
    PTERUN_CHECK(t.dim() <= rank, ErrorCode::InvalidArgument, op, ": input ", describe(t),
                 " has more dimensions than the output ", describe(out));
    size_t lead = rank - t.dim();
    for (size_t d = 0; d < rank; ++d) {
      if (d < lead) {
        logical[k + 1][d] = 0;
        continue;
      }
      int64_t s = t.size(d - lead);
      PTERUN_CHECK(s == out.size(d) || s == 1, ErrorCode::InvalidArgument, op, ": input ",
                   describe(t), " does not broadcast to the output ", describe(out));
      logical[k + 1][d] = s == 1 ? 0 : t.stride(d - lead);
    }
  }
  // Walk dimensions in the output's memory order, dropping size-1 ones and
  // merging a dimension into the previous one when every operand allows.
  for (size_t i = 0; i < rank; ++i) {
    size_t d = out.dim_order()[i];
    int64_t size = out.size(d);
    if (size == 1) continue;
    if (plan.rank > 0) {
      size_t p = plan.rank - 1;
      bool mergeable = true;
      for (size_t k = 0; k <= N; ++k) {
        mergeable = mergeable && plan.strides[k][p] == logical[k][d] * size;
      }
      if (mergeable) {
        plan.sizes[p] *= size;
        for (size_t k = 0; k <= N; ++k) plan.strides[k][p] = logical[k][d];
        continue;
      }
    }
    plan.sizes[plan.rank] = size;
    for (size_t k = 0; k <= N; ++k) plan.strides[k][plan.rank] = logical[k][d];
    ++plan.rank;
  }
  return plan;
}

template <typename C, typename S>
inline void load_typed(const S* src, int64_t stride, int64_t n, C* dst) {
  if (stride == 0) {
    C v = kernels::convert<C>(src[0]);
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  } else if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = kernels::convert<C>(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = kernels::convert<C>(src[i * stride]);
  }
}

template <typename C>
void load(const void* base, DType dtype, int64_t offset, int64_t stride, int64_t n, C* dst) {
  kernels::visit(dtype, kernels::Family::All, "elementwise load", [&]<typename S>() {
    load_typed(static_cast<const S*>(base) + offset, stride, n, dst);
  });
}

template <typename R>
void store(void* base, DType dtype, int64_t offset, int64_t stride, int64_t n, const R* src) {
  kernels::visit(dtype, kernels::Family::All, "elementwise store", [&]<typename S>() {
    S* dst = static_cast<S*>(base) + offset;
    if (stride == 1) {
      for (int64_t i = 0; i < n; ++i) dst[i] = kernels::convert<S>(src[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i * stride] = kernels::convert<S>(src[i]);
    }
  });
}

}  // namespace detail
}  // namespace pterun::cpu
