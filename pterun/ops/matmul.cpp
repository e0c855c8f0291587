// Front-ends of the matmul family (matmul.h): dtypes, ranks and output
// sizes, checked once for every backend, then one GEMM over the operands'
// own strides.

#include "pterun/ops/matmul.h"

#include <array>
#include <initializer_list>

#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"

namespace pterun::ops {
namespace {

const MatmulBackend& matmul(const KernelContext& ctx) {
  return *backend(ctx).matmul;
}

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

void check_matrix_rank(const char* op, const char* name, const Tensor& t, size_t rank) {
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

/// The product a @ b of two 2-D tensors written into `c` (a view of out).
GemmProblem product(const Tensor& a, const Tensor& b, MatrixView c) {
  GemmProblem p;
  p.dtype = a.dtype();
  p.m = a.size(0);
  p.k = a.size(1);
  p.n = b.size(1);
  p.a = view2d(a);
  p.b = view2d(b);
  p.c = c;
  return p;
}

}  // namespace

// Strictly 2-D.
void mm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  const char* op = "aten::mm.out";
  const Tensor& a = self;
  const Tensor& b = mat2;
  check_dtypes(op, {&a, &b, &out});
  check_matrix_rank(op, "self", a, 2);
  check_matrix_rank(op, "mat2", b, 2);
  PTERUN_CHECK(a.size(1) == b.size(0), ErrorCode::InvalidArgument, op, ": cannot multiply ",
               describe(a), " by ", describe(b));
  const std::array<int64_t, 2> sizes{a.size(0), b.size(1)};
  kernels::resize_output(out, sizes, op);
  matmul(ctx).gemm(ctx, product(a, b, view2d(out)), op);
}

// Batched, strictly 3-D with equal batch sizes.
void bmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out) {
  const char* op = "aten::bmm.out";
  const Tensor& a = self;
  const Tensor& b = mat2;
  check_dtypes(op, {&a, &b, &out});
  check_matrix_rank(op, "self", a, 3);
  check_matrix_rank(op, "mat2", b, 3);
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
  matmul(ctx).gemm(ctx, p, op);
}

// out = beta * self + alpha * (mat1 @ mat2), self broadcasting to [m, n].
void addmm_out(KernelContext& ctx, const Tensor& self, const Tensor& mat1, const Tensor& mat2,
               Scalar beta, Scalar alpha, Tensor& out) {
  const char* op = "aten::addmm.out";
  const Tensor& a = mat1;
  const Tensor& b = mat2;
  check_dtypes(op, {&a, &b, &self, &out});
  check_matrix_rank(op, "mat1", a, 2);
  check_matrix_rank(op, "mat2", b, 2);
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

  const MatmulBackend& be = matmul(ctx);
  GemmProblem p = product(a, b, view2d(out));
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

// out = input @ weight^T + bias, over the leading dims of input.
void linear_out(KernelContext& ctx, const Tensor& in, const Tensor& weight, const Tensor* bias,
                Tensor& out) {
  const char* op = "aten::linear.out";
  const Tensor& w = weight;
  check_dtypes(op, {&in, &w, &out});
  check_matrix_rank(op, "weight", w, 2);
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

  const MatmulBackend& be = matmul(ctx);
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

// out = other + (mat1 @ mat2 + bias), one rounding (matmul.h).
void gemm_add_out(KernelContext& ctx, const Tensor& mat1, const Tensor& mat2, const Tensor* bias,
                  const Tensor& other, Tensor& out) {
  const char* op = "pterun::gemm_add.out";
  const Tensor& a = mat1;
  const Tensor& b = mat2;
  check_dtypes(op, {&a, &b, &other, &out});
  check_matrix_rank(op, "mat1", a, 2);
  check_matrix_rank(op, "mat2", b, 2);
  PTERUN_CHECK(a.size(1) == b.size(0), ErrorCode::InvalidArgument, op, ": cannot multiply ",
               describe(a), " by ", describe(b));
  const int64_t m = a.size(0), n = b.size(1);
  if (bias != nullptr) {
    check_dtypes(op, {&a, bias});
    PTERUN_CHECK(bias->dim() == 1 && bias->size(0) == n, ErrorCode::InvalidArgument, op,
                 ": bias must be [", n, "], got ", describe(*bias));
  }
  PTERUN_CHECK(other.dim() >= 1 && other.size(other.dim() - 1) == n && other.numel() == m * n &&
                   other.is_contiguous_order(),
               ErrorCode::InvalidArgument, op, ": other ", describe(other),
               " is not a contiguous [", m, ", ", n, "] product's shape");
  kernels::resize_output(out, other.sizes(), op);
  PTERUN_CHECK(out.is_contiguous_order(), ErrorCode::InvalidArgument, op, ": out ", describe(out),
               " must be contiguous");
  // The product reads its operands while it writes out; other is read
  // element for element as out is written.
  const bool same = out.data() == other.data();
  PTERUN_CHECK(!share_bytes(out, a) && !share_bytes(out, b) &&
                   (bias == nullptr || !share_bytes(out, *bias)) &&
                   (same || !share_bytes(out, other)),
               ErrorCode::InvalidArgument, op, ": out overlaps an operand");
  const MatmulBackend& be = matmul(ctx);
  PTERUN_CHECK(be.adds, ErrorCode::NotSupported, op, ": this backend adds no matrix to a product");
  GemmProblem p = product(a, b, {out.data(), 0, n, 1});
  p.bias = bias != nullptr ? bias->data() : nullptr;
  p.addend = other.data();
  be.gemm(ctx, p, op);
}

}  // namespace pterun::ops
