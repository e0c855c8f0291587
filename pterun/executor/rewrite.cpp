// Load-time kernel rewrites (rewrite.h); Method::Loader applies those the
// method's device has a kernel for.

#include "pterun/executor/rewrite.h"

#include "pterun/executor/desc_util.h"

#include <algorithm>

#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {

using format::InstructionKind;

std::vector<int> count_uses(const format::MethodDesc& d) {
  std::vector<int> uses(d.values.size(), 0);
  std::vector<int64_t> seen;
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      seen.clear();
      switch (instr.kind) {
        case InstructionKind::KernelCall:
        case InstructionKind::DelegateCall:
          for (int32_t a : instr.args) {
            seen.push_back(a);
            const auto& v = d.values[a];
            if (v.kind == ValueKind::TensorList || v.kind == ValueKind::OptionalTensorList) {
              seen.insert(seen.end(), v.items.begin(), v.items.end());
            }
          }
          break;
        case InstructionKind::MoveCall:
          seen.push_back(instr.index);
          seen.push_back(instr.target);
          break;
        case InstructionKind::JumpFalseCall:
        case InstructionKind::FreeCall: seen.push_back(instr.index); break;
      }
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (int64_t v : seen) {
        if (v >= 0 && static_cast<size_t>(v) < uses.size()) ++uses[v];
      }
    }
  }
  return uses;
}

using desc::is_call;
using desc::mentions;
using desc::overlapped;
using desc::planned;
using desc::Position;
using desc::straight_line;
using desc::tensor_of;

std::vector<KernelRewrite> find_kernel_rewrites(const format::MethodDesc& d,
                                                const std::vector<bool>& keep) {
  std::vector<KernelRewrite> found;
  const std::vector<int> uses = count_uses(d);
  for (size_t c = 0; c < d.chains.size(); ++c) {
    const auto& instrs = d.chains[c].instructions;
    for (size_t k = 0; k < instrs.size(); ++k) {
      const auto& instr = instrs[k];
      if (instr.kind != InstructionKind::KernelCall) continue;
      // max_pool2d_with_indices.out(self, kernel_size, stride, padding,
      // dilation, ceil_mode, *, out, indices) -> (out, indices)
      if (d.operators[instr.index].full_name() == "aten::max_pool2d_with_indices.out" &&
          instr.args.size() == 9) {
        const int32_t indices = instr.args[7];
        if (d.values[indices].kind == ValueKind::Tensor && !keep[indices] && uses[indices] == 1) {
          found.push_back({c, k, kernels::kMaxPoolValuesKernel});
        }
      }
    }
  }
  return found;
}

std::vector<InPlaceCacheWrite> find_in_place_cache_writes(const format::MethodDesc& d,
                                                          const std::vector<bool>& keep) {
  std::vector<InPlaceCacheWrite> found;
  const std::vector<Position> order = straight_line(d);
  const auto at = mentions(d, order);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    // index_put.out(self, indices, values, accumulate, *, out) -> out
    const auto& put = *order[pos].instr;
    if (!is_call(d, put, "aten::index_put.out", 6)) continue;
    const int32_t cache = put.args[0], result = put.args[4];
    const format::TensorDesc* c = tensor_of(d, cache);
    const format::TensorDesc* r = tensor_of(d, result);
    if (c == nullptr || r == nullptr || put.args[5] != result || keep[result]) continue;
    if (!planned(*c) || c->dynamism != ShapeDynamism::Static ||
        r->dynamism != ShapeDynamism::Static || c->dtype != r->dtype || c->sizes != r->sizes ||
        c->dim_order != r->dim_order || overlapped(d, cache)) {
      continue;
    }
    for (int32_t a : {put.args[1], put.args[2], put.args[3]}) {
      if (a == cache || a == result) c = nullptr;
    }
    if (c == nullptr) continue;
    // The cache's next mention must be copy_(cache, result) -> cache, its last.
    const auto& cm = at[cache];
    auto next = std::upper_bound(cm.begin(), cm.end(), pos);
    if (next == cm.end() || next + 1 != cm.end()) continue;
    const auto& copy = *order[*next].instr;
    // copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
    if (!is_call(d, copy, "aten::copy_", 4) || copy.args[0] != cache || copy.args[1] != result ||
        copy.args[3] != cache) {
      continue;
    }
    // result: named from the index_put to the copy_, returned by the index_put alone.
    const auto& rm = at[result];
    if (rm.empty() || rm.front() != pos || rm.back() > *next) continue;
    bool returned_elsewhere = false;
    for (size_t p : rm) {
      const auto& instr = *order[p].instr;
      returned_elsewhere = returned_elsewhere || (p != pos && instr.args.back() == result);
    }
    if (returned_elsewhere) continue;
    InPlaceCacheWrite w;
    w.index_put = {order[pos].chain,
                   order[pos].index,
                   "aten::index_put_",
                   {cache, put.args[1], put.args[2], put.args[3], cache}};
    w.copy_chain = order[*next].chain;
    w.copy_index = order[*next].index;
    w.cache = cache;
    w.result = result;
    found.push_back(std::move(w));
  }
  return found;
}

