#include "pterun/executor/runner.h"

#include <cstring>

#include "pterun/core/error.h"
#include "pterun/core/stats.h"
#include "pterun/core/text.h"
#include "pterun/kernels/common/strided_copy.h"

namespace pterun {

size_t TensorResult::nbytes() const {
  size_t n = element_size(dtype);
  for (int64_t s : sizes) n *= static_cast<size_t>(s);
  return n;
}

std::shared_ptr<MethodRunner> MethodRunner::create(std::unique_ptr<Method> method) {
  return std::shared_ptr<MethodRunner>(new MethodRunner(std::move(method)));
}

MethodRunner::MethodRunner(std::unique_ptr<Method> method)
    : method_(std::move(method)),
      pools_(method_->num_outputs()),
      current_(method_->num_outputs()),
      last_(method_->num_outputs(), nullptr) {}

void MethodRunner::set_inputs(std::span<const InputArg> inputs) {
  std::lock_guard lock(mutex_);
  set_inputs_locked(inputs);
}

void MethodRunner::set_inputs_locked(std::span<const InputArg> inputs) {
  method_->set_inputs(inputs);
  method_->release_inputs_kept_by(this);
  inputs_valid_ = true;
  executed_ = false;  // B10: an output can share planned memory with an input
}

void MethodRunner::set_leading_inputs(std::span<const InputArg> inputs) {
  std::lock_guard lock(mutex_);
  set_leading_locked(inputs);
}

void MethodRunner::set_leading_locked(std::span<const InputArg> inputs) {
  Method& m = *method_;
  PTERUN_CHECK(inputs.size() <= m.num_inputs(), ErrorCode::InvalidArgument, "method '",
               printable(m.name()), "' takes ", m.num_inputs(), " inputs, got ", inputs.size());
  try {
    for (size_t i = 0; i < inputs.size(); ++i) m.validate_input(i, inputs[i]);
    m.install_checked_inputs(inputs);
    m.release_inputs_kept_by(this);
    executed_ = false;
    PTERUN_CHECK(m.inputs_ready(), ErrorCode::InvalidState, "method '", printable(m.name()),
                 "': inputs ", m.missing_inputs(),
                 " were never passed (a partial call keeps only inputs ",
                 "from earlier successful calls)");
    inputs_valid_ = true;
  } catch (...) {
    for (size_t i = 0; i < inputs.size(); ++i) m.forget_input(i);
    throw;
  }
}

std::vector<OutputValue> MethodRunner::call_leading(std::span<const InputArg> inputs, bool clone) {
  std::lock_guard lock(mutex_);
  set_leading_locked(inputs);
  try {
    execute_locked();
    auto out = collect(clone);
    finish_call();
    return out;
  } catch (...) {
    for (size_t i = 0; i < inputs.size(); ++i) method_->forget_input(i);
    throw;
  }
}

std::vector<OutputValue> MethodRunner::execute_and_collect(bool clone) {
  std::lock_guard lock(mutex_);
  execute_locked();
  auto out = collect(clone);
  finish_call();
  return out;
}

void MethodRunner::forget_leading(size_t count) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < count && i < method_->num_inputs(); ++i) method_->forget_input(i);
}

std::shared_ptr<backend::Allocation> MethodRunner::new_buffer(size_t bytes,
                                                              const std::string& what) const {
  try {
    return std::make_shared<backend::Allocation>(method_->device(), method_->device_index(), bytes,
                                                 /*zeroed=*/false);
  } catch (const Error& e) {
    // Nothing has changed yet: the method keeps its inputs and buffers, and
    // the next call tries again.
    throw Error(e.code(),
                str_cat("method '", printable(method_->name()), "', ", what, ": ", e.what()));
  }
}

std::shared_ptr<backend::Allocation> MethodRunner::acquire(size_t output, size_t bytes) {
  auto& pool = pools_[output];
  std::shared_ptr<backend::Allocation>* best = nullptr;
  for (auto& b : pool) {
    if (b.use_count() != 1 || b->size() < bytes) continue;     // handed out, or too small
    if (method_->input_reads(b->data(), b->size())) continue;  // a result fed back in place
    if (best == nullptr || b.get() == last_[output]) best = &b;
  }
  if (best != nullptr) return *best;
  // Kernels write every byte before anyone reads it: no need to zero.
  pool.push_back(new_buffer(bytes, str_cat("output ", output)));
  return pool.back();
}

void MethodRunner::prepare_outputs() {
  Method& m = *method_;
  for (size_t i = 0; i < m.num_outputs(); ++i) {
    if (current_[i] && current_[i].use_count() == 2 &&
        !m.input_reads(current_[i]->data(), current_[i]->size())) {
      // Last run's buffer, held only by its pool and us, and no input of
      // this run in it: acquire() would pick it again (docs/python-api.md, B18: the buffer
      // returned last is preferred).
      m.set_output_data(i, current_[i]->data(), current_[i]->size());
      continue;
    }
    current_[i].reset();
    if (!m.output_redirectable(i)) continue;
    auto buffer = acquire(i, m.output_capacity(i));
    m.set_output_data(i, buffer->data(), buffer->size());
    last_[i] = buffer.get();
    current_[i] = std::move(buffer);
  }
}

