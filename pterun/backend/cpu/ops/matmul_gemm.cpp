#include "pterun/backend/cpu/ops/matmul_gemm.h"

#include <algorithm>
#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/cpu/ops/dnnl_util.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;
namespace du = dnnl_util;

// ---------------------------------------------------------------------------
// Own kernel: any real dtype. Integers accumulate in the unsigned type of
// their width (or wider), which wraps exactly as same-dtype arithmetic does
// modulo 2^bits; f16/bf16 accumulate in float.

template <typename S>
using AccOf = std::conditional_t<
    std::is_floating_point_v<S>, S,
    std::conditional_t<std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>, float,
                       std::conditional_t<(sizeof(S) <= 4), uint32_t, uint64_t>>>;

template <typename S, typename Acc>
Acc scalar_as(const Scalar& s) {
  if constexpr (std::is_floating_point_v<Acc>) {
    return static_cast<Acc>(s.to_double());
  } else {
    return static_cast<Acc>(static_cast<S>(s.to_int()));
  }
}

template <typename S>
void gemm_own(KernelContext& ctx, const GemmProblem& p) {
  using Acc = AccOf<S>;
  constexpr int64_t kBlock = 256;  // columns of c per accumulator block (L1-resident)
  const int64_t batch = p.batch, m = p.m, k = p.k, n = p.n;
  const S* a = static_cast<const S*>(p.a.data);
  const S* b = static_cast<const S*>(p.b.data);
  S* c = static_cast<S*>(const_cast<void*>(p.c.data));
  const S* bias = static_cast<const S*>(p.bias);

  // b packed row-major in the accumulator type, so the inner loop is a
  // unit-stride multiply-add over a row of b.
  Acc* packed = static_cast<Acc*>(ctx.scratch(std::max<int64_t>(1, batch * k * n) * sizeof(Acc)));
  cpu::parallel_for(ctx, batch * k, n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const S* src = b + (r / k) * p.b.batch_stride + (r % k) * p.b.row_stride;
      Acc* dst = packed + r * n;
      for (int64_t j = 0; j < n; ++j) dst[j] = kernels::convert<Acc>(src[j * p.b.col_stride]);
    }
  });

  const Acc alpha = scalar_as<S, Acc>(p.alpha);
  const Acc beta = scalar_as<S, Acc>(p.beta);
  cpu::parallel_for(ctx, batch * m, k * n + n, [&](int64_t begin, int64_t end) {
    alignas(64) Acc acc[kBlock];
    for (int64_t row = begin; row < end; ++row) {
      const int64_t bi = row / m, i = row % m;
      const S* arow = a + bi * p.a.batch_stride + i * p.a.row_stride;
      const Acc* brows = packed + bi * k * n;
      S* crow = c + bi * p.c.batch_stride + i * p.c.row_stride;
      for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
        const int64_t nb = std::min(kBlock, n - j0);
        std::fill(acc, acc + nb, Acc(0));
        for (int64_t kk = 0; kk < k; ++kk) {
          const Acc av = kernels::convert<Acc>(arow[kk * p.a.col_stride]);
          const Acc* brow = brows + kk * n + j0;
          for (int64_t j = 0; j < nb; ++j) acc[j] += av * brow[j];
        }
        for (int64_t j = 0; j < nb; ++j) {
          Acc r = alpha * acc[j];
          if (bias != nullptr) r += kernels::convert<Acc>(bias[j0 + j]);
          S& out = crow[(j0 + j) * p.c.col_stride];
          if (p.accumulate) r += beta * kernels::convert<Acc>(out);
          out = kernels::convert<S>(r);
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------
// oneDNN path.

/// One operand as oneDNN sees it: rows x cols per batch.
struct Operand {
  int64_t rows = 0, cols = 0;
  int64_t bs = 0, rs = 0, cs = 0;
  bool pack = false;  // copied to a contiguous buffer first
};

/// Picks strides oneDNN's gemm accepts: one of the two matrix strides must
/// be 1 (size-1 dimensions take whichever stride makes that true);
/// otherwise the operand is packed.
Operand canonical(int64_t rows, int64_t cols, const MatrixView& v) {
  Operand o{rows, cols, v.batch_stride, v.row_stride, v.col_stride, false};
  if (rows == 1 && cols == 1) {
    o.rs = o.cs = 1;
  } else if (rows == 1) {
    if (o.cs == 1)
      o.rs = cols;
    else
      o.rs = 1;
  } else if (cols == 1) {
    if (o.rs == 1)
      o.cs = rows;
    else
      o.cs = 1;
  } else if (o.rs != 1 && o.cs != 1) {
    o.pack = true;
  }
  return o;
}

Operand transposed(const Operand& o) {
  return {o.cols, o.rows, o.bs, o.cs, o.rs, o.pack};
}

dnnl::memory::desc md_of(const Operand& o, int64_t batch, dnnl::memory::data_type t) {
  if (batch == 1) return dnnl::memory::desc({o.rows, o.cols}, t, {o.rs, o.cs});
  return dnnl::memory::desc({batch, o.rows, o.cols}, t, {o.bs, o.rs, o.cs});
}

struct MatmulPlan {
  bool via_f32 = false;  // no native f16/bf16 matmul here: convert around an f32 one
  bool own = false;      // oneDNN has only its reference loops: use ours
  bool swap = false;     // computes c^T = b^T a^T (c is column-major)
  bool bias_native = false;
  Operand a, b, c;  // as given to oneDNN (after any swap)
  dnnl::matmul prim;
  dnnl::memory src, wei, dst, bias, scratchpad;
  size_t scratchpad_bytes = 0;
};

bool is_one(const Scalar& s) {
  return s.to_double() == 1.0;
}

/// Tries to build the primitive with element type `t`; false when oneDNN
/// has no optimised implementation for it.
bool build(MatmulPlan& plan, const GemmProblem& p, dnnl::memory::data_type t) {
  const int64_t batch = p.batch;
  dnnl::memory::desc a_md = md_of(plan.a, batch, t);
  dnnl::memory::desc b_md = md_of(plan.b, batch, t);
  dnnl::memory::desc c_md = md_of(plan.c, batch, t);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (!is_one(p.alpha)) attr.set_output_scales(0, {static_cast<float>(p.alpha.to_double())});
  const bool sum = p.accumulate || (p.bias != nullptr && !plan.bias_native);
  if (sum) {
    dnnl::post_ops po;
    po.append_sum(p.accumulate ? static_cast<float>(p.beta.to_double()) : 1.0f);
    attr.set_post_ops(po);
  }
  try {
    dnnl::matmul::primitive_desc pd;
    if (plan.bias_native) {
      dnnl::memory::desc bias_md({1, plan.c.cols}, t, {plan.c.cols, 1});
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, bias_md, c_md), attr,
                                        du::engine());
      plan.bias = du::make_memory(bias_md);
    } else {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), attr, du::engine());
    }
    if (!du::is_optimized(pd.impl_info_str())) return false;
    plan.prim = dnnl::matmul(pd);
    plan.src = du::make_memory(a_md);
    plan.wei = du::make_memory(b_md);
    plan.dst = du::make_memory(c_md);
    plan.scratchpad = du::make_memory(pd.scratchpad_desc());
    plan.scratchpad_bytes = pd.scratchpad_desc().get_size();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

MatmulPlan make_plan(const GemmProblem& p) {
  MatmulPlan plan;
  Operand a = canonical(p.m, p.k, p.a);
  Operand b = canonical(p.k, p.n, p.b);
  Operand c = canonical(p.m, p.n, p.c);
  if (!c.pack && c.cs != 1) {
    plan.swap = true;
    std::swap(a, b);
    a = transposed(a);
    b = transposed(b);
    c = transposed(c);
  }
  for (Operand* o : {&a, &b, &c}) {
    if (o->pack) *o = {o->rows, o->cols, o->rows * o->cols, o->cols, 1, true};
  }
  plan.a = a;
  plan.b = b;
  plan.c = c;
  plan.bias_native = p.bias != nullptr && !plan.swap && p.batch == 1 && is_one(p.alpha);
  du::ThreadScope scope(1);
  if (p.dtype != DType::Float32 && build(plan, p, du::data_type(p.dtype))) return plan;
  plan.via_f32 = p.dtype != DType::Float32;
  if (!build(plan, p, dnnl::memory::data_type::f32)) plan.own = true;
  return plan;
}

/// Elements between the first and the last of a view, plus one.
int64_t span_of(const MatrixView& v, int64_t batch, int64_t rows, int64_t cols) {
  return 1 + (batch - 1) * v.batch_stride + (rows - 1) * v.row_stride + (cols - 1) * v.col_stride;
}

constexpr size_t aligned(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

void pack_copy(const KernelContext& ctx, void* dst, const Operand& o, const void* src,
               const MatrixView& v, int64_t batch, size_t es, bool to_packed) {
  // Logical (batch, rows, cols) of the operand as oneDNN sees it; with a
  // swap the view's row/col strides are exchanged accordingly.
  const int64_t sizes[3] = {batch, o.rows, o.cols};
  const int64_t packed[3] = {o.rows * o.cols, o.cols, 1};
  const int64_t given[3] = {v.batch_stride, v.row_stride, v.col_stride};
  if (to_packed) {
    cpu::strided_copy(ctx, dst, packed, src, given, sizes, es);
  } else {
    cpu::strided_copy(ctx, dst, given, src, packed, sizes, es);
  }
}

void gemm_dnnl(KernelContext& ctx, const GemmProblem& p, MatmulPlan& plan, const char* op) {
  du::ThreadScope scope(1);
  const DType wt = plan.via_f32 ? DType::Float32 : p.dtype;  // working dtype
  const size_t es = element_size(wt);
  const int64_t batch = p.batch;
  const int64_t a_span = span_of(p.a, batch, p.m, p.k);
  const int64_t b_span = span_of(p.b, batch, p.k, p.n);
  const int64_t c_span = span_of(p.c, batch, p.m, p.n);

  // Scratch: [converted a, b, c, bias][packed a, b, c][oneDNN scratchpad].
  size_t sizes[8] = {};
  if (plan.via_f32) {
    sizes[0] = aligned(a_span * es);
    sizes[1] = aligned(b_span * es);
    sizes[2] = aligned(c_span * es);
    sizes[3] = p.bias != nullptr ? aligned(p.n * es) : 0;
  }
  const Operand* ops[3] = {&plan.a, &plan.b, &plan.c};
  for (int i = 0; i < 3; ++i) {
    if (ops[i]->pack) sizes[4 + i] = aligned(batch * ops[i]->rows * ops[i]->cols * es);
  }
  sizes[7] = aligned(plan.scratchpad_bytes);
  size_t total = 0;
  for (size_t s : sizes) total += s;
  char* base = static_cast<char*>(ctx.scratch(std::max<size_t>(total, 64)));
  char* buf[8];
  for (int i = 0; i < 8; ++i) {
    buf[i] = base;
    base += sizes[i];
  }

  // Working views of a, b, c, in the original (unswapped) orientation.
  MatrixView a = p.a, b = p.b, c = p.c;
  const void* bias = p.bias;
  if (plan.via_f32) {
    du::convert_flat(ctx, p.dtype, p.a.data, wt, buf[0], a_span);
    du::convert_flat(ctx, p.dtype, p.b.data, wt, buf[1], b_span);
    // c round-trips exactly; converting it in also keeps elements of a
    // non-dense view (between its rows) intact on the way back.
    if (p.accumulate || c_span != batch * p.m * p.n) {
      du::convert_flat(ctx, p.dtype, p.c.data, wt, buf[2], c_span);
    }
    if (bias != nullptr) du::convert_flat(ctx, p.dtype, p.bias, wt, buf[3], p.n);
    a.data = buf[0];
    b.data = buf[1];
    c.data = buf[2];
    bias = bias != nullptr ? buf[3] : nullptr;
  }
  if (bias != nullptr && !plan.bias_native) {
    // c = bias broadcast over rows, then oneDNN adds the product (sum post-op).
    const int64_t dims[3] = {batch, p.m, p.n};
    const int64_t dst_strides[3] = {c.batch_stride, c.row_stride, c.col_stride};
    const int64_t src_strides[3] = {0, 0, 1};
    cpu::strided_copy(ctx, const_cast<void*>(c.data), dst_strides, bias, src_strides, dims, es);
  }
  const bool c_has_input = p.accumulate || (bias != nullptr && !plan.bias_native);

  // Views as oneDNN's operands see them (swapped when c is column-major).
  MatrixView src = a, wei = b;
  if (plan.swap) {
    src = {b.data, b.batch_stride, b.col_stride, b.row_stride};
    wei = {a.data, a.batch_stride, a.col_stride, a.row_stride};
  }
  MatrixView dst = c;
  if (plan.swap) dst = {c.data, c.batch_stride, c.col_stride, c.row_stride};
  if (plan.a.pack) {
    pack_copy(ctx, buf[4], plan.a, src.data, src, batch, es, true);
    src.data = buf[4];
  }
  if (plan.b.pack) {
    pack_copy(ctx, buf[5], plan.b, wei.data, wei, batch, es, true);
    wei.data = buf[5];
  }
  const MatrixView dst_given = dst;
  if (plan.c.pack) {
    if (c_has_input) pack_copy(ctx, buf[6], plan.c, dst.data, dst, batch, es, true);
    dst.data = buf[6];
  }

  du::bind(plan.src, src.data);
  du::bind(plan.wei, wei.data);
  du::bind(plan.dst, dst.data);
  du::bind(plan.scratchpad, buf[7]);
  dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, plan.src.get()},
                             {DNNL_ARG_WEIGHTS, plan.wei.get()},
                             {DNNL_ARG_DST, plan.dst.get()},
                             {DNNL_ARG_SCRATCHPAD, plan.scratchpad.get()},
                             {DNNL_ARG_BIAS, nullptr}};
  int nargs = 4;
  if (plan.bias_native) {
    du::bind(plan.bias, bias);
    args[4].memory = plan.bias.get();
    nargs = 5;
  }
  du::execute(plan.prim, {args, static_cast<size_t>(nargs)}, op);

  if (plan.c.pack)
    pack_copy(ctx, const_cast<void*>(dst_given.data), plan.c, dst.data, dst_given, batch, es,
              false);
  if (plan.via_f32) du::convert_flat(ctx, wt, c.data, p.dtype, const_cast<void*>(p.c.data), c_span);
}

void gemm_own_any(KernelContext& ctx, const GemmProblem& p, const char* op) {
  kernels::visit(p.dtype, kernels::Family::RealHBF16, op,
                 [&]<typename S>() { gemm_own<S>(ctx, p); });
}

/// Multiply-adds up to which our register-blocked kernel beats oneDNN's
/// matmul (whose per-call setup costs ~1-2 us, and whose execution
/// allocates its argument map): gpt's [16,64] x [64,256] layers take 5.2 us
/// against oneDNN's 5.7 us on AVX-512.
constexpr double kSmallGemmWork = 1 << 18;

/// Products with at most this many columns (classifier heads: digits_cnn's
/// [359, 256] x [256, 10]) always take our kernel: one vector per row of
/// the output, where oneDNN's matmul is no faster and allocates per call.
constexpr int64_t kNarrowGemmColumns = 16;

/// gemm() through oneDNN on the calling thread.
void gemm_range(KernelContext& ctx, const GemmProblem& p, const char* op) {
  PlanKey key;
  key.add({static_cast<int64_t>(p.dtype), p.batch, p.m, p.k, p.n});
  key.add({p.a.batch_stride, p.a.row_stride, p.a.col_stride});
  key.add({p.b.batch_stride, p.b.row_stride, p.b.col_stride});
  key.add({p.c.batch_stride, p.c.row_stride, p.c.col_stride});
  key.add({p.bias != nullptr ? 1 : 0, p.accumulate ? 1 : 0});
  key.add_float(p.alpha.to_double());
  key.add_float(p.accumulate ? p.beta.to_double() : 0.0);

  thread_local PlanCache<MatmulPlan> cache(256);
  MatmulPlan& plan = cache.get(key, [&] { return make_plan(p); });
  if (plan.own) {
    gemm_own_any(ctx, p, op);
    return;
  }
  gemm_dnnl(ctx, p, plan, op);
}

/// c clamped to [clamp_lo, clamp_hi] in place, for the paths that do not
/// clamp as they go.
void clamp_pass(const GemmProblem& p) {
  auto* c0 = static_cast<float*>(const_cast<void*>(p.c.data));
  for (int64_t b = 0; b < p.batch; ++b) {
    clamp_rows(c0 + b * p.c.batch_stride, p.c.row_stride, p.c.col_stride, p.n, 0, p.m, p.clamp_lo,
               p.clamp_hi);
  }
}

}  // namespace

