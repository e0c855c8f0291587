#pragma once

// Places values with known lifetimes in one block of memory, reusing the
// bytes of values that are dead by the time another is born. Internal to
// delegates/: the internal values of an expanded delegate call live in
// extra space of the method's planned memory.

#include <cstdint>
#include <span>
#include <vector>

namespace pterun::delegates {

/// Every offset the planner hands out is a multiple of this.
inline constexpr uint64_t kArenaAlignment = 64;

/// A block of `bytes` needed from step `first` to step `last` (inclusive).
struct ArenaRequest {
  uint64_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
};

struct ArenaPlan {
  std::vector<uint64_t> offsets;  // one per request
  uint64_t size = 0;              // bytes the whole plan needs
};

/// Offsets such that two requests whose step ranges intersect never share
/// a byte: largest first, each at the lowest aligned gap that fits.
ArenaPlan plan_arena(std::span<const ArenaRequest> requests);

}  // namespace pterun::delegates
