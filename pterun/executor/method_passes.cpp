// The load-time passes over a Method's steps: constant folding, elementwise
// fusion and kernel rewrites (their finders are pure, in constant_fold.cpp
// and rewrite.cpp; here they are applied to memory), and the analyses they
// share: views that follow a tensor, values to keep.

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/executor/constant_fold.h"
#include "pterun/executor/layout.h"
#include "pterun/executor/method_loader.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {

using namespace loader_detail;  // NOLINT: the loader's own helpers

// Views the exporter resolved by memory planning alone: a tensor no
// instruction writes, placed inside another tensor's planned bytes (a
// view_copy of an input, for one, becomes a second tensor at the input's
// offset). Such a view belongs to `vi`, written by instruction `written_at`
// (-1: before the run, as inputs are), when it lies inside `vi` and no
// other instruction writes over it between then and its first read. It
// must follow `vi` wherever `vi` is re-pointed. Instructions are taken in
// chain order.
std::vector<std::pair<Tensor*, size_t>> Method::Loader::followers(int32_t vi, int64_t written_at) {
  std::vector<std::pair<Tensor*, size_t>> out;
  const TensorDesc& t = *d.values[vi].tensor;
  if (!is_planned(t)) return out;
  std::vector<const format::InstructionDesc*> order;
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) order.push_back(&instr);
  }
  auto touches = [&](const format::InstructionDesc& instr, int32_t value, bool as_return) {
    if (instr.kind != InstructionKind::KernelCall && instr.kind != InstructionKind::DelegateCall)
      return false;
    for (size_t a = 0; a < instr.args.size(); ++a) {
      if ((a + 1 == instr.args.size()) != as_return) continue;
      int32_t arg = instr.args[a];
      if (arg == value) return true;
      const auto& v = d.values[arg];
      if (v.kind == ValueKind::TensorList || v.kind == ValueKind::OptionalTensorList) {
        if (std::count(v.items.begin(), v.items.end(), value)) return true;
      }
    }
    return false;
  };
  for (size_t j = 0; j < d.values.size(); ++j) {
    const auto& o = d.values[j];
    int32_t vj = static_cast<int32_t>(j);
    if (vj == vi || o.kind != ValueKind::Tensor || !is_planned(*o.tensor) || written.count(vj) ||
        aliased.count(vj) || o.tensor->memory_id != t.memory_id ||
        o.tensor->memory_offset < t.memory_offset ||
        o.tensor->memory_offset + o.tensor->nbytes > t.memory_offset + t.nbytes) {
      continue;
    }
    if (std::count(d.inputs.begin(), d.inputs.end(), vj)) continue;
    // Read before `vi` is written: a view of an earlier tenant of the bytes.
    bool earlier = false;
    for (int64_t k = 0; k <= written_at && !earlier; ++k) earlier = touches(*order[k], vj, false);
    if (earlier) continue;
    bool clobbered = false, read = false;
    for (size_t k = static_cast<size_t>(written_at + 1); k < order.size(); ++k) {
      if (touches(*order[k], vj, false)) {  // first read: still ours
        read = true;
        break;
      }
      const auto& instr = *order[k];
      if (instr.kind != InstructionKind::KernelCall || instr.args.empty()) continue;
      const int32_t ret = instr.args.back();
      const auto& rv = d.values[ret];
      auto over = [&](int64_t w) {
        const auto& wv = d.values[w];
        return w != vi && wv.kind == ValueKind::Tensor && is_planned(*wv.tensor) &&
               overlaps(*wv.tensor, *o.tensor);
      };
      clobbered = over(ret);
      if (rv.kind == ValueKind::TensorList) {
        clobbered = clobbered || std::any_of(rv.items.begin(), rv.items.end(), over);
      }
      if (clobbered) break;
    }
    const bool output = std::count(d.outputs.begin(), d.outputs.end(), vj) > 0;
    if (!clobbered && (read || output)) {
      out.emplace_back(&m.tensors_[tensor_of_value[j]], o.tensor->memory_offset - t.memory_offset);
    }
  }
  return out;
}

