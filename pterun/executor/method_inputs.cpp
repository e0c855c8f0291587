// Checking and installing method inputs (docs/python-api.md, B1, B3-B7, B9).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/stats.h"
#include "pterun/core/text.h"
#include "pterun/executor/method.h"

namespace pterun {
namespace {

std::string number_text(const InputArg& a) {
  switch (a.kind) {
    case ValueKind::Int: return std::to_string(a.int_value);
    case ValueKind::Double: return str_cat(a.double_value);
    case ValueKind::Bool: return a.bool_value ? "True" : "False";
    case ValueKind::String: return "'" + printable(a.string_value) + "'";
    default: return value_kind_name(a.kind);
  }
}

bool doubles_match(double got, double expected) {
  if (std::isnan(got) || std::isnan(expected)) return std::isnan(got) && std::isnan(expected);
  if (std::isinf(got) || std::isinf(expected)) return got == expected;
  return std::fabs(got - expected) <= 1e-4 + 1e-5 * std::fabs(expected);
}

// True when `strides` (empty = contiguous) describe the same memory layout
// as `t` for its current sizes (size-1 dimensions do not matter).
bool same_layout(const Tensor& t, std::span<const int64_t> strides) {
  int64_t expected = 1;
  for (size_t i = t.dim(); i-- > 0;) {
    int64_t s = strides.empty() ? expected : strides[i];
    if (t.size(i) != 1 && s != t.stride(i)) return false;
    expected *= t.size(i) == 0 ? 1 : t.size(i);
  }
  return true;
}

// Element offsets (relative to element 0) of the first element a strided
// tensor touches and one past its last; {0, 0} when it has no elements.
struct Extent {
  int64_t lo = 0;
  int64_t hi = 0;
};

Extent extent_of(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  for (int64_t s : sizes) {
    if (s == 0) return {};
  }
  Extent e;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t span = (sizes[d] - 1) * strides[d];
    (span < 0 ? e.lo : e.hi) += span;
  }
  e.hi += 1;
  return e;
}

}  // namespace

void Method::check_input(size_t i, const InputArg& a) const {
  const auto& v = desc_->values[desc_->inputs[i]];
  auto fail = [&](ErrorCode code, const std::string& msg) {
    throw_error(code, str_cat("input ", i, " of method '", printable(name()), "': ", msg));
  };
  auto kind_mismatch = [&](const char* expected) {
    fail(ErrorCode::InvalidType, str_cat("expected ", expected, ", got ",
                                         a.kind == ValueKind::Tensor ? "a tensor"
                                         : a.kind == ValueKind::None ? "None"
                                                                     : "a number"));
  };
  switch (v.kind) {
    case ValueKind::Tensor: {
      if (a.kind != ValueKind::Tensor) kind_mismatch("a tensor");
      const auto& t = *v.tensor;
      if (a.dtype != t.dtype) {
        fail(ErrorCode::InvalidType,
             str_cat("dtype ", dtype_name(a.dtype), " does not match the declared dtype ",
                     dtype_name(t.dtype)));
      }
      if (a.sizes.size() != t.sizes.size()) {
        fail(ErrorCode::InvalidArgument,
             str_cat("rank ", a.sizes.size(), " (shape ", shape_text(a.sizes),
                     ") does not match the declared rank ", t.sizes.size(), " (shape ",
                     shape_text(t.sizes), ")"));
      }
      if (!a.strides.empty() && a.strides.size() != a.sizes.size()) {
        fail(ErrorCode::InvalidArgument, "strides do not match the rank");
      }
      for (size_t d = 0; d < t.sizes.size(); ++d) {
        if (a.sizes[d] < 0) fail(ErrorCode::InvalidArgument, "negative size");
        if (t.dynamism == ShapeDynamism::Static && a.sizes[d] != t.sizes[d]) {
          fail(ErrorCode::InvalidArgument,
               str_cat("shape ", shape_text(a.sizes), " does not match the declared static shape ",
                       shape_text(t.sizes)));
        }
        if (a.sizes[d] > t.sizes[d]) {
          fail(ErrorCode::InvalidArgument,
               str_cat("shape ", shape_text(a.sizes), " exceeds the bound ", shape_text(t.sizes),
                       " in dimension ", d));
        }
      }
      int64_t numel = 1;
      for (int64_t s : a.sizes) numel *= s;
      if (numel > 0 && a.data == nullptr) fail(ErrorCode::InvalidArgument, "tensor has no data");
      if (a.device == Device::CUDA && numel > 0) {
        // B9: a tensor on a GPU this process cannot use fails before any
        // input changes.
        try {
          backend::require_cuda_device(a.device_index);
        } catch (const Error& e) {
          fail(e.code(), e.what());
        }
      }
      break;
    }
    case ValueKind::Int:
      if (a.kind != ValueKind::Int) kind_mismatch("an int");
      if (a.int_value != v.int_value) {
        fail(ErrorCode::InvalidArgument,
             str_cat("the program was exported with the value ", v.int_value, " and got ",
                     a.int_value, " (torch.export fixes number inputs)"));
      }
      break;
    case ValueKind::Double: {
      if (a.kind != ValueKind::Double && a.kind != ValueKind::Int) kind_mismatch("a float");
      double got = a.kind == ValueKind::Int ? static_cast<double>(a.int_value) : a.double_value;
      if (!doubles_match(got, v.double_value)) {
        fail(ErrorCode::InvalidArgument,
             str_cat("the program was exported with the value ", v.double_value, " and got ", got,
                     " (torch.export fixes number inputs)"));
      }
      break;
    }
    case ValueKind::Bool:
      if (a.kind != ValueKind::Bool) kind_mismatch("a bool");
      if (a.bool_value != v.bool_value) {
        fail(ErrorCode::InvalidArgument,
             str_cat("the program was exported with the value ", v.bool_value ? "True" : "False",
                     " and got ", number_text(a), " (torch.export fixes number inputs)"));
      }
      break;
    case ValueKind::String:
      if (a.kind != ValueKind::String) kind_mismatch("a string");
      if (a.string_value != v.string_value) {
        fail(ErrorCode::InvalidArgument,
             str_cat("the program was exported with '", printable(v.string_value), "' and got ",
                     number_text(a)));
      }
      break;
    case ValueKind::None:
      if (a.kind != ValueKind::None) kind_mismatch("None");
      break;
    default: fail(ErrorCode::InvalidProgram, "input kind is not supported");
  }
}

