// The per-call work of a Method: the flat instruction loop and outputs.

#include <algorithm>
#include <cstring>

#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/stats.h"
#include "pterun/core/text.h"
#include "pterun/core/threads.h"
#include "pterun/executor/method.h"

namespace pterun {

namespace {

constexpr uint64_t kInstructionBudget = 10'000'000;

// `context` is the method's: a condition tensor on a GPU is copied down
// first (one wait per jump, B19).
bool condition_true(kernels::KernelContext& context, const Value& v) {
  if (v.kind() == ValueKind::Bool) return v.to_bool();
  const Tensor& t = v.to_tensor();
  PTERUN_CHECK(t.dtype() == DType::Bool, ErrorCode::InvalidProgram, "jump condition is a ",
               describe(t), " tensor, not bool");
  // All elements must be true; an empty tensor counts as true.
  const auto* p = t.data_as<const uint8_t>();
  if (context.device == Device::CUDA && t.numel() > 0 && p != nullptr) {
    // The tensor's bytes from data() on (dense or not, within its capacity).
    int64_t last = 0;
    for (size_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    auto bytes = static_cast<size_t>(last + 1);
    auto* host = static_cast<uint8_t*>(context.scratch(bytes));
    backend::copy_device_to_host(context, host, p, bytes);
    backend::synchronize(context);
    p = host;
  }
  if (t.numel() > 0 && p == nullptr) {
    throw_error(ErrorCode::InvalidState, "jump condition tensor has no data");
  }
  auto sizes = t.sizes();
  auto strides = t.strides();
  int64_t n = t.numel();
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t rem = linear, off = 0;
    for (size_t d = sizes.size(); d-- > 0;) {
      off += (rem % sizes[d]) * strides[d];
      rem /= sizes[d];
    }
    if (!p[off]) return false;
  }
  return true;
}

// The inputs passed the checks of set_inputs() (kinds, dtypes, shapes
// within their bounds), so a kernel that refuses the arguments its
// instruction hands it is refusing the program's own values: a damaged
// program, or one that cannot take these inputs (docs/python-api.md, B22). Running out of
// memory, a missing feature and a device failure keep their codes.
ErrorCode step_error_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::InvalidType:
    case ErrorCode::InvalidState:
    case ErrorCode::IndexOutOfRange: return ErrorCode::InvalidProgram;
    default: return code;
  }
}

}  // namespace

bool Method::inputs_ready() const {
  for (bool set : input_set_) {
    if (!set) return false;
  }
  return true;
}

void Method::fail_step(size_t chain, size_t pc, const Error& e) const {
  const auto& instr = desc_->chains[chain].instructions[pc];
  std::string what = str_cat("method '", printable(name()), "', instruction ", pc);
  if (instr.kind == format::InstructionKind::KernelCall) {
    what += " (" + printable(desc_->operators[instr.index].full_name()) + ")";
  }
  throw Error(step_error_code(e.code()), what + ": " + e.what());
}

