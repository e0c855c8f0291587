// Method loading: values, planned memory, constants, and the flat step
// list with every kernel resolved once (pte-format.md sections 3-5).

#include "pterun/executor/method.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/executor/constant_fold.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/registry.h"
#include "pterun/program/support.h"

namespace pterun {

namespace {

using format::InstructionKind;
using format::TensorDesc;
using format::TensorStorage;

bool is_state(const TensorDesc& t) {
  return t.storage == TensorStorage::PlannedWithData ||
         t.storage == TensorStorage::ExternalMutable ||
         (t.storage == TensorStorage::Planned && (t.memory_id >= 2 || !t.name.empty()));
}

bool is_planned(const TensorDesc& t) {
  return t.storage == TensorStorage::Planned || t.storage == TensorStorage::PlannedWithData ||
         t.storage == TensorStorage::ExternalMutable;
}

bool overlaps(const TensorDesc& a, const TensorDesc& b) {
  return a.memory_id == b.memory_id && a.memory_offset < b.memory_offset + b.nbytes &&
         b.memory_offset < a.memory_offset + a.nbytes && a.nbytes > 0 && b.nbytes > 0;
}

}  // namespace

struct Method::Loader {
  Method& m;
  const format::MethodDesc& d;
  std::vector<int> tensor_of_value;  // value index -> index in m.tensors_, or -1
  std::set<int32_t> written;         // tensor values a kernel writes (its return entry)
  std::set<int32_t> aliased;         // values whose data a kernel re-points (et_view) or moves

  void analyse_instructions() {
    for (const auto& chain : d.chains) {
      for (const auto& instr : chain.instructions) {
        if (instr.kind == InstructionKind::MoveCall) {
          aliased.insert(instr.target);
          continue;
        }
        if (instr.kind != InstructionKind::KernelCall &&
            instr.kind != InstructionKind::DelegateCall) {
          continue;
        }
        if (instr.args.empty()) continue;
        int32_t ret = instr.args.back();
        const auto& v = d.values[ret];
        if (v.kind == ValueKind::Tensor) written.insert(ret);
        if (v.kind == ValueKind::TensorList) {
          for (int64_t item : v.items) written.insert(static_cast<int32_t>(item));
        }
        if (instr.kind == InstructionKind::KernelCall &&
            d.operators[instr.index].full_name() == "executorch_prim::et_view.default") {
          aliased.insert(ret);
        }
      }
    }
  }

  void check_support() {
    auto device = m.options_.device;
    SupportReport report = pterun::check_support(d, device);
    if (!report.ok()) throw_error(ErrorCode::NotImplemented, report.describe(d.name, device));
    std::vector<std::string> missing = m.program_->missing_external_keys(d.name);
    if (!missing.empty()) {
      std::string keys;
      for (const auto& k : missing) keys += (keys.empty() ? "'" : ", '") + printable(k) + "'";
      throw_error(ErrorCode::InvalidArgument,
                  str_cat("method '", printable(d.name), "' needs external data (.ptd) for ", keys,
                          ": pass it with data= when loading the program"));
    }
  }

  void allocate_buffers() {
    bool uses_shared = false;
    m.buffers_.resize(d.buffer_sizes.size());
    for (size_t i = 0; i < d.buffer_sizes.size(); ++i) {
      if (i >= 1) {  // memory id 2 and above: shared state (B15a)
        uses_shared = uses_shared || d.buffer_sizes[i] > 0;
        continue;
      }
      m.buffers_[i] = m.allocate(d.buffer_sizes[i]);
    }
    if (uses_shared) {
      m.shared_state_ =
          m.program_->shared_state(static_cast<int>(m.options_.device), m.options_.device_index);
    }
  }

  // `bytes` from the host at `dst` in the method's memory (load time).
  void fill(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    if (m.options_.device == kernels::Device::CUDA) {
      backend::upload(m.options_.device_index, dst, src, bytes);
    } else {
      std::memcpy(dst, src, bytes);
    }
  }

  // Constant bytes as the method's kernels read them: in place on the CPU,
  // the program's shared upload on a GPU.
  void* constant_address(const uint8_t* host, size_t bytes) {
    if (m.options_.device == kernels::Device::CPU) return const_cast<uint8_t*>(host);
    if (!m.constants_) m.constants_ = m.program_->device_constants(m.options_.device_index);
    return m.constants_->get(host, bytes);
  }

