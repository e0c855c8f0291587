#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pterun/backend/allocation.h"
#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/host_buffer.h"
#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/executor/input.h"
#include "pterun/kernels/kernel.h"
#include "pterun/program/program.h"

namespace pterun {

/// Where a method runs: the CPU, or GPU `device_index` (every planned
/// buffer, constant and state on that GPU, every kernel on one stream).
struct MethodOptions {
  Device device = Device::CPU;
  int device_index = 0;
  /// CUDA: capture the steps as a CUDA graph and replay it, for methods
  /// without control flow, one graph per set of addresses and dynamic input
  /// shapes (method_graph.cpp).
  bool cuda_graphs = true;
  /// CUDA: float32 matrix products and convolutions may round their
  /// inputs to TF32 on the tensor cores (faster, about 3 decimal digits
  /// instead of float32's 7; like torch.backends.cuda.matmul.allow_tf32).
  /// Off by default: float32 products are float32. No effect on the CPU.
  bool allow_tf32 = false;
  /// Run dequantize -> op -> quantize chains of quantized programs on
  /// integer kernels (executor/quant_fusion.h); false runs the program's
  /// instructions as written. The environment variable
  /// PTERUN_INTEGER_QUANTIZED=0 sets it false for every method.
  bool integer_quantized = true;
};

/// A loaded method: its values, planned memory and a flat instruction list
/// with every kernel resolved at load. Not thread-safe: one call at a time
/// (the Python layer serialises calls).
class Method {
 public:
  /// Loads method `name`. Errors: InvalidArgument (no such method, or a
  /// .ptd key missing), NotImplemented naming every missing operator and
  /// delegate backend and the device (docs/python-api.md, B23), InvalidState (saying why) for
  /// CUDA without a usable GPU, InvalidArgument for a GPU index that does
  /// not exist, MemoryAllocationFailed for planned memory
  /// that cannot be allocated, InvalidProgram for a plan that does not fit.
  static std::unique_ptr<Method> load(std::shared_ptr<const Program> program,
                                      const std::string& name, const MethodOptions& options = {});
  ~Method();

  const std::string& name() const { return desc_->name; }
  const MethodMeta& meta() const { return *meta_; }
  size_t num_inputs() const { return desc_->inputs.size(); }
  size_t num_outputs() const { return desc_->outputs.size(); }
  Device device() const { return options_.device; }
  int device_index() const { return options_.device_index; }
  /// "cpu" or "cuda:N".
  std::string device_string() const;

  /// Checks every input (count, kind, dtype, rank, shape bounds, number
  /// values) before changing anything (B9), then installs them: copied
  /// into planned memory (reordered to the declared dim order, B1), or used
  /// in place when unplanned, already in the declared layout and on the
  /// method's device. Tensors on another device are copied (B7): uploads
  /// and device copies are queued on a CUDA method's stream (no wait), a
  /// CPU method given a CUDA tensor copies it down (a wait). Errors start
  /// with "input i of method 'name': " (B6).
  void set_inputs(std::span<const InputArg> inputs);

  /// Installs input `i` alone (same checks).
  void set_input(size_t i, const InputArg& input);

  /// Marks input `i` as not set (a failed partial call, B13).
  void forget_input(size_t i) { input_set_[i] = false; }
  /// Checks input `i` without installing it.
  void validate_input(size_t i, const InputArg& input) const { check_input(i, input); }
  /// Installs checked inputs 0..n-1 (a partial call when n is less than
  /// num_inputs()).
  void install_checked_inputs(std::span<const InputArg> inputs) { install_inputs(0, inputs); }
  /// True when installing input `i` may keep using the caller's memory
  /// after set_inputs() returns (an input no kernel writes, B4: unplanned,
  /// or planned on a GPU): only then must its InputArg carry a keep_alive.
  bool input_may_alias(size_t i) const { return i < input_alias_ok_.size() && input_alias_ok_[i]; }
  /// True when an installed tensor input reads memory in [begin, begin +
  /// bytes) (an output buffer must not be handed to a run that reads it).
  bool input_reads(const void* begin, size_t bytes) const;
  /// Drops the keep-alives of installed inputs that are `owner` itself
  /// (results of this method fed back: its own memory needs no keeping, and
  /// holding the owner would keep it alive forever).
  void release_inputs_kept_by(const void* owner);
  /// Indices of inputs never set, for messages.
  std::string missing_inputs() const;

