// Every fixture that runs on the CPU also runs on cuda:0 and matches the
// outputs torch computed at export time; device inputs (docs/python-api.md, B7), one wait per
// call (B19), and the error for CUDA without a GPU (B25). The GPU tests skip
// on a machine without one.

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "pterun/backend/device.h"
#include "pterun/backend/device_info.h"
#include "pterun/core/stats.h"
#include "pterun/executor/method.h"
#include "pterun/executor/runner.h"
#include "pterun/kernels/registry.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using nlohmann::json;

constexpr MethodOptions kCuda0{Device::CUDA, 0};

#define SKIP_WITHOUT_GPU()                                            \
  if (backend::cuda_device_count() == 0) {                            \
    GTEST_SKIP() << "no GPU: " << backend::cuda_unavailable_reason(); \
  }

// A host copy of a device tensor's bytes, from data() to its last element
// (its strides are the dim order's, all positive).
std::vector<uint8_t> download(const Tensor& t, int device) {
  if (t.numel() == 0) return {};
  int64_t last = 0;
  for (size_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  std::vector<uint8_t> host(static_cast<size_t>(last + 1) * t.element_size());
  backend::download(device, host.data(), t.data(), host.size());
  return host;
}

void expect_output(const Method& m, size_t i, const test::Call& call, const std::string& where) {
  const Value& got = m.output(i);
  if (!got.is_tensor()) {
    test::expect_matches(got, call.outputs[i], call.output_dtypes[i], where);
    return;
  }
  ASSERT_TRUE(m.output_on_device(i)) << where;
  auto host = download(got.to_tensor(), m.device_index());
  test::expect_matches(got, call.outputs[i], call.output_dtypes[i], where, host.data());
}

TEST(CudaFixturesRun, EveryFixtureMatchesTheExporter) {
  SKIP_WITHOUT_GPU();
  for (const auto& [name, entry] : test::manifest()["fixtures"].items()) {
    SCOPED_TRACE(name);
    // One fixture's failure (a missing kernel, say) is reported and the
    // others still run.
    try {
      auto program = test::load_fixture(entry);
      std::map<std::string, std::unique_ptr<Method>> methods;
      auto calls = test::load_calls(entry);
      for (size_t k = 0; k < calls.size(); ++k) {
        const test::Call& call = calls[k];
        auto& m = methods[call.method];
        if (!m) m = Method::load(program, call.method, kCuda0);
        ASSERT_EQ(m->device(), Device::CUDA);
        auto inputs = test::make_inputs(call);
        m->set_inputs(inputs);
        m->execute();
        ASSERT_EQ(m->num_outputs(), call.outputs.size());
        for (size_t i = 0; i < call.outputs.size(); ++i) {
          expect_output(*m, i, call,
                        name + " call " + std::to_string(k) + " output " + std::to_string(i));
        }
      }
    } catch (const Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
}

TEST(CudaFixturesRun, BatchNormsFoldIntoConvolutions) {
  // cnn: conv -> batch norm -> relu, conv -> batch norm -> relu6. On the
  // GPU as on the CPU the batch norms fold into the convolutions' weights
  // (computed on the host, uploaded) and the activations run in the
  // convolutions' epilogue; the outputs still match the exporter's.
  SKIP_WITHOUT_GPU();
  const auto& registry = kernels::KernelRegistry::global();
  for (const char* name : {"cnn", "cnn_channels_last"}) {
    SCOPED_TRACE(name);
    const json& entry = test::manifest()["fixtures"][name];
    auto program = test::load_fixture(entry);
    auto m = Method::load(program, "forward", kCuda0);
    auto steps = [&](const char* kernel) {
      const kernels::KernelInfo* info = registry.info(kernel, Device::CUDA);
      EXPECT_NE(info, nullptr) << kernel;
      return info == nullptr ? size_t{0} : m->steps_calling(info->fn);
    };
    EXPECT_EQ(steps("pterun::convolution_relu.out"), 1u);
    EXPECT_EQ(steps("pterun::convolution_hardtanh.out"), 1u);
    EXPECT_EQ(steps("aten::_native_batch_norm_legit_no_training.out"), 0u);
    auto calls = test::load_calls(entry);
    for (size_t k = 0; k < calls.size(); ++k) {
      auto inputs = test::make_inputs(calls[k]);
      m->set_inputs(inputs);
      m->execute();
      expect_output(*m, 0, calls[k], std::string(name) + " call " + std::to_string(k));
    }
  }
}

// The `affine` fixture computes x * 3 + 2 on a 2x2 float input, its output
// planned over its input: {1, 2, 3, 4} gives {5, 8, 11, 14}.
const std::vector<float> kX = {1, 2, 3, 4};
const std::vector<int64_t> kSizes = {2, 2};
const std::vector<float> kExpected = {5, 8, 11, 14};

std::shared_ptr<const Program> affine_program() {
  return Program::load_file(test::fixtures_dir() + "/affine.pte");
}

std::vector<float> floats_of(const TensorResult& r) {
  std::vector<float> out(r.nbytes() / sizeof(float));
  if (r.device_index >= 0) {
    backend::download(r.device_index, out.data(), r.data, r.nbytes());
  } else {
    std::memcpy(out.data(), r.data, r.nbytes());
  }
  return out;
}

TEST(CudaMethod, RunsFromHostAndDeviceInputsWithOneWaitPerCall) {
  SKIP_WITHOUT_GPU();
  auto runner = MethodRunner::create(Method::load(affine_program(), "forward", kCuda0));
  backend::DeviceBuffer x(0, kX.size() * sizeof(float));
  backend::upload(0, x.data(), kX.data(), kX.size() * sizeof(float));
  std::vector<InputArg> host_inputs = {InputArg::tensor(kX.data(), DType::Float32, kSizes)};
  std::vector<InputArg> device_inputs = {
      InputArg::cuda_tensor(x.data(), 0, DType::Float32, kSizes)};
  for (int round = 0; round < 3; ++round) {
    for (const auto* inputs : {&host_inputs, &device_inputs}) {
      int64_t syncs = stats::get(stats::Counter::DeviceSyncs);
      auto out = runner->call(*inputs, /*clone=*/true);
      EXPECT_EQ(stats::get(stats::Counter::DeviceSyncs) - syncs, 1) << "B19: one wait per call";
      ASSERT_EQ(out.size(), 1u);
      const auto& r = std::get<TensorResult>(out[0]);
      EXPECT_EQ(r.device, "cuda:0");
      EXPECT_EQ(floats_of(r), kExpected) << "round " << round;
    }
  }
}

TEST(CudaMethod, OutputBuffersTakeTurnsWithoutNewAllocations) {
  SKIP_WITHOUT_GPU();
  // B18 on a GPU: while a result lives the next call writes elsewhere; once
  // dropped its buffer is reused.
  auto runner = MethodRunner::create(Method::load(affine_program(), "forward", kCuda0));
  std::vector<InputArg> inputs = {InputArg::tensor(kX.data(), DType::Float32, kSizes)};
  auto a = runner->call(inputs, true);
  auto b = runner->call(inputs, true);
  EXPECT_NE(std::get<TensorResult>(a[0]).data, std::get<TensorResult>(b[0]).data);
  // With `a` and `b` both alive a third call would need a third buffer; the
  // loop below keeps one result alive at a time, so two buffers take turns.
  b.clear();
  int64_t allocs = stats::get(stats::Counter::DeviceAllocs);
  for (int i = 0; i < 6; ++i) {
    a = runner->call(inputs, true);
    EXPECT_EQ(floats_of(std::get<TensorResult>(a[0])), kExpected);
  }
  EXPECT_EQ(stats::get(stats::Counter::DeviceAllocs), allocs);
}

TEST(CudaMethod, CpuMethodCopiesCudaInputsDown) {
  SKIP_WITHOUT_GPU();
  // B7: a CPU method given a tensor on a GPU, dense and strided (the
  // transpose of x^T is x).
  auto m = Method::load(affine_program(), "forward");
  backend::DeviceBuffer x(0, kX.size() * sizeof(float));
  backend::upload(0, x.data(), kX.data(), kX.size() * sizeof(float));
  m->set_input(0, InputArg::cuda_tensor(x.data(), 0, DType::Float32, kSizes));
  m->execute();
  const Tensor& out = m->output(0).to_tensor();
  EXPECT_EQ(std::vector<float>(out.data_as<const float>(), out.data_as<const float>() + 4),
            kExpected);

  std::vector<float> xt = {1, 3, 2, 4};  // x transposed, read back with strides (1, 2)
  backend::upload(0, x.data(), xt.data(), xt.size() * sizeof(float));
  std::vector<int64_t> strides = {1, 2};
  m->set_input(0, InputArg::cuda_tensor(x.data(), 0, DType::Float32, kSizes, strides));
  m->execute();
  EXPECT_EQ(std::vector<float>(out.data_as<const float>(), out.data_as<const float>() + 4),
            kExpected);
}

TEST(CudaMethod, StridedHostAndDeviceInputsAreReordered) {
  SKIP_WITHOUT_GPU();
  auto runner = MethodRunner::create(Method::load(affine_program(), "forward", kCuda0));
  std::vector<float> xt = {1, 3, 2, 4};
  std::vector<int64_t> strides = {1, 2};
  backend::DeviceBuffer x(0, xt.size() * sizeof(float));
  backend::upload(0, x.data(), xt.data(), xt.size() * sizeof(float));
  std::vector<InputArg> host = {InputArg::tensor(xt.data(), DType::Float32, kSizes, strides)};
  std::vector<InputArg> device = {
      InputArg::cuda_tensor(x.data(), 0, DType::Float32, kSizes, strides)};
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(floats_of(std::get<TensorResult>(runner->call(host, true)[0])), kExpected);
    EXPECT_EQ(floats_of(std::get<TensorResult>(runner->call(device, true)[0])), kExpected);
  }
}

TEST(CudaMethod, InputsFromAnotherGpuAreCopied) {
  if (backend::cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  auto runner = MethodRunner::create(Method::load(affine_program(), "forward", kCuda0));
  backend::DeviceBuffer x(1, kX.size() * sizeof(float));
  backend::upload(1, x.data(), kX.data(), kX.size() * sizeof(float));
  std::vector<InputArg> inputs = {InputArg::cuda_tensor(x.data(), 1, DType::Float32, kSizes)};
  EXPECT_EQ(floats_of(std::get<TensorResult>(runner->call(inputs, true)[0])), kExpected);
}

TEST(CudaLoad, WithoutGpuSaysWhy) {
  if (backend::cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  // B25: loading on "cuda" fails with InvalidState (RuntimeError) saying
  // why, before any missing-kernel error.
  auto program = affine_program();
  try {
    Method::load(program, "forward", kCuda0);
    FAIL() << "loading on cuda:0 without a GPU succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidState) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
  // A CPU method given a CUDA tensor fails on that input (B6, B9).
  auto m = Method::load(program, "forward");
  float x[4] = {};
  try {
    m->set_input(0, InputArg::cuda_tensor(x, 0, DType::Float32, kSizes));
    FAIL() << "a CUDA input without a GPU was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidState) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("input 0 of method 'forward': ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace pterun
