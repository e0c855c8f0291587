#pragma once

namespace pterun::kernels {

/// Names of kernels that no program names: the executor calls them in
/// place of a program's operator where it can tell at load that less work
/// gives the same results (executor/rewrite.h). A backend registers those
/// it has; rewrites needing a missing one are skipped.

/// max_pool2d_with_indices.out's arguments; only out is written (the
/// indices tensor is left as it was).
inline constexpr const char* kMaxPoolValuesKernel = "pterun::max_pool2d_values.out";

}  // namespace pterun::kernels
