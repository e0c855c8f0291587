// The generated fused kernels' sources (backend/cuda/ops/fused_codegen.h)
// compile with NVRTC for every operation the fused programs admit, every
// element type and every kind of operand access. No GPU is needed to
// compile; running them is checked on a GPU by tests/ops/test_fused.py
// (PTERUN_FUSED_JIT=require, bit for bit against the unfused operators).
// Built only with the CUDA backend; skipped where NVRTC is not installed.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "pterun/backend/cuda/device/fused_params.h"
#include "pterun/backend/cuda/jit/kernel_cache.h"
#include "pterun/backend/cuda/jit/nvrtc.h"
#include "pterun/backend/cuda/ops/fused_codegen.h"
#include "pterun/backend/cuda/ops/fused_program.h"
#include "pterun/core/error.h"
#include "pterun/ops/fused.h"

namespace pterun {
namespace {

using kernels::cuda_ops::device_program;
using kernels::cuda_ops::generated_source;
using ops::FusedKind;
using ops::FusedStep;

constexpr size_t kInputs = 2;

/// Every supported operation once, each step reading the one before (and
/// input 1), rounding in turn to float32, float16 and bfloat16.
std::vector<FusedStep> every_operation() {
  const DType rounds[] = {DType::Float32, DType::Float16, DType::BFloat16};
  std::vector<FusedStep> steps;
  for (int kind = 0; kind <= static_cast<int>(FusedKind::Cast); ++kind) {
    for (int fn = 0; fn < 256; ++fn) {
      const auto k = static_cast<FusedKind>(kind);
      if (!ops::fused_op_supported(k, static_cast<uint8_t>(fn))) continue;
      FusedStep s;
      s.kind = k;
      s.fn = static_cast<uint8_t>(fn);
      s.round = rounds[steps.size() % 3];
      s.s0 = 0.5;
      s.s1 = 2.0;
      steps.push_back(s);
    }
  }
  return steps;
}

/// The steps in programs of at most kFusedMaxSteps, registers renumbered.
std::vector<std::vector<FusedStep>> programs(const std::vector<FusedStep>& all) {
  std::vector<std::vector<FusedStep>> out;
  for (size_t i = 0; i < all.size(); i += ops::kFusedMaxSteps) {
    std::vector<FusedStep> p;
    for (size_t j = i; j < all.size() && p.size() < ops::kFusedMaxSteps; ++j) {
      FusedStep s = all[j];
      s.a = static_cast<uint8_t>(p.empty() ? 0 : kInputs + p.size() - 1);
      s.b = 1;
      p.push_back(s);
    }
    out.push_back(p);
  }
  return out;
}

TEST(CudaFusedCodegen, EveryOperationDtypeAndAccessCompiles) {
  std::string why;
  if (!cuda::jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not installed: " << why;
  const std::vector<FusedStep> all = every_operation();
  ASSERT_GT(all.size(), 40u);  // the unary functions alone are 25
  struct Case {
    DType in[kInputs];
    char access[kInputs];
    int rank;
  };
  const Case cases[] = {
      {{DType::Float32, DType::Float32}, {'d', 'd'}, 1},
      {{DType::BFloat16, DType::Float16}, {'d', 's'}, 2},
      {{DType::Float16, DType::Float32}, {'w', 'd'}, 3},
      {{DType::BFloat16, DType::BFloat16}, {'w', 'w'}, cuda::kJitMaxRank},
  };
  for (const std::vector<FusedStep>& steps : programs(all)) {
    const auto program = device_program(steps, kInputs);
    for (const Case& c : cases) {
      const std::string source =
          generated_source(program, c.in, c.access, steps.back().round, c.rank);
      EXPECT_NO_THROW(cuda::jit::compile(source, "test_fused.cu", 90)) << source;
    }
  }
}

TEST(CudaFusedCodegen, CompileErrorsCarryNvrtcLog) {
  std::string why;
  if (!cuda::jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not installed: " << why;
  try {
    cuda::jit::compile("extern \"C\" __global__ void k() { undeclared(); }", "broken.cu", 90);
    FAIL() << "a broken source compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    EXPECT_NE(std::string(e.what()).find("undeclared"), std::string::npos) << e.what();
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(CudaKernelCache, KeepsEntriesAndRecompilesDamagedOnes) {
  std::string why;
  if (!cuda::jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC is not installed: " << why;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "pterun_kernel_cache_test";
  fs::remove_all(dir);
  const char* old = std::getenv("PTERUN_CACHE_DIR");
  const std::string saved = old != nullptr ? old : "";
  setenv("PTERUN_CACHE_DIR", dir.c_str(), 1);

  const std::string source = "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }";
  const std::string fresh = cuda::jit::compile(source, "k.cu", 90);
  EXPECT_EQ(cuda::jit::compile_cached(source, "k.cu", 90), fresh);
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir / "kernels")) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  const std::string entry = read_file(entries[0]);
  EXPECT_NE(entry.find(source), std::string::npos);  // the request is stored whole

  // Served from the entry: a changed entry body shows through only when it
  // is still consistent, so flip a byte of the code and expect a recompile.
  std::string damaged = entry;
  damaged[damaged.size() - 20] = static_cast<char>(damaged[damaged.size() - 20] ^ 0x5a);
  std::ofstream(entries[0], std::ios::binary | std::ios::trunc) << damaged;
  EXPECT_EQ(cuda::jit::compile_cached(source, "k.cu", 90), fresh);
  EXPECT_EQ(read_file(entries[0]), entry);  // rewritten
  std::ofstream(entries[0], std::ios::binary | std::ios::trunc) << entry.substr(0, 40);
  EXPECT_EQ(cuda::jit::compile_cached(source, "k.cu", 90), fresh);
  EXPECT_EQ(read_file(entries[0]), entry);

  // Another architecture is another entry.
  EXPECT_EQ(cuda::jit::compile_cached(source, "k.cu", 80), cuda::jit::compile(source, "k.cu", 80));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "kernels"), fs::directory_iterator()), 2);

  // An empty PTERUN_CACHE_DIR turns the cache off.
  fs::remove_all(dir);
  setenv("PTERUN_CACHE_DIR", "", 1);
  EXPECT_EQ(cuda::jit::compile_cached(source, "k.cu", 90), fresh);
  EXPECT_FALSE(fs::exists(dir));

  if (old != nullptr) {
    setenv("PTERUN_CACHE_DIR", saved.c_str(), 1);
  } else {
    unsetenv("PTERUN_CACHE_DIR");
  }
}

}  // namespace
}  // namespace pterun
