#include "pterun/format/header.h"

#include <cstring>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/core/text.h"

namespace pterun::format {
namespace {

constexpr size_t kMinPteBytes = 8;  // root offset + identifier
constexpr uint32_t kMinPteHeaderLength = 24;
constexpr uint32_t kPteHeaderLengthWithDataSize = 32;
constexpr uint32_t kMinPtdHeaderLength = 40;

bool has_bytes_at(std::span<const uint8_t> file, size_t offset, const char* magic) {
  return file.size() >= offset + 4 && std::memcmp(file.data() + offset, magic, 4) == 0;
}

}  // namespace

uint32_t read_u32le(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t read_u64le(const uint8_t* p) {
  return uint64_t{read_u32le(p)} | uint64_t{read_u32le(p + 4)} << 32;
}

PteHeader parse_pte_header(std::span<const uint8_t> file) {
  PTERUN_CHECK(file.size() >= kMinPteBytes, ErrorCode::InvalidProgram, "header: the file has ",
               file.size(), " bytes, too few for an ExecuTorch program");
  const uint8_t* id = file.data() + 4;
  PTERUN_CHECK(id[0] == 'E' && id[1] == 'T', ErrorCode::InvalidProgram,
               "header: not an ExecuTorch program (file identifier is not 'ET..')");
  PTERUN_CHECK(id[2] == '1' && id[3] == '2', ErrorCode::InvalidProgram,
               "header: ExecuTorch program of an unsupported format version '",
               printable(std::string_view(reinterpret_cast<const char*>(id), 4)),
               "' (expected 'ET12')");

  PteHeader h;
  if (!has_bytes_at(file, 8, "eh00")) {
    h.program_size = file.size();
    return h;
  }
  PTERUN_CHECK(file.size() >= 8 + kMinPteHeaderLength, ErrorCode::InvalidProgram,
               "header: extended header is cut off (file has ", file.size(), " bytes)");
  h.has_extended_header = true;
  h.header_length = read_u32le(file.data() + 12);
  PTERUN_CHECK(h.header_length >= kMinPteHeaderLength, ErrorCode::InvalidProgram,
               "header: extended header length ", h.header_length, " is below the minimum ",
               kMinPteHeaderLength);
  PTERUN_CHECK(file.size() >= 8 + uint64_t{h.header_length}, ErrorCode::InvalidProgram,
               "header: extended header length ", h.header_length, " runs past the end of the ",
               file.size(), "-byte file");
  h.program_size = read_u64le(file.data() + 16);
  h.segment_base_offset = read_u64le(file.data() + 24);
  if (h.header_length >= kPteHeaderLengthWithDataSize) {
    h.segment_data_size = read_u64le(file.data() + 32);
  }
  PTERUN_CHECK(h.program_size >= 8 + uint64_t{h.header_length} && h.program_size <= file.size(),
               ErrorCode::InvalidProgram, "header: program_size ", h.program_size,
               " does not fit the ", file.size(), "-byte file");
  if (h.segment_base_offset != 0 || h.segment_data_size != 0) {
    PTERUN_CHECK(h.segment_base_offset >= h.program_size, ErrorCode::InvalidProgram,
                 "header: segment_base_offset ", h.segment_base_offset,
                 " points inside the flatbuffer (program_size ", h.program_size, ")");
    auto end = checked_add(h.segment_base_offset, h.segment_data_size);
    PTERUN_CHECK(end && *end <= file.size(), ErrorCode::InvalidProgram, "header: segment data [",
                 h.segment_base_offset, ", +", h.segment_data_size, ") runs past the end of the ",
                 file.size(), "-byte file (truncated?)");
  }
  return h;
}

PtdHeader parse_ptd_header(std::span<const uint8_t> file) {
  PTERUN_CHECK(file.size() >= 8 + kMinPtdHeaderLength, ErrorCode::InvalidExternalData,
               "data file: ", file.size(), " bytes is too short for a .ptd header");
  PTERUN_CHECK(has_bytes_at(file, 4, "FT01"), ErrorCode::InvalidExternalData,
               "data file: not an ExecuTorch data file (identifier is not 'FT01')");
  PTERUN_CHECK(has_bytes_at(file, 8, "FH01"), ErrorCode::InvalidExternalData,
               "data file: header magic is not 'FH01'");
  PtdHeader h;
  h.header_length = read_u32le(file.data() + 12);
  PTERUN_CHECK(h.header_length >= kMinPtdHeaderLength, ErrorCode::InvalidExternalData,
               "data file: header length ", h.header_length, " is below the minimum ",
               kMinPtdHeaderLength);
  h.flatbuffer_offset = read_u64le(file.data() + 16);
  h.flatbuffer_size = read_u64le(file.data() + 24);
  h.segment_base_offset = read_u64le(file.data() + 32);
  h.segment_data_size = read_u64le(file.data() + 40);
  auto fb_end = checked_add(h.flatbuffer_offset, h.flatbuffer_size);
  PTERUN_CHECK(fb_end && *fb_end <= file.size() && h.flatbuffer_offset >= h.header_length,
               ErrorCode::InvalidExternalData, "data file: flatbuffer [", h.flatbuffer_offset,
               ", +", h.flatbuffer_size, ") does not fit the ", file.size(), "-byte file");
  auto seg_end = checked_add(h.segment_base_offset, h.segment_data_size);
  PTERUN_CHECK(seg_end && *seg_end <= file.size(), ErrorCode::InvalidExternalData,
               "data file: segment data [", h.segment_base_offset, ", +", h.segment_data_size,
               ") runs past the end of the ", file.size(), "-byte file (truncated?)");
  return h;
}

}  // namespace pterun::format
