// Integer compute for quantized chains (quant_fusion.h), applied to a
// Method's steps at load: the quantize of each chain runs the integer
// kernel, the rest of the chain runs nothing. Here are the memory checks
// the pure finder leaves to the loader, and the values the kernels need
// that the program does not hold (weight sums, output clamps).

#include <algorithm>
#include <array>
#include <map>
#include <span>

#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/executor/method_loader.h"
#include "pterun/executor/quant_fusion.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {

using namespace loader_detail;  // NOLINT: the loader's own helpers

namespace {

// Copies a tensor into its out's dim order (ops/copy.h).
constexpr const char* kChannelsLastCopy = "dim_order_ops::_clone_dim_order.out";

/// The tensor values instruction `instr` writes.
template <typename F>
void for_each_written(const format::MethodDesc& d, const format::InstructionDesc& instr, F&& f) {
  if (instr.kind == InstructionKind::DelegateCall) {
    for (int32_t a : instr.args) f(a);  // inputs and outputs: count all
    return;
  }
  if (instr.kind != InstructionKind::KernelCall || instr.args.empty()) return;
  const int32_t ret = instr.args.back();
  f(ret);
  for (int64_t item : d.values[ret].items) {
    if (item >= 0) f(static_cast<int32_t>(item));
  }
}

}  // namespace

// Moves tensor value `vi` (and the views planned inside it) into memory of
// its own, so that nothing else the plan puts there can overwrite it.
void Method::Loader::give_own_memory(int32_t vi) {
  Tensor& t = m.tensors_[tensor_of_value[vi]];
  auto views = followers(vi, last_writer(vi));
  const size_t bytes = std::max(t.bound_nbytes(), t.nbytes());
  backend::Allocation own = m.allocate(bytes);
  auto* base = static_cast<uint8_t*>(own.data());
  t.set_data(base, bytes);
  for (auto [view, offset] : views) view->set_data(base + offset, view->nbytes());
  m.owned_.push_back(std::move(own));
}

