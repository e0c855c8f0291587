#pragma once

#include <span>

namespace pterun {
class Value;
}

namespace pterun::kernels {

/// Where a kernel runs.
enum class Device : unsigned char { CPU, CUDA };

/// "cpu" / "cuda".
const char* device_name(Device device);

struct KernelContext;

/// A kernel: reads and writes the values named by one KernelCall's
/// arguments, in schema order with the out argument(s) last. Reports
/// failure by throwing pterun::Error.
using KernelFn = void (*)(KernelContext& context, std::span<Value* const> args);

}  // namespace pterun::kernels
