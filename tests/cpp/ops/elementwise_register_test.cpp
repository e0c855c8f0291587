// The elementwise operators each backend registers: the fused mul-add only
// where the backend computes it (the executor fuses wherever the kernel
// exists), and constant folding for the same operators as before the move
// behind ops/.

#include <gtest/gtest.h>

#include "pterun/kernels/internal_ops.h"
#include "pterun/kernels/registry.h"

namespace pterun {
namespace {

TEST(ElementwiseRegister, CpuHasNoFusedMulAdd) {
  const auto& registry = kernels::KernelRegistry::global();
  EXPECT_EQ(registry.info(kernels::kMulAddKernel, Device::CPU), nullptr);
  EXPECT_EQ(registry.info(kernels::kMulSubKernel, Device::CPU), nullptr);
  ASSERT_NE(registry.info("aten::mul.out", Device::CPU), nullptr);
  ASSERT_NE(registry.info("aten::add.out", Device::CPU), nullptr);
}

TEST(ElementwiseRegister, CudaHasTheFusedMulAddWhereBuilt) {
  const auto& registry = kernels::KernelRegistry::global();
  if (registry.info("aten::add.out", Device::CUDA) == nullptr) GTEST_SKIP() << "no CUDA backend";
  EXPECT_NE(registry.info(kernels::kMulAddKernel, Device::CUDA), nullptr);
  EXPECT_NE(registry.info(kernels::kMulSubKernel, Device::CUDA), nullptr);
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
