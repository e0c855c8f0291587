// pterun::rms_norm.out on the CPU (ops/norm.h, RmsNormArgs): a row of the
// last dim at a time, each step rounded to the steps' dtype as the unfused
// instructions round it, and the mean's sum folded as the CPU's mean.out
// folds it (the same order, so the same sum). Built with -ffp-contract=off
// (backend/cpu/CMakeLists.txt): a square and the sum that takes it round
// separately, as pow (or mul) and mean do.

#include <cmath>
#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/reduce.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/reduce_util.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/norm.h"

namespace pterun::cpu {
namespace {

using kernels::Family;
using kernels::KernelContext;

/// The sum mean.out takes of `n` values of dtype S held as C in `sq`: one
/// fold of a dense float row, or folds of chunks as mean.out converts a
/// row of another dtype (engine/reduce.h, fold_strided).
template <typename S, typename C>
C row_sum(const C* sq, int64_t n) {
  if constexpr (std::is_same_v<S, C>) {
    return detail::fold(SumOp<C>{}, C(0), sq, n);
  } else {
    C acc = 0;
    for (int64_t i = 0; i < n; i += detail::kReduceChunk) {
      acc = detail::fold(SumOp<C>{}, acc, sq + i, std::min(detail::kReduceChunk, n - i));
    }
    return acc;
  }
}

/// x of dtype X, steps in S, out (and weight) of dtype O.
template <typename X, typename S, typename O>
void rms_rows(KernelContext& ctx, const ops::RmsNormArgs& a) {
  using C = std::conditional_t<std::is_same_v<S, double>, double, float>;
  auto round_s = [](C v) { return kernels::convert<C>(kernels::convert<S>(v)); };
  auto round_o = [](C v) { return kernels::convert<C>(kernels::convert<O>(v)); };
  const Tensor& x = a.in;
  Tensor& out = a.out;
  const size_t rank = x.dim();
  const int64_t n = x.size(rank - 1);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  if (rows == 0) return;
  const C eps = kernels::convert<C>(*a.eps.data_as<const S>());
  const X* xs = x.data_as<const X>();
  O* os = out.data_as<O>();
  const O* w = a.weight != nullptr ? a.weight->data_as<const O>() : nullptr;
  const int64_t ws = a.weight != nullptr ? a.weight->stride(0) : 0;
  const int64_t xl = x.stride(rank - 1), ol = out.stride(rank - 1);
  const int threads = std::max(1, ctx.num_threads);
  // Per thread: the row as C, then its squares.
  C* scratch = static_cast<C*>(ctx.scratch(sizeof(C) * 2 * static_cast<size_t>(n * threads)));
  kernels::Odometer<2> walk;  // the rows: offsets in x and out
  for (size_t d = 0; d + 1 < rank; ++d) walk.push(x.size(d), {x.stride(d), out.stride(d)});
  cpu::parallel_for(ctx, rows, n * 4, [&](int64_t begin, int64_t end) {
    C* row = scratch + 2 * n * cpu::parallel_thread_index();
    C* sq = row + n;
    auto od = walk;
    od.seek(begin);
    for (int64_t r = begin; r < end; ++r, od.next()) {
      const int64_t xo = od.offset[0], oo = od.offset[1];
      for (int64_t i = 0; i < n; ++i) {
        row[i] = kernels::convert<C>(xs[xo + i * xl]);
        sq[i] = round_s(row[i] * row[i]);
      }
      const C mean = round_s(row_sum<S, C>(sq, n) / static_cast<C>(n));
      const C rstd = round_s(C(1) / std::sqrt(round_s(mean + eps)));
      for (int64_t i = 0; i < n; ++i) {
        C y = round_o(round_s(row[i] * rstd));
        if (w != nullptr) y = y * kernels::convert<C>(w[i * ws]);
        os[oo + i * ol] = kernels::convert<O>(y);
      }
    }
  });
}

}  // namespace

void rms_norm_out(KernelContext& ctx, const ops::RmsNormArgs& a) {
  const char* op = kernels::kRmsNormKernel;
  const DType s = a.eps.dtype();
  kernels::visit(s, Family::FloatHBF16, op, [&]<typename S>() {
    kernels::visit(a.in.dtype(), Family::FloatHBF16, op, [&]<typename X>() {
      kernels::visit(a.out.dtype(), Family::FloatHBF16, op, [&]<typename O>() {
        // The front-end allows X and O other than S only beside float32 steps.
        if constexpr (ops::kRmsNormTypes<X, S, O>) {
          rms_rows<X, S, O>(ctx, a);
        } else {
          throw_error(ErrorCode::InvalidArgument,
                      str_cat(op, ": x ", describe(a.in), " and out ", describe(a.out),
                              " do not go with steps in ", dtype_name(a.eps.dtype())));
        }
      });
    });
  });
}

}  // namespace pterun::cpu
