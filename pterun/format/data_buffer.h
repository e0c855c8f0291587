#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace pterun::format {

/// Immutable bytes of a program or data file, kept alive as long as any
/// holder of the shared pointer exists. The start is always aligned to 16
/// bytes, as flatbuffer readers and kernels that read constants in place
/// need.
class DataBuffer {
 public:
  static constexpr size_t kAlignment = 16;

  /// Memory-maps the file at `path`. Error FileNotFound when it does not
  /// exist, AccessFailed when it cannot be read.
  static std::shared_ptr<const DataBuffer> map_file(const std::string& path);

  /// Copies `bytes` into memory the buffer owns.
  static std::shared_ptr<const DataBuffer> copy_of(std::span<const uint8_t> bytes);

  /// Uses the caller's memory in place; `keep_alive` owns it and is released
  /// with the buffer. Copies instead when the memory is not aligned.
  static std::shared_ptr<const DataBuffer> borrow(std::span<const uint8_t> bytes,
                                                  std::shared_ptr<void> keep_alive,
                                                  std::string origin = "<buffer>");

  ~DataBuffer();
  DataBuffer(const DataBuffer&) = delete;
  DataBuffer& operator=(const DataBuffer&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  /// Where the bytes came from, for messages ("model.pte", "<bytes>").
  const std::string& origin() const { return origin_; }

 private:
  enum class Kind { Mapped, Owned, Borrowed };
  DataBuffer(Kind kind, const uint8_t* data, size_t size, std::string origin)
      : kind_(kind), data_(data), size_(size), origin_(std::move(origin)) {}

  Kind kind_;
  const uint8_t* data_;
  size_t size_;
  std::string origin_;
  std::shared_ptr<void> keep_alive_;
};

}  // namespace pterun::format