  uint8_t* planned_address(const TensorDesc& t, bool& fresh_shared) {
    fresh_shared = false;
    size_t index = t.memory_id - 1;
    if (index == 0) return m.buffers_[0].data() + t.memory_offset;
    std::lock_guard lock(m.shared_state_->mutex());
    uint8_t* base = m.shared_state_->buffer(t.memory_id, d.buffer_sizes[index], fresh_shared);
    return base + t.memory_offset;
  }

  void build_tensors() {
    tensor_of_value.assign(d.values.size(), -1);
    size_t count = 0;
    for (const auto& v : d.values) count += v.kind == ValueKind::Tensor;
    m.tensors_.reserve(count);
    const format::ExternalData* ext = m.program_->external_data();
    for (size_t i = 0; i < d.values.size(); ++i) {
      const auto& v = d.values[i];
      if (v.kind != ValueKind::Tensor) continue;
      const TensorDesc& t = *v.tensor;
      std::string what = str_cat("method '", printable(d.name), "', value ", i);
      PTERUN_CHECK(t.dynamism != ShapeDynamism::DynamicUnbound, ErrorCode::NotImplemented, what,
                   ": tensors with unbounded dynamic shapes are not supported");
      tensor_of_value[i] = static_cast<int>(m.tensors_.size());
      Tensor& tensor = m.tensors_.emplace_back(t.dtype, t.sizes, t.dim_order, t.dynamism);
      switch (t.storage) {
        case TensorStorage::Constant:
          tensor.set_data(constant_address(t.data.data(), t.data.size()), t.data.size());
          break;
        case TensorStorage::External: {
          const auto* e = ext->find(t.name);  // presence checked in check_support()
          check_external_layout(t, *e, what);
          tensor.set_data(constant_address(e->data.data(), e->data.size()), e->data.size());
          break;
        }
        case TensorStorage::Planned:
        case TensorStorage::PlannedWithData:
        case TensorStorage::ExternalMutable: {
          bool fresh_shared = false;
          uint8_t* p = planned_address(t, fresh_shared);
          tensor.set_data(p, t.nbytes);
          bool owned = t.memory_id == 1;
          if (t.storage == TensorStorage::PlannedWithData && (owned || fresh_shared)) {
            fill(p, t.data.data(), t.data.size());
          } else if (t.storage == TensorStorage::ExternalMutable && (owned || fresh_shared)) {
            const auto* e = ext->find(t.name);
            check_external_layout(t, *e, what);
            fill(p, e->data.data(), t.nbytes);
          }
          break;
        }
        case TensorStorage::Unplanned: break;
      }
      m.has_state_ = m.has_state_ || is_state(t);
    }
  }

  static void check_external_layout(const TensorDesc& t, const format::ExternalEntry& e,
                                    const std::string& what) {
    PTERUN_CHECK(e.layout.has_value(), ErrorCode::InvalidExternalData, what, ": external key '",
                 printable(t.name), "' has no tensor layout in the data file");
    const auto& l = *e.layout;
    PTERUN_CHECK(l.dtype == t.dtype && l.sizes == t.sizes && l.dim_order == t.dim_order,
                 ErrorCode::InvalidExternalData, what, ": external key '", printable(t.name),
                 "' has layout ", dtype_name(l.dtype), " with ", l.sizes.size(),
                 " dims in the data file, which does not match the program's ", dtype_name(t.dtype),
                 " with ", t.sizes.size(), " dims");
    PTERUN_CHECK(e.data.size() >= t.nbytes, ErrorCode::InvalidExternalData, what,
                 ": external key '", printable(t.name), "' has too few bytes");
  }

  // Unplanned tensors that kernels write (outputs exported unplanned, for
  // instance) get memory of their own; views and inputs do not.
  void allocate_unplanned_outputs(std::vector<backend::Allocation>& extra) {
    std::set<int32_t> inputs(d.inputs.begin(), d.inputs.end());
    for (int32_t vi : written) {
      int ti = tensor_of_value[vi];
      if (ti < 0 || aliased.count(vi) || inputs.count(vi)) continue;
      if (d.values[vi].tensor->storage != TensorStorage::Unplanned) continue;
      Tensor& t = m.tensors_[ti];
      extra.push_back(m.allocate(t.bound_nbytes()));
      t.set_data(extra.back().data(), t.bound_nbytes());
    }
  }