// Installs checked `inputs` as inputs first, first + 1, ... after ordering
// the method's work after their producers.
void Method::install_inputs(size_t first, std::span<const InputArg> inputs) {
  order_after_producers(inputs);
  for (size_t k = 0; k < inputs.size(); ++k) install_input(first + k, inputs[k]);
}

// Device inputs whose producer may still be writing them (B19): reads on
// this method's stream wait for the producer's stream on the GPU; a copy
// from another GPU, or down to the host, waits for it on the host. Once
// per producer stream and call.
void Method::order_after_producers(std::span<const InputArg> inputs) {
  std::array<std::pair<int, uintptr_t>, 8> done;
  size_t n_done = 0;
  for (const InputArg& a : inputs) {
    if (a.kind != ValueKind::Tensor || a.device != Device::CUDA || !a.after_stream) continue;
    if (std::find(a.sizes.begin(), a.sizes.end(), 0) != a.sizes.end()) continue;  // nothing to read
    const std::pair<int, uintptr_t> producer{a.device_index, a.stream};
    if (std::find(done.begin(), done.begin() + n_done, producer) != done.begin() + n_done) continue;
    if (n_done < done.size()) done[n_done++] = producer;
    if (options_.device == Device::CUDA && a.device_index == options_.device_index) {
      backend::order_after_stream(context_, a.stream);
    } else {
      backend::synchronize_stream(a.device_index, a.stream);
    }
  }
}

void Method::install_input(size_t i, const InputArg& arg) {
  input_set_[i] = false;
  int32_t vi = desc_->inputs[i];
  if (arg.kind != ValueKind::Tensor) {
    input_set_[i] = true;
    return;
  }
  Tensor& t = values_[vi].to_tensor();
  t.resize(arg.sizes);
  bool layout_ok = same_layout(t, arg.strides);
  std::array<int64_t, kMaxRank> contiguous;  // set below when needed
  std::span<const int64_t> src_strides = arg.strides;
  if (src_strides.empty()) {
    int64_t s = 1;
    for (size_t d = arg.sizes.size(); d-- > 0;) {
      contiguous[d] = s;
      s *= arg.sizes[d] == 0 ? 1 : arg.sizes[d];
    }
    src_strides = std::span<const int64_t>(contiguous.data(), arg.sizes.size());
  }
  bool gpu_method = options_.device == Device::CUDA;
  bool on_our_gpu =
      gpu_method && arg.device == Device::CUDA && arg.device_index == options_.device_index;
  if (arg.device == Device::CUDA && (!gpu_method || (!layout_ok && !on_our_gpu))) {
    // The host needs the bytes: a CPU method given a CUDA tensor (B7), or a
    // tensor on another GPU in another layout (reordered on the host).
    InputArg a = arg;
    a.data = download_input(i, arg, src_strides);
    a.device = Device::CPU;
    a.keep_alive.reset();
    if (gpu_method) return install_on_device(i, a, layout_ok, src_strides);
    return install_on_host(i, a, layout_ok, src_strides);
  }
  if (gpu_method) return install_on_device(i, arg, layout_ok, src_strides);
  install_on_host(i, arg, layout_ok, src_strides);
}