PositionRewrites find_position_rewrites(const format::MethodDesc& d,
                                        const std::vector<bool>& keep) {
  PositionRewrites found;
  const std::vector<Position> order = straight_line(d);
  const auto at = mentions(d, order);
  auto kind = [&](int32_t v) { return d.values[v].kind; };
  for (size_t pos = 0; pos < order.size(); ++pos) {
    // _local_scalar_dense(Tensor self) -> Scalar
    const auto& read = *order[pos].instr;
    if (!is_call(d, read, "aten::_local_scalar_dense", 2)) continue;
    const int32_t t = read.args[0], p = read.args[1];
    const format::TensorDesc* td = tensor_of(d, t);
    if (td == nullptr || kind(p) != ValueKind::Int || keep[p] || keep[t]) continue;
    if ((td->dtype != DType::Int64 && td->dtype != DType::Int32) || td->numel != 1 ||
        td->dynamism != ShapeDynamism::Static) {
      continue;
    }
    // t: returned by exactly one earlier kernel call.
    int writers = 0;
    bool earlier = true;
    for (size_t q : at[t]) {
      if (order[q].instr->args.back() == t && order[q].instr->kind == InstructionKind::KernelCall) {
        ++writers;
        earlier = earlier && q < pos;
      }
    }
    if (writers != 1 || !earlier) continue;

    PositionRewrites mine;
    std::vector<std::pair<int32_t, int32_t>> sums;  // p + n values: (sum, n)
    bool ok = true;
    // The add.Scalar(p, n) results first: slices read them with p.
    for (size_t q : at[p]) {
      const auto& instr = *order[q].instr;
      if (q == pos || !is_call(d, instr, "executorch_prim::add.Scalar", 3)) continue;
      const int32_t a = instr.args[0], b = instr.args[1], sum = instr.args[2];
      const int32_t n = a == p ? b : a;
      if ((a == p) == (b == p) || kind(n) != ValueKind::Int || kind(sum) != ValueKind::Int ||
          keep[sum]) {
        ok = false;
        break;
      }
      sums.emplace_back(sum, n);
      mine.idle.emplace_back(order[q].chain, order[q].index);
    }
    auto sum_length = [&](int32_t v) -> int32_t {
      for (auto [sum, n] : sums) {
        if (sum == v) return n;
      }
      return -1;
    };
    std::vector<size_t> handled;
    for (size_t q : at[p]) {
      if (!ok) break;
      const auto& instr = *order[q].instr;
      const auto& a = instr.args;
      const auto place = [&](const char* kernel, std::vector<int32_t> args) {
        mine.replace.push_back({order[q].chain, order[q].index, kernel, std::move(args)});
        handled.push_back(q);
      };
      auto count = [&](int32_t v) { return std::count(a.begin(), a.end(), v); };
      if (q == pos || is_call(d, instr, "executorch_prim::add.Scalar", 3)) continue;
      if (is_call(d, instr, "llama::update_cache.out", 5) && a[2] == p && count(p) == 1) {
        place(kernels::kUpdateCacheAtKernel, {a[0], a[1], t, a[3], a[4]});
      } else if (is_call(d, instr, "llama::custom_sdpa.out", 10) && a[3] == p && count(p) == 1 &&
                 kind(a[4]) == ValueKind::None) {
        place(kernels::kCustomSdpaAtKernel, {a[0], a[1], a[2], t, a[6], a[7], a[8], a[9]});
      } else if (is_call(d, instr, "aten::slice_copy.Tensor_out", 7) && a[2] == p &&
                 count(p) == 1 && sum_length(a[3]) >= 0 && kind(a[4]) == ValueKind::Int &&
                 d.values[a[4]].int_value == 1) {
        place(kernels::kSliceAtKernel, {a[0], a[1], t, sum_length(a[3]), a[5], a[6]});
      } else if (is_call(d, instr, "aten::scalar_tensor.out", 3) && a[0] == p) {
        place(kernels::kItemCopyKernel, {t, a[1], a[2]});
      } else {
        ok = false;
      }
    }
    // Every reader of each sum is one of the slices above.
    for (auto [sum, n] : sums) {
      for (size_t q : at[sum]) {
        const bool is_add = order[q].instr->args.back() == sum;
        ok = ok && (is_add || std::count(handled.begin(), handled.end(), q) > 0);
      }
    }
    if (!ok || mine.replace.empty()) continue;
    mine.idle.emplace_back(order[pos].chain, order[pos].index);
    for (auto& r : mine.replace) found.replace.push_back(std::move(r));
    for (auto i : mine.idle) found.idle.push_back(i);
    found.positions.push_back(t);
  }
  return found;
}

}  // namespace pterun
