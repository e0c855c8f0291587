#include "pterun/core/device.h"

#include <charconv>

#include "pterun/core/error.h"

namespace pterun {

const char* device_name(Device device) {
  return device == Device::CPU ? "cpu" : "cuda";
}

DeviceSpec parse_device(std::string_view text) {
  if (text == "cpu") return {};
  if (text == "cuda") return {Device::CUDA, 0};
  constexpr std::string_view kPrefix = "cuda:";
  int index = -1;
  if (text.starts_with(kPrefix) && text.size() > kPrefix.size() &&
      text.size() <= kPrefix.size() + 4) {
    const char* first = text.data() + kPrefix.size();
    const char* last = text.data() + text.size();
    auto [end, ec] = std::from_chars(first, last, index);
    if (ec != std::errc() || end != last || *first == '+' || *first == '-') index = -1;
  }
  PTERUN_CHECK(index >= 0, ErrorCode::InvalidArgument,
               "device must be 'cpu', 'cuda' or 'cuda:N', got '", text, "'");
  return {Device::CUDA, index};
}

std::string device_string(const DeviceSpec& spec) {
  return spec.type == Device::CPU ? std::string("cpu") : str_cat("cuda:", spec.index);
}

}  // namespace pterun
