#pragma once

// The CUDA elementwise engine, the counterpart of backend/cpu/engine/elementwise.h:
// out[i] = op(in[0][i], ..., in[N-1][i]) for N = 1..3 inputs broadcast to
// out's shape (which the caller has already resized, with the CPU's host
// helpers). The functor runs in a compute type C and its result R is
// converted to out's dtype, with the CPU engine's conversion rules.
//
// Three kernels per (functor, storage type):
//  - contiguous: every operand dense in the same order, same shape (or out
//    row-major and an input repeating a row-major block of its trailing
//    shape, such as a bias), inputs of storage type S and out of SO,
//    pointers aligned: 16-byte vector loads and stores, grid-stride loop;
//  - typed strided: inputs S and out SO, any broadcast or dim order,
//    through a StridedIndexer;
//  - strided: anything else (mixed dtypes) through a StridedIndexer,
//    converting each operand's dtype at run time.
// Index spaces below 2^32 items take 32-bit divisions.
// Functors are structs with a const __device__ operator() (no extended
// lambdas), templated on or fixed to the compute type.

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/launch_util.cuh"
#include "pterun/core/tensor.h"

namespace pterun::cuda {

constexpr unsigned kElementwiseThreads = 256;

namespace ew_detail {

/// Inputs and out of run-time dtypes: loads and stores convert by a
/// switch on the dtype.
template <int N>
struct Inputs {
  const void* data[N];
  DType dtype[N];
  template <typename C>
  __device__ C load(int k, int64_t off) const {
    return load_as<C>(data[k], dtype[k], off);
  }
};
struct Out {
  void* data;
  DType dtype;
  template <typename R>
  __device__ void store(int64_t off, R v) const {
    store_as(data, dtype, off, v);
  }
};

/// Inputs of storage type S and out of SO: typed loads and stores.
template <typename S, int N>
struct TypedInputs {
  const S* data[N];
  template <typename C>
  __device__ C load(int k, int64_t off) const {
    return convert<C>(data[k][off]);
  }
};
template <typename SO>
struct TypedOut {
  SO* data;
  template <typename R>
  __device__ void store(int64_t off, R v) const {
    data[off] = convert<SO>(v);
  }
};

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

/// The functor's result type for N arguments of type C.
template <typename Op, typename C, int N>
struct Result;
template <typename Op, typename C>
struct Result<Op, C, 1> {
  using type = decltype(std::declval<const Op&>()(std::declval<C>()));
};
template <typename Op, typename C>
struct Result<Op, C, 2> {
  using type = decltype(std::declval<const Op&>()(std::declval<C>(), std::declval<C>()));
};
template <typename Op, typename C>
struct Result<Op, C, 3> {
  using type =
      decltype(std::declval<const Op&>()(std::declval<C>(), std::declval<C>(), std::declval<C>()));
};

template <typename C, int N, typename Op>
__device__ __forceinline__ auto apply(const Op& op, const C (&v)[N]) {
  if constexpr (N == 1) {
    return op(v[0]);
  } else if constexpr (N == 2) {
    return op(v[0], v[1]);
  } else {
    static_assert(N == 3, "the elementwise engine takes 1 to 3 inputs");
    return op(v[0], v[1], v[2]);
  }
}

/// offsets of item i, with 32-bit divisions when the whole space allows.
template <int N>
__device__ __forceinline__ void item_offsets(const StridedIndexer<N>& ix, bool small, int64_t i,
                                             int64_t (&off)[N]) {
  if (small) {
    ix.offsets32(static_cast<uint32_t>(i), off);
  } else {
    ix.offsets(i, off);
  }
}

/// Any broadcast, dim order and dtypes, through a StridedIndexer; In / O
/// are Inputs / Out or TypedInputs / TypedOut.
template <typename C, int N, typename In, typename O, typename Op>
__global__ void __launch_bounds__(kElementwiseThreads)
    strided_kernel(StridedIndexer<N + 1> ix, int64_t n, O out, In in, Op op) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const bool small = fits32(n);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[N + 1];
    item_offsets(ix, small, i, off);
    C v[N];
    for (int k = 0; k < N; ++k) v[k] = in.template load<C>(k, off[k + 1]);
    out.store(off[0], apply<C, N>(op, v));
  }
}