// A CPU method's input `a` in host memory.
void Method::install_on_host(size_t i, const InputArg& a, bool layout_ok,
                             std::span<const int64_t> src_strides) {
  Tensor& t = values_[desc_->inputs[i]].to_tensor();
  void* home = input_home_[i];
  if (home == nullptr && input_alias_ok_[i] && layout_ok && !inside_own_memory(a.data)) {
    // Unplanned and already in the declared layout: use the caller's memory
    // (or our download of it) in place (B4: the program never writes it).
    point_input(i, const_cast<void*>(a.data));
    input_keep_alive_[i] = a.keep_alive;
    input_set_[i] = true;
    return;
  }
  if (home == nullptr) home = private_input_memory(i);
  if (input_keep_alive_[i]) input_keep_alive_[i].reset();
  // One strided copy either way: in the declared (dense) layout it is one
  // block, split over the method's threads when large (an image batch of
  // 0.8 MB took 25 µs on one thread); in another it is a layout conversion.
  if (!layout_ok) stats::add(stats::Counter::LayoutConversions);
  cpu::strided_copy(context_, home, t.strides(), a.data, src_strides, t.sizes(), t.element_size());
  input_set_[i] = true;
}

// A CUDA method's input `a`: host memory (the caller's or our download),
// device memory of our GPU in any layout, or of another GPU in the
// declared layout.
void Method::install_on_device(size_t i, const InputArg& a, bool layout_ok,
                               std::span<const int64_t> src_strides) {
  Tensor& t = values_[desc_->inputs[i]].to_tensor();
  size_t bytes = t.nbytes();
  void* home = input_home_[i];
  bool same_gpu = a.device == Device::CUDA && a.device_index == options_.device_index;
  if (input_alias_ok_[i] && same_gpu && layout_ok && !inside_own_memory(a.data) &&
      (home == nullptr || address_repeats(i, a.data))) {
    // On our GPU and in the declared layout: used in place.
    point_input(i, const_cast<void*>(a.data));
    input_keep_alive_[i] = a.keep_alive;
    input_set_[i] = true;
    return;
  }
  if (home == nullptr) {
    home = private_input_memory(i);
  } else {
    point_input(i, home);  // back from the caller's memory
  }
  // A copy from device memory is queued: its source stays alive until the
  // next set_inputs() (after the run's wait).
  input_keep_alive_[i] = a.device == Device::CUDA ? a.keep_alive : nullptr;
  if (same_gpu && !layout_ok) {
    // On our GPU in another layout: reordered there, in stream order (B1).
    stats::add(stats::Counter::LayoutConversions);
    backend::reorder_on_device(context_, home, t.strides(), a.data, src_strides, t.sizes(),
                               t.element_size());
  } else if (a.device == Device::CUDA) {
    // Queued on our stream; the caller orders it after the producer (B19).
    backend::copy_peer_to_device(context_, home, a.device_index, a.data, bytes);
  } else if (bytes > 0) {
    // Host memory goes through pinned memory of this input's own (reordered
    // on the way when its layout differs), so the upload is an
    // asynchronous DMA in stream order, never a pageable copy that the
    // driver stages while the call waits.
    backend::PinnedBuffer& staging = input_staging_[i];
    if (staging_busy_[i]) {
      // An upload queued from this staging buffer (inputs set twice
      // without a run in between) may still be reading it.
      wait();
    }
    if (staging.size() < t.bound_nbytes()) staging = backend::PinnedBuffer(t.bound_nbytes());
    if (layout_ok) {
      std::memcpy(staging.data(), a.data, bytes);
    } else {
      stats::add(stats::Counter::LayoutConversions);
      cpu::strided_copy(context_, staging.data(), t.strides(), a.data, src_strides, t.sizes(),
                        t.element_size());
    }
    backend::copy_host_to_device(context_, home, staging.data(), bytes);
    staging_busy_[i] = true;
  }
  input_set_[i] = true;
}

