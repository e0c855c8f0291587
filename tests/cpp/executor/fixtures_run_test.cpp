// Every fixture runs on CPU through the C++ API and matches the outputs
// torch computed at export time; steady-state calls allocate nothing.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "pterun/core/threads.h"
#include "pterun/executor/method.h"
#include "pterun/kernels/common/dtype_util.h"
#include "tests/cpp/alloc_counter.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using nlohmann::json;
using test::Call;
using test::expect_matches;
using test::load_calls;
using test::load_fixture;
using test::make_inputs;

// Logical-order values of a host tensor as doubles.
std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  kernels::visit(t.dtype(), kernels::Family::RealHBBF16, "test", [&]<typename T>() {
    const T* p = t.data_as<const T>();
    for (int64_t linear = 0; linear < t.numel(); ++linear) {
      int64_t rem = linear, off = 0;
      for (size_t d = t.dim(); d-- > 0;) {
        off += (rem % t.size(d)) * t.stride(d);
        rem /= t.size(d);
      }
      out[linear] = kernels::convert<double>(p[off]);
    }
  });
  return out;
}

TEST(FixturesRun, EveryFixtureMatchesTheExporter) {
  for (const auto& [name, entry] : test::manifest()["fixtures"].items()) {
    SCOPED_TRACE(name);
    auto program = load_fixture(entry);
    std::map<std::string, std::unique_ptr<Method>> methods;
    auto calls = load_calls(entry);
    for (size_t k = 0; k < calls.size(); ++k) {
      const Call& call = calls[k];
      auto& m = methods[call.method];
      if (!m) m = Method::load(program, call.method);
      auto inputs = make_inputs(call);
      m->set_inputs(inputs);
      m->execute();
      ASSERT_EQ(m->num_outputs(), call.outputs.size());
      for (size_t i = 0; i < call.outputs.size(); ++i) {
        expect_matches(m->output(i), call.outputs[i], call.output_dtypes[i],
                       name + " call " + std::to_string(k) + " output " + std::to_string(i));
      }
    }
  }
}

TEST(FixturesRun, RepeatedExecuteGivesTheSameOutputs) {
  // B11: execute() twice without new inputs, even where the plan reuses the
  // input's memory for later values (the `affine` fixture, x * 3 + 2, plans
  // its output over its input).
  auto program = Program::load_file(test::fixtures_dir() + "/affine.pte");
  const auto& desc = program->method("forward");
  const auto& in = *desc.values[desc.inputs[0]].tensor;
  const auto& out = *desc.values[desc.outputs[0]].tensor;
  ASSERT_EQ(in.memory_id, out.memory_id);
  ASSERT_EQ(in.memory_offset, out.memory_offset) << "the fixture no longer plans out over in";
  auto m = Method::load(program, "forward");
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<int64_t> sizes = {2, 2};
  m->set_input(0, InputArg::tensor(x.data(), DType::Float32, sizes));
  for (int run = 0; run < 3; ++run) {
    m->execute();
    auto v = values_of(m->output(0).to_tensor());
    EXPECT_EQ(v, (std::vector<double>{5, 8, 11, 14})) << "run " << run;
  }
}

// Planned memory, kernel scratch, oneDNN plans, packed weights and the
// helper threads are kept between calls, so steady-state calls allocate
// nothing: with one thread and with two (the convolution models split
// their batch over the helper, which keeps scratch of its own).
TEST(FixturesRun, SteadyStateCallsDoNotAllocate) {
  const int threads_before = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const char* name : {"mlp", "gpt", "llama_block", "chain8", "cnn", "digits_cnn",
                             "mobilenet_like", "resnet_like", "resnet_like_channels_last"}) {
      SCOPED_TRACE(std::string(name) + ", " + std::to_string(threads) + " threads");
      const json& entry = test::manifest()["fixtures"][name];
      auto program = load_fixture(entry);
      auto calls = load_calls(entry);
      auto m = Method::load(program, calls[0].method);
      auto inputs = make_inputs(calls[0]);
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
      // The calls computed what the exporter did.
      for (size_t i = 0; i < calls[0].outputs.size(); ++i) {
        expect_matches(m->output(i), calls[0].outputs[i], calls[0].output_dtypes[i],
                       std::string(name) + " output " + std::to_string(i));
      }
    }
  }
  set_num_threads(threads_before);
}

}  // namespace
}  // namespace pterun