/// Input k's element i is element i % elements[k] of its data (elements[k]
/// = n for inputs of out's shape; a row-broadcast bias repeats; 1 for a
/// single element read once per thread).
template <int N>
struct Periods {
  int64_t elements[N];
};

/// Elements per vector: 16 bytes of the wider of S and SO.
template <typename S, typename SO>
constexpr int kVecWidth = 16 / (sizeof(S) > sizeof(SO) ? sizeof(S) : sizeof(SO));

template <typename S, typename SO, int N, typename Op>
__global__ void __launch_bounds__(kElementwiseThreads)
    contiguous_kernel(int64_t n, SO* __restrict__ out, TypedInputs<S, N> in, Periods<N> period,
                      Op op) {
  using C = DeviceComputeOf<S>;
  constexpr int V = kVecWidth<S, SO>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  // Single-element inputs, read once.
  S single[N];
  for (int k = 0; k < N; ++k) single[k] = period.elements[k] == 1 ? in.data[k][0] : S();
  for (int64_t j = tid; j < nvec; j += step) {
    Vec<S, V> a[N];
    for (int k = 0; k < N; ++k) {
      if (period.elements[k] == 1) {
#pragma unroll
        for (int e = 0; e < V; ++e) a[k].v[e] = single[k];
        continue;
      }
      const int64_t pv = period.elements[k] / V;
      a[k] = reinterpret_cast<const Vec<S, V>*>(in.data[k])[j < pv ? j : j % pv];
    }
    Vec<SO, V> o;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      C v[N];
      for (int k = 0; k < N; ++k) v[k] = convert<C>(a[k].v[e]);
      o.v[e] = convert<SO>(apply<C, N>(op, v));
    }
    reinterpret_cast<Vec<SO, V>*>(out)[j] = o;
  }
  for (int64_t i = nvec * V + tid; i < n; i += step) {
    C v[N];
    for (int k = 0; k < N; ++k) {
      const int64_t p = period.elements[k];
      v[k] = convert<C>(in.data[k][i < p ? i : i % p]);
    }
    out[i] = convert<SO>(apply<C, N>(op, v));
  }
}

/// Row-major `in` whose shape, leading 1s dropped, is out's trailing shape:
/// out's element i reads in's element i % in.numel(). 0 when not so.
inline int64_t row_period(const Tensor& in, const Tensor& out) {
  if (!in.is_contiguous_order()) return 0;
  size_t first = 0;
  while (first < in.dim() && in.size(first) == 1) ++first;
  const size_t rank = in.dim() - first;
  if (rank > out.dim()) return 0;
  const size_t lead = out.dim() - rank;
  for (size_t d = 0; d < rank; ++d) {
    if (in.size(first + d) != out.size(lead + d)) return 0;
  }
  return in.numel();
}

}  // namespace ew_detail

/// out[i] = op(ins...[i]) computed in C, through the strided kernel only
/// (for ops whose inputs rarely share out's dtype, e.g. casts to float).
/// `out` must have the broadcast shape of the inputs. Nothing is launched
/// for an empty out.
template <typename C, int N, typename Op>
void elementwise_strided(const kernels::KernelContext& ctx, Tensor& out,
                         const std::array<const Tensor*, N>& ins, const Op& op, const char* name) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const StridedIndexer<N + 1> ix = make_indexer<N + 1>(out, ins, name);
  ew_detail::Inputs<N> in;
  for (int k = 0; k < N; ++k) {
    in.data[k] = ins[k]->data();
    in.dtype[k] = ins[k]->dtype();
  }
  ew_detail::strided_kernel<C, N>
      <<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream(ctx)>>>(
          ix, n, ew_detail::Out{out.data(), out.dtype()}, in, op);
  check_launch(name);
}