// The position of the last instruction (in chain order) returning `vi`.
int64_t Method::Loader::last_writer(int32_t vi) const {
  int64_t pos = 0, found = -1;
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      if ((instr.kind == InstructionKind::KernelCall ||
           instr.kind == InstructionKind::DelegateCall) &&
          !instr.args.empty() && instr.args.back() == vi) {
        found = pos;
      }
      ++pos;
    }
  }
  return found;
}

// Values load-time passes must leave alone: inputs, outputs, state and
// values re-pointed at run time.
Method::Loader::ChainLayout Method::Loader::chain_layout() const {
  ChainLayout layout{std::vector<std::vector<bool>>(m.chains_.size()),
                     std::vector<int64_t>(m.chains_.size(), 0)};
  int64_t position = 0;
  for (size_t c = 0; c < m.chains_.size(); ++c) {
    layout.start[c] = position;
    position += static_cast<int64_t>(m.chains_[c].size());
    for (const Step& s : m.chains_[c]) {
      layout.idle[c].push_back(s.kind == InstructionKind::FreeCall);
    }
  }
  return layout;
}

std::vector<bool> Method::Loader::kept_values() const {
  std::vector<bool> keep(d.values.size(), false);
  for (int32_t v : d.inputs) keep[v] = true;
  for (int32_t v : d.outputs) keep[v] = true;
  for (int32_t v : aliased) keep[v] = true;
  for (int32_t v : pinned) keep[v] = true;
  for (size_t i = 0; i < d.values.size(); ++i) {
    const auto& v = d.values[i];
    keep[i] = keep[i] || (v.kind == ValueKind::Tensor && is_state(*v.tensor));
  }
  return keep;
}

void Method::Loader::choose_layouts() {
  static constexpr uint8_t kChannelsLast[] = {0, 2, 3, 1};
  for (int32_t v : find_channels_last_values(d, kept_values())) {
    Tensor& t = m.tensors_[tensor_of_value[v]];
    void* const data = t.data();
    const size_t capacity = t.capacity();
    t = Tensor(t.dtype(), t.sizes(), kChannelsLast, t.dynamism());
    t.set_data(data, capacity);
  }
}

// Constant folding (constant_fold.h): each instruction runs once here into
// memory of its own and leaves the step list. One whose kernel fails
// stays (the error then comes from the call, as before). On a GPU the
// folded kernels run on the method's stream, waited for once at the end.
void Method::Loader::fold_constants() {
  const bool gpu = m.options_.device == Device::CUDA;
  if (gpu) backend::activate(m.context_);
  bool folded = false;
  for (auto [c, k] : find_constant_instructions(d, kept_values(), m.options_.device)) {
    Step& step = m.chains_[c][k];
    if (step.kind != InstructionKind::KernelCall) continue;  // fused away (fuse_quantized)
    const int32_t ret = d.chains[c].instructions[k].args.back();
    Tensor& t = m.tensors_[tensor_of_value[ret]];
    auto views = followers(ret, last_writer(ret));
    void* const planned = t.data();
    const size_t planned_capacity = t.capacity();
    const size_t bytes = std::max(t.bound_nbytes(), t.nbytes());
    backend::Allocation own = m.allocate(bytes);
    auto point_at = [&](uint8_t* base, size_t capacity) {
      t.set_data(base, capacity);
      for (auto [view, offset] : views) view->set_data(base + offset, view->nbytes());
    };
    point_at(own.data(), bytes);
    try {
      step.fn(m.context_,
              std::span<Value* const>(m.arg_pool_.data() + step.args_begin, step.args_count));
    } catch (const Error&) {
      point_at(static_cast<uint8_t*>(planned), planned_capacity);
      continue;
    }
    m.owned_.push_back(std::move(own));
    step.kind = InstructionKind::FreeCall;  // a no-op from now on
    step.fn = nullptr;
    folded = true;
  }
  if (gpu && folded) m.wait();
}

