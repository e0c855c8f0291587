// parallel_for on the helper pool: every index once, thread indices below
// the bound, nested and concurrent calls, errors from a body.

#include "pterun/backend/cpu/engine/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "pterun/core/error.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

KernelContext context_with(int threads) {
  KernelContext ctx;
  ctx.num_threads = threads;
  return ctx;
}

TEST(ParallelFor, CoversEveryIndexOnceWithIndicesBelowTheBound) {
  for (int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(threads);
    const KernelContext ctx = context_with(threads);
    constexpr int64_t n = 10'007;
    std::vector<std::atomic<int>> hits(n);
    std::atomic<bool> bad_index{false};
    for (int round = 0; round < 20; ++round) {
      parallel_for(ctx, n, kParallelGrain, [&](int64_t b, int64_t e) {
        const int t = parallel_thread_index();
        if (t < 0 || t >= threads) bad_index = true;
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
    }
    EXPECT_FALSE(bad_index);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 20) << "index " << i;
  }
}

TEST(ParallelFor, TheCallerTakesTheFrontAndHelpersTheBack) {
  // The caller's ranges all come before every helper's, so that on two
  // threads each keeps the same part of consecutive operators.
  for (int threads : {2, 3}) {
    SCOPED_TRACE(threads);
    const KernelContext ctx = context_with(threads);
    for (int round = 0; round < 50; ++round) {
      std::atomic<int64_t> caller_last{-1}, helper_first{1 << 30};
      parallel_for(ctx, 4096, kParallelGrain, [&](int64_t b, int64_t e) {
        if (parallel_thread_index() == 0) {
          int64_t seen = caller_last.load();
          while (e - 1 > seen && !caller_last.compare_exchange_weak(seen, e - 1)) {
          }
        } else {
          int64_t seen = helper_first.load();
          while (b < seen && !helper_first.compare_exchange_weak(seen, b)) {
          }
        }
        volatile int64_t spin = 0;  // long enough for a helper to take part
        for (int i = 0; i < 2000; ++i) spin = spin + i;
      });
      ASSERT_LT(caller_last.load(), helper_first.load()) << "round " << round;
    }
  }
}

TEST(ParallelFor, SmallWorkStaysOnTheCallingThread) {
  const KernelContext ctx = context_with(4);
  const auto caller = std::this_thread::get_id();
  bool elsewhere = false;
  int calls = 0;
  parallel_for(ctx, 100, 1, [&](int64_t b, int64_t e) {
    elsewhere = elsewhere || std::this_thread::get_id() != caller;
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 100);
  });
  EXPECT_FALSE(elsewhere);
  EXPECT_EQ(calls, 1);
}

TEST(ParallelFor, NestedAndConcurrentCallsComplete) {
  const KernelContext ctx = context_with(2);
  std::atomic<int64_t> total{0};
  auto work = [&] {
    for (int round = 0; round < 50; ++round) {
      parallel_for(ctx, 64, kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          // Nested: runs on the thread that claimed the outer range.
          parallel_for(ctx, 8, kParallelGrain,
                       [&](int64_t nb, int64_t ne) { total.fetch_add(ne - nb); });
        }
      });
    }
  };
  std::thread other(work);
  work();
  other.join();
  EXPECT_EQ(total.load(), 2 * 50 * 64 * 8);
}

TEST(ParallelFor, AnErrorInABodyReachesTheCaller) {
  const KernelContext ctx = context_with(2);
  std::atomic<int64_t> done{0};
  EXPECT_THROW(parallel_for(ctx, 1000, kParallelGrain,
                            [&](int64_t b, int64_t e) {
                              if (b <= 500 && 500 < e) {
                                throw_error(ErrorCode::InvalidArgument, "range with 500");
                              }
                              done.fetch_add(e - b);
                            }),
               Error);
  // The failing range did not finish; the pool still works afterwards.
  EXPECT_LT(done.load(), 1000);
  std::atomic<int64_t> after{0};
  parallel_for(ctx, 1000, kParallelGrain, [&](int64_t b, int64_t e) { after.fetch_add(e - b); });
  EXPECT_EQ(after.load(), 1000);
}

}  // namespace
}  // namespace pterun::cpu
