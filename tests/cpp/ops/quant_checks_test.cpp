// check_scales' float32 pass (integer compares of the bits, which flushing
// denormals to zero leaves alone) rejects exactly what valid_scale rejects,
// wherever the bad value sits: in the vectors of 16 or in the rest. (A
// bound too lax lets a bad scale through and fails here; one too strict
// would only send good lists to the exact loop that names the bad value.)

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/ops/quant_checks.h"

namespace pterun::ops {
namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Values on both sides of every bound valid_scale has.
std::vector<float> edge_values() {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float least = 1.0f / std::numeric_limits<float>::max();
  return {0.0f,
          -0.0f,
          -1.0f,
          kInf,
          -kInf,
          std::numeric_limits<float>::quiet_NaN(),
          -std::numeric_limits<float>::quiet_NaN(),
          std::numeric_limits<float>::max(),
          std::numeric_limits<float>::min(),
          std::numeric_limits<float>::denorm_min(),
          least,
          std::nextafter(least, 0.0f),
          std::nextafter(least, 1.0f),
          std::nextafter(std::nextafter(least, 1.0f), 1.0f),
          from_bits(0x00200000),
          from_bits(0x00200001),
          from_bits(0x00200002),
          1.0f,
          0.004f};
}

bool throws(const std::vector<float>& scales) {
  try {
    check_scales(scales.data(), DType::Float32, static_cast<int64_t>(scales.size()), "test");
    return false;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    return true;
  }
}

TEST(QuantChecks, Float32ScalesAgreeWithValidScale) {
  for (const float v : edge_values()) {
    SCOPED_TRACE(v);
    const bool usable = valid_scale(static_cast<double>(v));
    // Alone, then among good scales at every position of a 37-value list
    // (two vectors of 16 and a rest of 5).
    EXPECT_EQ(throws({v}), !usable);
    for (size_t at = 0; at < 37; ++at) {
      std::vector<float> scales(37, 0.01f);
      scales[at] = v;
      ASSERT_EQ(throws(scales), !usable) << "at " << at;
    }
  }
}

}  // namespace
}  // namespace pterun::ops
