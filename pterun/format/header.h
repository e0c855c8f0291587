#pragma once

#include <cstdint>
#include <span>

namespace pterun::format {

/// The parts of a .pte file's start that locate the flatbuffer and the
/// segments (docs/format.md, "The .pte header").
struct PteHeader {
  bool has_extended_header = false;
  uint32_t header_length = 0;  // bytes from offset 8, as stored
  uint64_t program_size = 0;   // flatbuffer region [0, program_size)
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
};

/// Parses and checks the header against the file size. Error InvalidProgram
/// for a file that is not an ExecuTorch program, has another format
/// version, or is shorter than its header says.
PteHeader parse_pte_header(std::span<const uint8_t> file);

/// The header of a .ptd file (docs/format.md, ".ptd files").
struct PtdHeader {
  uint32_t header_length = 0;
  uint64_t flatbuffer_offset = 0;  // bytes of header inserted before the flatbuffer body
  uint64_t flatbuffer_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
};

/// Parses and checks a .ptd header. Error InvalidExternalData when bad.
PtdHeader parse_ptd_header(std::span<const uint8_t> file);

/// Little-endian reads from a span the caller has bounds-checked.
uint32_t read_u32le(const uint8_t* p);
uint64_t read_u64le(const uint8_t* p);

}  // namespace pterun::format