std::string Method::missing_inputs() const {
  std::string missing;
  for (size_t i = 0; i < input_set_.size(); ++i) {
    if (!input_set_[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  return missing;
}

void Method::execute_async() {
  if (!inputs_ready()) {
    throw_error(ErrorCode::InvalidState, str_cat("method '", printable(name()), "': inputs ",
                                                 missing_inputs(), " were never set"));
  }
  context_.num_threads = get_num_threads();
  if (options_.device == Device::CUDA) {
    backend::activate(context_);
    if (run_graph()) return;
  }
  run_steps();
}

void Method::run_steps() {
  uint64_t budget = kInstructionBudget;
  int64_t kernel_calls = 0;
  for (size_t c = 0; c < chains_.size(); ++c) {
    const auto& steps = chains_[c];
    size_t pc = 0;
    while (pc < steps.size()) {
      if (--budget == 0) [[unlikely]] {
        throw_error(ErrorCode::InvalidProgram,
                    str_cat("method '", printable(name()), "': more than ", kInstructionBudget,
                            " instructions executed (an endless loop?)"));
      }
      const Step& s = steps[pc];
      try {
        switch (s.kind) {
          case format::InstructionKind::KernelCall:
            s.fn(context_, std::span<Value* const>(arg_pool_.data() + s.args_begin, s.args_count));
            ++kernel_calls;
            ++pc;
            break;
          case format::InstructionKind::JumpFalseCall:
            pc =
                condition_true(context_, values_[s.index]) ? pc + 1 : static_cast<size_t>(s.target);
            break;
          case format::InstructionKind::MoveCall:
            values_[s.target] = values_[s.index];
            ++pc;
            break;
          case format::InstructionKind::FreeCall:
            // Only emitted for unbounded dynamic tensors, which load refuses;
            // memory stays owned by the method, so nothing to release.
            ++pc;
            break;
          case format::InstructionKind::DelegateCall:
            throw_error(ErrorCode::NotImplemented, "delegate calls are not supported");
        }
      } catch (const Error& e) {
        if (options_.device == Device::CUDA) drain();
        fail_step(c, pc, e);
      }
    }
  }
  stats::add(stats::Counter::KernelCalls, kernel_calls);
}

void Method::wait() {
  if (options_.device != Device::CUDA) return;
  try {
    backend::synchronize(context_);
  } catch (const Error& e) {
    // A position or index a kernel checked on the device (the work is done
    // either way): the same error a CPU step gives (step_error_code).
    if (e.code() != ErrorCode::IndexOutOfRange) throw;
    std::fill(staging_busy_.begin(), staging_busy_.end(), false);
    throw Error(step_error_code(e.code()), str_cat("method '", printable(name()), "': ", e.what()));
  }
  std::fill(staging_busy_.begin(), staging_busy_.end(), false);
}

// After a failed step: lets the work queued before it finish, so that the
// next call starts on an idle stream; its own error (if any) is dropped for
// the step's.
void Method::drain() noexcept {
  try {
    wait();
  } catch (...) {
  }
}

void Method::copy_data(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (options_.device == Device::CUDA) {
    backend::copy_device_to_device(context_, dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

const Value& Method::output(size_t i) const {
  PTERUN_CHECK(i < desc_->outputs.size(), ErrorCode::IndexOutOfRange, "method '", printable(name()),
               "': output ", i, " is out of range (", desc_->outputs.size(), " outputs)");
  return values_[desc_->outputs[i]];
}

size_t Method::output_capacity(size_t i) const {
  const Value& v = output(i);
  return v.is_tensor() ? v.to_tensor().bound_nbytes() : 0;
}

void Method::set_output_data(size_t i, void* data, size_t capacity) {
  PTERUN_CHECK(i < redirectable_.size() && redirectable_[i], ErrorCode::InvalidState, "method '",
               printable(name()), "': output ", i, " cannot be redirected");
  Tensor& t = values_[desc_->outputs[i]].to_tensor();
  if (data == nullptr) {
    data = output_home_[i];
    capacity = output_home_capacity_[i];
  } else {
    PTERUN_CHECK(capacity >= t.bound_nbytes(), ErrorCode::InvalidArgument, "method '",
                 printable(name()), "': output ", i, " needs ", t.bound_nbytes(), " bytes, got ",
                 capacity);
  }
  t.set_data(data, capacity);
  for (auto [view, offset] : output_followers_[i]) {
    view->set_data(static_cast<uint8_t*>(data) + offset, view->nbytes());
  }
}

Tensor* Method::attribute(std::string_view attr) {
  for (size_t i = 0; i < desc_->values.size(); ++i) {
    const auto& v = desc_->values[i];
    if (v.kind == ValueKind::Tensor && v.tensor->name == attr) return &values_[i].to_tensor();
  }
  return nullptr;
}

}  // namespace pterun