void gemm(KernelContext& ctx, const GemmProblem& p, const char* op) {
  if (p.batch == 0 || p.m == 0 || p.n == 0) return;
  PTERUN_CHECK(!p.clamp || p.dtype == DType::Float32, ErrorCode::Internal, op,
               ": a clamped product must be float32");
  const bool dnnl_dtype =
      p.dtype == DType::Float32 || p.dtype == DType::Float16 || p.dtype == DType::BFloat16;
  const double work = static_cast<double>(p.batch) * p.m * p.n * p.k;
  const bool own = !dnnl_dtype || p.k == 0;
  // A decode step's linear layers: the weight streamed once, threads over
  // its rows (the small kernel would pack this transposed operand per call).
  const bool matvec = !own && gemv_applies(p);
  const bool small = !own && !matvec && p.dtype == DType::Float32 &&
                     (work <= kSmallGemmWork || p.n <= kNarrowGemmColumns);
  if (small) {
    gemm_small_f32(ctx, p);  // clamps each block of rows as it is done
    return;
  }
  if (p.clamp) {
    GemmProblem q = p;
    q.clamp = false;
    gemm(ctx, q, op);
    clamp_pass(p);
    return;
  }
  if (own) {
    gemm_own_any(ctx, p, op);
    return;
  }
  if (matvec) {
    gemv(ctx, p);
    return;
  }
  const bool by_batch = p.batch >= 2;
  // One matrix with more columns than rows (a prefill's linear layers):
  // column blocks, so that each thread packs only its part of b.
  const bool by_columns = !by_batch && p.n >= p.m && p.n >= 128;
  constexpr int64_t kColumnBlock = 64;
  const int64_t count = by_batch     ? p.batch
                        : by_columns ? (p.n + kColumnBlock - 1) / kColumnBlock
                                     : p.m;
  if (ctx.num_threads <= 1 || count < 2 || work < du::kMinParallelWork) {
    gemm_range(ctx, p, op);
    return;
  }
  // Matrices, rows or column blocks of one, in ranges over the threads.
  const size_t es = element_size(p.dtype);
  cpu::parallel_for(ctx, count, static_cast<int64_t>(work / count), [&](int64_t b, int64_t e) {
    GemmProblem q = p;
    if (by_columns) {
      const int64_t j0 = b * kColumnBlock, j1 = std::min(p.n, e * kColumnBlock);
      q.b.data = static_cast<const char*>(p.b.data) + j0 * p.b.col_stride * es;
      q.c.data = static_cast<const char*>(p.c.data) + j0 * p.c.col_stride * es;
      if (p.bias != nullptr) q.bias = static_cast<const char*>(p.bias) + j0 * es;
      q.n = j1 - j0;
      gemm_range(du::range_context(), q, op);
      return;
    }
    const int64_t a_step = by_batch ? p.a.batch_stride : p.a.row_stride;
    const int64_t c_step = by_batch ? p.c.batch_stride : p.c.row_stride;
    q.a.data = static_cast<const char*>(p.a.data) + b * a_step * es;
    q.c.data = static_cast<const char*>(p.c.data) + b * c_step * es;
    if (by_batch) {
      q.b.data = static_cast<const char*>(p.b.data) + b * p.b.batch_stride * es;
      q.batch = e - b;
    } else {
      q.m = e - b;
    }
    gemm_range(du::range_context(), q, op);
  });
}

}  // namespace pterun::cpu
