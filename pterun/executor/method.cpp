// Method loading: values, planned memory, constants, and the flat step
// list with every kernel resolved once; the passes that then rewrite the
// steps are in method_passes.cpp.

#include "pterun/executor/method.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <set>

#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/executor/method_loader.h"
#include "pterun/executor/quant_check.h"
#include "pterun/kernels/registry.h"
#include "pterun/program/support.h"

namespace pterun {

using namespace loader_detail;  // NOLINT: the loader's own helpers

namespace {

/// True when the environment variable `name` is "0".
bool switched_off(const char* name) {
  const char* env = std::getenv(name);
  return env != nullptr && std::strcmp(env, "0") == 0;
}

// PTERUN_INTEGER_QUANTIZED=0 turns integer compute of quantized chains off.
bool integer_quantized_disabled() {
  return switched_off("PTERUN_INTEGER_QUANTIZED");
}

}  // namespace

void Method::Loader::analyse_instructions() {
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

void Method::Loader::check_support() {
  auto device = m.options_.device;
  SupportReport report = pterun::check_support(*m.program_, d.name, device);
  if (!report.ok()) throw_error(ErrorCode::NotImplemented, report.describe(d.name, device));
  check_quant_params(d);
  std::vector<std::string> missing = m.program_->missing_external_keys(d.name);
  if (!missing.empty()) {
    std::string keys;
    for (const auto& k : missing) keys += (keys.empty() ? "'" : ", '") + printable(k) + "'";
    throw_error(ErrorCode::InvalidArgument,
                str_cat("method '", printable(d.name), "' needs external data (.ptd) for ", keys,
                        ": pass it with data= when loading the program"));
  }
}

void Method::Loader::allocate_buffers() {
  bool uses_shared = false;
  m.buffers_.resize(d.buffer_sizes.size());
  for (size_t i = 0; i < d.buffer_sizes.size(); ++i) {
    if (i >= 1) {  // memory id 2 and above: shared state (docs/python-api.md, B15a)
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
void Method::Loader::fill(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (m.options_.device == Device::CUDA) {
    backend::upload(m.options_.device_index, dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

// Constant bytes as the method's kernels read them: in place on the CPU,
// the program's shared upload on a GPU.
void* Method::Loader::constant_address(const uint8_t* host, size_t bytes) {
  if (m.options_.device == Device::CPU) {
    // Valid files align every constant (segments and inline buffers to 16
    // bytes or more); a damaged offset can leave one misaligned, which
    // kernels must not read in place: such bytes get an aligned copy.
    if (reinterpret_cast<uintptr_t>(host) % kConstantAlignment == 0 || bytes == 0) {
      return const_cast<uint8_t*>(host);
    }
    m.owned_.push_back(m.allocate(bytes));
    std::memcpy(m.owned_.back().data(), host, bytes);
    return m.owned_.back().data();
  }
  if (!m.constants_) m.constants_ = m.program_->device_constants(m.options_.device_index);
  return m.constants_->get(host, bytes);
}

uint8_t* Method::Loader::planned_address(const TensorDesc& t, bool& fresh_shared) {
  fresh_shared = false;
  size_t index = t.memory_id - 1;
  if (index == 0) return m.buffers_[0].data() + t.memory_offset;
  std::lock_guard lock(m.shared_state_->mutex());
  uint8_t* base = m.shared_state_->buffer(t.memory_id, d.buffer_sizes[index], fresh_shared);
  return base + t.memory_offset;
}

void Method::Loader::build_tensors() {
  tensor_of_value.assign(d.values.size(), -1);
  size_t count = 0;
  for (const auto& v : d.values) count += v.kind == ValueKind::Tensor;
  m.tensors_.reserve(count);
  const format::ExternalData* ext = m.program_->external_data();
  // This method's constants' id (Tensor::constant_id): one per load.
  static std::atomic<uint64_t> last_constant_id{0};
  const uint64_t constant_id = ++last_constant_id;
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
        tensor.set_constant_id(constant_id);
        break;
      case TensorStorage::External: {
        const auto* e = ext->find(t.name);  // presence checked in check_support()
        check_external_layout(t, *e, what);
        tensor.set_data(constant_address(e->data.data(), e->data.size()), e->data.size());
        tensor.set_constant_id(constant_id);
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

void Method::Loader::check_external_layout(const TensorDesc& t, const format::ExternalEntry& e,
                                           const std::string& what) {
  PTERUN_CHECK(e.layout.has_value(), ErrorCode::InvalidExternalData, what, ": external key '",
               printable(t.name), "' has no tensor layout in the data file");
  const auto& l = *e.layout;
  PTERUN_CHECK(l.dtype == t.dtype && l.sizes == t.sizes && l.dim_order == t.dim_order,
               ErrorCode::InvalidExternalData, what, ": external key '", printable(t.name),
               "' has layout ", dtype_name(l.dtype), " with ", l.sizes.size(),
               " dims in the data file, which does not match the program's ", dtype_name(t.dtype),
               " with ", t.sizes.size(), " dims");
  PTERUN_CHECK(e.data.size() >= t.nbytes, ErrorCode::InvalidExternalData, what, ": external key '",
               printable(t.name), "' has too few bytes");
}

// Unplanned tensors that kernels write (outputs exported unplanned, for
// instance) get memory of their own; views and inputs do not.
void Method::Loader::allocate_unplanned_outputs(std::vector<backend::Allocation>& extra) {
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
void Method::Loader::check_data_sources() {
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

void Method::Loader::build_values() {
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

void Method::Loader::build_steps() {
  const auto& registry = kernels::KernelRegistry::global();
  std::vector<ValueKind> kinds;
  for (const auto& chain : d.chains) {
    auto& steps = m.chains_.emplace_back();
    steps.reserve(chain.instructions.size());
    for (const auto& instr : chain.instructions) {
      Step s;
      s.kind = instr.kind;
      s.index = instr.index;
      s.target = instr.target;
      if (instr.kind == InstructionKind::KernelCall) {
        const std::string name = d.operators[instr.index].full_name();
        const kernels::KernelInfo* info = registry.info(name, m.options_.device);
        PTERUN_CHECK(info != nullptr, ErrorCode::Internal, "method '", printable(d.name),
                     "': ", printable(name), " passed the support check but has no kernel");
        // A kernel reads its leading arguments without looking at how many
        // there are: the instruction must pass them, of the kinds it reads.
        kinds.clear();
        for (int32_t a : instr.args) kinds.push_back(d.values[a].kind);
        kernels::check_call(*info, printable(name), kinds,
                            str_cat("method '", printable(d.name), "': "));
        s.fn = info->fn;
        s.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
        s.args_count = static_cast<uint32_t>(instr.args.size());
        for (int32_t a : instr.args) m.arg_pool_.push_back(&m.values_[a]);
      }
      steps.push_back(s);
    }
  }
}

// Inputs: planned inputs whose region other tensors reuse get a private
// home, so a second execute() reads the same inputs (B11).
void Method::Loader::plan_inputs() {
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
      if (static_cast<int32_t>(j) == vi || o.kind != ValueKind::Tensor || !is_planned(*o.tensor)) {
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
        m.options_.device == Device::CUDA && !written.count(vi) && !aliased.count(vi);
  }
}

void Method::Loader::plan_outputs() {
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

std::unique_ptr<Method> Method::load(std::shared_ptr<const Program> program,
                                     const std::string& name, const MethodOptions& options) {
  // A missing GPU is reported before missing kernels (B25: it says why).
  if (options.device == Device::CUDA) backend::require_cuda_device(options.device_index);
  std::unique_ptr<Method> m(new Method());
  m->program_ = std::move(program);
  // The method as it runs (delegate calls expanded); its metadata is the
  // file's.
  m->desc_ = &m->program_->runnable_method(name);
  m->meta_.emplace(m->program_, m->program_->method(name));
  m->options_ = options;
  if (options.device == Device::CPU) m->options_.device_index = 0;
  m->context_.device = options.device;
  m->context_.device_index = m->options_.device_index;
  m->context_.allow_tf32 = options.allow_tf32;
  Loader loader{*m, *m->desc_, {}, {}, {}, {}, {}};
  loader.analyse_instructions();
  loader.check_support();
  try {
    if (options.device == Device::CUDA) {
      m->context_.backend = backend::make_cuda_method_state(options.device_index);
    }
    loader.allocate_buffers();
    loader.build_tensors();
    loader.check_data_sources();
    loader.allocate_unplanned_outputs(m->owned_);
    loader.build_values();
    loader.build_steps();
    if (options.device == Device::CPU && !switched_off("PTERUN_CHANNELS_LAST")) {
      loader.choose_layouts();
    }
    if (options.integer_quantized && !integer_quantized_disabled()) loader.fuse_quantized();
    loader.write_caches_in_place();
    loader.read_positions_on_device();
    loader.fold_constants();
    loader.fuse_convolutions();
    loader.fuse_hardswish();
    if (!switched_off("PTERUN_FUSE_ROTARY")) loader.fuse_rotary();
    if (!switched_off("PTERUN_FUSE_RMS_NORM")) loader.fuse_rms_norm();
    if (!switched_off("PTERUN_FUSE_ATTENTION")) loader.fuse_attention();
    if (!switched_off("PTERUN_FUSE_GEMM_ADD")) loader.fuse_gemm_add();
    loader.fuse_safe_softmax();
    if (!switched_off("PTERUN_FUSE_QUANT_IO")) loader.fuse_quant_io();
    loader.fuse_elementwise();
    loader.apply_rewrites();
    loader.skip_fused_copies();
    loader.plan_inputs();
    loader.plan_outputs();
    loader.follow_views();
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

size_t Method::steps_calling(kernels::KernelFn fn) const {
  size_t n = 0;
  for (const auto& chain : chains_) {
    for (const Step& s : chain) n += s.kind == InstructionKind::KernelCall && s.fn == fn;
  }
  return n;
}

std::string Method::device_string() const {
  if (options_.device == Device::CPU) return "cpu";
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