/// out[i] = op(ins...[i]) computed in C = DeviceComputeOf<S>. When every
/// input has storage type S, out has SO and all are dense in the same
/// order with out's shape, the vectorised contiguous kernel runs; anything
/// else goes through the strided kernel (same results).
template <typename S, typename SO, int N, typename Op>
void elementwise(const kernels::KernelContext& ctx, Tensor& out,
                 const std::array<const Tensor*, N>& ins, const Op& op, const char* name) {
  using C = DeviceComputeOf<S>;
  const int64_t n = out.numel();
  if (n == 0) return;
  const StridedIndexer<N + 1> ix = make_indexer<N + 1>(out, ins, name);
  constexpr int V = ew_detail::kVecWidth<S, SO>;
  bool typed = out.dtype() == device_dtype_of<SO>();
  for (int k = 0; k < N && typed; ++k) typed = ins[k]->dtype() == device_dtype_of<S>();
  // The vectorised kernel: every operand dense in one order, or out
  // row-major and each input repeating a row-major block of out's trailing
  // shape (a bias) in whole aligned vectors, or a single element.
  ew_detail::Periods<N> period{};
  const bool linear = is_linear(ix);
  bool fast = typed && (linear || out.is_contiguous_order()) && aligned(out.data(), V * sizeof(SO));
  for (int k = 0; k < N && fast; ++k) {
    period.elements[k] = linear ? n : ew_detail::row_period(*ins[k], out);
    const int64_t p = period.elements[k];
    fast = p == 1 || (p > 0 && (linear || p % V == 0) && aligned(ins[k]->data(), V * sizeof(S)));
  }
  if (typed) {
    ew_detail::TypedInputs<S, N> in;
    for (int k = 0; k < N; ++k) in.data[k] = static_cast<const S*>(ins[k]->data());
    if (fast) {
      const int64_t items = (n + V - 1) / V;
      ew_detail::contiguous_kernel<S, SO, N, Op>
          <<<blocks_for(items, kElementwiseThreads), kElementwiseThreads, 0, stream(ctx)>>>(
              n, static_cast<SO*>(out.data()), in, period, op);
    } else {
      ew_detail::strided_kernel<C, N>
          <<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream(ctx)>>>(
              ix, n, ew_detail::TypedOut<SO>{static_cast<SO*>(out.data())}, in, op);
    }
    check_launch(name);
    return;
  }
  ew_detail::Inputs<N> in;
  for (int k = 0; k < N; ++k) {
    in.data[k] = ins[k]->data();
    in.dtype[k] = ins[k]->dtype();
  }
  ew_detail::strided_kernel<C, N>
      <<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream(ctx)>>>(
          ix, n, ew_detail::Out{out.data(), out.dtype()}, in, op);
  check_launch(name);
}

/// The same with out's storage type equal to the result's (arithmetic ops:
/// SO = S; bool-valued ops: SO = bool).
template <typename S, int N, typename Op>
void elementwise_same(const kernels::KernelContext& ctx, Tensor& out,
                      const std::array<const Tensor*, N>& ins, const Op& op, const char* name) {
  using R = typename ew_detail::Result<Op, DeviceComputeOf<S>, N>::type;
  using SO = std::conditional_t<std::is_same_v<R, bool>, bool, S>;
  elementwise<S, SO, N, Op>(ctx, out, ins, op, name);
}

/// Calls `f.template operator()<S>()` with S the device storage type of `d`
/// for the dtypes of the elementwise families (u8 i8 i16 i32 i64 f16 bf16
/// f32 f64 bool); Error NotSupported naming `op` otherwise. Instantiates
/// fewer kernels than visit_dtype; callers validate the family first.
template <typename F>
void visit_real_dtype(DType d, const char* op, F&& f) {
  kernels::visit_storage<DeviceTypes, kernels::VisitSet::Elementwise, RefuseOnCuda>(d, op, f);
}

/// The same for the floating dtypes only (f16 bf16 f32 f64).
template <typename F>
void visit_float_dtype(DType d, const char* op, F&& f) {
  kernels::visit_storage<DeviceTypes, kernels::VisitSet::Floating, RefuseOnCuda>(d, op, f);
}

}  // namespace pterun::cuda
