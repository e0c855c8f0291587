#pragma once

#include <atomic>
#include <cstdint>

namespace pterun::stats {

/// Process-wide counters reported by pterun.stats() (docs/python-api.md,
/// "Counters of stats()").
enum class Counter : int {
  DeviceSyncs,
  DeviceAllocs,
  HostToDeviceCopies,
  DeviceToHostCopies,
  DeviceToDeviceCopies,
  LayoutConversions,
  OutputCopies,
  GraphLaunches,
  KernelCalls,
  kCount,
};

/// "device_syncs", ...
const char* counter_name(Counter c);

inline std::atomic<int64_t>& counter(Counter c) {
  static std::atomic<int64_t> counters[static_cast<int>(Counter::kCount)];
  return counters[static_cast<int>(c)];
}

inline void add(Counter c, int64_t n = 1) {
  counter(c).fetch_add(n, std::memory_order_relaxed);
}
inline int64_t get(Counter c) {
  return counter(c).load(std::memory_order_relaxed);
}
void reset();

}  // namespace pterun::stats
