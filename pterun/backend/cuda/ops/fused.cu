// Fused elementwise programs on CUDA (ops/fused.h). A program runs as a
// kernel generated for it (fused_codegen.h) where it can; else here, in an
// interpreter: each thread (grid-stride) loads its elements as float, runs
// the steps over a register array, rounding each result to its step's
// dtype, and stores the last. The per-element functors are the unfused kernels' own
// (binary_functors.cuh, elementwise_functors.cuh); the scalars are
// converted on the host as those kernels convert them.

#include <cmath>

#include <array>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/binary_functors.cuh"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/elementwise_compute.h"
#include "pterun/backend/cuda/ops/elementwise_functors.cuh"
#include "pterun/backend/cuda/ops/fused_codegen.h"
#include "pterun/backend/cuda/ops/fused_program.h"
#include "pterun/ops/fused.h"

namespace pterun::kernels::cuda_ops {
namespace {

using ops::ActivationFn;
using ops::BinaryFn;
using ops::FusedKind;
using ops::ScalarFn;
using ops::UnaryFn;
namespace bin = cuda::binary;
namespace fun = cuda::functors;
namespace fns = cuda::fns;

__device__ __forceinline__ float unary(UnaryFn fn, float x) {
  switch (fn) {
#define PTERUN_FLOAT_FN(name) \
  case UnaryFn::name: return fun::FloatFn<float, UnaryFn::name>{}(x);
    PTERUN_FLOAT_UNARY_FNS(PTERUN_FLOAT_FN)
#undef PTERUN_FLOAT_FN
    case UnaryFn::Neg: return fun::SameFn<float, UnaryFn::Neg>{}(x);
    case UnaryFn::Abs: return fun::SameFn<float, UnaryFn::Abs>{}(x);
    default: return x;  // the front-end admits no other
  }
}

__device__ __forceinline__ float activation(ActivationFn fn, float x) {
  switch (fn) {
    case ActivationFn::Relu: return fun::Relu<float>{}(x);
    case ActivationFn::Silu: return fun::FloatAct<float, ActivationFn::Silu>{}(x);
    case ActivationFn::Hardsigmoid: return fun::FloatAct<float, ActivationFn::Hardsigmoid>{}(x);
    case ActivationFn::Hardswish: return fun::FloatAct<float, ActivationFn::Hardswish>{}(x);
    case ActivationFn::Gelu: return fun::Gelu<float, false>{}(x);
    case ActivationFn::GeluTanh: return fun::Gelu<float, true>{}(x);
    default: return x;
  }
}

__device__ __forceinline__ float binary(const DeviceStep& s, float x, float y) {
  switch (static_cast<BinaryFn>(s.fn)) {
    case BinaryFn::Add: return bin::AddSub<float, false>{}(x, y);
    case BinaryFn::AddAlpha: return bin::AddAlpha<float, false>{s.s0}(x, y);
    case BinaryFn::Sub: return bin::AddSub<float, true>{}(x, y);
    case BinaryFn::SubAlpha: return bin::AddAlpha<float, true>{s.s0}(x, y);
    case BinaryFn::Mul: return bin::Mul<float>{}(x, y);
    case BinaryFn::Div: return bin::Div<float>{}(x, y);
    case BinaryFn::Maximum: return bin::MaxMin<float, true>{}(x, y);
    case BinaryFn::Minimum: return bin::MaxMin<float, false>{}(x, y);
    case BinaryFn::Pow: return bin::Pow<float>{}(x, y);
    default: return x;
  }
}

__device__ __forceinline__ float scalar(const DeviceStep& s, float x) {
  switch (static_cast<ScalarFn>(s.fn)) {
    case ScalarFn::Add: return bin::AddConst<float, false>{s.s0}(x);
    case ScalarFn::Sub: return bin::AddConst<float, true>{s.s0}(x);
    case ScalarFn::Rsub: return bin::RsubConst<float>{s.s0, s.s1}(x);
    case ScalarFn::Mul: return bin::MulConst<float>{s.s0}(x);
    case ScalarFn::Div: return bin::DivConst<float>{s.s0}(x);
    default: return fns::pow_scalar(x, s.s0, s.pow_mode);  // the pow codes
  }
}

__device__ __forceinline__ float rounded(DType d, float v) {
  if (d == DType::BFloat16) return cuda::convert<float>(cuda::convert<__nv_bfloat16>(v));
  if (d == DType::Float16) return cuda::convert<float>(cuda::convert<__half>(v));
  return v;
}

/// Elements a thread carries through the program at once: each step's
/// dispatch is paid once for all of them.
constexpr int kVec = 4;
using Lane = float[kVec];

__device__ __forceinline__ void run_step(const DeviceStep& s, const Lane& x, const Lane& y,
                                         Lane& d) {
  switch (s.kind) {
    case FusedKind::Unary:
#pragma unroll
      for (int e = 0; e < kVec; ++e) d[e] = unary(static_cast<UnaryFn>(s.fn), x[e]);
      break;
    case FusedKind::Activation:
#pragma unroll
      for (int e = 0; e < kVec; ++e) d[e] = activation(static_cast<ActivationFn>(s.fn), x[e]);
      break;
    case FusedKind::Binary:
#pragma unroll
      for (int e = 0; e < kVec; ++e) d[e] = binary(s, x[e], y[e]);
      break;
    case FusedKind::Scalar:
#pragma unroll
      for (int e = 0; e < kVec; ++e) d[e] = scalar(s, x[e]);
      break;
    case FusedKind::Clamp:
#pragma unroll
      for (int e = 0; e < kVec; ++e) d[e] = fun::ClampScalar<float>{s.s0, s.s1, s.nan}(x[e]);
      break;
    case FusedKind::Cast:
#pragma unroll
      for (int e = 0; e < kVec; ++e) d[e] = x[e];
      break;
  }
  if (s.round == DType::BFloat16) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) d[e] = rounded(DType::BFloat16, d[e]);
  } else if (s.round == DType::Float16) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) d[e] = rounded(DType::Float16, d[e]);
  }
}

