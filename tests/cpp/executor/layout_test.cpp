// The channels-last choice (executor/layout.h): a network with depthwise
// convolutions, or whose convolutions all have 16-128 output channels,
// keeps its activations channels-last between them, and nothing that is an
// input, an output or kept changes layout; other networks keep the
// exporter's layouts.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "pterun/executor/layout.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using test::inputs_and_outputs;

TEST(ChannelsLast, DepthwiseNetworkKeepsActivationsChannelsLast) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["mobilenet_like"]);
  const auto& d = program->method("forward");
  const auto chosen = find_channels_last_values(d, inputs_and_outputs(d));
  const std::set<int32_t> set(chosen.begin(), chosen.end());
  ASSERT_FALSE(set.empty());
  for (int32_t v : d.inputs) EXPECT_EQ(set.count(v), 0u);
  for (int32_t v : d.outputs) EXPECT_EQ(set.count(v), 0u);
  size_t depthwise = 0;
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      if (d.operators[instr.index].full_name() != "aten::convolution.out") continue;
      const auto& w = *d.values[instr.args[1]].tensor;
      if (w.sizes[1] != 1 || d.values[instr.args[8]].int_value != w.sizes[0]) continue;
      ++depthwise;
      // Both sides of every depthwise layer (inside the network).
      EXPECT_EQ(set.count(instr.args[0]), 1u);
      EXPECT_EQ(set.count(instr.args[9]), 1u);
    }
  }
  EXPECT_EQ(depthwise, 4u);
  for (int32_t v : chosen) {
    const auto& t = *d.values[v].tensor;
    EXPECT_EQ(t.dtype, DType::Float32);
    EXPECT_EQ(t.sizes.size(), 4u);
    EXPECT_GT(t.sizes[2] * t.sizes[3], 1);  // the pooled [1, C, 1, 1] stays as it is
  }
  // Values the caller keeps are never chosen.
  std::vector<bool> keep(d.values.size(), false);
  for (int32_t v : chosen) keep[v] = true;
  for (int32_t v : d.inputs) keep[v] = true;
  for (int32_t v : d.outputs) keep[v] = true;
  EXPECT_TRUE(find_channels_last_values(d, keep).empty());
}

// Every convolution of the ResNet-like fixture has 16 or 32 output
// channels: its activations go channels-last between them too.
TEST(ChannelsLast, NetworkOfMidSizedConvolutionsGoesChannelsLast) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["resnet_like"]);
  const auto& d = program->method("forward");
  const auto chosen = find_channels_last_values(d, inputs_and_outputs(d));
  const std::set<int32_t> set(chosen.begin(), chosen.end());
  for (int32_t v : d.inputs) EXPECT_EQ(set.count(v), 0u);
  for (int32_t v : d.outputs) EXPECT_EQ(set.count(v), 0u);
  size_t convolutions = 0;
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      if (d.operators[instr.index].full_name() != "aten::convolution.out") continue;
      ++convolutions;
      EXPECT_EQ(set.count(instr.args[9]), 1u) << "convolution " << convolutions << "'s output";
    }
  }
  EXPECT_GE(convolutions, 5u);
}

// Networks with a convolution of fewer than 16 output channels (half an
// AVX-512 vector) or none keep the exporter's layouts.
TEST(ChannelsLast, NetworksWithNarrowOrNoConvolutionsKeepTheirLayouts) {
  for (const char* name : {"cnn", "digits_cnn", "mlp"}) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    EXPECT_TRUE(find_channels_last_values(d, inputs_and_outputs(d)).empty());
  }
}

}  // namespace
}  // namespace pterun
