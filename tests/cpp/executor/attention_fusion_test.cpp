// Attention fusion reads the queries, keys and values where the program
// left them: gpt's packed projection (one product cut into q, k and v by
// split_with_sizes_copy) is read in place through strided windows, and the
// split runs no more; llama_block's grouped keys and values are read
// before torch's repeat_kv copies them.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "pterun/executor/constant_fold.h"
#include "pterun/executor/rewrite.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using test::folded;
using test::inputs_and_outputs;
using test::none_idle;
using test::op_at;

TEST(AttentionFusion, GptReadsThePackedProjectionInPlace) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["gpt"]);
  const auto& d = program->method("forward");
  const auto found = find_attention_fusions(d, inputs_and_outputs(d), folded(d));
  ASSERT_EQ(found.size(), 2u);  // one per block
  for (const AttentionFusion& f : found) {
    // The split joins the run.
    EXPECT_EQ(std::count_if(f.idle.begin(), f.idle.end(),
                            [&](size_t k) {
                              return op_at(d, f.chain, k) == "aten::split_with_sizes_copy.out";
                            }),
              1);
    // q, k and v: windows of one [1, 16, 192] tensor at 0, 64 and 128,
    // [B, S, H, D] = [1, 16, 4, 16] with rows 192 apart.
    const int32_t x = f.q.value;
    EXPECT_EQ(f.k.value, x);
    EXPECT_EQ(f.v.value, x);
    EXPECT_EQ(d.values[x].tensor->sizes, (std::vector<int64_t>{1, 16, 192}));
    const std::vector<int64_t> strides = {16 * 192, 192, 16, 1};
    const std::vector<int64_t> sizes = {1, 16, 4, 16};
    int64_t offset = 0;
    for (const AttentionFusion::View* v : {&f.q, &f.k, &f.v}) {
      EXPECT_FALSE(v->whole);
      EXPECT_EQ(v->sizes, sizes);
      EXPECT_EQ(v->strides, strides);
      EXPECT_EQ(v->offset, offset);
      offset += 64;
    }
    // The kernel reads that tensor (which nothing writes over until it
    // runs) from planned memory, and the folded mask from its own.
    ASSERT_EQ(f.reads.size(), 1u);
    EXPECT_EQ(f.reads[0].first, x);
    EXPECT_EQ(op_at(d, f.chain, f.reads[0].second), "aten::split_with_sizes_copy.out");
  }
}

TEST(AttentionFusion, GroupedKeysAndValuesAreReadOncePerGroup) {
  // llama_block: q, k and v from three products (nothing to unpack); k and
  // v have 2 heads for q's 4, repeated by unsqueeze, expand and clone
  // (torch's repeat_kv). The kernel reads the 2 heads themselves, and the
  // repeat's steps join the run.
  auto program = test::load_fixture(test::manifest()["fixtures"]["llama_block"]);
  const auto& d = program->method("forward");
  const auto found = find_attention_fusions(d, inputs_and_outputs(d), folded(d));
  ASSERT_EQ(found.size(), 1u);
  const AttentionFusion& f = found[0];
  for (const AttentionFusion::View* v : {&f.q, &f.k, &f.v}) EXPECT_TRUE(v->strides.empty());
  EXPECT_EQ(f.q.sizes, (std::vector<int64_t>{1, 16, 4, 16}));
  EXPECT_EQ(f.k.sizes, (std::vector<int64_t>{1, 16, 2, 16}));
  EXPECT_EQ(f.v.sizes, (std::vector<int64_t>{1, 16, 2, 16}));
  for (const char* op : {"aten::unsqueeze_copy.out", "aten::expand_copy.out",
                         "dim_order_ops::_clone_dim_order.out"}) {
    EXPECT_GE(std::count_if(f.idle.begin(), f.idle.end(),
                            [&](size_t k) { return op_at(d, f.chain, k) == op; }),
              2)
        << op;
  }
}

TEST(AttentionFusion, AViewOfAFoldedValueReadsNothingTheRunDrops) {
  // llama_block at batch 8 over 128 tokens: the output projection after the attention is a
  // batched product of the weight expanded to [8, 64, 64], folded at load
  // into memory of its own. The plan had put that expansion (and the view
  // the product reads) over the bytes of the values' repeat, which the run
  // drops: the view reads the folded copy, not those bytes.
  auto program = test::load_fixture(test::manifest()["fixtures"]["llama_block_b8"]);
  const auto& d = program->method("forward");
  const auto found = find_attention_fusions(d, inputs_and_outputs(d), folded(d));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].q.sizes, (std::vector<int64_t>{8, 128, 4, 16}));
  EXPECT_EQ(found[0].k.sizes, (std::vector<int64_t>{8, 128, 2, 16}));
}

TEST(AttentionFusion, AKeptItemKeepsTheSplit) {
  // A caller that keeps one of the split's outputs keeps the split running:
  // the views read its outputs as before.
  auto program = test::load_fixture(test::manifest()["fixtures"]["gpt"]);
  const auto& d = program->method("forward");
  auto keep = inputs_and_outputs(d);
  for (size_t k = 0; k < d.chains[0].instructions.size(); ++k) {
    if (op_at(d, 0, k) == "aten::split_with_sizes_copy.out") {
      const auto& list = d.values[d.chains[0].instructions[k].args[3]];
      keep[list.items[1]] = true;
    }
  }
  const auto found = find_attention_fusions(d, keep, folded(d));
  for (const AttentionFusion& f : found) {
    EXPECT_TRUE(f.q.strides.empty());
    for (size_t k : f.idle) EXPECT_NE(op_at(d, f.chain, k), "aten::split_with_sizes_copy.out");
  }
}

}  // namespace
}  // namespace pterun
