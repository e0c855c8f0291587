#pragma once

// The most dimensions a device-side index space holds: pterun::kMaxRank
// (core/tensor.h), restated for device code, which does not include the
// host's Tensor; ops/launch_util.cuh and ops/nn_launch.h check they agree.
//
// Device code: files in backend/cuda/device/ include only CUDA and standard
// headers, other device/ headers, core/dtype.h and core/math.h
// (scripts/check-layers checks it).

#include <cstddef>

namespace pterun::cuda {

inline constexpr size_t kDeviceMaxRank = 16;

}  // namespace pterun::cuda
