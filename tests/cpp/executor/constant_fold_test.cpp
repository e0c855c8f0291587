// Constant folding finds the instructions that depend on constants alone:
// weight transposes and attention masks, never anything that reads an
// input.

#include "pterun/executor/constant_fold.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

std::map<std::string, int> folded_ops(const format::MethodDesc& d) {
  std::vector<bool> keep(d.values.size(), false);
  for (int32_t v : d.inputs) keep[v] = true;
  for (int32_t v : d.outputs) keep[v] = true;
  std::map<std::string, int> ops;
  for (auto [c, k] : find_constant_instructions(d, keep)) {
    ++ops[d.operators[d.chains[c].instructions[k].index].full_name()];
  }
  return ops;
}

TEST(ConstantFold, GptFoldsWeightTransposesAndTheCausalMask) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["gpt"]);
  const auto& d = program->method("forward");
  auto ops = folded_ops(d);
  // Two blocks of four Linear layers with a bias (addmm), plus the
  // bias-free head (mm): each reads a transposed constant weight.
  EXPECT_EQ(ops["aten::permute_copy.out"], 9);
  EXPECT_GT(ops["aten::arange.start_out"], 0);
  EXPECT_GT(ops["aten::le.Scalar_out"], 0);
  EXPECT_EQ(ops.count("aten::addmm.out"), 0u);      // not foldable
  EXPECT_EQ(ops.count("aten::embedding.out"), 0u);  // reads the input
}

TEST(ConstantFold, NothingThatReadsAnInputIsFolded) {
  for (const char* name : {"mlp", "cnn", "llama_block", "chain8", "linear_3d"}) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    std::vector<bool> keep(d.values.size(), false);
    for (int32_t v : d.inputs) keep[v] = true;
    for (int32_t v : d.outputs) keep[v] = true;
    for (auto [c, k] : find_constant_instructions(d, keep)) {
      for (int32_t a : d.chains[c].instructions[k].args) {
        EXPECT_FALSE(std::count(d.inputs.begin(), d.inputs.end(), a)) << "instruction " << k;
      }
    }
  }
}

}  // namespace
}  // namespace pterun
