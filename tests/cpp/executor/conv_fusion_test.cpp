// Convolution fusion finds conv -> batch norm -> relu / hardtanh chains with
// constant weights and statistics, and leaves alone those whose
// intermediate results something else reads; torch's decomposed hardswish
// elsewhere becomes one hardswish step.

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "pterun/executor/constant_fold.h"
#include "pterun/executor/method.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/kernels/registry.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using test::folded;
using test::inputs_and_outputs;
using test::none_idle;
using test::op_at;

std::vector<std::string> kernels_of(const std::vector<ConvFusion>& found) {
  std::vector<std::string> names;
  for (const ConvFusion& f : found) names.push_back(f.kernel != nullptr ? f.kernel : "batch norm");
  return names;
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
      EXPECT_EQ(f.args.size(),
                std::string_view(f.kernel) == kernels::kConvHardtanhKernel ? 12u : 10u);
      EXPECT_EQ(f.args.back(), f.out);
    }
  }
}

TEST(ConvFusion, BatchNormsFoldFromExternalData) {
  // cnn_external: the cnn with its weights and statistics in a .ptd file.
  // The batch norms fold from the external data's bytes; the method runs
  // fused and matches the exporter.
  const auto& entry = test::manifest()["fixtures"]["cnn_external"];
  auto program = test::load_fixture(entry);
  auto m = Method::load(program, "forward");
  const auto& registry = kernels::KernelRegistry::global();
  auto steps = [&](const char* kernel) {
    const kernels::KernelInfo* info = registry.info(kernel, Device::CPU);
    return info == nullptr ? size_t{0} : m->steps_calling(info->fn);
  };
  EXPECT_EQ(steps(kernels::kConvReluKernel), 1u);
  EXPECT_EQ(steps(kernels::kConvHardtanhKernel), 1u);
  EXPECT_EQ(steps("aten::_native_batch_norm_legit_no_training.out"), 0u);
  for (const test::Call& call : test::load_calls(entry)) {
    auto inputs = test::make_inputs(call);
    m->set_inputs(inputs);
    m->execute();
    test::expect_matches(m->output(0), call.outputs[0], call.output_dtypes[0], "cnn_external");
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

TEST(ConvFusion, MobileNetAndResNetBlocks) {
  // mobilenet_like: stem, four inverted residual blocks (relu6, then
  // hardswish), head; two blocks add their input back. resnet_like: stem,
  // two basic blocks whose second batch norm feeds the residual add and
  // relu; the second block's strided 1x1 downsample adds the main path.
  const std::string relu6 = kernels::kConvHardtanhKernel, hswish = kernels::kConvHardswishKernel,
                    add = kernels::kConvAddKernel, bn = "batch norm";
  const std::vector<std::string> mobilenet = {relu6,  relu6, add,    relu6,  relu6, bn,    hswish,
                                              hswish, add,   hswish, hswish, bn,    hswish};
  const std::string relu = kernels::kConvReluKernel, add_relu = kernels::kConvAddReluKernel;
  const std::vector<std::string> resnet = {relu, relu, add_relu, relu, bn, add_relu};
  for (auto [name, want] :
       {std::pair{"mobilenet_like", mobilenet}, std::pair{"resnet_like", resnet},
        std::pair{"resnet_like_channels_last", resnet}}) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    auto found = find_conv_fusions(d, inputs_and_outputs(d), folded(d));
    EXPECT_EQ(kernels_of(found), want);
    for (const ConvFusion& f : found) {
      if (f.kernel != nullptr && std::string_view(f.kernel) == kernels::kConvHardswishKernel) {
        EXPECT_EQ(f.idle.size(), 6u);  // batch norm, add, clamp, clamp, mul, div
        EXPECT_EQ(f.scalars.size(), 2u);
      }
      if (f.residual >= 0) {
        EXPECT_EQ(f.args[9], f.residual);
      }
    }
  }
}

TEST(ConvFusion, ActivationWithoutBatchNorm) {
  // digits_cnn: conv -> relu twice, nothing to fold.
  auto program = test::load_fixture(test::manifest()["fixtures"]["digits_cnn"]);
  const auto& d = program->method("forward");
  auto found = find_conv_fusions(d, inputs_and_outputs(d), folded(d));
  ASSERT_EQ(found.size(), 2u);
  for (const ConvFusion& f : found) {
    EXPECT_STREQ(f.kernel, kernels::kConvReluKernel);
    EXPECT_EQ(f.mean, -1);
    EXPECT_EQ(f.idle.size(), 1u);
    EXPECT_EQ(f.args[2], d.chains[f.chain].instructions[f.conv].args[2]);  // its own bias
  }
}

TEST(ConvFusion, NoConvolutionNoFusion) {
  for (const char* name : {"mlp", "gpt", "affine"}) {
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    EXPECT_TRUE(find_conv_fusions(d, inputs_and_outputs(d), none_idle(d)).empty()) << name;
  }
}

// hardswish_head: linear -> hardswish, then (h + linear(h)) -> hardswish,
// each torch's five-instruction decomposition with no convolution before.
TEST(HardswishFusion, AfterALinearLayerAndAnAdd) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["hardswish_head"]);
  const auto& d = program->method("forward");
  EXPECT_TRUE(find_conv_fusions(d, inputs_and_outputs(d), folded(d)).empty());
  auto found = find_hardswish_fusions(d, inputs_and_outputs(d), folded(d));
  ASSERT_EQ(found.size(), 2u);
  for (const PatternFusion& f : found) {
    EXPECT_STREQ(f.replacement.kernel, "aten::hardswish.out");
    EXPECT_EQ(op_at(d, f.chain, f.replacement.index), "aten::add.out");
    EXPECT_EQ(f.replacement.args, (std::vector<int32_t>{f.input, f.out, f.out}));
    ASSERT_EQ(f.idle.size(), 4u);
    EXPECT_EQ(op_at(d, f.chain, f.idle.back()), "aten::div.out");
    EXPECT_EQ(f.dropped.size(), 4u);
    EXPECT_EQ(f.scalars.size(), 2u);
  }
  // The first reads the linear layer's result, the second the residual sum.
  auto writer_of = [&](int32_t v) {
    for (size_t k = 0; k < d.chains[0].instructions.size(); ++k) {
      if (d.chains[0].instructions[k].args.back() == v) return op_at(d, 0, k);
    }
    return std::string();
  };
  EXPECT_EQ(writer_of(found[0].input), "aten::addmm.out");
  EXPECT_EQ(writer_of(found[1].input), "aten::add.out");
  // A caller that keeps an intermediate result keeps the decomposition.
  auto keep = inputs_and_outputs(d);
  keep[found[0].dropped[1].first] = true;
  EXPECT_EQ(find_hardswish_fusions(d, keep, folded(d)).size(), 1u);
}

// The MobileNet-like fixture's hardswishes all follow a convolution: the
// convolution fusion takes them, and nothing is left for this one.
TEST(HardswishFusion, ConvolutionsTakeTheirsFirst) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["mobilenet_like"]);
  const auto& d = program->method("forward");
  auto idle = folded(d);
  EXPECT_EQ(find_hardswish_fusions(d, inputs_and_outputs(d), idle).size(), 5u);
  for (const ConvFusion& f : find_conv_fusions(d, inputs_and_outputs(d), idle)) {
    for (size_t k : f.idle) idle[f.chain][k] = true;
  }
  EXPECT_TRUE(find_hardswish_fusions(d, inputs_and_outputs(d), idle).empty());
}

}  // namespace
}  // namespace pterun
