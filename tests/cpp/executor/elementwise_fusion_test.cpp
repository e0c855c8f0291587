// The load-time finders of elementwise trees (find_elementwise_fusions)
// and of the decomposed attention's safe softmax (find_safe_softmax_fusions)
// on exported fixtures (a delegated one among them): what they take, the programs they write, and
// what they leave alone (kept values, steps another pass rewrote, deferrals across writes).

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/fused.h"
#include "tests/cpp/executor/fixture_calls.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using test::inputs_and_outputs;
using test::op_at;

std::vector<std::vector<bool>> all(const format::MethodDesc& d, bool value) {
  std::vector<std::vector<bool>> m;
  for (const auto& chain : d.chains) m.emplace_back(chain.instructions.size(), value);
  return m;
}

std::vector<ElementwiseFusion> trees(const format::MethodDesc& d, const std::vector<bool>& keep) {
  return find_elementwise_fusions(d, keep, all(d, true), all(d, false), true);
}

// Every tree decodes, reads at most kFusedMaxInputs tensors, has a step per
// instruction (layout copies that compose into one view share one), and
// ends at its root.
void check_tree(const format::MethodDesc& d, const ElementwiseFusion& f) {
  ops::FusedStep steps[ops::kFusedMaxSteps];
  const size_t count = ops::decode_fused_program(f.program, f.inputs.size(), steps, "test");
  EXPECT_GE(count, 1u);
  EXPECT_LE(count, f.idle.size() + 1);
  EXPECT_LE(f.inputs.size(), ops::kFusedMaxInputs);
  EXPECT_EQ(d.chains[f.chain].instructions[f.root].args.back(), f.out);
  EXPECT_EQ(f.dropped.size(), f.idle.size());
  for (size_t k : f.idle) EXPECT_LT(k, f.root);
  EXPECT_EQ(steps[count - 1].round, desc::tensor_of(d, f.out)->dtype);
}

TEST(ElementwiseFusion, LlamaBlockNormsRopeAndSwiglu) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["llama_block"]);
  const auto& d = program->method("forward");
  auto found = trees(d, inputs_and_outputs(d));
  ASSERT_FALSE(found.empty());
  std::multiset<std::string> roots;
  size_t idle = 0;
  for (const ElementwiseFusion& f : found) {
    check_tree(d, f);
    roots.insert(op_at(d, f.chain, f.root));
    idle += f.idle.size();
  }
  // Two RMSNorm tails (add eps, rsqrt, mul, mul weight), the rotary
  // halves of q and k (mul, mul, add) and SwiGLU (sigmoid, mul, mul) at
  // least.
  EXPECT_GE(idle, 11u);
  EXPECT_GE(found.size(), 4u);
  EXPECT_GE(roots.count("aten::mul.out"), 3u);
}

TEST(ElementwiseFusion, XnnpackLstmCellsFromTheDelegate) {
  // The delegated LSTM's method as it runs (delegate calls lowered to
  // xnnpack:: kernel calls): each cell's sigmoid, tanh, multiply and add
  // nodes join trees rooted at xnnpack:: nodes.
  const std::string dir = test::fixtures_dir() + "/xnnpack";
  const std::vector<uint8_t> bytes = test::read_file(dir + "/manifest.json");
  const auto manifest = nlohmann::json::parse(bytes.begin(), bytes.end());
  auto program = test::load_fixture(manifest["fixtures"]["lstm"], dir);
  const auto& d = program->runnable_method("forward");
  auto found = trees(d, inputs_and_outputs(d));
  size_t xnn_roots = 0;
  std::multiset<std::string> members;
  for (const ElementwiseFusion& f : found) {
    check_tree(d, f);
    if (op_at(d, f.chain, f.root).rfind("xnnpack::", 0) == 0) ++xnn_roots;
    for (size_t k : f.idle) members.insert(op_at(d, f.chain, k));
  }
  EXPECT_GE(xnn_roots, 8u);
  EXPECT_GE(members.count("xnnpack::sigmoid"), 8u);
  EXPECT_GE(members.count("xnnpack::tanh"), 8u);
  EXPECT_GE(members.count("xnnpack::multiply") + members.count("xnnpack::add"), 16u);
}