void Method::Loader::fuse_safe_softmax() {
  const ChainLayout layout = chain_layout();
  apply_pattern_fusions(find_safe_softmax_fusions(d, kept_values(), layout.idle), layout);
}

// Rotate-half rotary embeddings (rewrite.h, find_rotary_fusions) run as one
// kernel where every step involved still runs its own operator and out
// overlaps none of x, cos and sin (each out element reads x half a row
// away, so not even element for element).
void Method::Loader::fuse_rotary() {
  const ChainLayout layout = chain_layout();
  std::vector<PatternFusion> found = find_rotary_fusions(d, kept_values(), layout.idle);
  std::erase_if(found, [&](const PatternFusion& f) {
    if (!runs_own_operators(f)) return true;
    const TensorDesc& out = *d.values[f.out].tensor;
    for (size_t i = 0; i < 3; ++i) {
      const TensorDesc& t = *d.values[f.replacement.args[i]].tensor;
      if (is_planned(t) && is_planned(out) && overlaps(t, out)) return true;
    }
    return false;
  });
  apply_pattern_fusions(found, layout);
}

// RMS norms (rewrite.h, find_rms_norm_fusions) run as one kernel where
// every step involved still runs its own operator, out overlaps neither eps
// nor the weight, and overlaps the input only element for element with
// elements of one size. Compared where the tensors lie now: constant
// folding gave a half-precision eps memory of its own, over bytes the plan
// gave to others.
void Method::Loader::fuse_rms_norm() {
  const ChainLayout layout = chain_layout();
  std::vector<PatternFusion> found = find_rms_norm_fusions(d, kept_values(), layout.idle);
  std::erase_if(found, [&](const PatternFusion& f) {
    if (!runs_own_operators(f)) return true;
    auto tensor = [&](int32_t v) -> const Tensor& { return m.tensors_[tensor_of_value[v]]; };
    const Tensor& out = tensor(f.out);
    const Tensor& in = tensor(f.input);
    if (share_bytes(in, out) &&
        (in.data() != out.data() || in.element_size() != out.element_size())) {
      return true;
    }
    for (size_t i : {size_t{1}, size_t{2}}) {
      const int32_t v = f.replacement.args[i];
      if (d.values[v].kind == ValueKind::Tensor && share_bytes(tensor(v), out)) return true;
    }
    return false;
  });
  apply_pattern_fusions(found, layout);
}

bool Method::Loader::runs_own_operator(size_t c, size_t k) const {
  const Step& s = m.chains_[c][k];
  const format::InstructionDesc& instr = d.chains[c].instructions[k];
  return s.kind == InstructionKind::KernelCall && instr.kind == InstructionKind::KernelCall &&
         s.fn == kernels::KernelRegistry::global().find(d.operators[instr.index].full_name(),
                                                        m.options_.device);
}

bool Method::Loader::runs_own_operators(const PatternFusion& f) const {
  return runs_own_operator(f.chain, f.replacement.index) &&
         std::all_of(f.idle.begin(), f.idle.end(),
                     [&](size_t k) { return runs_own_operator(f.chain, k); });
}

void Method::Loader::fuse_quant_io() {
  const ChainLayout layout = chain_layout();
  // Only where every step involved still runs its own operator: a quantize
  // that integer compute (fuse_quantized) made the root of a chain runs
  // another kernel, and the value it would read is no longer written.
  std::vector<PatternFusion> found = find_quant_io_fusions(d, kept_values(), layout.idle);
  std::erase_if(found, [&](const PatternFusion& f) { return !runs_own_operators(f); });
  apply_pattern_fusions(found, layout);
}

