#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pterun {

/// The kinds of device a method (and each of its kernels) runs on.
enum class Device : uint8_t { CPU, CUDA };

/// How many Device values there are (tables indexed by device).
inline constexpr size_t kNumDevices = 2;

/// "cpu" / "cuda".
const char* device_name(Device device);

/// A device of a kind and its index among the devices of that kind.
struct DeviceSpec {
  Device type = Device::CPU;
  int index = 0;
};

/// Parses "cpu", "cuda" (= "cuda:0") or "cuda:N". Error InvalidArgument,
/// quoting the text, for anything else. Whether the device exists is the
/// caller's question.
DeviceSpec parse_device(std::string_view text);

/// "cpu" or "cuda:N": the text parse_device reads back.
std::string device_string(const DeviceSpec& spec);

}  // namespace pterun