TEST(ElementwiseFusion, KeptValuesAndRewrittenStepsStayApart) {
  auto program = test::load_fixture(test::manifest()["fixtures"]["elementwise_chains"]);
  const auto& d = program->method("forward");
  const auto keep = inputs_and_outputs(d);
  auto found = trees(d, keep);
  ASSERT_FALSE(found.empty());
  // A value the caller keeps is never dropped: its writer stays a root.
  for (const ElementwiseFusion& biggest : found) {
    for (const auto& [value, writer] : biggest.dropped) {
      auto kept = keep;
      kept[value] = true;
      for (const ElementwiseFusion& f : trees(d, kept)) {
        check_tree(d, f);
        for (const auto& dropped : f.dropped) EXPECT_NE(dropped.first, value);
      }
    }
  }
  // No step still runs its own operator: nothing to fuse.
  EXPECT_TRUE(find_elementwise_fusions(d, keep, all(d, false), all(d, false), true).empty());
  // A rewritten step between an instruction and its reader keeps the
  // instruction where it is (it may write what the instruction reads).
  for (const ElementwiseFusion& f : found) {
    size_t first = f.root;
    for (size_t k : f.idle) first = std::min(first, k);
    std::vector<std::vector<bool>> candidate = all(d, true);
    bool between = false;
    for (size_t k = first + 1; k < f.root; ++k) {
      if (std::count(f.idle.begin(), f.idle.end(), k) == 0) {
        candidate[f.chain][k] = false;
        between = true;
      }
    }
    if (!between) continue;
    for (const ElementwiseFusion& g :
         find_elementwise_fusions(d, keep, candidate, all(d, false), true)) {
      EXPECT_FALSE(g.root == f.root && g.idle == f.idle);
    }
  }
}

// The CPU's trees (no recomputed broadcasts): no layout copy, and every
// joined value as large as its reader's out.
TEST(ElementwiseFusion, CpuTreesKeepLayoutsAndPerRowValuesApart) {
  for (const char* name : {"llama_block", "gpt", "elementwise_chains"}) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    const auto keep = inputs_and_outputs(d);
    for (const ElementwiseFusion& f :
         find_elementwise_fusions(d, keep, all(d, true), all(d, false), false)) {
      check_tree(d, f);
      const uint64_t out = desc::tensor_of(d, f.out)->numel;
      for (const auto& [value, writer] : f.dropped) {
        EXPECT_EQ(desc::tensor_of(d, value)->numel, out);
        const std::string op = op_at(d, f.chain, writer);
        for (const char* layout : {"aten::permute_copy", "aten::transpose_copy", "aten::t_copy",
                                   "aten::view_copy", "aten::unsqueeze_copy", "aten::squeeze_copy",
                                   "aten::alias_copy", "aten::expand_copy"}) {
          EXPECT_NE(op.rfind(layout, 0), 0u) << op;
        }
      }
      for (const auto& in : f.inputs) EXPECT_FALSE(in.view);
    }
  }
}

TEST(ElementwiseFusion, NothingElementwiseNothingFused) {
  for (const char* name : {"mlp", "cnn"}) {
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    EXPECT_TRUE(trees(d, inputs_and_outputs(d)).empty()) << name;
  }
}

TEST(SafeSoftmaxFusion, DecomposedAttentionSoftmax) {
  for (auto [name, count] : {std::pair{"gpt", 2u}, std::pair{"llama_block", 1u}}) {
    SCOPED_TRACE(name);
    auto program = test::load_fixture(test::manifest()["fixtures"][name]);
    const auto& d = program->method("forward");
    auto found = find_safe_softmax_fusions(d, inputs_and_outputs(d), all(d, false));
    ASSERT_EQ(found.size(), count);
    for (const PatternFusion& f : found) {
      EXPECT_STREQ(f.replacement.kernel, kernels::kSafeSoftmaxKernel);
      EXPECT_EQ(op_at(d, f.chain, f.replacement.index), "aten::_softmax.out");
      ASSERT_EQ(f.idle.size(), 6u);
      EXPECT_EQ(op_at(d, f.chain, f.idle.back()), "aten::where.self_out");
      EXPECT_EQ(f.replacement.args.front(), f.input);
      EXPECT_EQ(f.replacement.args.back(), f.out);
      EXPECT_EQ(f.dropped.size(), 6u);
    }
    // A caller that keeps the plain softmax keeps the seven apart.
    auto keep = inputs_and_outputs(d);
    keep[found[0].dropped[0].first] = true;
    EXPECT_EQ(find_safe_softmax_fusions(d, keep, all(d, false)).size(), count - 1);
  }
  auto program = test::load_fixture(test::manifest()["fixtures"]["mlp"]);
  const auto& d = program->method("forward");
  EXPECT_TRUE(find_safe_softmax_fusions(d, inputs_and_outputs(d), all(d, false)).empty());
}

}  // namespace
}  // namespace pterun
