// Convolution fusion finds conv -> batch norm -> relu / hardtanh chains with
// constant weights and statistics, and leaves alone those whose
// intermediate results something else reads.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

std::vector<bool> inputs_and_outputs(const format::MethodDesc& d) {
  std::vector<bool> keep(d.values.size(), false);
  for (int32_t v : d.inputs) keep[v] = true;
  for (int32_t v : d.outputs) keep[v] = true;
  return keep;
}

std::vector<std::vector<bool>> none_idle(const format::MethodDesc& d) {
  std::vector<std::vector<bool>> idle;
  for (const auto& chain : d.chains) idle.emplace_back(chain.instructions.size(), false);
  return idle;
}

std::string op_at(const format::MethodDesc& d, size_t chain, size_t k) {
  return d.operators[d.chains[chain].instructions[k].index].full_name();
}

TEST(ConvFusion, CnnFoldsBothBatchNormsAndActivations) {
  // cnn: conv -> batch norm -> relu -> max pool, conv -> batch norm -> relu6.
  for (const char* name : {"cnn", "cnn_channels_last"}) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    auto found = find_conv_fusions(d, inputs_and_outputs(d), none_idle(d));
    ASSERT_EQ(found.size(), 2u);
    EXPECT_STREQ(found[0].kernel, kernels::kConvReluKernel);
    EXPECT_STREQ(found[1].kernel, kernels::kConvHardtanhKernel);
    for (const ConvFusion& f : found) {
      EXPECT_EQ(op_at(d, f.chain, f.conv), "aten::convolution.out");
      ASSERT_EQ(f.idle.size(), 2u);
      EXPECT_EQ(op_at(d, f.chain, f.idle[0]), "aten::_native_batch_norm_legit_no_training.out");
      EXPECT_GE(f.conv_bias, 0);  // the cnn's convolutions have a bias
      EXPECT_GE(f.bn_weight, 0);
      // The fused kernel's arguments: the convolution's, the folded bias in
      // the running mean's place, hardtanh's bounds, then the activation's
      // out.
      EXPECT_EQ(f.args[2], f.mean);
      EXPECT_EQ(f.args.size(), f.kernel == kernels::kConvHardtanhKernel ? 12u : 10u);
      EXPECT_EQ(f.args.back(), f.out);
    }
  }
}

TEST(ConvFusion, KeptIntermediatesAreNotFused) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["cnn"]);
  const auto& d = program->method("forward");
  auto first = find_conv_fusions(d, inputs_and_outputs(d), none_idle(d));
  ASSERT_FALSE(first.empty());
  // A caller that needs the normalised value keeps the activation out of
  // the fusion; one that needs the convolution's result keeps it all out.
  auto keep = inputs_and_outputs(d);
  keep[first[0].dropped.back().first] = true;
  auto found = find_conv_fusions(d, keep, none_idle(d));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].kernel, nullptr);
  EXPECT_EQ(found[0].idle.size(), 1u);
  keep[first[0].dropped.front().first] = true;
  found = find_conv_fusions(d, keep, none_idle(d));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_STREQ(found[0].kernel, kernels::kConvHardtanhKernel);
}

TEST(ConvFusion, NoConvolutionNoFusion) {
  for (const char* name : {"mlp", "gpt", "affine"}) {
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    EXPECT_TRUE(find_conv_fusions(d, inputs_and_outputs(d), none_idle(d)).empty()) << name;
  }
}

}  // namespace
}  // namespace pterun