  /// True once every input has been set.
  bool inputs_ready() const;

  /// Runs every instruction and, on a GPU, waits once for the stream at
  /// the end (B19). Error InvalidState when an input was never set; kernel
  /// errors carry the instruction and operator, and a kernel that refuses
  /// its arguments (they come from the program: the inputs were checked)
  /// is InvalidProgram.
  void execute() {
    execute_async();
    wait();
  }
  /// execute() without the final wait: on a GPU the work is queued on the
  /// method's stream and outputs are valid only after wait(). Same as
  /// execute() on the CPU.
  void execute_async();
  /// Waits for the method's queued work (one counted device sync on a GPU;
  /// nothing on the CPU). Errors of kernels that ran asynchronously surface
  /// here (Internal).
  void wait();

  /// Copies `bytes` between two buffers on the method's device, in stream
  /// order (memcpy on the CPU; queued on a GPU: read after wait()).
  void copy_data(void* dst, const void* src, size_t bytes);

  /// The context kernels of this method get (device, stream state).
  const kernels::KernelContext& context() const { return context_; }

  /// Output `i` after a successful execute().
  const Value& output(size_t i) const;
  /// True when output `i` is a tensor whose data() is device memory (every
  /// tensor output of a CUDA method: constants, state and inputs live on
  /// its GPU too).
  bool output_on_device(size_t i) const {
    return options_.device == Device::CUDA && output(i).is_tensor();
  }

  /// True when output `i` is a tensor a kernel writes in place, so that the
  /// caller may point it at memory of its own before a run (B18). Outputs
  /// that alias an input, a constant, state, a view or another output are
  /// not.
  bool output_redirectable(size_t i) const { return redirectable_[i]; }

  /// Points redirectable output `i` at `data` (at least the output's bound
  /// size in bytes; device memory on the method's GPU for a CUDA method)
  /// for the following runs; nullptr restores the planned memory.
  void set_output_data(size_t i, void* data, size_t capacity);

  /// Bytes the output's bound shape needs.
  size_t output_capacity(size_t i) const;

  /// The named tensor `name` (a mutable buffer or constant), or nullptr.
  Tensor* attribute(std::string_view name);

  /// How many quantized chains run on integer kernels (MethodOptions::
  /// integer_quantized).
  size_t quantized_chains() const { return quantized_chains_; }

  /// How many steps call kernel `fn` (what the load-time passes left, for
  /// tests).
  size_t steps_calling(kernels::KernelFn fn) const;

  /// True when some tensor in this method is state shared with other
  /// methods or kept across calls.
  bool has_state() const { return has_state_; }

 private:
  Method() = default;
  // One instruction, resolved at load.
  struct Step {
    format::InstructionKind kind = format::InstructionKind::KernelCall;
    kernels::KernelFn fn = nullptr;
    uint32_t args_begin = 0;
    uint32_t args_count = 0;
    int32_t index = 0;
    int32_t target = 0;
  };
  struct Loader;

  void check_input(size_t i, const InputArg& input) const;
  void install_inputs(size_t first, std::span<const InputArg> inputs);
  void order_after_producers(std::span<const InputArg> inputs);
  void install_input(size_t i, const InputArg& input);
  void install_on_device(size_t i, const InputArg& input, bool layout_ok,
                         std::span<const int64_t> src_strides);
  void install_on_host(size_t i, const InputArg& input, bool layout_ok,
                       std::span<const int64_t> src_strides);
  const void* download_input(size_t i, const InputArg& input, std::span<const int64_t> strides);
  void* private_input_memory(size_t i);
  void point_input(size_t i, void* data);
  bool address_repeats(size_t i, const void* data);
  bool inside_own_memory(const void* data) const;
  backend::Allocation allocate(size_t bytes) const;  // on the method's device, zeroed
  void drain() noexcept;
  [[noreturn]] void fail_step(size_t chain, size_t pc, const Error& e) const;
  void run_steps();
  // CUDA graphs (method_graph.cpp).
  bool graphs_possible();
  bool run_graph();

