// The quantized chains the loader runs on integer kernels, found from the
// exported PT2E fixtures' instructions alone (tests/fixtures/quant).

#include "pterun/executor/quant_fusion.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "pterun/executor/quant_check.h"
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

}  // namespace
}  // namespace pterun
