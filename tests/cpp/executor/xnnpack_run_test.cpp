// XNNPACK-delegated programs (tests/fixtures/xnnpack/) run on the CPU and
// on cuda:0 and match the outputs of ExecuTorch's own runtime, which ran the
// delegates with XNNPACK: float32 within 1e-4 relative. Quantized graphs are
// refused at load naming the node; steady-state calls allocate nothing.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "pterun/backend/device.h"
#include "pterun/backend/device_info.h"
#include "pterun/delegates/xnnpack_lowering.h"
#include "pterun/executor/method.h"
#include "pterun/kernels/registry.h"
#include "tests/cpp/alloc_counter.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using nlohmann::json;

std::string xnnpack_dir() {
  return test::fixtures_dir() + "/xnnpack";
}

const json& xnnpack_manifest() {
  static const json m = json::parse(test::read_file(xnnpack_dir() + "/manifest.json"));
  return m;
}

// float32 1e-4; float16 and bfloat16 within a few units of their precision
// (XNNPACK rounds intermediate results of fp16 nodes differently).
double tolerance(const std::string& dtype) {
  return dtype == "float32" ? 1e-4 : dtype == "float16" ? 4e-3 : dtype == "bfloat16" ? 2e-2 : 0;
}

std::vector<uint8_t> download(const Tensor& t, int device) {
  if (t.numel() == 0) return {};
  int64_t last = 0;
  for (size_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  std::vector<uint8_t> host(static_cast<size_t>(last + 1) * t.element_size());
  backend::download(device, host.data(), t.data(), host.size());
  return host;
}

// Runs every call of every fixture on `options`' device.
void run_fixtures(const MethodOptions& options) {
  for (const auto& [name, entry] : xnnpack_manifest()["fixtures"].items()) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(entry, xnnpack_dir());
    std::unique_ptr<Method> m = Method::load(program, "forward", options);
    auto calls = test::load_calls(entry, xnnpack_dir());
    for (size_t k = 0; k < calls.size(); ++k) {
      const test::Call& call = calls[k];
      auto inputs = test::make_inputs(call);
      m->set_inputs(inputs);
      m->execute();
      ASSERT_EQ(m->num_outputs(), call.outputs.size());
      for (size_t i = 0; i < call.outputs.size(); ++i) {
        const std::string where =
            name + " call " + std::to_string(k) + " output " + std::to_string(i);
        const Value& got = m->output(i);
        std::vector<uint8_t> host;
        if (m->output_on_device(i)) host = download(got.to_tensor(), m->device_index());
        test::expect_matches(got, call.outputs[i], call.output_dtypes[i], where,
                             host.empty() ? nullptr : host.data(),
                             tolerance(call.output_dtypes[i]));
      }
    }
  }
}

TEST(XnnpackRun, EveryFixtureMatchesExecuTorch) {
  run_fixtures({});
}

