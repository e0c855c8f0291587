// RMS norm fusion finds torch's decomposed RMSNorm (the square, mean, add,
// rsqrt and products, and the casts an LLM export puts around them) and
// leaves alone one whose intermediate the caller keeps.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/program/program.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using test::folded;
using test::inputs_and_outputs;
using test::none_idle;
using test::op_at;

TEST(RmsNormFusion, LlamaBlockNorms) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["llama_block"]);
  const auto& d = program->method("forward");
  const auto found = find_rms_norm_fusions(d, inputs_and_outputs(d), folded(d));
  ASSERT_EQ(found.size(), 2u);
  for (const PatternFusion& f : found) {
    EXPECT_STREQ(f.replacement.kernel, kernels::kRmsNormKernel);
    // pow, mean, add, rsqrt, mul run nothing; the weight's mul runs the kernel.
    EXPECT_EQ(op_at(d, f.chain, f.replacement.index), "aten::mul.out");
    ASSERT_EQ(f.idle.size(), 5u);
    EXPECT_EQ(op_at(d, f.chain, f.idle[0]), "aten::pow.Tensor_Scalar_out");
    ASSERT_EQ(f.replacement.args.size(), 5u);  // x, eps, weight, out, and the returned out
    EXPECT_EQ(f.replacement.args[0], f.input);
    EXPECT_EQ(f.replacement.args[3], f.out);
    const auto& eps = *d.values[f.replacement.args[1]].tensor;
    EXPECT_EQ(eps.numel, 1);
    const auto& w = *d.values[f.replacement.args[2]].tensor;
    EXPECT_TRUE(w.is_constant());
    EXPECT_EQ(w.sizes, (std::vector<int64_t>{64}));
    EXPECT_EQ(d.values[f.out].tensor->sizes, (std::vector<int64_t>{1, 16, 64}));
  }
}

TEST(RmsNormFusion, WidenedLlmExportReadsTheHalfPrecisionInput) {
  auto program = Program::load_file(test::fixtures_dir() + "/llm/llama_bf16.pte");
  const auto& d = program->method("forward");
  const auto found = find_rms_norm_fusions(d, inputs_and_outputs(d), folded(d));
  ASSERT_EQ(found.size(), 5u);  // two a layer, and the last
  for (const PatternFusion& f : found) {
    // _to_copy, mul, mean, add, rsqrt, mul, _to_copy idle; the weight's mul runs it.
    ASSERT_EQ(f.idle.size(), 7u);
    EXPECT_EQ(op_at(d, f.chain, f.idle.front()), "aten::_to_copy.out");
    EXPECT_EQ(d.values[f.input].tensor->dtype, DType::BFloat16);
    EXPECT_EQ(d.values[f.replacement.args[1]].tensor->dtype, DType::Float32);  // the steps'
    EXPECT_EQ(d.values[f.out].tensor->dtype, DType::BFloat16);
  }
}

TEST(RmsNormFusion, AKeptIntermediateKeepsTheSteps) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["llama_block"]);
  const auto& d = program->method("forward");
  const auto first = find_rms_norm_fusions(d, inputs_and_outputs(d), folded(d));
  ASSERT_EQ(first.size(), 2u);
  auto keep = inputs_and_outputs(d);
  keep[first[0].dropped[1].first] = true;  // the first norm's mean
  const auto found = find_rms_norm_fusions(d, keep, folded(d));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].out, first[1].out);
}

TEST(RmsNormFusion, GptHasNone) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["gpt"]);
  const auto& d = program->method("forward");
  EXPECT_TRUE(find_rms_norm_fusions(d, inputs_and_outputs(d), none_idle(d)).empty());
}

}  // namespace
}  // namespace pterun
