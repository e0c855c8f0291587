#pragma once

// .npy / .npz reading and writing for the command line. No maintained C++
// .npy library is packaged in Debian or PyPI, so the (small, documented)
// .npy header is parsed here; the zip container of .npz goes through
// libzip.

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pterun/core/dtype.h"

namespace pterun::cli {

struct NpyArray {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements (column-major for fortran_order files)
  std::vector<uint8_t> data;
};

/// Parses one .npy file's bytes; Error InvalidArgument naming `what`.
NpyArray parse_npy(std::span<const uint8_t> bytes, const std::string& what);

/// The bytes of a .npy file (C order) for `array`.
std::vector<uint8_t> format_npy(const NpyArray& array);

NpyArray read_npy(const std::string& path);

/// Arrays of an .npz file in archive order, keys without ".npy".
std::vector<std::pair<std::string, NpyArray>> read_npz(const std::string& path);

void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, NpyArray>>& arrays);

}  // namespace pterun::cli