void MethodRunner::execute() {
  std::lock_guard lock(mutex_);
  execute_locked();
  finish_call();
}

void MethodRunner::execute_locked() {
  PTERUN_CHECK(inputs_valid_ && method_->inputs_ready(), ErrorCode::InvalidState, "method '",
               printable(method_->name()), "': execute() needs inputs: call set_inputs() first");
  executed_ = false;
  prepare_outputs();
  method_->execute_async();
}

// The call's one wait (B19): after it the outputs are valid.
void MethodRunner::finish_call() {
  method_->wait();
  executed_ = true;
}

void MethodRunner::fill_result(TensorResult& r) const {
  if (method_->device() != Device::CUDA) return;  // TensorResult's "cpu", -1
  r.device = method_->device_string();
  r.device_index = method_->device_index();
}

std::vector<OutputValue> MethodRunner::collect(bool clone) {
  std::vector<OutputValue> out;
  collect(clone, out);
  return out;
}

void MethodRunner::collect(bool clone, std::vector<OutputValue>& out) {
  Method& m = *method_;
  copies_queued_ = false;
  out.clear();
  out.reserve(m.num_outputs());
  for (size_t i = 0; i < m.num_outputs(); ++i) {
    const Value& v = m.output(i);
    switch (v.kind()) {
      case ValueKind::Tensor: {
        const Tensor& t = v.to_tensor();
        // Built in place: a TensorResult is a few hundred bytes.
        TensorResult& r =
            std::get<TensorResult>(out.emplace_back(std::in_place_type<TensorResult>));
        fill_result(r);
        r.dtype = t.dtype();
        r.sizes.assign(t.sizes().begin(), t.sizes().end());
        r.strides.assign(t.strides().begin(), t.strides().end());
        if (current_[i] && t.data() == current_[i]->data()) {
          // Written by its kernel straight into a buffer of its own (B18).
          r.data = t.data();
          r.storage = clone ? std::shared_ptr<void>(current_[i])
                            : std::shared_ptr<void>(shared_from_this());
        } else if (!clone) {
          r.data = t.data();
          r.storage = shared_from_this();
        } else {
          // Aliases an input, a constant, state or another output: copy
          // (queued on a GPU, before the call's wait).
          auto buffer = acquire(i, t.nbytes());
          method_->copy_data(buffer->data(), t.data(), t.nbytes());
          copies_queued_ = copies_queued_ || t.nbytes() > 0;
          stats::add(stats::Counter::OutputCopies);
          r.data = buffer->data();
          r.storage = std::move(buffer);
        }
        break;
      }
      case ValueKind::Int: out.emplace_back(v.to_int()); break;
      case ValueKind::Double: out.emplace_back(v.to_double()); break;
      case ValueKind::Bool: out.emplace_back(v.to_bool()); break;
      case ValueKind::String: out.emplace_back(std::string(v.to_string())); break;
      default: out.emplace_back(std::monostate{}); break;
    }
  }
}

std::vector<OutputValue> MethodRunner::get_outputs(bool clone) {
  std::lock_guard lock(mutex_);
  PTERUN_CHECK(executed_, ErrorCode::InvalidState, "method '", printable(method_->name()),
               "': no outputs: call execute() first (outputs are cleared by set_inputs() and by "
               "a failed execute())");
  auto out = collect(clone);
  // Copies collect() queued on the GPU (an output that aliases an input,
  // say) must land before the caller reads them.
  if (copies_queued_) method_->wait();
  return out;
}

TensorResult MethodRunner::attribute(const std::string& name) {
  std::lock_guard lock(mutex_);
  Tensor* t = method_->attribute(name);
  PTERUN_CHECK(t != nullptr, ErrorCode::InvalidArgument, "method '", printable(method_->name()),
               "' has no attribute '", printable(name), "'");
  PTERUN_CHECK(t->data() != nullptr || t->numel() == 0, ErrorCode::InvalidState, "method '",
               printable(method_->name()), "': attribute '", printable(name), "' has no data");
  auto buffer = new_buffer(t->nbytes(), str_cat("attribute '", printable(name), "'"));
  TensorResult r;
  fill_result(r);
  r.dtype = t->dtype();
  r.sizes.assign(t->sizes().begin(), t->sizes().end());
  r.strides.assign(t->strides().begin(), t->strides().end());
  method_->copy_data(buffer->data(), t->data(), t->nbytes());
  method_->wait();
  r.data = buffer->data();
  r.storage = std::move(buffer);
  return r;
}

std::vector<OutputValue> MethodRunner::call(std::span<const InputArg> inputs, bool clone) {
  std::vector<OutputValue> out;
  call(inputs, clone, out);
  return out;
}

void MethodRunner::call(std::span<const InputArg> inputs, bool clone,
                        std::vector<OutputValue>& out) {
  std::lock_guard lock(mutex_);
  set_inputs_locked(inputs);
  prepare_outputs();
  method_->execute_async();
  collect(clone, out);
  finish_call();
}

}  // namespace pterun