TEST(XnnpackRun, DelegateCallsBecomeKernelCalls) {
  // The method runs as kernel calls of xnnpack:: operators; its metadata
  // and the file's description keep the delegate.
  const json& entry = xnnpack_manifest()["fixtures"]["mobilenet"];
  auto program = test::load_fixture(entry, xnnpack_dir());
  const format::MethodDesc& file = program->method("forward");
  const format::MethodDesc& runs = program->runnable_method("forward");
  EXPECT_EQ(&runs, &program->runnable_method("forward")) << "expanded once";
  size_t delegate_calls = 0, xnn_calls = 0;
  for (const auto& instr : runs.chains[0].instructions) {
    delegate_calls += instr.kind == format::InstructionKind::DelegateCall;
    if (instr.kind == format::InstructionKind::KernelCall &&
        runs.operators[instr.index].name.rfind("xnnpack::", 0) == 0) {
      ++xnn_calls;
    }
  }
  EXPECT_EQ(delegate_calls, 0u);
  size_t nodes = 0;
  for (const auto& [type, count] : entry["xnnpack"]["forward"][0]["node_counts"].items()) {
    nodes += count.get<size_t>();
  }
  const size_t hardswish = entry["xnnpack"]["forward"][0]["node_counts"]["Hardswish"].get<size_t>();
  ASSERT_GT(hardswish, 0u);
  const size_t adds = entry["xnnpack"]["forward"][0]["node_counts"]["Add"].get<size_t>();
  ASSERT_GT(adds, 0u);
  // One kernel call per node, but for the input's transpose to NHWC (the
  // stem reads the NCHW input through it: xnnpack::conv2d_nchw), the
  // transpose of GAP's [1, 1, 1, C] result back to NCHW and its reshape
  // for the linear layer (all internal, the transpose moving only dims of
  // size 1: they share their bytes, nothing to do), the HardSwish nodes,
  // each inside the convolution it alone reads, and the residual
  // connections' Add nodes, each inside the projection (1x1 convolution)
  // whose output it alone reads.
  EXPECT_EQ(xnn_calls, nodes - 3 - hardswish - adds);
  size_t fused = 0, residuals = 0, stems = 0;
  for (const auto& instr : runs.chains[0].instructions) {
    if (instr.kind != format::InstructionKind::KernelCall) continue;
    const std::string& name = runs.operators[instr.index].name;
    fused += name == "xnnpack::conv2d_hardswish" || name == "xnnpack::depthwise_conv2d_hardswish";
    residuals += name == "xnnpack::conv2d_add";
    stems += name == "xnnpack::conv2d_nchw";
    EXPECT_NE(name, "xnnpack::hardswish");
    EXPECT_NE(name, "xnnpack::add");
    EXPECT_NE(name, "xnnpack::static_transpose");
  }
  EXPECT_EQ(fused, hardswish);
  EXPECT_EQ(residuals, adds);
  EXPECT_EQ(stems, 1u);
  EXPECT_EQ(file.chains[0].instructions.size(), 1u);
  EXPECT_EQ(file.chains[0].instructions[0].kind, format::InstructionKind::DelegateCall);
  EXPECT_EQ(runs.inputs, file.inputs);
  EXPECT_EQ(runs.outputs, file.outputs);
  // The internal values live past the file's planned memory.
  EXPECT_GT(runs.buffer_sizes[0], file.buffer_sizes[0]);
  EXPECT_EQ(program->method_meta("forward").backends(), std::vector<std::string>{"XnnpackBackend"});
  EXPECT_TRUE(program->unsupported_delegates("forward").empty());
}

TEST(XnnpackRun, ReshapesOfInputsAreViews) {
  // The transformer's attention delegates reshape their q, k and v inputs
  // (split outside the delegate) before transposing them, and reshape
  // internal values after: no reshape is left to run. The transposes read
  // views of the inputs: tensors no instruction writes, in the file's own
  // planned memory (internal values live past it).
  const json& entry = xnnpack_manifest()["fixtures"]["transformer"];
  auto program = test::load_fixture(entry, xnnpack_dir());
  const format::MethodDesc& file = program->method("forward");
  const format::MethodDesc& runs = program->runnable_method("forward");
  const auto& instrs = runs.chains[0].instructions;
  size_t reshapes = 0, views = 0;
  for (const auto& instr : instrs) {
    if (instr.kind != format::InstructionKind::KernelCall) continue;
    const std::string& name = runs.operators[instr.index].name;
    reshapes += name == "xnnpack::static_reshape";
    if (name != "xnnpack::static_transpose") continue;
    const int32_t in = instr.args[0];
    const bool written = std::any_of(instrs.begin(), instrs.end(), [&](const auto& other) {
      return !other.args.empty() && other.args.back() == in;
    });
    const format::TensorDesc& v = *runs.values[in].tensor;
    views += !written && v.storage == format::TensorStorage::Planned && v.memory_id == 1 &&
             v.memory_offset + v.nbytes <= file.buffer_sizes[0];
  }
  EXPECT_EQ(reshapes, 0u);
  EXPECT_EQ(views, 6u);  // q, k and v of both layers
}

