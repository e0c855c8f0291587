#include "pterun/core/dtype.h"

#include <gtest/gtest.h>

namespace pterun {
namespace {

TEST(DType, NumbersFollowExecuTorchScalarType) {
  EXPECT_EQ(dtype_from_number(6), DType::Float32);
  EXPECT_EQ(dtype_from_number(15), DType::BFloat16);
  EXPECT_EQ(dtype_from_number(11), DType::Bool);
  EXPECT_EQ(dtype_from_number(29), DType::UInt64);
}

TEST(DType, RejectsBitPackedAndOutOfRangeNumbers) {
  for (int n : {-1, 18, 19, 20, 21, 30, 100}) EXPECT_FALSE(dtype_from_number(n)) << n;
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(element_size(DType::Float32), 4u);
  EXPECT_EQ(element_size(DType::BFloat16), 2u);
  EXPECT_EQ(element_size(DType::Complex128), 16u);
  EXPECT_EQ(element_size(DType::Bool), 1u);
  EXPECT_EQ(dtype_name(DType::Float16), "float16");
  EXPECT_EQ(dtype_from_name("int64"), DType::Int64);
  EXPECT_FALSE(dtype_from_name("float128"));
}

}  // namespace
}  // namespace pterun
