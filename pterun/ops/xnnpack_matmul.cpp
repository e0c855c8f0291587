// xnnpack::fully_connected and xnnpack::batch_matrix_multiply
// (xnnpack.h): one GEMM of the matmul family over the memory-order views,
// the filter read in place in either layout.

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/matmul.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/xnnpack.h"
#include "pterun/ops/xnnpack_layout.h"

namespace pterun::ops {

using xnn::check_float;
using xnn::In;
using xnn::Out;
using xnn::resize_memory;

void xnn_fully_connected(KernelContext& ctx, const Tensor& in, const Tensor& filter,
                         const Tensor* bias, bool transpose_filter, double out_min, double out_max,
                         Tensor& out) {
  const char* op = "xnnpack::fully_connected";
  check_float(in, "input", op);
  check_float(filter, "filter", op, &in);
  check_float(out, "out", op, &in);
  if (bias != nullptr) check_float(*bias, "bias", op, &in);
  const In i_vi(in), i_vf(filter);
  const Tensor& vi = *i_vi;
  const Tensor& vf = *i_vf;
  PTERUN_CHECK(vf.dim() == 2, ErrorCode::InvalidArgument, op, ": filter must be 2-D, got ",
               describe(vf));
  const int64_t n = transpose_filter ? vf.size(1) : vf.size(0);
  const int64_t k = transpose_filter ? vf.size(0) : vf.size(1);
  PTERUN_CHECK(vi.size(vi.dim() - 1) == k, ErrorCode::InvalidArgument, op, ": input ", describe(vi),
               " needs ", k, " elements in its last dim for filter ", describe(vf));
  if (bias != nullptr) {
    PTERUN_CHECK(bias->numel() == n, ErrorCode::InvalidArgument, op, ": bias ", describe(*bias),
                 " must have ", n, " elements");
  }
  kernels::Shape shape;
  for (size_t d = 0; d + 1 < vi.dim(); ++d) shape.push_back(vi.size(d));
  shape.push_back(n);
  const Out o_vo = resize_memory(out, shape.span(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  GemmProblem p;
  p.dtype = in.dtype();
  p.m = vo.numel() / n;
  p.k = k;
  p.n = n;
  p.a = {vi.data(), 0, k, 1};
  // b is k x n: filter [N, K] read transposed, or [K, N] as it is.
  p.b = transpose_filter ? MatrixView{vf.data(), 0, n, 1} : MatrixView{vf.data(), 0, 1, k};
  p.c = {vo.data(), 0, n, 1};
  p.bias = bias != nullptr ? bias->data() : nullptr;
  if (k == 0) {
    // No products: every row is the bias (or zero).
    backend(ctx).shape->fill(ctx, vo, std::array<uint8_t, 8>{}.data());
    if (bias != nullptr) {
      const In i_vb(*bias);
      const Tensor& vb = *i_vb;
      backend(ctx).elementwise->binary(
          ctx, {BinaryFn::Add, in.dtype(), vo, vb, Scalar::from_int(1), vo, op});
    }
    xnn::clamp_output(ctx, vo, out_min, out_max, op);
    return;
  }
  const auto& mm = *backend(ctx).matmul;
  const xnn::OutputClamp c = xnn::output_clamp(out_min, out_max);
  // A NaN bound (every output NaN, as the elementwise clamp makes it)
  // keeps the step.
  const bool nan_bound = std::isnan(out_min) || std::isnan(out_max);
  if ((c.lo || c.hi) && !nan_bound && mm.clamps && p.dtype == DType::Float32) {
    // Inside the product (no step of its own): the same float32 values.
    p.clamp = true;
    p.clamp_lo = c.lo ? static_cast<float>(*c.lo) : -std::numeric_limits<float>::infinity();
    p.clamp_hi = c.hi ? static_cast<float>(*c.hi) : std::numeric_limits<float>::infinity();
    mm.gemm(ctx, p, op);
    return;
  }
  mm.gemm(ctx, p, op);
  xnn::clamp_output(ctx, vo, out_min, out_max, op);
}

void xnn_batch_matrix_multiply(KernelContext& ctx, const Tensor& a, const Tensor& b,
                               bool transpose_b, Tensor& out) {
  const char* op = "xnnpack::batch_matrix_multiply";
  check_float(a, "input 1", op);
  check_float(b, "input 2", op, &a);
  check_float(out, "out", op, &a);
  const In i_va(a), i_vb(b);
  const Tensor& va = *i_va;
  const Tensor& vb = *i_vb;
  PTERUN_CHECK(va.dim() >= 2 && vb.dim() >= 2, ErrorCode::InvalidArgument, op,
               ": both inputs need at least 2 dims, got ", describe(va), " and ", describe(vb));
  const size_t ra = va.dim(), rb = vb.dim();
  const int64_t m = va.size(ra - 2), k = va.size(ra - 1);
  const int64_t kb = transpose_b ? vb.size(rb - 1) : vb.size(rb - 2);
  const int64_t n = transpose_b ? vb.size(rb - 2) : vb.size(rb - 1);
  PTERUN_CHECK(k == kb, ErrorCode::InvalidArgument, op, ": cannot multiply ", describe(va), " by ",
               describe(vb), transpose_b ? " (transposed)" : "");
  const kernels::Shape batch =
      kernels::broadcast_shapes({va.sizes().first(ra - 2), vb.sizes().first(rb - 2)}, op);
  kernels::Shape shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  const Out o_vo = resize_memory(out, shape.span(), op);
  Tensor& vo = *o_vo;
  if (vo.numel() == 0) return;
  if (k == 0) {
    backend(ctx).shape->fill(ctx, vo, std::array<uint8_t, 8>{}.data());
    return;
  }
  GemmProblem p;
  p.dtype = a.dtype();
  p.m = m;
  p.k = k;
  p.n = n;
  const int64_t a_mat = m * k, b_mat = k * n, c_mat = m * n;
  const MatrixView bv =
      transpose_b ? MatrixView{vb.data(), 0, 1, k} : MatrixView{vb.data(), 0, n, 1};
  // One GEMM over the batch when neither side broadcasts along it, or one
  // side is a single matrix; else one per batch entry.
  const int64_t batch_count = batch.numel();
  const int64_t a_count = va.numel() / a_mat, b_count = vb.numel() / b_mat;
  if ((a_count == batch_count || a_count == 1) && (b_count == batch_count || b_count == 1)) {
    p.batch = batch_count;
    p.a = {va.data(), a_count == 1 ? 0 : a_mat, k, 1};
    p.b = bv;
    p.b.batch_stride = b_count == 1 ? 0 : b_mat;
    p.c = {vo.data(), c_mat, n, 1};
    backend(ctx).matmul->gemm(ctx, p, op);
    return;
  }
  // Broadcast batch dims: offsets of each operand's matrix per batch entry.
  const size_t nb = batch.rank;
  std::array<int64_t, kMaxRank> index{};
  const auto esize = static_cast<int64_t>(a.element_size());
  for (int64_t e = 0; e < batch_count; ++e) {
    int64_t ao = 0, bo = 0, am = 1, bm = 1;
    for (size_t d = nb; d-- > 0;) {
      const size_t da = d + (ra - 2) - nb, db = d + (rb - 2) - nb;  // may wrap below 0
      if (d + (ra - 2) >= nb && va.size(da) != 1) ao += index[d] * am;
      if (d + (ra - 2) >= nb) am *= va.size(da);
      if (d + (rb - 2) >= nb && vb.size(db) != 1) bo += index[d] * bm;
      if (d + (rb - 2) >= nb) bm *= vb.size(db);
    }
    p.batch = 1;
    p.a = {static_cast<const char*>(va.data()) + ao * a_mat * esize, 0, k, 1};
    p.b = bv;
    p.b.data = static_cast<const char*>(vb.data()) + bo * b_mat * esize;
    p.c = {static_cast<char*>(vo.data()) + e * c_mat * esize, 0, n, 1};
    backend(ctx).matmul->gemm(ctx, p, op);
    for (size_t d = nb; d-- > 0;) {
      if (++index[d] < batch.dims[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace pterun::ops
