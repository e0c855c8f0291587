#pragma once

#include <string>

namespace pterun::backend {

/// Number of usable CUDA devices; 0 in a build without CUDA, or when there
/// is no GPU or driver. Never throws.
int cuda_device_count();

/// Why there is no usable GPU ("this build has no CUDA support", the
/// driver's error), or an empty string when there is one.
std::string cuda_unavailable_reason();

/// True when this build contains the CUDA backend.
bool built_with_cuda();

}  // namespace pterun::backend
