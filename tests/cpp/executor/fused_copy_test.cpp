// In-place convolution fusions (the memory plan put the fused output over
// the convolution's input) write the convolution's own output and copy it
// over; where nothing overwrites those bytes before the last reader, the
// readers read it there and the copy goes (Method::Loader::
// skip_fused_copies), and where something does, the convolution's own
// output gets memory of its own first. Outputs still match the exporter's. And the
// decomposed hardswish after a linear layer runs as one step.

#include <gtest/gtest.h>

#include <string>

#include "pterun/executor/method.h"
#include "pterun/kernels/registry.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

size_t alias_copies(const Method& method) {
  const kernels::KernelInfo* copy =
      kernels::KernelRegistry::global().info("aten::alias_copy.out", Device::CPU);
  return copy == nullptr ? 0 : method.steps_calling(copy->fn);
}

// Runs `name` twice per recorded call (the second call reads results the
// first left in memory) against the exporter's outputs.
void expect_runs(Method& method, const char* name) {
  for (const test::Call& call : test::load_calls(test::manifest()["fixtures"][name])) {
    method.set_inputs(test::make_inputs(call));
    for (int run = 0; run < 2; ++run) {
      method.execute();
      for (size_t i = 0; i < call.outputs.size(); ++i) {
        test::expect_matches(method.output(i), call.outputs[i], call.output_dtypes[i],
                             std::string(name) + " output " + std::to_string(i));
      }
    }
  }
}

TEST(FusedCopies, MobileNetKeepsEveryFusedResultWhereThePlanPutIt) {
  // mobilenet_like: 7 fusions whose output the plan puts over their input
  // (each depthwise and 1x1 layer's input dies there); 4 readers take the
  // convolution's own output, and 3 of those readers, in-place fusions
  // themselves, write their fused output directly.
  auto program = test::load_fixture(test::manifest()["fixtures"]["mobilenet_like"]);
  auto method = Method::load(program, "forward");
  EXPECT_EQ(alias_copies(*method), 0u);
  expect_runs(*method, "mobilenet_like");
}

TEST(HardswishFusion, RunsAsOneStepAndMatchesTheExporter) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["hardswish_head"]);
  auto method = Method::load(program, "forward");
  const auto& registry = kernels::KernelRegistry::global();
  EXPECT_EQ(method->steps_calling(registry.info("aten::hardswish.out", Device::CPU)->fn), 2u);
  EXPECT_EQ(method->steps_calling(registry.info("aten::div.out", Device::CPU)->fn), 0u);
  EXPECT_EQ(method->steps_calling(registry.info("aten::clamp.out", Device::CPU)->fn), 0u);
  expect_runs(*method, "hardswish_head");
}

TEST(FusedCopies, ReadersReadAnOwnOutputOfItsOwnWhereLaterStepsReuseTheBytes) {
  // resnet_like: each block's result is read two layers on, after another
  // convolution has written the bytes the plan gives every short-lived
  // convolution output (or by the pooling whose output the plan puts in
  // the same bytes): those convolutions' own outputs get memory of their
  // own, so their readers read them there and the three copies go. Each
  // call runs twice on the same inputs: the second reads what the first
  // left in that memory.
  for (const char* name : {"resnet_like", "resnet_like_channels_last", "cnn"}) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    auto method = Method::load(program, "forward");
    expect_runs(*method, name);
  }
  auto program = test::load_fixture(test::manifest()["fixtures"]["resnet_like"]);
  EXPECT_EQ(alias_copies(*Method::load(program, "forward")), 0u);
}

}  // namespace
}  // namespace pterun