// Elementwise fusion (rewrite.h, find_elementwise_fusions): each tree runs
// as one fused elementwise program where the device has the kernel, no
// view reads a value it drops, and PTERUN_FUSE_ELEMENTWISE is not 0.
void Method::Loader::fuse_elementwise() {
  const auto& registry = kernels::KernelRegistry::global();
  const Device device = m.options_.device;
  const kernels::KernelInfo* info = registry.info(kernels::kFusedElementwiseKernel, device);
  const char* env = std::getenv("PTERUN_FUSE_ELEMENTWISE");
  if (info == nullptr || (env != nullptr && std::strcmp(env, "0") == 0)) return;
  const ChainLayout layout = chain_layout();
  // Steps that still run their own operator.
  std::vector<std::vector<bool>> original(m.chains_.size());
  for (size_t c = 0; c < m.chains_.size(); ++c) {
    for (size_t k = 0; k < m.chains_[c].size(); ++k) original[c].push_back(runs_own_operator(c, k));
  }
  // A value a view reads stays materialised: such values are kept and the
  // trees found again, until none drops one.
  std::vector<bool> keep = kept_values();
  std::vector<ElementwiseFusion> found;
  for (bool again = true; again;) {
    found = find_elementwise_fusions(d, keep, original, layout.idle, device == Device::CUDA);
    again = false;
    for (const ElementwiseFusion& f : found) {
      for (const auto& dropped : f.dropped) {
        if (keep[dropped.first] || !any_viewed({dropped}, layout.start[f.chain])) continue;
        keep[dropped.first] = true;
        again = true;
      }
    }
  }
  // Inputs read after their planned lifetime move to memory of their own,
  // before the views below are made of their bytes. An input held in the
  // bytes of the value that moves must move with it (one of its
  // followers); a tree whose input would stay behind is not applied.
  std::erase_if(found, [&](const ElementwiseFusion& f) {
    for (auto [value, input] : f.own_memory) {
      if (value == input) continue;
      const Tensor* held = &m.tensors_[tensor_of_value[input]];
      const auto views = followers(value, last_writer(value));
      if (std::none_of(views.begin(), views.end(),
                       [&](const auto& v) { return v.first == held; })) {
        return true;
      }
    }
    return false;
  });
  // Memory of their own stays within a quarter of the method's planned
  // memory (at least 4 MiB): past that, trees that need more are not
  // applied.
  uint64_t planned = 0;
  for (uint64_t bytes : d.buffer_sizes) planned += bytes;
  const uint64_t budget = std::max<uint64_t>(planned / 4, uint64_t{4} << 20);
  uint64_t spent = 0;
  std::set<int32_t> moved;
  std::erase_if(found, [&](const ElementwiseFusion& f) {
    uint64_t more = 0;
    for (auto [value, input] : f.own_memory) {
      if (!moved.count(value)) more += d.values[value].tensor->nbytes;
    }
    if (spent + more > budget) return true;
    spent += more;
    for (auto [value, input] : f.own_memory) moved.insert(value);
    return false;
  });
  for (int32_t v : moved) give_own_memory(v);
  for (const ElementwiseFusion& f : found) {
    std::vector<Tensor*>& list = m.tensor_lists_.emplace_back();
    for (const ElementwiseFusion::Input& in : f.inputs) {
      Tensor& t = m.tensors_[tensor_of_value[in.value]];
      if (!in.view) {
        list.push_back(&t);
        continue;
      }
      // The value's bytes seen through a view: they never move (the finder
      // views no value the method keeps).
      Tensor& view =
          m.extra_tensors_.emplace_back(t.dtype(), in.sizes, in.dim_order, ShapeDynamism::Static);
      view.set_data(t.data(), t.capacity());
      list.push_back(&view);
    }
    Value& inputs = m.extra_values_.emplace_back(Value::from_tensor_list(list, false));
    const std::vector<double>& program = m.fused_programs_.emplace_back(f.program);
    Value& steps = m.extra_values_.emplace_back(Value::from_double_list(program));
    Step& root = m.chains_[f.chain][f.root];
    root.fn = info->fn;
    root.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
    root.args_count = 4;  // inputs, program, out, and the returned out
    for (Value* v : {&inputs, &steps, &m.values_[f.out], &m.values_[f.out]})
      m.arg_pool_.push_back(v);
    for (size_t k : f.idle) {
      m.chains_[f.chain][k].kind = InstructionKind::FreeCall;  // a no-op from now on
      m.chains_[f.chain][k].fn = nullptr;
    }
  }
}

