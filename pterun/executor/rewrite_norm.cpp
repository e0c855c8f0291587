// torch's decomposed RMSNorm (rewrite.h, find_rms_norm_fusions): five to
// eight instructions found from a method's instructions alone, to run as
// one kernel (kernels/internal_ops.h, kRmsNormKernel).

#include <algorithm>

#include "pterun/executor/chain_view.h"
#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {
namespace {

using detail::ChainView;
using format::InstructionKind;

bool floating(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16;
}

bool half(DType t) {
  return t == DType::Float16 || t == DType::BFloat16;
}

}  // namespace

std::vector<PatternFusion> find_rms_norm_fusions(const format::MethodDesc& d,
                                                 const std::vector<bool>& keep,
                                                 const std::vector<std::vector<bool>>& idle) {
  std::vector<PatternFusion> found;
  detail::for_each_chain(d, keep, idle, [&](const ChainView& v) {
    const auto& instrs = v.instrs();
    const size_t none = instrs.size();
    const std::vector<int>& uses = v.uses;
    const std::vector<size_t> writer_of = v.running_writers();
    auto tensor = [&](int32_t t) { return desc::tensor_of(d, t); };
    // Written by `name` (with `args` arguments) and read by the pattern's
    // next step alone, not kept.
    auto step = [&](int32_t t, const char* name, size_t args) {
      return v.sole_step(writer_of, t, name, args);
    };
    // The reader of t other than its writer, when t (not kept) has one.
    auto only_reader = [&](int32_t t, size_t writer) -> size_t {
      if (keep[t] || uses[t] != 2) return none;
      for (size_t k = writer + 1; k < instrs.size(); ++k) {
        if (!v.running(k) || instrs[k].kind != InstructionKind::KernelCall) continue;
        const auto& a = instrs[k].args;
        if (std::find(a.begin(), a.end(), t) != a.end()) return k;
      }
      return none;
    };
    // A cast (ChainView::cast_step, non_blocking false) to its source's
    // shape and dim order: its source, or -1.
    auto cast_source = [&](size_t k) -> int32_t {
      if (k == none || !v.cast_step(k)) return -1;
      const auto& a = instrs[k].args;
      if (!v.number_is(a[1], 0) && d.values[a[1]].kind != ValueKind::Bool) return -1;
      if (d.values[a[1]].kind == ValueKind::Bool && d.values[a[1]].bool_value) return -1;
      const format::TensorDesc* src = tensor(a[0]);
      const format::TensorDesc* dst = tensor(a[3]);
      if (src == nullptr || dst == nullptr || src->sizes != dst->sizes ||
          src->dim_order != dst->dim_order) {
        return -1;
      }
      return a[0];
    };
    for (size_t m = 0; m < instrs.size(); ++m) {
      // mean.out(sq, [-1], keepdim, None) -> mean.
      if (!v.running(m) || !v.is_kernel(m, "aten::mean.out", 6)) continue;
      const auto& ma = instrs[m].args;
      const format::TensorDesc* sq_t = tensor(ma[0]);
      const format::TensorDesc* mean_t = tensor(ma[4]);
      if (sq_t == nullptr || mean_t == nullptr || sq_t->sizes.empty() ||
          d.values[ma[3]].kind != ValueKind::None || d.values[ma[2]].kind != ValueKind::Bool ||
          !d.values[ma[2]].bool_value) {
        continue;
      }
      const auto rank = static_cast<int64_t>(sq_t->sizes.size());
      const format::ValueDesc& dims = d.values[ma[1]];
      if (dims.kind != ValueKind::IntList || dims.items.size() != 1) continue;
      const format::ValueDesc& dim = d.values[static_cast<int32_t>(dims.items[0])];
      if (dim.kind != ValueKind::Int || (dim.int_value != -1 && dim.int_value != rank - 1)) {
        continue;
      }
      const DType s = mean_t->dtype;
      if (!floating(s) || sq_t->dtype != s || mean_t->sizes.size() != sq_t->sizes.size() ||
          mean_t->sizes.back() != 1 ||
          !std::equal(sq_t->sizes.begin(), sq_t->sizes.end() - 1, mean_t->sizes.begin())) {
        continue;
      }
      // sq = pow(x, 2) or mul(x, x).
      int32_t x = -1;
      size_t sq = step(ma[0], "aten::pow.Tensor_Scalar_out", 4);
      if (sq != none && v.number_is(instrs[sq].args[1], 2)) {
        x = instrs[sq].args[0];
      } else {
        sq = step(ma[0], "aten::mul.out", 4);
        if (sq != none && instrs[sq].args[0] == instrs[sq].args[1]) x = instrs[sq].args[0];
      }
      const format::TensorDesc* x_t = x >= 0 ? tensor(x) : nullptr;
      if (x_t == nullptr || x_t->dtype != s || x_t->sizes != sq_t->sizes) continue;
      // add(mean, eps, 1), rsqrt, mul(x, r): each the only reader of the last.
      const size_t add = only_reader(ma[4], m);
      if (add == none || !v.is_kernel(add, "aten::add.out", 5)) continue;
      const auto& aa = instrs[add].args;
      if (!v.number_is(aa[2], 1)) continue;
      const int32_t eps = aa[0] == ma[4] ? aa[1] : aa[0];
      const format::TensorDesc* eps_t = tensor(eps);
      if (eps_t == nullptr || eps_t->dtype != s || eps_t->numel != 1 || eps == ma[4]) continue;
      const size_t rsqrt = only_reader(aa[3], add);
      if (rsqrt == none || !v.is_kernel(rsqrt, "aten::rsqrt.out", 3)) continue;
      const size_t norm = only_reader(instrs[rsqrt].args[1], rsqrt);
      if (norm == none || !v.is_kernel(norm, "aten::mul.out", 4)) continue;
      const auto& na = instrs[norm].args;
      const int32_t r = instrs[rsqrt].args[1];
      if (!((na[0] == x && na[1] == r) || (na[0] == r && na[1] == x))) continue;
      std::vector<size_t> at = {sq, m, add, rsqrt, norm};
      std::vector<std::pair<int32_t, size_t>> dropped = {
          {ma[0], sq}, {ma[4], m}, {aa[3], add}, {r, rsqrt}};
      int32_t y = na[2];
      // Optionally a cast of the result to half precision (.type_as(x)).
      DType o = s;
      if (s == DType::Float32) {
        const size_t narrow = only_reader(y, norm);
        if (narrow != none && cast_source(narrow) == y && tensor(instrs[narrow].args[3]) &&
            half(tensor(instrs[narrow].args[3])->dtype)) {
          dropped.emplace_back(y, norm);
          at.push_back(narrow);
          y = instrs[narrow].args[3];
          o = tensor(y)->dtype;
        }
      }
      // Optionally the weight: mul(y, w) or mul(w, y), w [n] of y's dtype.
      int32_t weight = ma[3];  // None
      const size_t wmul = only_reader(y, at.back());
      if (wmul != none && v.is_kernel(wmul, "aten::mul.out", 4)) {
        const auto& wa = instrs[wmul].args;
        const int32_t w = wa[0] == y ? wa[1] : wa[0];
        const format::TensorDesc* w_t = tensor(w);
        if (w != y && (wa[0] == y || wa[1] == y) && w_t != nullptr && w_t->dtype == o &&
            w_t->sizes.size() == 1 && w_t->sizes[0] == x_t->sizes.back()) {
          dropped.emplace_back(y, at.back());
          at.push_back(wmul);
          weight = w;
          y = wa[2];
        }
      }
      // Optionally x itself a widening of half precision (x.float()), read
      // by the pattern alone: the kernel reads the half values.
      int32_t in = x;
      if (s == DType::Float32 && !keep[x] && uses[x] == 3) {
        const size_t widen = writer_of[x];
        const int32_t h = cast_source(widen);
        if (h >= 0 && half(tensor(h)->dtype)) {
          dropped.emplace_back(x, widen);
          at.push_back(widen);
          in = h;
        }
      }
      const format::TensorDesc* out_t = tensor(y);
      if (out_t == nullptr || out_t->sizes != x_t->sizes || out_t->dtype != o ||
          !desc::default_order(*out_t) || !desc::default_order(*tensor(in))) {
        continue;
      }
      // The steps run one after the other, the last writing out.
      std::sort(at.begin(), at.end());
      bool together = true;
      for (size_t k = 1; k < at.size(); ++k)
        together = together && v.next_running(at[k - 1]) == at[k];
      if (!together) continue;
      PatternFusion f;
      f.chain = v.c;
      f.replacement = {v.c, at.back(), kernels::kRmsNormKernel, {in, eps, weight, y, y}};
      f.idle.assign(at.begin(), at.end() - 1);
      f.input = in;
      f.out = y;
      f.dropped = std::move(dropped);
      found.push_back(std::move(f));
      m = at.back();
    }
  });
  return found;
}

}  // namespace pterun