  // A tensor that is read but has no data from anywhere (not planned, not a
  // constant, not an input, not written by a kernel) would be read through
  // a null pointer: refuse the program instead (B22).
  void check_data_sources() {
    std::set<int32_t> inputs(d.inputs.begin(), d.inputs.end());
    for (size_t i = 0; i < d.values.size(); ++i) {
      const auto& v = d.values[i];
      if (v.kind != ValueKind::Tensor) continue;
      const TensorDesc& t = *v.tensor;
      int32_t vi = static_cast<int32_t>(i);
      if (t.storage != TensorStorage::Unplanned || t.numel == 0 || inputs.count(vi) ||
          written.count(vi) || aliased.count(vi)) {
        continue;
      }
      throw_error(ErrorCode::InvalidProgram,
                  str_cat("method '", printable(d.name), "', value ", i, ": tensor ",
                          describe(m.tensors_[tensor_of_value[i]]),
                          " has no data (not planned, constant, input "
                          "or written by an instruction)"));
    }
  }

  void build_values() {
    m.values_.resize(d.values.size());
    size_t lists = 0;
    for (const auto& v : d.values) {
      lists += v.kind == ValueKind::IntList || v.kind == ValueKind::TensorList ||
               v.kind == ValueKind::OptionalTensorList;
    }
    m.boxed_lists_.reserve(lists);
    m.tensor_lists_.reserve(lists);
    for (size_t i = 0; i < d.values.size(); ++i) {
      const auto& v = d.values[i];
      Value& out = m.values_[i];
      switch (v.kind) {
        case ValueKind::None: out = Value::none(); break;
        case ValueKind::Int: out = Value::from_int(v.int_value); break;
        case ValueKind::Bool: out = Value::from_bool(v.bool_value); break;
        case ValueKind::Double: out = Value::from_double(v.double_value); break;
        case ValueKind::String: out = Value::from_string(v.string_value); break;
        case ValueKind::Tensor: out = Value::from_tensor(&m.tensors_[tensor_of_value[i]]); break;
        case ValueKind::IntList: {
          auto& boxes = m.boxed_lists_.emplace_back();
          for (int64_t item : v.items) boxes.push_back(&m.values_[item]);
          out = Value::from_int_list(boxes);
          break;
        }
        case ValueKind::DoubleList: out = Value::from_double_list(v.doubles); break;
        case ValueKind::BoolList: out = Value::from_bool_list(v.bools); break;
        case ValueKind::TensorList:
        case ValueKind::OptionalTensorList: {
          auto& list = m.tensor_lists_.emplace_back();
          for (int64_t item : v.items) {
            list.push_back(item < 0 ? nullptr : &m.tensors_[tensor_of_value[item]]);
          }
          out = Value::from_tensor_list(list, v.kind == ValueKind::OptionalTensorList);
          break;
        }
      }
    }
  }

  void build_steps() {
    const auto& registry = kernels::KernelRegistry::global();
    for (const auto& chain : d.chains) {
      auto& steps = m.chains_.emplace_back();
      steps.reserve(chain.instructions.size());
      for (const auto& instr : chain.instructions) {
        Step s;
        s.kind = instr.kind;
        s.index = instr.index;
        s.target = instr.target;
        if (instr.kind == InstructionKind::KernelCall) {
          s.fn = registry.find(d.operators[instr.index].full_name(), m.options_.device);
          s.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
          s.args_count = static_cast<uint32_t>(instr.args.size());
          for (int32_t a : instr.args) m.arg_pool_.push_back(&m.values_[a]);
          m.arg_pool_.insert(m.arg_pool_.end(), kArgPadding, &m.missing_arg_);
        }
        steps.push_back(s);
      }
    }
  }

