// The safe softmax of torch's decomposed attention (rewrite.h,
// find_safe_softmax_fusions): seven instructions found from a method's
// instructions alone, to run as one kernel.

#include <cmath>

#include "pterun/executor/chain_view.h"
#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {
namespace {

using detail::ChainView;

/// `dim` of a rank-`rank` tensor in [0, rank), or -1 when out of range.
int64_t wrapped(int64_t dim, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) return -1;
  return dim < 0 ? dim + r : dim;
}

}  // namespace

std::vector<PatternFusion> find_safe_softmax_fusions(const format::MethodDesc& d,
                                                     const std::vector<bool>& keep,
                                                     const std::vector<std::vector<bool>>& idle) {
  std::vector<PatternFusion> found;
  detail::for_each_chain(d, keep, idle, [&](const ChainView& v) {
    const size_t c = v.c;
    const std::vector<int>& uses = v.uses;
    const auto& instrs = v.instrs();
    auto tensor = [&](int32_t t) { return desc::tensor_of(d, t); };
    auto int_value = [&](int32_t t, int64_t& out) {
      if (d.values[t].kind != ValueKind::Int) return false;
      out = d.values[t].int_value;
      return true;
    };
    // Read by `readers` instructions of the pattern alone, besides its writer.
    auto only = [&](int32_t t, int readers) {
      return !keep[t] && uses[t] == readers + 1 && tensor(t) != nullptr;
    };
    for (size_t l = 0; l < instrs.size(); ++l) {
      if ((l < idle[c].size() && idle[c][l]) || !v.is_kernel(l, "aten::_softmax.out", 5)) continue;
      const auto& sm = instrs[l].args;
      const int32_t x = sm[0], s = sm[3];
      const format::TensorDesc* xt = tensor(x);
      int64_t dim = 0;
      if (xt == nullptr || !kernels::is_floating(xt->dtype) || !int_value(sm[1], dim) ||
          d.values[sm[2]].kind != ValueKind::Bool || d.values[sm[2]].bool_value || sm[4] != s ||
          !only(s, 2)) {
        continue;
      }
      const int64_t axis = wrapped(dim, xt->sizes.size());
      size_t at[7] = {l};
      for (int k = 1; k < 7; ++k) at[k] = v.next_running(at[k - 1]);
      if (at[6] >= instrs.size() || !v.is_kernel(at[1], "aten::eq.Scalar_out", 4) ||
          !v.is_kernel(at[2], "aten::logical_not.out", 3) ||
          !v.is_kernel(at[3], "aten::any.out", 5) ||
          !v.is_kernel(at[4], "aten::logical_not.out", 3) ||
          !v.is_kernel(at[5], "aten::full_like.out", 5) ||
          !v.is_kernel(at[6], "aten::where.self_out", 5)) {
        continue;
      }
      const auto& eq = instrs[at[1]].args;
      const auto& n1 = instrs[at[2]].args;
      const auto& any = instrs[at[3]].args;
      const auto& n2 = instrs[at[4]].args;
      const auto& full = instrs[at[5]].args;
      const auto& where = instrs[at[6]].args;
      const format::ValueDesc& inf = d.values[eq[1]];
      int64_t any_dim = 0;
      const bool matches =
          eq[0] == x && inf.kind == ValueKind::Double && std::isinf(inf.double_value) &&
          inf.double_value < 0 && only(eq[2], 1) && n1[0] == eq[2] && only(n1[1], 1) &&
          any[0] == n1[1] && int_value(any[1], any_dim) && axis >= 0 &&
          wrapped(any_dim, xt->sizes.size()) == axis && d.values[any[2]].kind == ValueKind::Bool &&
          d.values[any[2]].bool_value && only(any[3], 1) && n2[0] == any[3] && only(n2[1], 1) &&
          full[0] == s && v.number_is(full[1], 0) && only(full[3], 1) && where[0] == n2[1] &&
          where[1] == full[3] && where[2] == s && tensor(where[3]) != nullptr &&
          tensor(where[3])->dtype == xt->dtype && tensor(where[3])->sizes == xt->sizes;
      if (!matches) continue;
      PatternFusion f;
      f.chain = c;
      f.replacement = {c, l, kernels::kSafeSoftmaxKernel, {x, sm[1], sm[2], where[3], where[3]}};
      f.idle.assign(at + 1, at + 7);
      f.input = x;
      f.out = where[3];
      f.dropped = {{s, at[0]},      {eq[2], at[1]}, {n1[1], at[2]},
                   {any[3], at[3]}, {n2[1], at[4]}, {full[3], at[5]}};
      found.push_back(std::move(f));
      l = at[6];
    }
  });
  return found;
}

}  // namespace pterun