void Method::Loader::fuse_quantized() {
  const std::vector<bool> keep = kept_values();
  std::vector<QuantFusion> fusions = find_quant_fusions(d, keep);
  if (fusions.empty()) return;
  const auto& registry = kernels::KernelRegistry::global();
  const Device device = m.options_.device;
  const bool gpu = device == Device::CUDA;
  if (gpu) backend::activate(m.context_);
  const kernels::KernelInfo* sums_kernel =
      registry.info(kernels::kQuantizedWeightSumsKernel, device);
  const kernels::KernelInfo* copy_kernel = registry.info(kChannelsLastCopy, device);
  std::map<int32_t, Value*> sums_of;           // int8 weight value -> its sums
  std::map<int32_t, Value*> channels_last_of;  // int8 weight value -> a channels-last copy
  // A tensor of `dtype` and `sizes` (dim order `order`) computed from
  // weight value w by `kernel` once, now: (w, out) or, for the copy,
  // (w, non_blocking, dim_order, out) with both None; nullptr if it fails.
  auto derive = [&](int32_t w, DType dtype, std::span<const int64_t> sizes,
                    std::span<const uint8_t> order, const kernels::KernelInfo* kernel,
                    bool copy) -> Value* {
    Tensor& t = m.extra_tensors_.emplace_back(dtype, sizes, order);
    backend::Allocation own = m.allocate(std::max<size_t>(t.nbytes(), 4));
    t.set_data(own.data(), own.size());
    Value& tv = m.extra_values_.emplace_back(Value::from_tensor(&t));
    Value& none = m.extra_values_.emplace_back(Value::none());
    std::array<Value*, 4> args = {&m.values_[w], &tv, nullptr, nullptr};
    if (copy) args = {&m.values_[w], &none, &none, &tv};
    try {
      kernel->fn(m.context_, std::span<Value* const>(args.data(), copy ? 4 : 2));
    } catch (const Error&) {
      return nullptr;
    }
    m.owned_.push_back(std::move(own));
    // As constant as the weight it comes from.
    t.set_constant_id(m.tensors_[tensor_of_value[w]].constant_id());
    return &tv;
  };
  std::set<int32_t> own_memory;  // values moved out of the plan
  bool queued = false;

  for (const QuantFusion& f : fusions) {
    // The kernel: max pooling takes the values-only one where there is one
    // (it may still write the indices).
    const char* name = f.kernel;
    if (f.scratch_out >= 0 && registry.info(kernels::kMaxPoolValuesKernel, device) != nullptr) {
      name = kernels::kMaxPoolValuesKernel;
    }
    const kernels::KernelInfo* info = registry.info(name, device);
    if (info == nullptr) continue;
    const int32_t first = f.args[0].value;
    if (!info->dtypes.contains(d.values[first].tensor->dtype)) continue;
    std::vector<ValueKind> kinds;
    bool needs_sums = false, needs_copy = false;
    for (const FusedArg& a : f.args) {
      switch (a.kind) {
        case FusedArg::Kind::Value: kinds.push_back(d.values[a.value].kind); break;
        case FusedArg::Kind::Int: kinds.push_back(ValueKind::Int); break;
        case FusedArg::Kind::WeightSums: needs_sums = true; [[fallthrough]];
        case FusedArg::Kind::WeightChannelsLast:
          needs_copy = needs_copy || a.kind == FusedArg::Kind::WeightChannelsLast;
          [[fallthrough]];
        case FusedArg::Kind::Scale: kinds.push_back(ValueKind::Tensor); break;
      }
    }
    if ((needs_sums && sums_kernel == nullptr) || (needs_copy && copy_kernel == nullptr)) continue;
    try {
      kernels::check_call(*info, name, kinds, "");
    } catch (const Error&) {
      continue;
    }
    // Nothing may read the dropped intermediates through a planned view.
    bool viewed = false;
    for (int32_t v : f.dropped) viewed = viewed || !followers(v, last_writer(v)).empty();
    if (viewed) continue;

    // The activations are read at `at` now: from their dequantize on, no
    // running instruction may write over them, nor may the output.
    auto idle_at = [&](size_t k) {
      return m.chains_[f.chain][k].kind != InstructionKind::KernelCall ||
             std::count(f.idle.begin(), f.idle.end(), k) > 0;
    };
    std::vector<int32_t> move;
    bool blocked = false;
    for (const auto& read : f.reads) {
      // Plain copies, not structured bindings: lambdas below capture them.
      const int32_t x = read.first;
      const size_t read_at = read.second;
      const TensorDesc& xt = *d.values[x].tensor;
      if (xt.is_constant() || own_memory.count(x) || !is_planned(xt)) continue;
      bool clash = overlaps(xt, *d.values[f.out].tensor);
      for (size_t k = read_at + 1; k < f.at && !clash; ++k) {
        if (idle_at(k)) continue;
        for_each_written(d, d.chains[f.chain].instructions[k], [&](int32_t w) {
          const auto& wv = d.values[w];
          clash = clash || (w != x && wv.kind == ValueKind::Tensor && is_planned(*wv.tensor) &&
                            overlaps(*wv.tensor, xt));
        });
      }
      if (!clash) continue;
      // Only a tensor one kernel writes, which the method holds no other
      // claim on, can move.
      if (keep[x] || !written.count(x) || aliased.count(x)) {
        blocked = true;
        break;
      }
      move.push_back(x);
    }
    if (blocked) continue;
    // A result nothing reads, written at `at` now where the plan may have
    // put live values: it gets memory of its own.
    if (f.scratch_out >= 0) {
      const int32_t s = f.scratch_out;
      if (keep[s] || !written.count(s) || aliased.count(s)) continue;
      if (!own_memory.count(s)) move.push_back(s);
    }

    // Tensors derived from constant weights (once per weight), made now
    // like folded constants.
    bool failed = false;
    for (const FusedArg& a : f.args) {
      if (a.kind == FusedArg::Kind::WeightSums && !sums_of.count(a.value)) {
        const Tensor& w = m.tensors_[tensor_of_value[a.value]];
        const std::array<int64_t, 1> n = {w.dim() > 0 ? w.size(0) : 0};
        Value* v = derive(a.value, DType::Int32, n, {}, sums_kernel, false);
        if (v == nullptr) failed = true;
        sums_of[a.value] = v;
      } else if (a.kind == FusedArg::Kind::WeightChannelsLast && !channels_last_of.count(a.value)) {
        const Tensor& w = m.tensors_[tensor_of_value[a.value]];
        const std::array<uint8_t, 4> order = {0, 2, 3, 1};
        Value* v = derive(a.value, DType::Int8, w.sizes(), order, copy_kernel, true);
        if (v == nullptr) failed = true;
        channels_last_of[a.value] = v;
      }
      queued = queued || gpu;
    }
    if (failed) continue;

    for (int32_t v : move) {
      give_own_memory(v);
      own_memory.insert(v);
    }
    Step& step = m.chains_[f.chain][f.at];
    step.fn = info->fn;
    step.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
    step.args_count = static_cast<uint32_t>(f.args.size());
    for (const FusedArg& a : f.args) {
      switch (a.kind) {
        case FusedArg::Kind::Value: m.arg_pool_.push_back(&m.values_[a.value]); break;
        case FusedArg::Kind::Int:
          m.arg_pool_.push_back(&m.extra_values_.emplace_back(Value::from_int(a.int_value)));
          break;
        case FusedArg::Kind::WeightSums: m.arg_pool_.push_back(sums_of[a.value]); break;
        case FusedArg::Kind::WeightChannelsLast:
          m.arg_pool_.push_back(channels_last_of[a.value]);
          break;
        case FusedArg::Kind::Scale: {
          const std::array<int64_t, 1> one = {1};
          Tensor& s = m.extra_tensors_.emplace_back(DType::Float32, one);
          backend::Allocation own = m.allocate(sizeof(float));
          s.set_data(own.data(), own.size());
          const auto value = static_cast<float>(a.scale);
          fill(own.data(), &value, sizeof value);
          m.owned_.push_back(std::move(own));
          m.arg_pool_.push_back(&m.extra_values_.emplace_back(Value::from_tensor(&s)));
          break;
        }
      }
    }
    for (size_t k : f.idle) {
      Step& s = m.chains_[f.chain][k];
      s.kind = InstructionKind::FreeCall;  // a no-op from now on
      s.fn = nullptr;
    }
    ++m.quantized_chains_;
  }
  if (queued) m.wait();
}

}  // namespace pterun
