#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "pterun/backend/allocation.h"
#include "pterun/core/error.h"
#include "pterun/core/tensor.h"
#include "pterun/executor/input.h"
#include "pterun/executor/method.h"

namespace pterun {

/// Sizes or strides of a result, stored inline (up to kMaxRank values) so
/// that a call's results need no heap memory of their own.
class ResultDims {
 public:
  ResultDims() = default;
  /// Error InvalidArgument for more than kMaxRank values.
  ResultDims(std::span<const int64_t> values) { assign(values.begin(), values.end()); }  // NOLINT

  template <typename It>
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(last - first);
    PTERUN_CHECK(n <= kMaxRank, ErrorCode::InvalidArgument, "tensor results have at most ",
                 kMaxRank, " dimensions, got ", n);
    for (size_t i = 0; i < n; ++i) values_[i] = static_cast<int64_t>(first[i]);
    size_ = static_cast<uint8_t>(n);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return values_.data(); }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + size_; }
  int64_t operator[](size_t i) const { return values_[i]; }
  operator std::span<const int64_t>() const { return {values_.data(), size_}; }  // NOLINT
  bool operator==(const ResultDims& o) const {
    return std::equal(begin(), end(), o.begin(), o.end());
  }

 private:
  std::array<int64_t, kMaxRank> values_{};
  uint8_t size_ = 0;
};

/// A tensor result handed to a caller: a view of `storage` (kept alive by
/// the result) with its own shape and strides. For "cuda:N" results `data`
/// is device memory on GPU N, ready to read (the call waited for it).
struct TensorResult {
  std::shared_ptr<void> storage;  // owns or keeps alive the memory at `data`
  void* data = nullptr;
  DType dtype = DType::Float32;
  ResultDims sizes;
  ResultDims strides;          // in elements
  std::string device = "cpu";  // "cpu" or "cuda:N"
  int device_index = -1;       // N for "cuda:N", -1 on the host

  size_t nbytes() const;
};

/// One output of a call: a tensor, a number, a string or None (docs/python-api.md, B16).
using OutputValue = std::variant<std::monostate, TensorResult, int64_t, double, bool, std::string>;

/// The call protocol around a Method, shared by the Python layer and the
/// CLI: the state rules B8-B12, one call at a time (B15: a second caller
/// waits), and outputs returned without copies through buffers that take
/// turns (B18): host buffers for CPU methods, device buffers on the
/// method's GPU for CUDA methods. A CUDA call waits once for the GPU, after
/// copying any outputs that need a copy (B19).
class MethodRunner : public std::enable_shared_from_this<MethodRunner> {
 public:
  /// Always held by shared_ptr: views (clone=false) keep the runner alive.
  static std::shared_ptr<MethodRunner> create(std::unique_ptr<Method> method);

  Method& method() { return *method_; }
  const Method& method() const { return *method_; }

  /// B9: all inputs checked before any is installed.
  void set_inputs(std::span<const InputArg> inputs);
  /// A partial call's inputs (B13): installs inputs 0..k-1 and keeps the
  /// rest from earlier calls. Error InvalidArgument for more inputs than
  /// the method takes, InvalidState naming inputs never passed. On any
  /// failure inputs 0..k-1 must be passed again.
  void set_leading_inputs(std::span<const InputArg> inputs);
  /// A whole partial call under one lock (Module, B13, B15): the leading
  /// inputs, execute, outputs. On failure after the count check, inputs
  /// 0..k-1 must be passed again.
  std::vector<OutputValue> call_leading(std::span<const InputArg> inputs, bool clone);
  /// Marks inputs 0..count-1 as not passed (a partial call that failed
  /// while converting its inputs).
  void forget_leading(size_t count);
  /// execute + get_outputs under one lock (Module.plan_execute).
  std::vector<OutputValue> execute_and_collect(bool clone);
  /// B8, B12. Releases no lock the caller holds; safe to call without the
  /// Python GIL.
  void execute();
  /// B8, B10, B17, B18.
  std::vector<OutputValue> get_outputs(bool clone);
  /// A copy of the named tensor `name` (a mutable buffer or constant), as it
  /// is now, on the method's device. Error InvalidArgument when the method has no such attribute.
  TensorResult attribute(const std::string& name);

  /// set_inputs + execute + get_outputs under one lock.
  std::vector<OutputValue> call(std::span<const InputArg> inputs, bool clone);
  /// The same, with the outputs put in `out` (cleared first), whose memory
  /// a caller may keep for its next calls.
  void call(std::span<const InputArg> inputs, bool clone, std::vector<OutputValue>& out);

 private:
  explicit MethodRunner(std::unique_ptr<Method> method);
  std::vector<OutputValue> collect(bool clone);
  void collect(bool clone, std::vector<OutputValue>& out);
  void set_inputs_locked(std::span<const InputArg> inputs);
  void set_leading_locked(std::span<const InputArg> inputs);
  void execute_locked();  // leaves a CUDA method's work queued: finish_call() waits
  void finish_call();
  void fill_result(TensorResult& r) const;
  void prepare_outputs();
  std::shared_ptr<backend::Allocation> acquire(size_t output, size_t bytes);
  // A buffer of `bytes` on the method's device; out of memory names the
  // method and `what` ("output 0").
  std::shared_ptr<backend::Allocation> new_buffer(size_t bytes, const std::string& what) const;

  std::mutex mutex_;
  std::unique_ptr<Method> method_;
  bool executed_ = false;       // outputs valid
  bool inputs_valid_ = false;   // every input installed
  bool copies_queued_ = false;  // the last collect() queued output copies
  // Per output, on the method's device.
  std::vector<std::vector<std::shared_ptr<backend::Allocation>>> pools_;
  std::vector<std::shared_ptr<backend::Allocation>>
      current_;                                   // buffer each output was written into
  std::vector<const backend::Allocation*> last_;  // previous run's buffer, preferred when free
};

}  // namespace pterun
