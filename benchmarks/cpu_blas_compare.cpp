// f32 GEMM: oneDNN's matmul primitive (what pterun uses) against OpenBLAS's
// cblas_sgemm, row-major C = A @ B, 1 and 2 threads. A one-off measurement
// behind docs/cpu-blas.md; pterun does not link OpenBLAS.
//
// Build and run with benchmarks/cpu_blas_compare.sh (it unpacks Debian's
// OpenBLAS into a temporary folder, so nothing is installed).
//
// Method: both libraries get the same buffers; the oneDNN primitive is
// created once and run through the C API with a user scratchpad (as pterun
// does); OpenBLAS is called directly. Each round times a batch of calls
// (about 5 ms) per library, alternating libraries, and the figure is the
// median over rounds of the per-call wall time.

#include <cblas.h>
#include <omp.h>
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Seconds per call of `f` over one batch of `batch` calls.
double time_batch(const std::function<void()>& f, int batch) {
  const Clock::time_point t = Clock::now();
  for (int i = 0; i < batch; ++i) f();
  return seconds_since(t) / batch;
}

struct Shape {
  int m, k, n;
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 21;
  const Shape shapes[] = {
      {8, 32, 64}, {16, 64, 256}, {128, 128, 128}, {512, 512, 512}, {1024, 1024, 1024}};
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const dnnl::stream stream(engine);
  std::printf(
      "| M x K x N | threads | oneDNN us | OpenBLAS us | OpenBLAS / oneDNN | oneDNN GFLOP/s |"
      " OpenBLAS GFLOP/s |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n);
    std::vector<float> c1(size_t(s.m) * s.n), c2(size_t(s.m) * s.n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 1000) / 1000.0f - 0.5f;
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      openblas_set_num_threads(threads);
      // The primitive is created under the thread count it runs with.
      using dt = dnnl::memory::data_type;
      const dnnl::memory::desc a_md({s.m, s.k}, dt::f32, {s.k, 1});
      const dnnl::memory::desc b_md({s.k, s.n}, dt::f32, {s.n, 1});
      const dnnl::memory::desc c_md({s.m, s.n}, dt::f32, {s.n, 1});
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine);
      const dnnl::matmul prim(pd);
      std::vector<char> pad(pd.scratchpad_desc().get_size() + 64);
      const dnnl::memory am(a_md, engine, a.data()), bm(b_md, engine, b.data());
      const dnnl::memory cm(c_md, engine, c1.data());
      const dnnl::memory pm(pd.scratchpad_desc(), engine, pad.data());
      const dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, am.get()},
                                       {DNNL_ARG_WEIGHTS, bm.get()},
                                       {DNNL_ARG_DST, cm.get()},
                                       {DNNL_ARG_SCRATCHPAD, pm.get()}};
      auto run_dnnl = [&] { dnnl_primitive_execute(prim.get(), stream.get(), 4, args); };
      auto run_blas = [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k,
                    b.data(), s.n, 0.0f, c2.data(), s.n);
      };
      // Warm up, check agreement, and size the batches to ~5 ms.
      run_dnnl();
      run_blas();
      double max_diff = 0;
      for (size_t i = 0; i < c1.size(); ++i) {
        max_diff = std::max(max_diff, double(std::fabs(c1[i] - c2[i])));
      }
      if (max_diff > 1e-3 * s.k) {
        std::fprintf(stderr, "results differ for %dx%dx%d: %g\n", s.m, s.k, s.n, max_diff);
        return 1;
      }
      const Clock::time_point t = Clock::now();
      int calls = 0;
      while (seconds_since(t) < 0.005) {
        run_dnnl();
        ++calls;
      }
      const int batch = std::max(1, calls);
      std::vector<double> td(rounds), tb(rounds);
      for (int r = 0; r < rounds; ++r) {
        td[r] = time_batch(run_dnnl, batch);
        tb[r] = time_batch(run_blas, batch);
      }
      std::sort(td.begin(), td.end());
      std::sort(tb.begin(), tb.end());
      const double d = td[rounds / 2] * 1e6, o = tb[rounds / 2] * 1e6;
      const double flops = 2.0 * s.m * s.k * s.n;
      std::printf("| %d x %d x %d | %d | %.2f | %.2f | %.2f | %.1f | %.1f |\n", s.m, s.k, s.n,
                  threads, d, o, o / d, flops / d / 1e3, flops / o / 1e3);
      std::fflush(stdout);
    }
  }
  return 0;
}
