#pragma once

#include <omp.h>

#include <cstdint>

#include "pterun/kernels/kernel.h"

namespace pterun::kernels {

/// Work below this many elements runs on the calling thread: the cost of
/// waking a team exceeds the gain.
constexpr int64_t kParallelGrain = 1 << 15;

/// Calls f(begin, end) over [0, n) in contiguous blocks, on up to
/// ctx.num_threads threads when n * cost_per_item is large enough.
template <typename F>
void parallel_for(const KernelContext& ctx, int64_t n, int64_t cost_per_item, F&& f) {
  int threads = ctx.num_threads;
  if (threads <= 1 || n <= 1 || n * cost_per_item < kParallelGrain) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  if (threads > n) threads = static_cast<int>(n);
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    int64_t begin = n * t / threads;
    int64_t end = n * (t + 1) / threads;
    if (begin < end) f(begin, end);
  }
}

}  // namespace pterun::kernels