/// kVec consecutive elements from `i` of a dense operand: one vector load
/// where `vec` (the caller checked alignment), else one at a time.
__device__ __forceinline__ void load_run(const void* base, DType d, int64_t i, int count, bool vec,
                                         Lane& v) {
  if (vec && count == kVec) {
    if (d == DType::Float32) {
      const float4 q = reinterpret_cast<const float4*>(base)[i / kVec];
      v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
      return;
    }
    const uint2 q = reinterpret_cast<const uint2*>(base)[i / kVec];  // four 16-bit values
    const uint32_t w[2] = {q.x, q.y};
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const uint16_t bits = static_cast<uint16_t>(w[e / 2] >> (16 * (e % 2)));
      __nv_bfloat16_raw b;
      b.x = bits;
      __half_raw h;
      h.x = bits;
      v[e] = d == DType::BFloat16 ? cuda::convert<float>(__nv_bfloat16(b))
                                  : cuda::convert<float>(__half(h));
    }
    return;
  }
  for (int e = 0; e < count; ++e) v[e] = cuda::load_as<float>(base, d, i + e);
}

/// The kVec elements of group g of a dense, aligned out.
__device__ __forceinline__ void store_run(void* base, DType d, int64_t g, const Lane& v) {
  if (d == DType::Float32) {
    reinterpret_cast<float4*>(base)[g] = make_float4(v[0], v[1], v[2], v[3]);
    return;
  }
  uint32_t w[2] = {0, 0};
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    uint16_t bits;
    if (d == DType::BFloat16) {
      bits = static_cast<__nv_bfloat16_raw>(cuda::convert<__nv_bfloat16>(v[e])).x;
    } else {
      bits = static_cast<__half_raw>(cuda::convert<__half>(v[e])).x;
    }
    w[e / 2] |= uint32_t{bits} << (16 * (e % 2));
  }
  reinterpret_cast<uint2*>(base)[g] = make_uint2(w[0], w[1]);
}

