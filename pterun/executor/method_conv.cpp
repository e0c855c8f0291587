// Method::Loader's passes around convolutions (rewrite.h finds, these
// apply): batch norms folded into convolutions and activations run in
// them, torch's decomposed hardswish as one step, and the copies of
// in-place fusions skipped where memory allows.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "pterun/executor/method_loader.h"
#include "pterun/executor/rewrite.h"

namespace pterun {

using namespace loader_detail;  // NOLINT: the loader's own helpers

// Whether each one-element float32 tensor holds its value (the constants a
// fusion assumes: the hardswish's 3 and 6).
bool Method::Loader::scalars_hold(const std::vector<std::pair<int32_t, double>>& scalars) const {
  for (auto [value, want] : scalars) {
    const Tensor& t = m.tensors_[tensor_of_value[value]];
    if (t.data() == nullptr || t.numel() != 1 || t.dtype() != DType::Float32) return false;
    float held = 0;
    if (m.options_.device == Device::CPU) {
      held = *t.data_as<const float>();
    } else {
      // On a GPU the tensor's bytes are device memory: read the program's
      // own copy of a constant; a value computed at load is not checked
      // (no fusion).
      const format::TensorDesc& desc = *d.values[value].tensor;
      if (!desc.is_constant() || desc.data.size() < sizeof(float)) return false;
      std::memcpy(&held, desc.data.data(), sizeof(float));
    }
    if (held != want) return false;
  }
  return true;
}

bool Method::Loader::any_viewed(const std::vector<std::pair<int32_t, size_t>>& dropped,
                                int64_t chain_start) {
  for (auto [value, writer] : dropped) {
    if (!followers(value, chain_start + static_cast<int64_t>(writer)).empty()) return true;
  }
  return false;
}

// Convolution fusion (rewrite.h): a batch norm with constant statistics is
// folded into the weights and bias of the convolution before it, and a
// relu, hardtanh or hardswish after it becomes the convolution's
// activation, so three (seven for hardswish) passes over the activations
// become one. On any device whose backend fuses activations (the weights
// are folded on the host, from the program's constants); where memory
// allows: no view reads a dropped value's bytes, and the fused output does
// not overlap the input (the convolution cannot run in place, and the
// input's memory may have been given to the batch norm's or the
// activation's result).
void Method::Loader::fuse_convolutions() {
  const auto& registry = kernels::KernelRegistry::global();
  const ChainLayout layout = chain_layout();
  for (const ConvFusion& f : find_conv_fusions(d, kept_values(), layout.idle)) {
    Step& conv = m.chains_[f.chain][f.conv];
    kernels::KernelFn fn = conv.fn;
    if (f.kernel != nullptr) {
      const kernels::KernelInfo* info = registry.info(f.kernel, m.options_.device);
      if (info == nullptr) continue;
      fn = info->fn;
    }
    if (fn == nullptr || conv.kind != InstructionKind::KernelCall) continue;
    const bool viewed = any_viewed(f.dropped, layout.start[f.chain]);
    const TensorDesc& in = *d.values[f.input].tensor;
    const TensorDesc& out = *d.values[f.out].tensor;
    if (viewed || !scalars_hold(f.scalars) || in.dynamism != ShapeDynamism::Static ||
        (f.mean >= 0 && !foldable(f))) {
      continue;
    }
    // The memory plan may give the fused output the input's bytes (the input
    // dies at the convolution): then the convolution writes its own
    // result's memory, and the last fused instruction copies it over.
    const int32_t conv_out = f.dropped.front().first;
    const TensorDesc& own = *d.values[conv_out].tensor;
    const bool in_place = is_planned(in) && is_planned(out) && overlaps(in, out);
    const kernels::KernelInfo* copy = registry.info("aten::alias_copy.out", m.options_.device);
    if (in_place && (copy == nullptr || (is_planned(own) && overlaps(own, in)) ||
                     (is_planned(own) && overlaps(own, out)) || own.sizes != out.sizes ||
                     own.dim_order != out.dim_order || own.dynamism != ShapeDynamism::Static)) {
      continue;
    }
    if (f.residual >= 0) {
      // The kernel reads each residual element just before it writes the
      // output element in its place: the two may coincide, not overlap
      // otherwise.
      const TensorDesc& r = *d.values[f.residual].tensor;
      const TensorDesc& written = in_place ? own : out;
      const bool same = r.memory_id == written.memory_id &&
                        r.memory_offset == written.memory_offset && r.sizes == written.sizes &&
                        r.dim_order == written.dim_order;
      if (is_planned(r) && is_planned(written) && overlaps(r, written) && !same) continue;
    }
    if (f.mean >= 0) fold_batch_norm(f);
    std::vector<int32_t> args = f.args;
    if (in_place) args.back() = conv_out;
    conv.fn = fn;
    conv.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
    conv.args_count = static_cast<uint32_t>(args.size());
    for (int32_t v : args) m.arg_pool_.push_back(&m.values_[v]);
    for (size_t k : f.idle) {
      Step& step = m.chains_[f.chain][k];
      step.kind = InstructionKind::FreeCall;  // a no-op from now on
      step.fn = nullptr;
    }
    if (in_place) {
      fused_copies.push_back({f.chain, f.idle.back(), conv_out, f.out});
      // alias_copy.out(self, *, out)
      Step& last = m.chains_[f.chain][f.idle.back()];
      last.kind = InstructionKind::KernelCall;
      last.fn = copy->fn;
      last.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
      last.args_count = 2;
      m.arg_pool_.push_back(&m.values_[conv_out]);
      m.arg_pool_.push_back(&m.values_[f.out]);
    }
  }
}

// The copies of in-place convolution fusions (fuse_convolutions), on the
// final steps: the readers of a fused output read the convolution's own
// output instead when every step from the copy to the last reader leaves
// those bytes alone (no argument of theirs overlaps them), and the copy
// becomes a no-op. A reader that is itself such a convolution then need
// not write its own output (the plan gives every short-lived convolution
// output the same bytes, so it would overwrite what it reads): it writes
// its fused output directly, which no longer overlaps its input, and its
// copy goes too. Plain mobilenet_224 copied 7 results, 4.1 MB per call.
void Method::Loader::skip_fused_copies() {
  const std::vector<bool> keep = kept_values();
  size_t planned_bytes = 0, private_bytes = 0;
  for (const backend::Allocation& b : m.buffers_) planned_bytes += b.size();
  auto span_of = [](const Tensor& t) {
    const auto* begin = static_cast<const uint8_t*>(t.data());
    return std::pair{begin, begin + std::max(t.bound_nbytes(), t.nbytes())};
  };
  auto overlap = [&](const Tensor* a, const Tensor* b) {
    if (a == nullptr || b == nullptr || a->data() == nullptr || b->data() == nullptr) return false;
    const auto [a0, a1] = span_of(*a);
    const auto [b0, b1] = span_of(*b);
    return a0 < b1 && b0 < a1;
  };
  auto arg = [&](const Step& s, uint32_t a) -> Value*& { return m.arg_pool_[s.args_begin + a]; };
  // The copy of fused_copies[i] while it still runs.
  auto copying = [&](const FusedCopy& fc) {
    const Step& copy = m.chains_[fc.chain][fc.step];
    return copy.kind == InstructionKind::KernelCall && copy.args_count == 2 &&
           arg(copy, 0) == &m.values_[fc.own] && arg(copy, 1) == &m.values_[fc.out];
  };
  for (const FusedCopy& fc : fused_copies) {
    std::vector<Step>& chain = m.chains_[fc.chain];
    Value* const own = &m.values_[fc.own];
    Value* const out = &m.values_[fc.out];
    if (!copying(fc) || keep[fc.out] || !followers(fc.out, last_writer(fc.out)).empty()) continue;
    const Tensor& ot = own->to_tensor();
    const Tensor& ut = out->to_tensor();
    if (ot.data() == nullptr || ot.dtype() != ut.dtype() ||
        !std::ranges::equal(ot.sizes(), ut.sizes()) ||
        !std::ranges::equal(ot.dim_order(), ut.dim_order())) {
      continue;
    }
    auto mentions = [&](const Step& s, const Value* v) {
      if (s.kind != InstructionKind::KernelCall) return false;
      for (uint32_t a = 0; a < s.args_count; ++a) {
        if (arg(s, a) == v) return true;
      }
      return false;
    };
    // A step that reads `out` as an item of a tensor list (a fused
    // elementwise program's inputs) keeps the copy: readers are
    // retargeted by their own arguments only.
    auto listed = [&](const Step& s) {
      if (s.kind != InstructionKind::KernelCall) return false;
      for (uint32_t a = 0; a < s.args_count; ++a) {
        const Value* v = arg(s, a);
        if (v->kind() != ValueKind::TensorList) continue;
        for (const Tensor* t : v->to_tensor_list()) {
          if (t == &ut) return true;
        }
      }
      return false;
    };
    // The steps that mention `out`: after the copy, in its chain alone.
    size_t last = 0;
    bool ok = true;
    for (size_t c = 0; c < m.chains_.size() && ok; ++c) {
      for (size_t k = 0; k < m.chains_[c].size(); ++k) {
        ok = ok && !listed(m.chains_[c][k]);
        if (!mentions(m.chains_[c][k], out) || (c == fc.chain && k == fc.step)) continue;
        ok = ok && c == fc.chain && k > fc.step;
        last = std::max(last, k);
      }
    }
    if (!ok || last == 0) continue;
    // Whether readers [fc.step + 1, last] may read own's bytes in place of
    // out's, into `retarget` the readers that write their fused output
    // directly; `alone`: as if own's bytes overlapped nothing else.
    std::vector<std::pair<size_t, const FusedCopy*>> retarget;
    auto retargeted = [&](size_t k) -> const FusedCopy* {
      for (auto [step, next] : retarget) {
        if (step == k) return next;
      }
      return nullptr;
    };
    auto overlaps_own = [&](const Tensor* t, bool alone) { return !alone && overlap(t, &ot); };
    auto may_skip = [&](bool alone) {
      bool fits = true;
      retarget.clear();
      // Readers that are in-place fusions themselves (their own output
      // returned, their copy after no-ops only): they will write their fused
      // output instead, unless it overlaps what they read.
      for (size_t k = fc.step + 1; k <= last; ++k) {
        const Step& s = chain[k];
        if (!mentions(s, out) || s.args_count == 0) continue;
        for (const FusedCopy& next : fused_copies) {
          if (next.chain != fc.chain || next.step <= k || !copying(next) ||
              arg(s, s.args_count - 1) != &m.values_[next.own]) {
            continue;
          }
          bool direct = true;
          for (size_t j = k + 1; j < next.step; ++j) {
            direct = direct && chain[j].kind == InstructionKind::FreeCall && chain[j].fn == nullptr;
          }
          const Tensor* written = &m.values_[next.out].to_tensor();
          for (uint32_t a = 0; a + 1 < s.args_count && direct; ++a) {
            const Value* v = arg(s, a) == out ? own : arg(s, a);
            direct = !v->is_tensor() || (v == own ? !overlaps_own(written, alone)
                                                  : !overlap(&v->to_tensor(), written));
          }
          if (direct) retarget.emplace_back(k, &next);
        }
      }
      // From the copy to the last reader: kernel calls and no-ops only; none
      // returns `out`, and none but the readers of `out` touches own's bytes.
      for (size_t k = fc.step + 1; k <= last && fits; ++k) {
        const Step& s = chain[k];
        if (s.kind != InstructionKind::KernelCall) {
          fits = s.kind == InstructionKind::FreeCall && s.fn == nullptr;
          continue;
        }
        const FusedCopy* next = retargeted(k);
        for (uint32_t a = 0; a < s.args_count && fits; ++a) {
          const Value* v = arg(s, a);
          if (next != nullptr && a + 1 == s.args_count) v = &m.values_[next->out];
          const auto vi = v - m.values_.data();
          if (vi >= 0 && vi < static_cast<std::ptrdiff_t>(m.values_.size()) &&
              aliased.count(static_cast<int32_t>(vi))) {
            fits = false;  // re-pointed at run time
          } else if (v == out) {
            fits = a + 1 < s.args_count;  // read, not returned
          } else if (v == own) {
            fits = false;
          } else if (v->is_tensor()) {
            fits = !overlaps_own(&v->to_tensor(), alone);
          } else if (v->kind() == ValueKind::TensorList ||
                     v->kind() == ValueKind::OptionalTensorList) {
            for (Tensor* t : v->kind() == ValueKind::TensorList ? v->to_tensor_list()
                                                                : v->to_optional_tensor_list()) {
              fits = fits && t != &ut && !overlaps_own(t, alone);
            }
          }
        }
      }
      return fits;
    };
    if (!may_skip(false)) {
      // Only because another step writes own's planned bytes (the plan
      // gives every short-lived convolution output the same ones) before
      // the last reader: own gets memory of its own, which the convolution
      // alone writes, for the method's life (in all at most as much again
      // as the planned memory), and the readers read it there.
      const size_t bytes = std::max(ot.bound_nbytes(), ot.nbytes());
      if (!may_skip(true) || private_bytes + bytes > planned_bytes ||
          !followers(fc.own, -1).empty()) {
        continue;
      }
      backend::Allocation a = m.allocate(bytes);
      own->to_tensor().set_data(a.data(), bytes);
      m.owned_.push_back(std::move(a));
      private_bytes += bytes;
      if (!may_skip(false)) continue;
    }
    for (size_t k = fc.step + 1; k <= last; ++k) {
      Step& s = chain[k];
      if (s.kind != InstructionKind::KernelCall) continue;
      for (uint32_t a = 0; a < s.args_count; ++a) {
        if (arg(s, a) == out) arg(s, a) = own;
      }
      if (const FusedCopy* next = retargeted(k)) {
        arg(s, s.args_count - 1) = &m.values_[next->out];
        Step& skipped = chain[next->step];
        skipped.kind = InstructionKind::FreeCall;
        skipped.fn = nullptr;
      }
    }
    Step& copy = chain[fc.step];
    copy.kind = InstructionKind::FreeCall;  // a no-op from now on
    copy.fn = nullptr;
  }
}

// The folded weights and bias of `f`, in memory of the method's own that
// f.weight's and f.mean's tensors then point at (same layout, float32):
// scale = bn_weight / sqrt(var + eps), weight * scale, (conv_bias - mean)
// * scale + bn_bias; in double, rounded once. Computed on the host from the
// program's constants (the finder takes constants only: on a GPU their
// tensors are device memory), then copied to the method's device.
std::span<const uint8_t> Method::Loader::constant_bytes(int32_t v) const {
  const TensorDesc& t = *d.values[v].tensor;
  std::span<const uint8_t> bytes;
  if (t.storage == TensorStorage::Constant) bytes = t.data;
  if (t.storage == TensorStorage::External) {
    const format::ExternalData* ext = m.program_->external_data();
    const format::ExternalEntry* e = ext != nullptr ? ext->find(t.name) : nullptr;
    if (e != nullptr) bytes = e->data;
  }
  return bytes.size() >= t.nbytes ? bytes.first(t.nbytes) : std::span<const uint8_t>{};
}

bool Method::Loader::foldable(const ConvFusion& f) const {
  for (int32_t v : {f.weight, f.mean, f.var, f.bn_weight, f.bn_bias, f.conv_bias}) {
    if (v >= 0 && constant_bytes(v).empty()) return false;
  }
  return true;
}

void Method::Loader::fold_batch_norm(const ConvFusion& f) {
  // The program's bytes (foldable() checked that each has them): on a GPU
  // the tensors' own are device memory.
  auto host = [&](int32_t v) -> const uint8_t* {
    return v < 0 ? nullptr : constant_bytes(v).data();
  };
  auto at = [](const uint8_t* p, int64_t i) {
    float x;
    std::memcpy(&x, p + i * sizeof(float), sizeof x);
    return double{x};
  };
  Tensor& weight = m.tensors_[tensor_of_value[f.weight]];
  Tensor& bias = m.tensors_[tensor_of_value[f.mean]];
  const int64_t oc = weight.size(0);
  const uint8_t *gamma = host(f.bn_weight), *beta = host(f.bn_bias), *mean = host(f.mean),
                *var = host(f.var), *conv_bias = host(f.conv_bias), *w_old = host(f.weight);
  std::vector<float> w_new(weight.nbytes() / sizeof(float)), b_new(bias.nbytes() / sizeof(float));
  const int64_t per_channel = weight.numel() / oc;
  const auto strides = weight.strides();
  for (int64_t o = 0; o < oc; ++o) {
    const double scale = (gamma != nullptr ? at(gamma, o) : 1.0) / std::sqrt(at(var, o) + f.eps);
    b_new[o] =
        static_cast<float>(((conv_bias != nullptr ? at(conv_bias, o) : 0.0) - at(mean, o)) * scale +
                           (beta != nullptr ? at(beta, o) : 0.0));
    // Every element of output channel o, at its own offset.
    for (int64_t i = 0; i < per_channel; ++i) {
      int64_t offset = o * strides[0], rest = i;
      for (size_t dim = weight.dim(); dim-- > 1;) {
        offset += rest % weight.size(dim) * strides[dim];
        rest /= weight.size(dim);
      }
      w_new[offset] = static_cast<float>(at(w_old, offset) * scale);
    }
  }
  // The folded values are constants of their own (never written, at an
  // address of their own): they keep the method's constant id, so kernels
  // need not compare the bytes they packed each call.
  auto own = [&](Tensor& t, const std::vector<float>& bytes) {
    const uint64_t id = t.constant_id();
    backend::Allocation a = m.allocate(t.nbytes());
    fill(a.data(), bytes.data(), t.nbytes());
    t.set_data(a.data(), t.nbytes());
    t.set_constant_id(id);
    m.owned_.push_back(std::move(a));
  };
  own(weight, w_new);
  own(bias, b_new);
}

// Hardswish fusion (rewrite.h, find_hardswish_fusions): torch's decomposed
// hardswish that no convolution fusion took (after a linear layer, an add,
// a pooling) runs as one hardswish.out step instead of five passes, where
// the device has the kernel and memory allows: no view reads the dropped
// values' bytes, and the output overlaps the input element for element or
// not at all.
void Method::Loader::fuse_hardswish() {
  const ChainLayout layout = chain_layout();
  apply_pattern_fusions(find_hardswish_fusions(d, kept_values(), layout.idle), layout);
}

void Method::Loader::apply_pattern_fusions(const std::vector<PatternFusion>& found,
                                           const ChainLayout& layout) {
  for (const PatternFusion& f : found) {
    const kernels::KernelInfo* info =
        kernels::KernelRegistry::global().info(f.replacement.kernel, m.options_.device);
    if (info == nullptr) continue;
    const bool viewed = any_viewed(f.dropped, layout.start[f.chain]);
    const TensorDesc& in = *d.values[f.input].tensor;
    const TensorDesc& out = *d.values[f.out].tensor;
    const bool clash = is_planned(in) && is_planned(out) && overlaps(in, out) &&
                       (in.memory_offset != out.memory_offset || in.sizes != out.sizes ||
                        in.dim_order != out.dim_order || in.dynamism != ShapeDynamism::Static ||
                        out.dynamism != ShapeDynamism::Static);
    if (viewed || clash || !scalars_hold(f.scalars)) continue;
    replace_step(m.chains_[f.chain][f.replacement.index], info->fn, f.replacement.args);
    for (size_t k : f.idle) {
      Step& step = m.chains_[f.chain][k];
      step.kind = InstructionKind::FreeCall;  // a no-op from now on
      step.fn = nullptr;
    }
  }
}

}  // namespace pterun
