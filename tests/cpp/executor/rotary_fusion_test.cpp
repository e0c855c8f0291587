// Rotary fusion finds torch's rotate-half rotary embedding (mul, slice,
// neg, slice, cat, mul, add) and leaves alone one whose intermediate the
// caller keeps.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using test::folded;
using test::inputs_and_outputs;
using test::none_idle;
using test::op_at;

TEST(RotaryFusion, LlamaBlockQueriesAndKeys) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["llama_block"]);
  const auto& d = program->method("forward");
  const auto found = find_rotary_fusions(d, inputs_and_outputs(d), none_idle(d));
  ASSERT_EQ(found.size(), 2u);
  for (const PatternFusion& f : found) {
    EXPECT_STREQ(f.replacement.kernel, kernels::kRotaryHalfKernel);
    EXPECT_EQ(op_at(d, f.chain, f.replacement.index), "aten::add.out");
    ASSERT_EQ(f.idle.size(), 6u);
    ASSERT_EQ(f.replacement.args.size(), 5u);  // x, cos, sin, out, and the returned out
    EXPECT_EQ(f.replacement.args[0], f.input);
    EXPECT_EQ(f.replacement.args[3], f.out);
    // cos and sin: the block's constant tables, [16, 16].
    for (size_t i : {1u, 2u}) {
      const auto& t = *d.values[f.replacement.args[i]].tensor;
      EXPECT_TRUE(t.is_constant());
      EXPECT_EQ(t.sizes, (std::vector<int64_t>{16, 16}));
    }
    int slices = 0;
    for (size_t k : f.idle) slices += op_at(d, f.chain, k) == "aten::slice_copy.Tensor_out";
    EXPECT_EQ(slices, 2);
  }
  // q [1, 4, 16, 16] first, then k [1, 2, 16, 16].
  EXPECT_EQ(d.values[found[0].out].tensor->sizes, (std::vector<int64_t>{1, 4, 16, 16}));
  EXPECT_EQ(d.values[found[1].out].tensor->sizes, (std::vector<int64_t>{1, 2, 16, 16}));
}

TEST(RotaryFusion, AKeptIntermediateKeepsTheSteps) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["llama_block"]);
  const auto& d = program->method("forward");
  const auto first = find_rotary_fusions(d, inputs_and_outputs(d), none_idle(d));
  ASSERT_EQ(first.size(), 2u);
  auto keep = inputs_and_outputs(d);
  keep[first[0].dropped[2].first] = true;  // the queries' concatenation
  const auto found = find_rotary_fusions(d, keep, none_idle(d));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].out, first[1].out);
  EXPECT_TRUE(find_rotary_fusions(d, inputs_and_outputs(d), none_idle(d)).size() == 2u);
}

TEST(RotaryFusion, GptHasNone) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["gpt"]);
  const auto& d = program->method("forward");
  EXPECT_TRUE(find_rotary_fusions(d, inputs_and_outputs(d), none_idle(d)).empty());
}

}  // namespace
}  // namespace pterun
