#pragma once

// What the matmul and convolution kernels share around oneDNN: the engine,
// a thread-count scope, allocation-free execution, and a per-thread LRU
// cache of prepared primitives ("plans") keyed by shapes, strides, dtypes.
//
// Threads: oneDNN is built on GNU OpenMP, whose teams spin and meet at a
// barrier after every region; on a shared machine one descheduled team
// member stalls the call for a scheduler slice. So oneDNN always runs on
// one OpenMP thread (ThreadScope(1) around plan creation and execution),
// and the kernels split large problems (batch or rows) over parallel_for
// instead, each range a oneDNN call of its own on its thread.

#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>

#include "pterun/backend/cpu/ops/plan_cache.h"
#include "pterun/core/dtype.h"
#include "pterun/core/error.h"
#include "pterun/kernels/kernel.h"

namespace pterun::cpu::dnnl_util {

/// The process's CPU engine.
const dnnl::engine& engine();

/// Sets the OpenMP thread count of the calling thread for its lifetime.
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int previous_;
  bool changed_;
};

/// Multiply-adds below which a problem runs on one thread: about 20-40 us
/// of single-core work, less than waking helpers and splitting costs.
constexpr double kMinParallelWork = 1 << 20;

/// A context of the calling thread for one range of a split problem: one
/// thread, scratch of its own (kept between calls, so it allocates only
/// when a larger size is first asked for).
kernels::KernelContext& range_context();

/// True when oneDNN picked an optimised implementation (not the reference
/// loops, which are orders of magnitude slower than our own kernels).
bool is_optimized(const char* impl_info);

/// True for jit direct / depthwise / 1x1 / brgemm convolutions, false for
/// the im2col+gemm and reference ones.
bool is_direct(const char* impl_info);

/// Memory object without data; kernels point it at a buffer per call.
dnnl::memory make_memory(const dnnl::memory::desc& md);

/// Points `m` at `data` (oneDNN takes non-const handles for inputs too).
inline void bind(const dnnl::memory& m, const void* data) {
  m.set_data_handle(const_cast<void*>(data));
}

/// Runs `p` on this thread's stream with the given arguments; no
/// allocation (the C++ API's argument map would allocate per call).
void execute(const dnnl::primitive& p, std::span<const dnnl_exec_arg_t> args, const char* op);

/// Converts `n` dense elements between f32 and f16/bf16 (either way, or a
/// plain copy for equal dtypes), over the context's threads.
void convert_flat(const kernels::KernelContext& ctx, DType from, const void* src, DType to,
                  void* dst, int64_t n);

/// The oneDNN data type of f32 / f16 / bf16.
dnnl::memory::data_type data_type(DType d);

}  // namespace pterun::cpu::dnnl_util
