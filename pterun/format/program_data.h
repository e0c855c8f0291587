#pragma once

// Internal to format/: program-wide byte sources that method decoding needs
// (segments, constants, initial values of mutable state).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/format/schema/program_generated.h"

namespace pterun::format {

/// Program-level data, checked once: every segment lies inside the file,
/// constant and mutable-data offsets are in range of their segment.
class ProgramData {
 public:
  ProgramData(const pterun_fb::Program& program, std::span<const uint8_t> file,
              uint64_t segment_base_offset, bool has_segments);

  /// Bytes of segment `index`; Error InvalidProgram naming `what` if absent.
  std::span<const uint8_t> segment(uint64_t index, const std::string& what) const;
  size_t num_segments() const { return segments_.size(); }

  /// The `nbytes` bytes of constant `index`.
  std::span<const uint8_t> constant(uint32_t index, uint64_t nbytes, const std::string& what) const;

  /// The `nbytes` initial bytes of mutable tensor `index` in mutable-data
  /// entry `entry`.
  std::span<const uint8_t> mutable_data(uint64_t entry, uint32_t index, uint64_t nbytes,
                                        const std::string& what) const;

  bool uses_inline_constant_buffer() const { return inline_constants_; }
  uint64_t constant_bytes() const { return constant_bytes_; }

 private:
  std::vector<std::span<const uint8_t>> segments_;
  bool inline_constants_ = false;
  // Constant segment path: the segment and the offsets into it.
  std::span<const uint8_t> constant_segment_;
  std::vector<uint64_t> constant_offsets_;
  // Inline path: one span per constant_buffer entry.
  std::vector<std::span<const uint8_t>> inline_buffers_;
  uint64_t constant_bytes_ = 0;
  struct MutableEntry {
    std::span<const uint8_t> segment;
    std::vector<uint64_t> offsets;
  };
  std::vector<MutableEntry> mutable_entries_;
};

[[noreturn]] void throw_misaligned(const std::string& what);

/// The text of flatbuffer string `s` (empty when absent). Error `code`
/// naming `what` (and the text, escaped) unless it is valid UTF-8: every
/// name and string pterun hands on must become a Python str.
std::string read_text(const flatbuffers::String* s, ErrorCode code, std::string_view what);

/// Error InvalidProgram unless the elements of `vec` (8-byte scalars) are
/// aligned: the flatbuffer verifier checks only the 4-byte length prefix.
template <typename T>
void check_aligned(const flatbuffers::Vector<T>* vec, const std::string& what) {
  static_assert(sizeof(T) == 8);
  if (vec != nullptr && reinterpret_cast<uintptr_t>(vec->data()) % sizeof(T) != 0) {
    throw_misaligned(what);
  }
}

/// Decodes and checks one execution plan.
struct MethodDesc;
MethodDesc read_method(const pterun_fb::ExecutionPlan& plan, size_t plan_index,
                       const pterun_fb::Program& program, const ProgramData& data);

}  // namespace pterun::format
