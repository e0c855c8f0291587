// Matrix products: mm, bmm, addmm and linear over the shared batched GEMM
// (matmul_gemm.h), which reads operands in place through their strides, so
// transposed and column-major tensors need no copies.

#include <array>

#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/cpu/ops/matmul_gemm.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {

using kernels::KernelContext;

namespace {

void check_dtypes(const char* op, std::initializer_list<const Tensor*> ts) {
  const DType d = (*ts.begin())->dtype();
  PTERUN_CHECK(kernels::in_family(d, kernels::Family::RealHBF16), ErrorCode::InvalidArgument, op,
               ": dtype ", dtype_name(d), " is not supported");
  for (const Tensor* t : ts) {
    PTERUN_CHECK(t->dtype() == d, ErrorCode::InvalidArgument, op,
                 ": all tensors must have one dtype, got ", describe(*ts.begin()[0]), " and ",
                 describe(*t));
  }
}

void check_rank(const char* op, const char* name, const Tensor& t, size_t rank) {
  PTERUN_CHECK(t.dim() == rank, ErrorCode::InvalidArgument, op, ": ", name, " must be ", rank,
               "-D, got ", describe(t));
}

MatrixView view2d(const Tensor& t) {
  return {t.data(), 0, t.stride(0), t.stride(1)};
}
MatrixView view3d(const Tensor& t) {
  return {t.data(), t.stride(0), t.stride(1), t.stride(2)};
}

void check_scalar(const char* op, const char* name, const Scalar& s, DType d) {
  PTERUN_CHECK(!(s.is_floating() && kernels::is_integral(d, true)), ErrorCode::InvalidArgument, op,
               ": a floating ", name, " needs floating tensors, not ", dtype_name(d));
}

/// True when dims [0, last) of `t` merge into one dimension of stride
/// t.stride(last - 1).
bool leading_dims_merge(const Tensor& t, size_t last) {
  for (size_t d = 0; d + 1 < last; ++d) {
    if (t.size(d) != 1 && t.stride(d) != t.stride(d + 1) * t.size(d + 1)) return false;
  }
  return true;
}

}  // namespace

// mm.out(self, mat2, *, out): out = self @ mat2, strictly 2-D.
void mm_out_with(const GemmBackend& be, KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::mm.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_dtypes(op, {&a, &b, &out});
  check_rank(op, "self", a, 2);
  check_rank(op, "mat2", b, 2);
  PTERUN_CHECK(a.size(1) == b.size(0), ErrorCode::InvalidArgument, op, ": cannot multiply ",
               describe(a), " by ", describe(b));
  const std::array<int64_t, 2> sizes{a.size(0), b.size(1)};
  kernels::resize_output(out, sizes, op);
  GemmProblem p;
  p.dtype = a.dtype();
  p.m = a.size(0);
  p.k = a.size(1);
  p.n = b.size(1);
  p.a = view2d(a);
  p.b = view2d(b);
  p.c = view2d(out);
  be.gemm(ctx, p, op);
}

// bmm.out(self, mat2, *, out): batched, strictly 3-D with equal batch sizes.
void bmm_out_with(const GemmBackend& be, KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::bmm.out";
  const Tensor& a = args[0]->to_tensor();
  const Tensor& b = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_dtypes(op, {&a, &b, &out});
  check_rank(op, "self", a, 3);
  check_rank(op, "mat2", b, 3);
  PTERUN_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), ErrorCode::InvalidArgument, op,
               ": cannot multiply ", describe(a), " by ", describe(b));
  const std::array<int64_t, 3> sizes{a.size(0), a.size(1), b.size(2)};
  kernels::resize_output(out, sizes, op);
  GemmProblem p;
  p.dtype = a.dtype();
  p.batch = a.size(0);
  p.m = a.size(1);
  p.k = a.size(2);
  p.n = b.size(2);
  p.a = view3d(a);
  p.b = view3d(b);
  p.c = view3d(out);
  be.gemm(ctx, p, op);
}

// addmm.out(self, mat1, mat2, *, beta, alpha, out):
// out = beta * self + alpha * (mat1 @ mat2), self broadcasting to [m, n].
void addmm_out_with(const GemmBackend& be, KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::addmm.out";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& a = args[1]->to_tensor();
  const Tensor& b = args[2]->to_tensor();
  const Scalar beta = args[3]->to_scalar();
  const Scalar alpha = args[4]->to_scalar();
  Tensor& out = args[5]->to_tensor();
  check_dtypes(op, {&a, &b, &self, &out});
  check_rank(op, "mat1", a, 2);
  check_rank(op, "mat2", b, 2);
  check_scalar(op, "beta", beta, a.dtype());
  check_scalar(op, "alpha", alpha, a.dtype());
  PTERUN_CHECK(a.size(1) == b.size(0), ErrorCode::InvalidArgument, op, ": cannot multiply ",
               describe(a), " by ", describe(b));
  const int64_t m = a.size(0), n = b.size(1);
  // self's strides against [m, n], 0 where it broadcasts.
  std::array<int64_t, 2> self_strides{0, 0};
  PTERUN_CHECK(self.dim() <= 2, ErrorCode::InvalidArgument, op, ": self ", describe(self),
               " does not broadcast to [", m, ", ", n, "]");
  for (size_t i = 0; i < self.dim(); ++i) {
    const size_t d = 2 - self.dim() + i;
    const int64_t target = d == 0 ? m : n;
    PTERUN_CHECK(self.size(i) == target || self.size(i) == 1, ErrorCode::InvalidArgument, op,
                 ": self ", describe(self), " does not broadcast to [", m, ", ", n, "]");
    self_strides[d] = self.size(i) == 1 ? 0 : self.stride(i);
  }
  const std::array<int64_t, 2> sizes{m, n};
  kernels::resize_output(out, sizes, op);

  GemmProblem p;
  p.dtype = a.dtype();
  p.m = m;
  p.k = a.size(1);
  p.n = n;
  p.a = view2d(a);
  p.b = view2d(b);
  p.c = view2d(out);
  p.alpha = alpha;
  if (beta.to_double() != 0.0) {
    const bool row_vector = self_strides[0] == 0 && (self_strides[1] == 1 || n == 1);
    if (beta.to_double() == 1.0 && row_vector) {
      p.bias = self.data();  // one bias row added by the GEMM
    } else {
      if (self.data() != out.data()) {
        be.copy(ctx, out.data(), out.strides(), self.data(), self_strides, sizes,
                out.element_size());
      }
      p.accumulate = true;
      p.beta = beta;
    }
  }
  be.gemm(ctx, p, op);
}

