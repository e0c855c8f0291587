#include "pterun/core/stats.h"

namespace pterun::stats {

const char* counter_name(Counter c) {
  switch (c) {
    case Counter::DeviceSyncs: return "device_syncs";
    case Counter::DeviceAllocs: return "device_allocs";
    case Counter::HostToDeviceCopies: return "host_to_device_copies";
    case Counter::DeviceToHostCopies: return "device_to_host_copies";
    case Counter::DeviceToDeviceCopies: return "device_to_device_copies";
    case Counter::LayoutConversions: return "layout_conversions";
    case Counter::OutputCopies: return "output_copies";
    case Counter::GraphLaunches: return "graph_launches";
    case Counter::KernelCalls: return "kernel_calls";
    case Counter::kCount: break;
  }
  return "unknown";
}

void reset() {
  for (int i = 0; i < static_cast<int>(Counter::kCount); ++i) {
    counter(static_cast<Counter>(i)).store(0, std::memory_order_relaxed);
  }
}

}  // namespace pterun::stats
