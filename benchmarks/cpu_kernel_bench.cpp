// Per-call time of pterun's CPU matmul / convolution / pooling kernels on
// the fixtures' shapes, called straight through the kernel registry (no
// executor, no Python): what docs/cpu-blas.md quotes for per-call overhead.
//
//   g++ -O2 -std=c++20 -fopenmp -I. benchmarks/cpu_kernel_bench.cpp \
//       build/<dir>/pterun/libpterun.a -ldnnl -o /tmp/cpu_kernel_bench
//   /tmp/cpu_kernel_bench [THREADS] [FILTER]
//
// With one thread the figure is thread CPU time (robust on a shared
// machine), otherwise wall time; median over rounds of ~20 ms batches.

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/kernels/registry.h"

using namespace pterun;

namespace {

/// Owns the tensors, buffers and values of the benchmark calls.
struct Arena {
  std::deque<Tensor> tensors;
  std::deque<Value> values;
  std::deque<std::vector<Value*>> boxes;
  std::deque<std::vector<Tensor*>> lists;
  std::deque<std::vector<float>> buffers;

  Value* tensor(DType d, std::vector<int64_t> sizes, std::vector<uint8_t> order = {}) {
    Tensor& t = tensors.emplace_back(d, sizes, order);
    auto& buf = buffers.emplace_back(t.nbytes() / 4 + 16);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    t.set_data(buf.data(), t.nbytes());
    return &values.emplace_back(Value::from_tensor(&t));
  }
  Value* ints(std::vector<int64_t> v) {
    auto& b = boxes.emplace_back();
    for (int64_t x : v) b.push_back(&values.emplace_back(Value::from_int(x)));
    return &values.emplace_back(Value::from_int_list(b));
  }
  Value* integer(int64_t x) { return &values.emplace_back(Value::from_int(x)); }
  Value* boolean(bool x) { return &values.emplace_back(Value::from_bool(x)); }
  Value* list(std::vector<Value*> ts) {
    auto& l = lists.emplace_back();
    for (Value* v : ts) l.push_back(&v->to_tensor());
    return &values.emplace_back(Value::from_tensor_list(l, false));
  }
};

double now_us(bool thread_cpu) {
  timespec t;
  clock_gettime(thread_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

double time_kernel(const char* name, std::vector<Value*> args, int threads) {
  kernels::KernelFn fn = kernels::KernelRegistry::global().find(name, Device::CPU);
  if (fn == nullptr) {
    std::fprintf(stderr, "no CPU kernel %s\n", name);
    std::exit(1);
  }
  kernels::KernelContext ctx;
  ctx.num_threads = threads;
  const bool cpu = threads == 1;
  for (int i = 0; i < 3; ++i) fn(ctx, args);  // plans and scratch are made here
  int batch = 0;
  const double start = now_us(false);
  while (now_us(false) - start < 20000) {
    fn(ctx, args);
    ++batch;
  }
  std::vector<double> samples;
  for (int r = 0; r < 11; ++r) {
    const double t = now_us(cpu);
    for (int i = 0; i < batch; ++i) fn(ctx, args);
    samples.push_back((now_us(cpu) - t) / batch);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const char* filter = argc > 2 ? argv[2] : nullptr;
  Arena A;
  const DType F = DType::Float32;
  auto run = [&](const char* label, const char* op, std::vector<Value*> args) {
    if (filter != nullptr && std::strstr(label, filter) == nullptr) return;
    std::printf("| %s | %.2f |\n", label, time_kernel(op, args, threads));
    std::fflush(stdout);
  };
  auto mm = [&](const char* label, int64_t m, int64_t k, int64_t n) {
    Value* out = A.tensor(F, {m, n});
    run(label, "aten::mm.out", {A.tensor(F, {m, k}), A.tensor(F, {k, n}), out, out});
  };
  auto conv = [&](const char* label, std::vector<int64_t> in, int64_t oc, int64_t k, int64_t pad,
                  std::vector<uint8_t> order = {}) {
    const int64_t oh = in[2] + 2 * pad - k + 1, ow = in[3] + 2 * pad - k + 1;
    Value* out = A.tensor(F, {in[0], oc, oh, ow}, order);
    run(label, "aten::convolution.out",
        {A.tensor(F, in, order), A.tensor(F, {oc, in[1], k, k}), A.tensor(F, {oc}), A.ints({1, 1}),
         A.ints({pad, pad}), A.ints({1, 1}), A.boolean(false), A.ints({0, 0}), A.integer(1), out,
         out});
  };
  // k x k windows at stride 2 with padding (k - 2) / 2: 2x2, or 3x3 pad 1 (ResNet's).
  auto maxpool = [&](const char* label, std::vector<int64_t> in, std::vector<uint8_t> order = {},
                     int64_t k = 2, const char* kernel = "aten::max_pool2d_with_indices.out") {
    std::vector<int64_t> o{in[0], in[1], in[2] / 2, in[3] / 2};
    Value* out = A.tensor(F, o, order);
    Value* idx = A.tensor(DType::Int64, o, order);
    const int64_t pad = (k - 1) / 2;
    run(label, kernel,
        {A.tensor(F, in, order), A.ints({k, k}), A.ints({2, 2}), A.ints({pad, pad}), A.ints({1, 1}),
         A.boolean(false), out, idx, A.list({out, idx})});
  };
  std::printf("| kernel call (threads = %d) | us |\n|---|---|\n", threads);
  mm("mm 8x32 @ 32x64", 8, 32, 64);
  {
    Value* out = A.tensor(F, {8, 64});
    run("addmm [64] + 8x32 @ (64x32)^T", "aten::addmm.out",
        {A.tensor(F, {64}), A.tensor(F, {8, 32}), A.tensor(F, {32, 64}, {1, 0}), A.integer(1),
         A.integer(1), out, out});
  }
  mm("mm 16x64 @ 64x256", 16, 64, 256);
  mm("mm 128x128 @ 128x128", 128, 128, 128);
  mm("mm 512x512 @ 512x512", 512, 512, 512);
  {
    Value* out = A.tensor(F, {4, 16, 16});
    run("bmm 4x16x16 @ 4x16x16", "aten::bmm.out",
        {A.tensor(F, {4, 16, 16}), A.tensor(F, {4, 16, 16}), out, out});
  }
  conv("conv 1x3x32x32 -> 8, 3x3 pad 1 (cnn)", {1, 3, 32, 32}, 8, 3, 1);
  conv("conv 1x8x16x16 -> 16, 3x3 pad 1 (cnn)", {1, 8, 16, 16}, 16, 3, 1);
  conv("conv 1x8x16x16 -> 16, channels-last", {1, 8, 16, 16}, 16, 3, 1, {0, 2, 3, 1});
  conv("conv 359x1x8x8 -> 8, 3x3 pad 1 (digits)", {359, 1, 8, 8}, 8, 3, 1);
  conv("conv 359x8x8x8 -> 16, 3x3 pad 1 (digits)", {359, 8, 8, 8}, 16, 3, 1);
  conv("conv 1x64x56x56 -> 64, 3x3 pad 1", {1, 64, 56, 56}, 64, 3, 1);
  conv("conv 1x64x56x56 -> 64, 3x3 pad 1, channels-last", {1, 64, 56, 56}, 64, 3, 1, {0, 2, 3, 1});
  conv("conv 1x128x28x28 -> 128, 3x3 pad 1", {1, 128, 28, 28}, 128, 3, 1);
  conv("conv 1x128x28x28 -> 128, 3x3 pad 1, channels-last", {1, 128, 28, 28}, 128, 3, 1,
       {0, 2, 3, 1});
  conv("conv 1x256x14x14 -> 256, 3x3 pad 1", {1, 256, 14, 14}, 256, 3, 1);
  conv("conv 1x256x14x14 -> 256, 3x3 pad 1, channels-last", {1, 256, 14, 14}, 256, 3, 1,
       {0, 2, 3, 1});
  // The ResNet fixture's layers (batch 2), in both layouts.
  for (const auto& order : {std::vector<uint8_t>{}, std::vector<uint8_t>{0, 2, 3, 1}}) {
    const char* cl = order.empty() ? "" : ", channels-last";
    conv(("conv 2x3x32x32 -> 16, 3x3 pad 1 (resnet stem)" + std::string(cl)).c_str(),
         {2, 3, 32, 32}, 16, 3, 1, order);
    conv(("conv 2x16x16x16 -> 16, 3x3 pad 1 (resnet)" + std::string(cl)).c_str(), {2, 16, 16, 16},
         16, 3, 1, order);
    conv(("conv 2x32x8x8 -> 32, 3x3 pad 1 (resnet)" + std::string(cl)).c_str(), {2, 32, 8, 8}, 32,
         3, 1, order);
    conv(("conv 4x3x128x128 -> 16, 3x3 pad 1 (resnet_128 stem)" + std::string(cl)).c_str(),
         {4, 3, 128, 128}, 16, 3, 1, order);
    conv(("conv 4x16x64x64 -> 16, 3x3 pad 1 (resnet_128)" + std::string(cl)).c_str(),
         {4, 16, 64, 64}, 16, 3, 1, order);
    conv(("conv 4x32x32x32 -> 32, 3x3 pad 1 (resnet_128)" + std::string(cl)).c_str(),
         {4, 32, 32, 32}, 32, 3, 1, order);
  }
  maxpool("maxpool 1x8x32x32, 2x2 (cnn)", {1, 8, 32, 32});
  maxpool("maxpool 359x16x8x8, 2x2 (digits)", {359, 16, 8, 8});
  maxpool("maxpool 1x64x56x56, 2x2, channels-last", {1, 64, 56, 56}, {0, 2, 3, 1});
  // Values only (the indices unused, as in ResNet), in both layouts.
  const char* values = "pterun::max_pool2d_values.out";
  maxpool("maxpool values 4x16x128x128, 3x3 pad 1 (resnet_128)", {4, 16, 128, 128}, {}, 3, values);
  maxpool("maxpool values 4x16x128x128, 3x3 pad 1 (resnet_128), channels-last", {4, 16, 128, 128},
          {0, 2, 3, 1}, 3, values);
  return 0;
}