template <int N>
__global__ void __launch_bounds__(cuda::kElementwiseThreads)
    fused_kernel(cuda::StridedIndexer<N + 1> ix, int64_t n, bool linear, uint32_t vec,
                 cuda::ew_detail::Out out, cuda::ew_detail::Inputs<N> in,
                 const __grid_constant__ DeviceProgram program) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t groups = (n + kVec - 1) / kVec;
  const bool small = cuda::fits32(n);
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const int64_t i0 = g * kVec;
    const int count = n - i0 < kVec ? static_cast<int>(n - i0) : kVec;
    // The inputs and the previous step's result stay in registers (read
    // with static indices only); results read further on go to a register
    // file in local memory.
    float ins[N][kVec];
    float spilled[ops::kFusedMaxSteps][kVec];
    int64_t out_off[kVec];
    if (linear) {
#pragma unroll
      for (int k = 0; k < N; ++k) {
        load_run(in.data[k], in.dtype[k], i0, count, vec >> k & 1, ins[k]);
      }
    } else {
      for (int e = 0; e < count; ++e) {
        int64_t off[N + 1];
        cuda::ew_detail::item_offsets(ix, small, i0 + e, off);
        out_off[e] = off[0];
#pragma unroll
        for (int k = 0; k < N; ++k) ins[k][e] = in.template load<float>(k, off[k + 1]);
      }
    }
    Lane last = {};
    auto operand = [&](int reg, int prev, Lane& v) {
      if (reg == prev) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[e] = last[e];
      } else if (reg < N) {
#pragma unroll
        for (int k = 0; k < N; ++k) {
          if (reg == k) {
#pragma unroll
            for (int e = 0; e < kVec; ++e) v[e] = ins[k][e];
          }
        }
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[e] = spilled[reg - N][e];
      }
    };
    for (int j = 0; j < program.count; ++j) {
      const DeviceStep& s = program.steps[j];
      const int prev = j > 0 ? N + j - 1 : -1;  // the register `last` holds
      Lane x, y = {}, d;
      operand(s.a, prev, x);
      if (s.kind == FusedKind::Binary) operand(s.b, prev, y);
      run_step(s, x, y, d);
#pragma unroll
      for (int e = 0; e < kVec; ++e) last[e] = d[e];
      if (s.spill) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) spilled[j][e] = d[e];
      }
    }
    if (linear && (vec >> N & 1) && count == kVec) {
      store_run(out.data, out.dtype, g, last);
    } else {
      for (int e = 0; e < count; ++e) out.store(linear ? i0 + e : out_off[e], last[e]);
    }
  }
}

template <int N>
void launch(const KernelContext& ctx, const ops::FusedArgs& a, const DeviceProgram& program) {
  Tensor& out = a.out;
  const int64_t n = out.numel();
  if (n == 0) return;
  std::array<const Tensor*, N> ins;
  cuda::ew_detail::Inputs<N> in;
  for (int k = 0; k < N; ++k) {
    ins[k] = a.inputs[k];
    in.data[k] = ins[k]->data();
    in.dtype[k] = ins[k]->dtype();
  }
  const cuda::StridedIndexer<N + 1> ix = cuda::make_indexer<N + 1>(out, ins, a.op);
  std::array<const int64_t*, N + 1> strides;
  for (int k = 0; k <= N; ++k) strides[k] = ix.strides[k];
  const FusedWalk walk{{ix.sizes, static_cast<size_t>(ix.rank)}, strides};
  if (launch_generated(ctx, program, a.inputs, out, walk, a.op)) return;
  // Bit k: input k (bit N: out) may take vector accesses, aligned to kVec
  // elements.
  uint32_t vec = 0;
  for (int k = 0; k < N; ++k) {
    vec |= uint32_t{cuda::aligned(ins[k]->data(), kVec * element_size(ins[k]->dtype()))} << k;
  }
  vec |= uint32_t{cuda::aligned(out.data(), kVec * element_size(out.dtype()))} << N;
  const int64_t groups = (n + kVec - 1) / kVec;
  fused_kernel<N><<<cuda::blocks_for(groups, cuda::kElementwiseThreads), cuda::kElementwiseThreads,
                    0, cuda::stream(ctx)>>>(
      ix, n, cuda::is_linear(ix), vec, cuda::ew_detail::Out{out.data(), out.dtype()}, in, program);
  cuda::check_launch(a.op);
}

static_assert(ops::kFusedMaxInputs == 8, "one case per input count below");

}  // namespace

void elementwise::fused(KernelContext& ctx, const ops::FusedArgs& a) {
  const DeviceProgram program = device_program(a.steps, a.inputs.size());
  switch (a.inputs.size()) {
    case 1: return launch<1>(ctx, a, program);
    case 2: return launch<2>(ctx, a, program);
    case 3: return launch<3>(ctx, a, program);
    case 4: return launch<4>(ctx, a, program);
    case 5: return launch<5>(ctx, a, program);
    case 6: return launch<6>(ctx, a, program);
    case 7: return launch<7>(ctx, a, program);
    default: return launch<8>(ctx, a, program);  // the front-end allows kFusedMaxInputs
  }
}

}  // namespace pterun::kernels::cuda_ops