  std::shared_ptr<const Program> program_;
  const format::MethodDesc* desc_ = nullptr;
  std::optional<MethodMeta> meta_;
  MethodOptions options_;
  std::shared_ptr<SharedState> shared_state_;
  std::shared_ptr<DeviceConstants> constants_;  // CUDA: the program's constants on our GPU

  // On the method's device (host or GPU).
  std::vector<backend::Allocation> buffers_;  // planned arenas owned by this method
  std::vector<backend::Allocation> owned_;    // memory for unplanned tensors kernels write
  std::vector<Tensor> tensors_;               // one per tensor value (stable addresses)
  std::vector<Value> values_;                 // the value table
  // Tensors and values the load passes add (weight sums, output clamps of
  // fused quantized kernels); deques keep their addresses stable.
  std::deque<Tensor> extra_tensors_;
  std::deque<Value> extra_values_;
  std::deque<std::vector<double>> fused_programs_;  // of fused elementwise steps
  std::vector<Value*> arg_pool_;                    // kernel arguments, flattened
  std::vector<std::vector<Value*>> boxed_lists_;
  std::vector<std::vector<Tensor*>> tensor_lists_;
  std::vector<std::vector<Step>> chains_;
  kernels::KernelContext context_;

  // Inputs.
  std::vector<bool> input_set_;
  // An input the program never writes: unplanned ones are always used in
  // place when their layout and device match; planned ones of a GPU method
  // when the caller's address repeats (input_recent_), so that a key of
  // the CUDA graphs does not change on every call.
  std::vector<bool> input_alias_ok_;
  std::vector<std::array<const void*, 2>> input_recent_;  // the caller's last addresses
  std::vector<std::vector<std::pair<Tensor*, size_t>>> input_followers_;  // planned views
  std::vector<backend::Allocation> input_copies_;  // private copies for inputs that cannot alias
  std::vector<HostBuffer> input_download_;  // host copies of device inputs that need the host
  std::vector<backend::PinnedBuffer> input_staging_;  // CUDA: host inputs on their way up
  std::vector<bool> staging_busy_;  // CUDA: an upload from input_staging_[i] may be queued
  std::vector<std::shared_ptr<void>> input_keep_alive_;
  std::vector<void*> input_home_;  // planned address of each tensor input (or null)

  // Outputs.
  std::vector<bool> redirectable_;
  std::vector<void*> output_home_;
  std::vector<size_t> output_home_capacity_;
  // Views resolved by memory planning inside each redirectable output
  // (tensor, byte offset): re-pointed with it.
  std::vector<std::vector<std::pair<Tensor*, size_t>>> output_followers_;

  bool has_state_ = false;
  size_t quantized_chains_ = 0;

  // CUDA graphs, keyed by the data pointers of every tensor (inputs used
  // in place and outputs that take turns move between calls).
  enum class Graphs : uint8_t { Unknown, On, Off };
  struct CapturedGraph {
    std::vector<const void*> key;
    backend::GraphExec exec;
    std::vector<std::vector<int64_t>> output_sizes;  // dynamic-shape methods: restored on replay
  };
  Graphs graphs_mode_ = Graphs::Unknown;
  std::vector<CapturedGraph> graphs_;
  std::vector<std::vector<const void*>> graph_seen_;  // keys of recent runs without a graph
  std::vector<const void*> graph_key_;
  int graph_captures_ = 0;
  bool graph_dynamic_ = false;  // some tensor has a dynamic shape: the key holds input shapes
  uint64_t graph_epoch_ = 0;    // backend::scratch_epoch when graphs_ were captured
};

}  // namespace pterun