  // Views the exporter resolved by memory planning alone: a tensor no
  // instruction writes, placed inside another tensor's planned bytes (a
  // view_copy of an input, for one, becomes a second tensor at the input's
  // offset). Such a view belongs to `vi`, written by instruction `written_at`
  // (-1: before the run, as inputs are), when it lies inside `vi` and no
  // other instruction writes over it between then and its first read. It
  // must follow `vi` wherever `vi` is re-pointed. Instructions are taken in
  // chain order.
  std::vector<std::pair<Tensor*, size_t>> followers(int32_t vi, int64_t written_at) {
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
        out.emplace_back(&m.tensors_[tensor_of_value[j]],
                         o.tensor->memory_offset - t.memory_offset);
      }
    }
    return out;
  }

  // The position of the last instruction (in chain order) returning `vi`.
  int64_t last_writer(int32_t vi) const {
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
  std::vector<bool> kept_values() const {
    std::vector<bool> keep(d.values.size(), false);
    for (int32_t v : d.inputs) keep[v] = true;
    for (int32_t v : d.outputs) keep[v] = true;
    for (int32_t v : aliased) keep[v] = true;
    for (size_t i = 0; i < d.values.size(); ++i) {
      const auto& v = d.values[i];
      keep[i] = keep[i] || (v.kind == ValueKind::Tensor && is_state(*v.tensor));
    }
    return keep;
  }

  // Constant folding (constant_fold.h): each instruction runs once here into
  // memory of its own and leaves the step list. One whose kernel fails
  // stays (the error then comes from the call, as before). On a GPU the
  // folded kernels run on the method's stream, waited for once at the end.
  void fold_constants() {
    const bool gpu = m.options_.device == kernels::Device::CUDA;
    if (gpu) backend::activate(m.context_);
    bool folded = false;
    for (auto [c, k] : find_constant_instructions(d, kept_values())) {
      Step& step = m.chains_[c][k];
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

  // Elementwise fusion (rewrite.h): a mul whose product only the next
  // running add (or sub) reads runs inside that add, one pass over memory
  // instead of two, where the device has the fused kernel and memory allows:
  // no view reads the product's bytes later, and out overlaps each operand
  // element for element (static shapes, same place and order) or not at
  // all.
  void fuse_elementwise() {
    const auto& registry = kernels::KernelRegistry::global();
    std::vector<std::vector<bool>> idle(m.chains_.size());
    std::vector<int64_t> chain_start(m.chains_.size(), 0);
    int64_t position = 0;
    for (size_t c = 0; c < m.chains_.size(); ++c) {
      chain_start[c] = position;
      position += static_cast<int64_t>(m.chains_[c].size());
      for (const Step& s : m.chains_[c]) idle[c].push_back(s.kind == InstructionKind::FreeCall);
    }
    for (const KernelFusion& f : find_mul_add_fusions(d, kept_values(), idle)) {
      const kernels::KernelFn fn = registry.find(f.kernel, m.options_.device);
      if (fn == nullptr) continue;
      const int64_t first_at = chain_start[f.chain] + static_cast<int64_t>(f.first);
      if (!followers(f.dropped, first_at).empty()) continue;
      const TensorDesc& out = *d.values[f.args[4]].tensor;
      bool clash = false;
      for (int32_t operand : {f.args[0], f.args[1], f.args[2]}) {
        const TensorDesc& in = *d.values[operand].tensor;
        if (!is_planned(in) || !is_planned(out) || !overlaps(in, out)) continue;
        clash = clash || in.memory_offset != out.memory_offset || in.sizes != out.sizes ||
                in.dim_order != out.dim_order || in.dynamism != ShapeDynamism::Static ||
                out.dynamism != ShapeDynamism::Static;
      }
      if (clash) continue;
      Step& first = m.chains_[f.chain][f.first];
      Step& second = m.chains_[f.chain][f.second];
      second.fn = fn;
      second.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
      second.args_count = static_cast<uint32_t>(f.args.size());
      for (int32_t v : f.args) m.arg_pool_.push_back(&m.values_[v]);
      m.arg_pool_.insert(m.arg_pool_.end(), kArgPadding, &m.missing_arg_);
      first.kind = InstructionKind::FreeCall;  // a no-op from now on
      first.fn = nullptr;
    }
  }

  // Load-time kernel rewrites (rewrite.h), where the device has the kernel.
  void apply_rewrites() {
    const std::vector<bool> keep = kept_values();
    const auto& registry = kernels::KernelRegistry::global();
    for (const KernelRewrite& r : find_kernel_rewrites(d, keep)) {
      const kernels::KernelFn fn = registry.find(r.kernel, m.options_.device);
      Step& step = m.chains_[r.chain][r.index];
      if (fn != nullptr && step.kind == InstructionKind::KernelCall) step.fn = fn;
    }
  }

  // Inputs: planned inputs whose region other tensors reuse get a private
  // home, so a second execute() reads the same inputs (B11).
  void plan_inputs() {
    size_t n = d.inputs.size();
    m.input_set_.assign(n, false);
    m.input_alias_ok_.assign(n, false);
    m.input_recent_.assign(n, {nullptr, nullptr});
    m.input_followers_.resize(n);
    m.input_copies_.resize(n);
    m.input_download_.resize(n);
    m.input_staging_.resize(n);
    m.staging_busy_.assign(n, false);
    m.input_keep_alive_.resize(n);
    m.input_home_.assign(n, nullptr);
    for (size_t i = 0; i < n; ++i) {
      int32_t vi = d.inputs[i];
      const auto& v = d.values[vi];
      if (v.kind != ValueKind::Tensor) {
        m.input_set_[i] = v.kind == ValueKind::None;
        continue;
      }
      const TensorDesc& t = *v.tensor;
      Tensor& tensor = m.tensors_[tensor_of_value[vi]];
      if (t.storage == TensorStorage::Unplanned) {
        m.input_alias_ok_[i] = !written.count(vi) && !aliased.count(vi);
        continue;
      }
      if (!is_planned(t)) continue;
      bool shared = false;
      for (size_t j = 0; j < d.values.size() && !shared; ++j) {
        const auto& o = d.values[j];
        if (static_cast<int32_t>(j) == vi || o.kind != ValueKind::Tensor ||
            !is_planned(*o.tensor)) {
          continue;
        }
        shared = overlaps(t, *o.tensor);
      }
      m.input_followers_[i] = followers(vi, -1);
      if (shared) {
        m.input_copies_[i] = m.allocate(t.nbytes);
        tensor.set_data(m.input_copies_[i].data(), t.nbytes);
        for (auto [view, offset] : m.input_followers_[i]) {
          view->set_data(m.input_copies_[i].data() + offset, view->nbytes());
        }
      }
      m.input_home_[i] = tensor.data();
      m.input_alias_ok_[i] =
          m.options_.device == kernels::Device::CUDA && !written.count(vi) && !aliased.count(vi);
    }
  }

  void plan_outputs() {
    size_t n = d.outputs.size();
    m.redirectable_.assign(n, false);
    m.output_home_.assign(n, nullptr);
    m.output_home_capacity_.assign(n, 0);
    m.output_followers_.resize(n);
    std::set<int32_t> inputs(d.inputs.begin(), d.inputs.end());
    for (size_t i = 0; i < n; ++i) {
      int32_t vi = d.outputs[i];
      const auto& v = d.values[vi];
      if (v.kind != ValueKind::Tensor) continue;
      const TensorDesc& t = *v.tensor;
      bool unique = std::count(d.outputs.begin(), d.outputs.end(), vi) == 1;
      bool ok = unique && written.count(vi) && !aliased.count(vi) && !inputs.count(vi) &&
                !t.is_constant() && !is_state(t);
      m.redirectable_[i] = ok;
      if (ok) m.output_followers_[i] = followers(vi, last_writer(vi));
      Tensor& tensor = m.tensors_[tensor_of_value[vi]];
      m.output_home_[i] = tensor.data();
      m.output_home_capacity_[i] = tensor.capacity();
    }
  }
};

std::unique_ptr<Method> Method::load(std::shared_ptr<const Program> program,
                                     const std::string& name, const MethodOptions& options) {
  // A missing GPU is reported before missing kernels (B25: it says why).
  if (options.device == kernels::Device::CUDA) backend::require_cuda_device(options.device_index);
  std::unique_ptr<Method> m(new Method());
  m->program_ = std::move(program);
  m->desc_ = &m->program_->method(name);
  m->meta_.emplace(m->program_, *m->desc_);
  m->options_ = options;
  if (options.device == kernels::Device::CPU) m->options_.device_index = 0;
  m->context_.device = options.device;
  m->context_.device_index = m->options_.device_index;
  Loader loader{*m, *m->desc_, {}, {}, {}};
  loader.analyse_instructions();
  loader.check_support();
  try {
    if (options.device == kernels::Device::CUDA) {
      m->context_.backend = backend::make_cuda_method_state(options.device_index);
    }
    loader.allocate_buffers();
    loader.build_tensors();
    loader.check_data_sources();
    loader.allocate_unplanned_outputs(m->owned_);
    loader.build_values();
    loader.build_steps();
    loader.fold_constants();
    loader.fuse_elementwise();
    loader.apply_rewrites();
    loader.plan_inputs();
    loader.plan_outputs();
  } catch (const Error& e) {
    // Memory that does not fit: say whose it was (the message has the
    // size and the device). Whatever was allocated goes with `m`.
    if (e.code() != ErrorCode::MemoryAllocationFailed && e.code() != ErrorCode::OutOfResources) {
      throw;
    }
    throw Error(e.code(), str_cat("method '", printable(m->name()), "' on ", m->device_string(),
                                  ": ", e.what()));
  }
  return m;
}

backend::Allocation Method::allocate(size_t bytes) const {
  return backend::Allocation(options_.device, options_.device_index, bytes);
}

std::string Method::device_string() const {
  if (options_.device == kernels::Device::CPU) return "cpu";
  return str_cat("cuda:", options_.device_index);
}

Method::~Method() {
  // Queued work may still use this method's memory: let it finish before
  // the buffers go.
  // The CUDA state's destructor waits for its stream (uncounted) before
  // destroying it.
  context_.backend.reset();
}

}  // namespace pterun