TEST(XnnpackRun, InputViewsAndResidualsOfTheOpsFixture) {
  // ops_views_residual: its linear layer reads a reshape of the method's
  // input, now a view over the input's own bytes; conv1 + the input, then
  // ReLU, is one conv2d_add; the clamped conv2 + its input stays an add.
  const json& entry = xnnpack_manifest()["fixtures"]["ops_views_residual"];
  auto program = test::load_fixture(entry, xnnpack_dir());
  const format::MethodDesc& runs = program->runnable_method("forward");
  const format::TensorDesc& input = *runs.values[runs.inputs[0]].tensor;
  std::map<std::string, size_t> calls;
  bool fc_reads_the_input = false;
  for (const auto& instr : runs.chains[0].instructions) {
    if (instr.kind != format::InstructionKind::KernelCall) continue;
    const std::string& name = runs.operators[instr.index].name;
    ++calls[name];
    if (name != "xnnpack::fully_connected") continue;
    const format::TensorDesc& x = *runs.values[instr.args[0]].tensor;
    fc_reads_the_input = instr.args[0] != runs.inputs[0] && x.memory_id == input.memory_id &&
                         x.memory_offset == input.memory_offset && x.nbytes == input.nbytes;
  }
  EXPECT_TRUE(fc_reads_the_input);
  EXPECT_EQ(calls["xnnpack::static_reshape"], 0u);
  EXPECT_EQ(calls["xnnpack::conv2d_add"], 1u);
  EXPECT_EQ(calls["xnnpack::conv2d"], 1u);
  EXPECT_EQ(calls["xnnpack::add"], 1u);
}

TEST(XnnpackRun, EveryLoweredOperatorIsRegistered) {
  const auto& registry = kernels::KernelRegistry::global();
  for (std::string_view name : delegates::xnnpack_operator_names()) {
    EXPECT_NE(registry.find(std::string(name), Device::CPU), nullptr) << name;
    if (backend::built_with_cuda()) {
      EXPECT_NE(registry.find(std::string(name), Device::CUDA), nullptr) << name;
    }
  }
}

// Scratch and packed weights are kept between calls, so the delegated
// models allocate nothing once warm, as their plain twins. (Not the
// convolution models: oneDNN's execute allocates in the convolutions it
// runs, for their plain twins twice as often.)
TEST(XnnpackRun, SteadyStateCallsDoNotAllocate) {
  for (const char* name : {"transformer", "lstm", "mlp"}) {
    SCOPED_TRACE(name);
    const json& entry = xnnpack_manifest()["fixtures"][name];
    auto program = test::load_fixture(entry, xnnpack_dir());
    auto calls = test::load_calls(entry, xnnpack_dir());
    auto m = Method::load(program, "forward");
    auto inputs = test::make_inputs(calls[0]);
    for (int i = 0; i < 2; ++i) {
      m->set_inputs(inputs);
      m->execute();
    }
    test::start_counting_allocations();
    for (int i = 0; i < 5; ++i) {
      m->set_inputs(inputs);
      m->execute();
    }
    EXPECT_EQ(test::stop_counting_allocations(), 0) << "allocations in 5 steady-state calls";
    test::expect_matches(m->output(0), calls[0].outputs[0], calls[0].output_dtypes[0], name,
                         nullptr, 1e-4);
  }
}

TEST(XnnpackRunCuda, EveryFixtureMatchesExecuTorch) {
  if (backend::cuda_device_count() == 0) {
    GTEST_SKIP() << "no GPU: " << backend::cuda_unavailable_reason();
  }
  run_fixtures({Device::CUDA, 0});
}

}  // namespace
}  // namespace pterun
