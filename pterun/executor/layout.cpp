// The channels-last finder (layout.h).

#include "pterun/executor/layout.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

#include "pterun/executor/desc_util.h"

namespace pterun {
namespace {

using format::InstructionKind;

/// Kernels whose results do not depend on their tensors' layouts and whose
/// CPU kernels read and write any dim order (the ops test suite checks
/// each with channels-last tensors).
bool layout_free(std::string_view op) {
  static constexpr std::string_view kOps[] = {
      "aten::convolution.out", "aten::_native_batch_norm_legit_no_training.out",
      "aten::relu.out",        "aten::hardtanh.out",
      "aten::clamp.out",       "aten::hardswish.out",
      "aten::sigmoid.out",     "aten::silu.out",
      "aten::tanh.out",        "aten::add.out",
      "aten::sub.out",         "aten::mul.out",
      "aten::div.out",         "aten::max_pool2d_with_indices.out",
      "aten::avg_pool2d.out",  "aten::mean.out",
      "aten::cat.out",         "aten::view_copy.out",
  };
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

/// True when `instr` is a depthwise convolution.out (weight [C, 1, kh, kw],
/// C groups).
bool depthwise(const format::MethodDesc& d, const format::InstructionDesc& instr) {
  // (input, weight, bias, stride, padding, dilation, transposed,
  // output_padding, groups, out) and the return entry.
  if (!desc::is_call(d, instr, "aten::convolution.out", 11)) return false;
  const format::TensorDesc* w = desc::tensor_of(d, instr.args[1]);
  const auto& groups = d.values[instr.args[8]];
  return w != nullptr && w->sizes.size() == 4 && groups.kind == ValueKind::Int &&
         groups.int_value > 1 && w->sizes[1] == 1 && w->sizes[0] == groups.int_value;
}

/// Output channels between which a dense convolution runs about as fast
/// channels-last or faster (docs/cpu-blas.md: 64 and 128 channels 12-13%
/// faster, 16 and 32 within 4%, 256 9% slower; 8 channels fill half an
/// AVX-512 vector: a 3 -> 8 stem ran 2x slower).
constexpr int64_t kChannelsLastMinOutputs = 16;
constexpr int64_t kChannelsLastMaxOutputs = 128;

/// True when `instr` is a convolution.out whose output channels are outside
/// [kChannelsLastMinOutputs, kChannelsLastMaxOutputs] (or whose weight is
/// not a known 4-D tensor).
bool unsuited_convolution(const format::MethodDesc& d, const format::InstructionDesc& instr) {
  if (!desc::is_call(d, instr, "aten::convolution.out", 11)) return false;
  const format::TensorDesc* w = desc::tensor_of(d, instr.args[1]);
  return w == nullptr || w->sizes.size() != 4 || w->sizes[0] < kChannelsLastMinOutputs ||
         w->sizes[0] > kChannelsLastMaxOutputs;
}

struct Groups {
  std::vector<int32_t> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t find(int32_t v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  }
  void join(int32_t a, int32_t b) { parent[find(a)] = find(b); }
};

}  // namespace

std::vector<int32_t> find_channels_last_values(const format::MethodDesc& d,
                                               const std::vector<bool>& keep) {
  const std::vector<desc::Position> order = desc::straight_line(d);
  if (order.empty()) return {};
  const auto at = desc::mentions(d, order);
  const size_t n = d.values.size();
  std::vector<bool> ok(n, false);
  for (size_t i = 0; i < n; ++i) {
    const format::TensorDesc* t = desc::tensor_of(d, static_cast<int32_t>(i));
    ok[i] = t != nullptr && !keep[i] && !at[i].empty() && t->dtype == DType::Float32 &&
            t->sizes.size() == 4 && t->dynamism == ShapeDynamism::Static &&
            t->storage == format::TensorStorage::Planned && t->memory_id == 1 && t->sizes[1] > 1 &&
            t->sizes[2] * t->sizes[3] > 1 && t->dim_order == std::vector<uint8_t>{0, 1, 2, 3};
    if (!ok[i]) continue;
    for (size_t pos : at[i]) {
      const auto& instr = *order[pos].instr;
      if (instr.kind != InstructionKind::KernelCall ||
          !layout_free(d.operators[instr.index].full_name())) {
        ok[i] = false;
        break;
      }
    }
  }
  // Bytes shared with a tensor alive at the same time. A lifetime runs from
  // the first mention to the last, ends included; an input's from the
  // start, an output's to the end; other values kept (state, re-pointed),
  // and tensors no instruction mentions, are alive throughout; a tensor no
  // instruction writes (a view the exporter planned inside another
  // tensor's bytes) from the write of those bytes.
  const size_t end = order.size();
  std::vector<bool> input(n, false), output(n, false), written(n, false);
  for (int32_t v : d.inputs) input[v] = true;
  for (int32_t v : d.outputs) output[v] = true;
  for (const desc::Position& p : order) {
    if (p.instr->kind != InstructionKind::KernelCall || p.instr->args.empty()) continue;
    const auto& ret = d.values[p.instr->args.back()];
    written[p.instr->args.back()] = true;
    if (ret.kind == ValueKind::TensorList) {
      for (int64_t item : ret.items) {
        if (item >= 0) written[item] = true;
      }
    }
  }
  // An unwritten view is alive from the last write of bytes it shares
  // before its first read (its owner's), or from the start.
  auto view_start = [&](size_t j) -> size_t {
    const format::TensorDesc& v = *desc::tensor_of(d, static_cast<int32_t>(j));
    for (size_t q = at[j].front(); q-- > 0;) {
      const auto& instr = *order[q].instr;
      if (instr.kind != InstructionKind::KernelCall || instr.args.empty()) continue;
      auto shares = [&](int64_t r) {
        const format::TensorDesc* w =
            r >= 0 ? desc::tensor_of(d, static_cast<int32_t>(r)) : nullptr;
        return w != nullptr && desc::planned(*w) && desc::overlaps(*w, v);
      };
      const auto& ret = d.values[instr.args.back()];
      if (shares(instr.args.back())) return q;
      if (ret.kind == ValueKind::TensorList &&
          std::any_of(ret.items.begin(), ret.items.end(), shares)) {
        return q;
      }
    }
    return 0;
  };
  auto lifetime = [&](size_t j) -> std::pair<size_t, size_t> {
    const bool io = input[j] || output[j];
    if (at[j].empty() || (keep[j] && !io)) return {0, end};
    if (!written[j] && !input[j]) return {view_start(j), output[j] ? end : at[j].back()};
    return {input[j] ? 0 : at[j].front(), output[j] ? end : at[j].back()};
  };
  for (size_t i = 0; i < n; ++i) {
    ok[i] = ok[i] && written[i];  // a planned view follows its owner's layout
    if (!ok[i]) continue;
    const format::TensorDesc& t = *desc::tensor_of(d, static_cast<int32_t>(i));
    const auto [first, last] = lifetime(i);
    for (size_t j = 0; j < n && ok[i]; ++j) {
      const format::TensorDesc* o = desc::tensor_of(d, static_cast<int32_t>(j));
      if (j == i || o == nullptr || !desc::planned(*o) || !desc::overlaps(t, *o)) continue;
      const auto [from, to] = lifetime(j);
      if (from <= last && first <= to) ok[i] = false;
    }
  }
  // Groups of values mentioned together, and whether a group has a
  // depthwise convolution.
  Groups groups(n);
  std::vector<bool> has_depthwise(n, false), has_conv(n, false), has_unsuited(n, false);
  for (const desc::Position& p : order) {
    const auto& instr = *p.instr;
    if (instr.kind != InstructionKind::KernelCall) continue;
    int32_t first = -1;
    auto visit = [&](int64_t v) {
      if (v < 0 || static_cast<size_t>(v) >= n || !ok[v]) return;
      if (first < 0) {
        first = static_cast<int32_t>(v);
      } else {
        groups.join(static_cast<int32_t>(v), first);
      }
    };
    for (int32_t a : instr.args) {
      visit(a);
      const auto& v = d.values[a];
      if (v.kind == ValueKind::TensorList) {
        for (int64_t item : v.items) visit(item);
      }
    }
    if (first < 0) continue;
    if (depthwise(d, instr)) has_depthwise[first] = true;
    if (desc::is_call(d, instr, "aten::convolution.out", 11)) has_conv[first] = true;
    if (unsuited_convolution(d, instr)) has_unsuited[first] = true;
  }
  // Per group (at its root): a depthwise convolution, a convolution, one
  // with too few or too many output channels.
  std::vector<bool> depthwise_root(n, false), conv_root(n, false), unsuited_root(n, false);
  for (size_t i = 0; i < n; ++i) {
    const int32_t root = groups.find(static_cast<int32_t>(i));
    depthwise_root[root] = depthwise_root[root] || has_depthwise[i];
    conv_root[root] = conv_root[root] || has_conv[i];
    unsuited_root[root] = unsuited_root[root] || has_unsuited[i];
  }
  // A group goes channels-last (chosen at its root) with a depthwise
  // convolution, or with convolutions that all suit the kernel.
  std::vector<bool> chosen(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (groups.find(static_cast<int32_t>(i)) != static_cast<int32_t>(i)) continue;
    chosen[i] = depthwise_root[i] || (conv_root[i] && !unsuited_root[i]);
  }
  std::vector<int32_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (ok[i] && chosen[groups.find(static_cast<int32_t>(i))])
      out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

}  // namespace pterun
