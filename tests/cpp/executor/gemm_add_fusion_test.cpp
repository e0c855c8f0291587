// Residual-add fusion finds the add after an addmm or mm (read directly or
// through a reshape resolved by memory planning) and leaves alone products
// whose result something else reads or the caller keeps.

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "pterun/executor/rewrite.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using test::folded;
using test::inputs_and_outputs;
using test::none_idle;
using test::op_at;

TEST(GemmAddFusion, GptAndLlamaResidualConnections) {
  // gpt: addmm (attention's projection, the MLP's second layer) -> add,
  // twice per block; llama_block: mm -> add, twice, no bias.
  for (auto [name, count, product] :
       {std::tuple{"gpt", 4u, "aten::addmm.out"}, std::tuple{"llama_block", 2u, "aten::mm.out"}}) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    const auto found = find_gemm_add_fusions(d, inputs_and_outputs(d), none_idle(d));
    ASSERT_EQ(found.size(), count);
    for (const GemmAddFusion& f : found) {
      EXPECT_EQ(op_at(d, f.chain, f.gemm), product);
      EXPECT_EQ(op_at(d, f.chain, f.add), "aten::add.out");
      EXPECT_GT(f.add, f.gemm);
      EXPECT_EQ(f.bias >= 0, std::string(product) == "aten::addmm.out");
      const auto& add = d.chains[f.chain].instructions[f.add].args;
      EXPECT_EQ(add[3], f.out);
      // The add reads the product through a second tensor over its bytes
      // (the exporter's view_copy of [m, n] to [1, m, n]) and the residual.
      EXPECT_NE(f.read, f.product);
      EXPECT_TRUE((add[0] == f.read && add[1] == f.other) ||
                  (add[1] == f.read && add[0] == f.other));
      const auto& y = *d.values[f.product].tensor;
      const auto& r = *d.values[f.read].tensor;
      EXPECT_EQ(y.memory_offset, r.memory_offset);
      EXPECT_EQ(d.values[f.other].tensor->sizes, r.sizes);
    }
  }
}

TEST(GemmAddFusion, KeptOrIdleProductsAreLeftAlone) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["gpt"]);
  const auto& d = program->method("forward");
  const auto first = find_gemm_add_fusions(d, inputs_and_outputs(d), none_idle(d));
  ASSERT_EQ(first.size(), 4u);
  // A caller that needs the product, or the view of it, keeps that pair out.
  auto keep = inputs_and_outputs(d);
  keep[first[0].product] = true;
  keep[first[1].read] = true;
  auto found = find_gemm_add_fusions(d, keep, none_idle(d));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].gemm, first[2].gemm);
  // A product another pass already took (idle) is not fused, nor is an
  // add that no longer follows its product.
  auto idle = none_idle(d);
  idle[first[2].chain][first[2].gemm] = true;
  idle[first[3].chain][first[3].add] = true;
  found = find_gemm_add_fusions(d, inputs_and_outputs(d), idle);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[1].gemm, first[1].gemm);
}

TEST(GemmAddFusion, ProductsWithoutAResidualAreLeftAlone) {
  // mlp: addmm -> relu, twice, then the last addmm is the output.
  auto program = test::load_fixture(test::manifest()["fixtures"]["mlp"]);
  const auto& d = program->method("forward");
  EXPECT_TRUE(find_gemm_add_fusions(d, inputs_and_outputs(d), none_idle(d)).empty());
}

}  // namespace
}  // namespace pterun
