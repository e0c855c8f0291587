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

/// A fixed-capacity key of integers (shapes, strides, flags).
class PlanKey {
 public:
  static constexpr size_t kCapacity = 64;
  void add(int64_t v) {
    PTERUN_CHECK(size_ < kCapacity, ErrorCode::Internal, "oneDNN plan key: too many fields");
    values_[size_++] = v;
  }
  void add(std::initializer_list<int64_t> vs) {
    for (int64_t v : vs) add(v);
  }
  void add_float(double v) {
    int64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    add(bits);
  }
  bool operator==(const PlanKey& o) const {
    return size_ == o.size_ && std::memcmp(values_.data(), o.values_.data(), size_ * 8) == 0;
  }
  size_t hash() const;

 private:
  std::array<int64_t, kCapacity> values_{};
  size_t size_ = 0;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const { return k.hash(); }
};

/// A least-recently-used map from keys to plans. One instance per thread
/// (thread_local at the call site): lookups take no lock, concurrent runs
/// of one method on several threads never share a plan's memory objects,
/// and a hit allocates nothing.
template <typename Plan, typename Key = PlanKey, typename KeyHash = PlanKeyHash>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {}

  /// The plan for `key`, built by `make()` (returning a Plan) on a miss.
  /// The reference stays valid until the next get() on this cache.
  template <typename Make>
  Plan& get(const Key& key, Make&& make) {
    // The last few keys found, compared before hashing: a method's tiny
    // layers look up a handful of plans on every call. Only an insertion
    // evicts, and it clears them, so each points at a live entry; a plan
    // found here is not moved to the front, but after every insertion its
    // next lookup goes through the map and moves it.
    for (size_t i = 0; i < recent_count_; ++i) {
      if (recent_[i].first == key) return *recent_[i].second;
    }
    auto it = index_.find(key);
    if (it != index_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);
      return remember(key, it->second->second);
    }
    Plan plan = make();
    if (index_.size() >= capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
    }
    recent_count_ = recent_next_ = 0;
    entries_.emplace_front(key, std::move(plan));
    index_.emplace(key, entries_.begin());
    return remember(key, entries_.front().second);
  }

 private:
  using Entry = std::pair<Key, Plan>;
  static constexpr size_t kRecent = 8;

  Plan& remember(const Key& key, Plan& plan) {
    recent_[recent_next_] = {key, &plan};
    recent_next_ = (recent_next_ + 1) % kRecent;
    recent_count_ = std::min(recent_count_ + 1, kRecent);
    return plan;
  }

  size_t capacity_;
  std::list<Entry> entries_;
  std::unordered_map<Key, typename std::list<Entry>::iterator, KeyHash> index_;
  std::array<std::pair<Key, Plan*>, kRecent> recent_{};
  size_t recent_count_ = 0, recent_next_ = 0;
};

/// Converts `n` dense elements between f32 and f16/bf16 (either way, or a
/// plain copy for equal dtypes), over the context's threads.
void convert_flat(const kernels::KernelContext& ctx, DType from, const void* src, DType to,
                  void* dst, int64_t n);

/// The oneDNN data type of f32 / f16 / bf16.
dnnl::memory::data_type data_type(DType d);

}  // namespace pterun::cpu::dnnl_util