// linear.out(input, weight, bias=None, *, out): out = input @ weight^T + bias,
// over the leading dims of input.
void linear_out_with(const GemmBackend& be, KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::linear.out";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& w = args[1]->to_tensor();
  const Tensor* bias = args[2]->to_optional_tensor();
  Tensor& out = args[3]->to_tensor();
  check_dtypes(op, {&in, &w, &out});
  check_rank(op, "weight", w, 2);
  PTERUN_CHECK(in.dim() >= 1, ErrorCode::InvalidArgument, op, ": input must have a dimension");
  const size_t r = in.dim();
  const int64_t k = in.size(r - 1), n = w.size(0);
  PTERUN_CHECK(w.size(1) == k, ErrorCode::InvalidArgument, op, ": input ", describe(in),
               " does not match weight ", describe(w));
  if (bias != nullptr) {
    check_dtypes(op, {&in, bias});
    PTERUN_CHECK(bias->dim() == 1 && bias->size(0) == n, ErrorCode::InvalidArgument, op,
                 ": bias must be [", n, "], got ", describe(*bias));
  }
  kernels::Shape sizes;
  for (size_t d = 0; d + 1 < r; ++d) sizes.push_back(in.size(d));
  sizes.push_back(n);
  kernels::resize_output(out, sizes.span(), op);

  GemmProblem p;
  p.dtype = in.dtype();
  p.k = k;
  p.n = n;
  p.b = {w.data(), 0, w.stride(1), w.stride(0)};  // weight^T, read in place
  p.bias = bias != nullptr ? bias->data() : nullptr;
  if (r == 1) {
    p.m = 1;
    p.a = {in.data(), 0, 0, in.stride(0)};
    p.c = {out.data(), 0, 0, out.stride(0)};
    be.gemm(ctx, p, op);
    return;
  }
  if (leading_dims_merge(in, r - 1) && leading_dims_merge(out, r - 1)) {
    p.m = 1;
    for (size_t d = 0; d + 1 < r; ++d) p.m *= in.size(d);
    p.a = {in.data(), 0, in.stride(r - 2), in.stride(r - 1)};
    p.c = {out.data(), 0, out.stride(r - 2), out.stride(r - 1)};
    be.gemm(ctx, p, op);
    return;
  }
  // Leading dims with an unusual order: one GEMM per [rows, k] slice.
  p.m = in.size(r - 2);
  int64_t slices = 1;
  for (size_t d = 0; d + 2 < r; ++d) slices *= in.size(d);
  const size_t es = in.element_size();
  for (int64_t s = 0; s < slices; ++s) {
    int64_t in_off = 0, out_off = 0, rem = s;
    for (size_t d = r - 2; d-- > 0;) {
      const int64_t i = rem % in.size(d);
      rem /= in.size(d);
      in_off += i * in.stride(d);
      out_off += i * out.stride(d);
    }
    p.a = {static_cast<const char*>(in.data()) + in_off * es, 0, in.stride(r - 2),
           in.stride(r - 1)};
    p.c = {static_cast<char*>(out.data()) + out_off * es, 0, out.stride(r - 2), out.stride(r - 1)};
    be.gemm(ctx, p, op);
  }
}

namespace {

void cpu_copy(KernelContext& ctx, void* dst, std::span<const int64_t> dst_strides, const void* src,
              std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
              size_t element_size) {
  cpu::strided_copy(ctx, dst, dst_strides, src, src_strides, sizes, element_size);
}

constexpr GemmBackend kCpu{&gemm, &cpu_copy};

void mm_out(KernelContext& ctx, std::span<Value* const> args) {
  mm_out_with(kCpu, ctx, args);
}
void bmm_out(KernelContext& ctx, std::span<Value* const> args) {
  bmm_out_with(kCpu, ctx, args);
}
void addmm_out(KernelContext& ctx, std::span<Value* const> args) {
  addmm_out_with(kCpu, ctx, args);
}
void linear_out(KernelContext& ctx, std::span<Value* const> args) {
  linear_out_with(kCpu, ctx, args);
}

}  // namespace

void register_matmul_ops(kernels::KernelRegistry& r) {
  r.add("aten::mm.out", Device::CPU, &mm_out);
  r.add("aten::bmm.out", Device::CPU, &bmm_out);
  r.add("aten::addmm.out", Device::CPU, &addmm_out);
  r.add("aten::linear.out", Device::CPU, &linear_out);
}

}  // namespace pterun::cpu
