// The load-time rewrites of LLM decode steps (executor/rewrite.h), found on
// the programs ExecuTorch's llama exporter wrote (tests/fixtures/llm/):
// the -kv export's whole-cache write-back becomes a write in place, one per
// cache, and start_pos is read by the kernels that place tokens, so no
// _local_scalar_dense is left to run. Whether the rewritten methods compute
// what ExecuTorch computes is tests/python/test_llm_fixtures.py's job.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"
#include "pterun/program/program.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

std::shared_ptr<const Program> llm_fixture(const std::string& name) {
  return Program::load_file(test::fixtures_dir() + "/llm/" + name + ".pte");
}

std::vector<bool> keep_io(const format::MethodDesc& d) {
  std::vector<bool> keep(d.values.size(), false);
  for (int32_t v : d.inputs) keep[v] = true;
  for (int32_t v : d.outputs) keep[v] = true;
  return keep;
}

std::map<std::string, int> op_counts(const format::MethodDesc& d) {
  std::map<std::string, int> n;
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind == format::InstructionKind::KernelCall) {
        ++n[d.operators[instr.index].full_name()];
      }
    }
  }
  return n;
}

TEST(LlmRewrites, KvExportWritesEachCacheInPlace) {
  for (const char* name : {"llama_kv_fp32", "llama_kv_bf16", "llama_kv_fp16"}) {
    SCOPED_TRACE(name);
    auto program = llm_fixture(name);
    const auto& d = program->method("forward");
    const auto ops = op_counts(d);
    auto writes = find_in_place_cache_writes(d, keep_io(d));
    // Two layers, a key and a value cache each.
    ASSERT_EQ(writes.size(), 4u);
    EXPECT_EQ(ops.at("aten::index_put.out"), 4);
    EXPECT_EQ(ops.at("aten::copy_"), 4);
    for (const auto& w : writes) {
      const auto& put = d.chains[w.index_put.chain].instructions[w.index_put.index];
      EXPECT_EQ(d.operators[put.index].full_name(), "aten::index_put.out");
      EXPECT_EQ(put.args[0], w.cache);
      EXPECT_EQ(w.index_put.args.front(), w.cache);
      const auto& copy = d.chains[w.copy_chain].instructions[w.copy_index];
      EXPECT_EQ(d.operators[copy.index].full_name(), "aten::copy_");
      EXPECT_EQ(copy.args[1], w.result);
    }
  }
}

TEST(LlmRewrites, SdpaExportReadsEveryPositionOnTheDevice) {
  auto program = llm_fixture("llama_sdpa_fp32");
  const auto& d = program->method("forward");
  const auto ops = op_counts(d);
  PositionRewrites r = find_position_rewrites(d, keep_io(d));
  std::map<std::string, int> kernels;
  for (const auto& rep : r.replace) ++kernels[rep.kernel];
  EXPECT_EQ(kernels[kernels::kUpdateCacheAtKernel], ops.at("llama::update_cache.out"));
  EXPECT_EQ(kernels[kernels::kCustomSdpaAtKernel], ops.at("llama::custom_sdpa.out"));
  EXPECT_EQ(kernels[kernels::kSliceAtKernel], 2);  // the RoPE tables
  // Every _local_scalar_dense (and every add.Scalar of a position) runs nothing.
  int idle_reads = 0;
  for (auto [c, k] : r.idle) {
    idle_reads +=
        d.operators[d.chains[c].instructions[k].index].full_name() == "aten::_local_scalar_dense";
  }
  EXPECT_EQ(idle_reads, ops.at("aten::_local_scalar_dense"));
  EXPECT_EQ(r.positions.size(), static_cast<size_t>(idle_reads));
}

TEST(LlmRewrites, KvExportReadsEveryPositionOnTheDevice) {
  auto program = llm_fixture("llama_kv_fp32");
  const auto& d = program->method("forward");
  const auto ops = op_counts(d);
  PositionRewrites r = find_position_rewrites(d, keep_io(d));
  std::map<std::string, int> kernels;
  for (const auto& rep : r.replace) ++kernels[rep.kernel];
  EXPECT_EQ(kernels[kernels::kItemCopyKernel], ops.at("aten::scalar_tensor.out"));
  EXPECT_GT(kernels[kernels::kSliceAtKernel], 0);  // RoPE tables and the mask rows
  EXPECT_EQ(r.positions.size(), static_cast<size_t>(ops.at("aten::_local_scalar_dense")));
}

TEST(LlmRewrites, KeptPositionsAreLeftAlone) {
  // A position that is also an output of the method stays a host number.
  auto program = llm_fixture("llama_sdpa_fp32");
  const auto& d = program->method("forward");
  std::vector<bool> keep(d.values.size(), true);
  EXPECT_TRUE(find_position_rewrites(d, keep).replace.empty());
  EXPECT_TRUE(find_in_place_cache_writes(d, keep).empty());
}

TEST(LlmRewrites, ProgramsWithoutKvCacheHaveNothingToRewrite) {
  auto program = llm_fixture("llama_fp32");
  const auto& d = program->method("forward");
  EXPECT_TRUE(find_position_rewrites(d, keep_io(d)).replace.empty());
  EXPECT_TRUE(find_in_place_cache_writes(d, keep_io(d)).empty());
}

}  // namespace
}  // namespace pterun