// Points step `s` at kernel `fn` with the values `args` (a new run of the
// argument pool).
void Method::Loader::replace_step(Step& s, kernels::KernelFn fn, const std::vector<int32_t>& args) {
  s.kind = InstructionKind::KernelCall;
  s.fn = fn;
  s.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
  s.args_count = static_cast<uint32_t>(args.size());
  for (int32_t v : args) m.arg_pool_.push_back(&m.values_[v]);
}

// The plain -kv export's whole-cache write-back made a write in place
// (rewrite.h, find_in_place_cache_writes): the index_put result takes the
// cache's memory, so the cache is updated where it lies and the copy_ has
// nothing left to do.
void Method::Loader::write_caches_in_place() {
  const kernels::KernelInfo* info =
      kernels::KernelRegistry::global().info("aten::index_put_", m.options_.device);
  if (info == nullptr) return;
  for (const InPlaceCacheWrite& w : find_in_place_cache_writes(d, kept_values())) {
    Step& put = m.chains_[w.index_put.chain][w.index_put.index];
    Step& copy = m.chains_[w.copy_chain][w.copy_index];
    if (put.kind != InstructionKind::KernelCall || copy.kind != InstructionKind::KernelCall) {
      continue;
    }
    const Tensor& cache = m.tensors_[tensor_of_value[w.cache]];
    Tensor& result = m.tensors_[tensor_of_value[w.result]];
    auto* base = static_cast<uint8_t*>(cache.data());
    for (auto [view, offset] : followers(w.result, last_writer(w.result))) {
      view->set_data(base + offset, view->nbytes());
    }
    result.set_data(base, cache.capacity());
    replace_step(put, info->fn, w.index_put.args);
    copy.kind = InstructionKind::FreeCall;  // a no-op from now on
    copy.fn = nullptr;
  }
}

// Positions on the device (rewrite.h, find_position_rewrites): the kernels
// that place tokens read start_pos from the tensor it came from, so a step
// never waits for the device to learn it. All or nothing: every kernel must
// exist on this device. Each position tensor gets memory of its own, since
// its readers now come after its lifetime in the memory plan.
void Method::Loader::read_positions_on_device() {
  const auto& registry = kernels::KernelRegistry::global();
  PositionRewrites r = find_position_rewrites(d, kept_values());
  for (const KernelReplacement& rep : r.replace) {
    if (registry.info(rep.kernel, m.options_.device) == nullptr) return;
    if (m.chains_[rep.chain][rep.index].kind != InstructionKind::KernelCall) return;
  }
  for (int32_t t : r.positions) {
    if (!is_planned(*d.values[t].tensor)) continue;
    Tensor& tensor = m.tensors_[tensor_of_value[t]];
    auto views = followers(t, last_writer(t));
    const size_t bytes = std::max(tensor.bound_nbytes(), tensor.nbytes());
    backend::Allocation own = m.allocate(bytes);
    tensor.set_data(own.data(), bytes);
    for (auto [view, offset] : views) view->set_data(own.data() + offset, view->nbytes());
    m.owned_.push_back(std::move(own));
  }
  for (const KernelReplacement& rep : r.replace) {
    replace_step(m.chains_[rep.chain][rep.index], registry.info(rep.kernel, m.options_.device)->fn,
                 rep.args);
  }
  for (auto [c, k] : r.idle) {
    m.chains_[c][k].kind = InstructionKind::FreeCall;  // a no-op from now on
    m.chains_[c][k].fn = nullptr;
  }
}

// Load-time kernel rewrites (rewrite.h), where the device has the kernel.
void Method::Loader::apply_rewrites() {
  const std::vector<bool> keep = kept_values();
  const auto& registry = kernels::KernelRegistry::global();
  for (const KernelRewrite& r : find_kernel_rewrites(d, keep)) {
    const kernels::KernelInfo* info = registry.info(r.kernel, m.options_.device);
    Step& step = m.chains_[r.chain][r.index];
    if (info != nullptr && step.kind == InstructionKind::KernelCall) step.fn = info->fn;
  }
}

}  // namespace pterun
