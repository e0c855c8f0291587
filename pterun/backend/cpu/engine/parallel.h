#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "pterun/kernels/kernel.h"

namespace pterun::cpu {

/// Work below this many elements runs on the calling thread: the cost of
/// waking a helper exceeds the gain.
constexpr int64_t kParallelGrain = 1 << 15;

/// Index of the calling thread inside the body of a parallel_for: 0 on the
/// thread that called it (and outside any parallel_for), else 1 ..
/// ctx.num_threads - 1. Lets a body pick its slot of per-thread scratch.
int parallel_thread_index();

namespace detail {

/// Runs body(context, begin, end) over [0, n) split into `chunks` nearly
/// equal ranges, on the calling thread and up to threads - 1 pool helpers
/// (parallel.cpp). The caller takes ranges too and never waits for a helper
/// that has not started one, so a helper the OS leaves unscheduled on a
/// busy machine costs nothing.
void run_parallel(int threads, int64_t n, int64_t chunks,
                  void (*body)(void* context, int64_t begin, int64_t end), void* context);

}  // namespace detail

/// Calls f(begin, end) over [0, n) in contiguous ranges, on up to
/// ctx.num_threads threads when n * cost_per_item is large enough. Ranges
/// may run in any order; f must not depend on which thread runs them
/// except through parallel_thread_index().
template <typename F>
void parallel_for(const kernels::KernelContext& ctx, int64_t n, int64_t cost_per_item, F&& f) {
  int threads = ctx.num_threads;
  if (threads <= 1 || n <= 1 || n * cost_per_item < kParallelGrain) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  if (threads > n) threads = static_cast<int>(n);
  // A few ranges per thread (each worth at least a grain), so that the
  // threads that run finish the work of one that does not.
  const int64_t by_cost = n * cost_per_item / kParallelGrain;
  int64_t chunks = std::min<int64_t>(n, std::min<int64_t>(4 * threads, by_cost));
  if (chunks < threads) chunks = threads;
  using Body = std::remove_reference_t<F>;
  detail::run_parallel(
      threads, n, chunks,
      [](void* context, int64_t begin, int64_t end) { (*static_cast<Body*>(context))(begin, end); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace pterun::cpu
