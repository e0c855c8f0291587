// The elementwise operators each backend registers: fused elementwise
// programs on every backend built (the executor fuses wherever the kernel
// exists), and constant folding for the same operators as before the move
// behind ops/.

#include <gtest/gtest.h>

#include "pterun/kernels/internal_ops.h"
#include "pterun/kernels/registry.h"

namespace pterun {
namespace {

TEST(ElementwiseRegister, CpuHasFusedPrograms) {
  const auto& registry = kernels::KernelRegistry::global();
  const kernels::KernelInfo* info = registry.info(kernels::kFusedElementwiseKernel, Device::CPU);
  ASSERT_NE(info, nullptr);
  EXPECT_FALSE(info->foldable);  // never run at load: the executor emits it
  EXPECT_EQ(registry.info("pterun::mul_add.out", Device::CPU), nullptr);  // gone: programs cover it
}

TEST(ElementwiseRegister, CudaHasFusedProgramsWhereBuilt) {
  const auto& registry = kernels::KernelRegistry::global();
  if (registry.info("aten::add.out", Device::CUDA) == nullptr) GTEST_SKIP() << "no CUDA backend";
  EXPECT_NE(registry.info(kernels::kFusedElementwiseKernel, Device::CUDA), nullptr);
}

TEST(ElementwiseRegister, FoldableAsBefore) {
  const auto& registry = kernels::KernelRegistry::global();
  for (const char* name :
       {"aten::add.out", "aten::mul.Scalar_out", "aten::div.out", "aten::pow.Tensor_Scalar_out",
        "aten::rsqrt.out", "aten::neg.out", "aten::le.Scalar_out", "aten::eq.Tensor_out",
        "aten::logical_not.out", "aten::where.self_out"}) {
    SCOPED_TRACE(name);
    const kernels::KernelInfo* info = registry.info(name, Device::CPU);
    ASSERT_NE(info, nullptr);
    EXPECT_TRUE(info->foldable);
  }
  for (const char* name : {"aten::rsub.Scalar_out", "aten::div.out_mode", "aten::tanh.out",
                           "aten::logical_xor.out", "aten::relu.out", "aten::clamp.out"}) {
    SCOPED_TRACE(name);
    const kernels::KernelInfo* info = registry.info(name, Device::CPU);
    ASSERT_NE(info, nullptr);
    EXPECT_FALSE(info->foldable);
  }
}

}  // namespace
}  // namespace pterun