// Copies device input `a` down into this input's host buffer; returns where
// its element 0 is there.
const void* Method::download_input(size_t i, const InputArg& a, std::span<const int64_t> strides) {
  Extent e = extent_of(a.sizes, strides);
  size_t element = element_size(a.dtype);
  size_t bytes = static_cast<size_t>(e.hi - e.lo) * element;
  HostBuffer& buffer = input_download_[i];
  if (buffer.size() < bytes) buffer = HostBuffer(bytes);
  if (bytes == 0) return buffer.data();
  const auto* first = static_cast<const uint8_t*>(a.data) - static_cast<size_t>(-e.lo) * element;
  backend::download(a.device_index, buffer.data(), first, bytes);
  return buffer.data() + static_cast<size_t>(-e.lo) * element;
}

// Points input `i` (and the views planned inside it) at `data`.
void Method::point_input(size_t i, void* data) {
  Tensor& t = values_[desc_->inputs[i]].to_tensor();
  if (t.data() == data) return;
  // The bound capacity either way: the next call's resize() checks against
  // it before the tensor is pointed anywhere else (the bound itself was
  // checked with the input).
  t.set_data(data, t.bound_nbytes());
  for (auto [view, offset] : input_followers_[i]) {
    view->set_data(static_cast<uint8_t*>(data) + offset, view->nbytes());
  }
}

// True when `data` lies in memory this method owns (planned arenas, memory
// of unplanned tensors, private input copies, shared state): an input there
// (a clone_outputs=False result fed back, say) may be written by the run
// that reads it, so it is copied, never read in place.
bool Method::inside_own_memory(const void* data) const {
  const auto* p = static_cast<const uint8_t*>(data);
  auto inside = [p](const backend::Allocation& a) {
    return a.size() > 0 && p >= a.data() && p < a.data() + a.size();
  };
  return std::any_of(buffers_.begin(), buffers_.end(), inside) ||
         std::any_of(owned_.begin(), owned_.end(), inside) ||
         std::any_of(input_copies_.begin(), input_copies_.end(), inside) ||
         (shared_state_ && shared_state_->contains(data));
}

bool Method::input_reads(const void* begin, size_t bytes) const {
  const auto* b = static_cast<const uint8_t*>(begin);
  for (int32_t vi : desc_->inputs) {
    const Value& v = values_[vi];
    if (!v.is_tensor()) continue;
    const auto* p = static_cast<const uint8_t*>(v.to_tensor().data());
    if (p != nullptr && p >= b && p < b + bytes) return true;
  }
  return false;
}

void Method::release_inputs_kept_by(const void* owner) {
  for (auto& kept : input_keep_alive_) {
    if (kept && kept.get() == owner) kept.reset();
  }
}

// True when the caller passed `data` for input `i` in one of the last two
// calls; remembers it.
bool Method::address_repeats(size_t i, const void* data) {
  auto& recent = input_recent_[i];
  const bool seen = recent[0] == data || recent[1] == data;
  if (recent[0] != data) {
    recent[1] = recent[0];
    recent[0] = data;
  }
  return seen;
}

// Memory of this method's own for input `i` (unplanned inputs that cannot
// be used in place), sized for the bound shape once.
void* Method::private_input_memory(size_t i) {
  Tensor& t = values_[desc_->inputs[i]].to_tensor();
  if (input_copies_[i].size() < t.bound_nbytes()) input_copies_[i] = allocate(t.bound_nbytes());
  t.set_data(input_copies_[i].data(), input_copies_[i].size());
  return input_copies_[i].data();
}

void Method::set_input(size_t i, const InputArg& input) {
  PTERUN_CHECK(i < num_inputs(), ErrorCode::IndexOutOfRange, "method '", printable(name()),
               "': input ", i, " is out of range (", num_inputs(), " inputs)");
  check_input(i, input);
  install_inputs(i, std::span<const InputArg>(&input, 1));
}

void Method::set_inputs(std::span<const InputArg> inputs) {
  PTERUN_CHECK(inputs.size() == num_inputs(), ErrorCode::InvalidArgument, "method '",
               printable(name()), "' takes ", num_inputs(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) check_input(i, inputs[i]);
  try {
    install_inputs(0, inputs);
  } catch (...) {
    // Installing started changing memory: nothing is usable until every
    // input is passed again (B9).
    std::fill(input_set_.begin(), input_set_.end(), false);
    throw;
  }
}

}  // namespace pterun
