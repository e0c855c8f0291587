// torch's rotate-half rotary embedding (rewrite.h, find_rotary_fusions):
// seven instructions found from a method's instructions alone, to run as
// one kernel (kernels/internal_ops.h, kRotaryHalfKernel).

#include <algorithm>
#include <array>

#include "pterun/executor/chain_view.h"
#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {
namespace {

using detail::ChainView;

}  // namespace

std::vector<PatternFusion> find_rotary_fusions(const format::MethodDesc& d,
                                               const std::vector<bool>& keep,
                                               const std::vector<std::vector<bool>>& idle) {
  std::vector<PatternFusion> found;
  detail::for_each_chain(d, keep, idle, [&](const ChainView& v) {
    const auto& instrs = v.instrs();
    const std::vector<size_t> writer_of = v.running_writers();
    auto tensor = [&](int32_t t) { return desc::tensor_of(d, t); };
    // Written by instruction `name` (with `args` arguments) and read once
    // (by the pattern), not kept.
    auto step = [&](int32_t t, const char* name, size_t args) {
      return v.sole_step(writer_of, t, name, args);
    };
    auto int_of = [&](int32_t t, int64_t& out) {
      const auto& value = d.values[t];
      if (value.kind != ValueKind::Int) return false;
      out = value.int_value;
      return true;
    };
    for (size_t l = 0; l < instrs.size(); ++l) {
      if (!v.running(l) || !v.is_kernel(l, "aten::add.out", 5)) continue;
      const auto& add = instrs[l].args;
      const int32_t out = add[3];
      const format::TensorDesc* ot = tensor(out);
      if (ot == nullptr || add[4] != out || !v.number_is(add[2], 1) || ot->sizes.empty() ||
          ot->dynamism != ShapeDynamism::Static || !desc::default_order(*ot)) {
        continue;
      }
      const DType dtype = ot->dtype;
      if (dtype != DType::Float32 && dtype != DType::Float16 && dtype != DType::BFloat16) continue;
      const size_t rank = ot->sizes.size();
      const int64_t width = ot->sizes.back();
      if (width % 2 != 0 || width == 0) continue;
      const int64_t half = width / 2;
      // One addend is x * cos, the other cat(-x[..., h:], x[..., :h]) * sin.
      for (int side = 0; side < 2; ++side) {
        const size_t ma = step(add[side], "aten::mul.out", 4);
        const size_t mb = step(add[1 - side], "aten::mul.out", 4);
        if (ma == instrs.size() || mb == instrs.size()) continue;
        // mul(cat, sin) in either order.
        size_t cat = instrs.size();
        int32_t sin = -1;
        for (int o = 0; o < 2 && cat == instrs.size(); ++o) {
          cat = step(instrs[mb].args[o], "aten::cat.out", 4);
          sin = instrs[mb].args[1 - o];
        }
        if (cat == instrs.size()) continue;
        const auto& ca = instrs[cat].args;
        const format::ValueDesc& list = d.values[ca[0]];
        int64_t cat_dim = 0;
        if (list.kind != ValueKind::TensorList || list.items.size() != 2 ||
            !int_of(ca[1], cat_dim) ||
            (cat_dim != -1 && cat_dim != static_cast<int64_t>(rank) - 1)) {
          continue;
        }
        const auto first = static_cast<int32_t>(list.items[0]);
        const auto second = static_cast<int32_t>(list.items[1]);
        const size_t neg = step(first, "aten::neg.out", 3);
        if (neg == instrs.size()) continue;
        // slice_copy.Tensor_out(x, last dim, start, end, 1) for [h, 2h) and [0, h).
        auto slice = [&](int32_t t, int64_t from, int64_t to, int32_t& x) {
          const size_t w = step(t, "aten::slice_copy.Tensor_out", 7);
          if (w == instrs.size()) return w;
          const auto& a = instrs[w].args;
          int64_t dim = 0, start = 0, end = 0, by = 0;
          const bool start_none = d.values[a[2]].kind == ValueKind::None;
          if (!int_of(a[1], dim) || (!start_none && !int_of(a[2], start)) || !int_of(a[3], end) ||
              !int_of(a[4], by) || by != 1 || start != from || end < to ||
              (end != to && to != width) || (dim != -1 && dim != static_cast<int64_t>(rank) - 1)) {
            return instrs.size();
          }
          x = a[0];
          return w;
        };
        int32_t x_hi = -1, x_lo = -1;
        const size_t hi = slice(instrs[neg].args[0], half, width, x_hi);
        const size_t lo = slice(second, 0, half, x_lo);
        if (hi == instrs.size() || lo == instrs.size() || x_hi != x_lo) continue;
        const int32_t x = x_hi;
        // mul(x, cos) in either order.
        const auto& xa = instrs[ma].args;
        if (xa[0] != x && xa[1] != x) continue;
        const int32_t cos = xa[0] == x ? xa[1] : xa[0];
        const format::TensorDesc* xt = tensor(x);
        const format::TensorDesc* ct = tensor(cos);
        const format::TensorDesc* st = tensor(sin);
        if (xt == nullptr || ct == nullptr || st == nullptr || xt->sizes != ot->sizes ||
            xt->dtype != dtype || ct->dtype != dtype || st->dtype != dtype ||
            xt->dynamism != ShapeDynamism::Static || cos == x || sin == x) {
          continue;
        }
        // Every intermediate of x's shape as torch computes it.
        bool shaped = true;
        for (size_t w : {ma, mb, cat})
          shaped = shaped && tensor(instrs[w].args.back())->sizes == ot->sizes;
        if (!shaped) continue;
        // The seven run one after the other.
        std::array<size_t, 7> at = {ma, mb, cat, neg, hi, lo, l};
        std::sort(at.begin(), at.end());
        bool together = true;
        for (size_t k = 1; k < at.size(); ++k)
          together = together && v.next_running(at[k - 1]) == at[k];
        if (!together || at.back() != l) continue;
        PatternFusion f;
        f.chain = v.c;
        f.replacement = {v.c, l, kernels::kRotaryHalfKernel, {x, cos, sin, out, out}};
        f.idle.assign(at.begin(), at.end() - 1);
        f.input = x;
        f.out = out;
        for (size_t w : {ma, mb, cat, neg, hi, lo})
          f.dropped.emplace_back(instrs[w].args.back(), w);
        found.push_back(std::move(f));
        break;
      }
    }
  });
  return found;
}

}  // namespace pterun
