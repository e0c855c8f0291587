// The quantized chains the loader runs on integer kernels, found from the
// exported PT2E fixtures' instructions alone (tests/fixtures/quant).

#include "pterun/executor/quant_fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "pterun/executor/quant_check.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

std::shared_ptr<const Program> load_quant(const std::string& name) {
  nlohmann::json entry;
  entry["files"]["pte"] = "quant/" + name + ".pte";
  return test::load_fixture(entry);
}

std::map<std::string, int> fused_kernels(const format::MethodDesc& d) {
  std::vector<bool> keep(d.values.size(), false);
  for (int32_t v : d.inputs) keep[v] = true;
  for (int32_t v : d.outputs) keep[v] = true;
  std::map<std::string, int> kernels;
  for (const QuantFusion& f : find_quant_fusions(d, keep)) ++kernels[f.kernel];
  return kernels;
}

TEST(QuantFusion, FindsEveryStaticChainOfTheCnn) {
  auto program = load_quant("cnn_static");
  auto kernels = fused_kernels(program->method("forward"));
  EXPECT_EQ(kernels[kernels::kQuantizedConv2dKernel], 3);  // conv, depthwise, strided
  EXPECT_EQ(kernels[kernels::kQuantizedLinearKernel], 1);  // permute_copy + addmm
  EXPECT_EQ(kernels[kernels::kQuantizedMeanKernel], 1);
  EXPECT_EQ(kernels["quantized_decomposed::add.out"], 1);
  EXPECT_EQ(kernels["aten::max_pool2d_with_indices.out"], 1);
}

TEST(QuantFusion, EachFusionIdlesItsChainAndReadsTheQuantizedInput) {
  auto program = load_quant("mlp_static");
  const auto& d = program->method("forward");
  std::vector<bool> keep(d.values.size(), false);
  const auto fusions = find_quant_fusions(d, keep);
  ASSERT_EQ(fusions.size(), 3u);
  for (const QuantFusion& f : fusions) {
    // dequantize (input), dequantize_per_channel (weight), permute_copy,
    // addmm, and relu on the first two layers.
    EXPECT_GE(f.idle.size(), 4u);
    ASSERT_EQ(f.reads.size(), 1u);
    EXPECT_EQ(d.values[f.reads[0].first].tensor->dtype, DType::Int8);
    EXPECT_EQ(d.values[f.out].tensor->dtype, DType::Int8);
  }
}

TEST(QuantFusion, DynamicQuantizationAndKeptValuesAreLeftAlone) {
  for (const char* name : {"mlp_dynamic_per_tensor", "mlp_dynamic_per_channel", "per_token"}) {
    auto program = load_quant(name);
    EXPECT_TRUE(fused_kernels(program->method("forward")).empty()) << name;
  }
  // Every value kept: no intermediate may be dropped.
  auto program = load_quant("mlp_static");
  const auto& d = program->method("forward");
  EXPECT_TRUE(find_quant_fusions(d, std::vector<bool>(d.values.size(), true)).empty());
}

TEST(QuantCheck, TheFixturesPassTheLoadCheck) {
  for (const char* name :
       {"cnn_static", "mlp_static", "mlp_static_per_tensor", "mlp_dynamic_per_tensor",
        "mlp_dynamic_per_channel", "per_token", "per_channel_group"}) {
    auto program = load_quant(name);
    EXPECT_NO_THROW(check_quant_params(program->method("forward"))) << name;
  }
}

// XNNPACK's static int8 files: the Convert to int8 before the first fully
// connected layer and the Convert back after the last run inside the
// layer, which then reads or writes float32; the Convert and the
// transpose to NHWC before the first convolution run inside it
// (find_quant_io_fusions).
TEST(QuantIoFusion, ConvertsAroundXnnpackLayers) {
  auto fusions_of = [](const format::MethodDesc& d, const std::vector<bool>& keep) {
    std::vector<std::vector<bool>> idle;
    for (const auto& chain : d.chains) idle.emplace_back(chain.instructions.size(), false);
    return find_quant_io_fusions(d, keep, idle);
  };
  auto op = [](const format::MethodDesc& d, size_t k) {
    return d.operators[d.chains[0].instructions[k].index].full_name();
  };
  const std::string quantize = "quantized_decomposed::quantize_per_tensor.out";
  for (auto [name, count] : {std::pair{"q_mlp_static", 2u}, std::pair{"q_cnn_static", 2u}}) {
    SCOPED_TRACE(name);
    nlohmann::json entry;
    entry["files"]["pte"] = std::string("xnnpack/") + name + ".pte";
    auto program = test::load_fixture(entry);
    const format::MethodDesc& d = program->runnable_method("forward");
    std::vector<bool> keep(d.values.size(), false);
    for (int32_t v : d.inputs) keep[v] = true;
    for (int32_t v : d.outputs) keep[v] = true;
    const auto found = fusions_of(d, keep);
    ASSERT_EQ(found.size(), count);
    bool reads_input = false, writes_output = false;
    for (const PatternFusion& f : found) {
      EXPECT_EQ(f.replacement.args[0], f.input);
      EXPECT_EQ(f.replacement.args.back(), f.out);
      EXPECT_EQ(f.idle.size(), f.dropped.size());
      reads_input = reads_input || f.input == d.inputs[0];
      writes_output = writes_output || f.out == d.outputs[0];
      if (std::string(f.replacement.kernel) == kernels::kQuantizedConv2dFloatKernel) {
        // The stem: quantize, transpose, convolution.
        EXPECT_EQ(op(d, f.replacement.index), "xnnpack::quantized_conv2d");
        ASSERT_EQ(f.idle.size(), 2u);
        EXPECT_EQ(op(d, f.idle[0]), quantize);
        EXPECT_EQ(op(d, f.idle[1]), "xnnpack::static_transpose");
        continue;
      }
      EXPECT_STREQ(f.replacement.kernel, kernels::kQuantizedLinearFloatKernel);
      EXPECT_EQ(op(d, f.replacement.index), kernels::kQuantizedLinearKernel);
      ASSERT_EQ(f.replacement.args.size(), 13u);
      EXPECT_EQ(f.replacement.args[11], f.out);
    }
    // The first layer reads the method's float32 input, the last writes its
    // float32 output (the dequantize running nothing).
    EXPECT_TRUE(reads_input);
    ASSERT_TRUE(writes_output);
    auto writer = [&](const std::vector<PatternFusion>& fs) {
      return std::find_if(fs.begin(), fs.end(),
                          [&](const PatternFusion& f) { return f.out == d.outputs[0]; });
    };
    const auto last = writer(found);
    EXPECT_EQ(op(d, last->idle.back()), "quantized_decomposed::dequantize_per_tensor.out");
    // An int8 value the caller keeps stays: its Convert runs.
    keep[last->dropped.back().first] = true;
    const auto kept = fusions_of(d, keep);
    EXPECT_EQ(kept.size(), count - 1);
    EXPECT_EQ(writer(kept), kept.end());
  }
  // The PT2E files without a delegate have no instruction of these layers
  // (the loader fuses their chains).
  auto program = load_quant("mlp_static");
  const auto& d = program->method("forward");
  EXPECT_TRUE(fusions_of(d, std::vector<bool>(d.values.size(), false)).empty());
}

}  // namespace
}  // namespace pterun
