#include "pterun/format/header.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/cpp/test_util.h"

namespace pterun::format {
namespace {

using test::error_code_of;

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// A 256-byte file with a 32-byte extended header, a 128-byte flatbuffer
// region and 64 bytes of segment data at offset 192.
std::vector<uint8_t> make_pte() {
  std::vector<uint8_t> b(256, 0);
  std::memcpy(&b[4], "ET12", 4);
  std::memcpy(&b[8], "eh00", 4);
  put_u32(b, 12, 32);
  put_u64(b, 16, 128);
  put_u64(b, 24, 192);
  put_u64(b, 32, 64);
  return b;
}

TEST(PteHeader, ParsesExtendedHeader) {
  auto b = make_pte();
  PteHeader h = parse_pte_header(b);
  EXPECT_TRUE(h.has_extended_header);
  EXPECT_EQ(h.header_length, 32u);
  EXPECT_EQ(h.program_size, 128u);
  EXPECT_EQ(h.segment_base_offset, 192u);
  EXPECT_EQ(h.segment_data_size, 64u);
}

TEST(PteHeader, WithoutExtendedHeaderTheWholeFileIsTheFlatbuffer) {
  auto b = make_pte();
  std::memcpy(&b[8], "xxxx", 4);
  PteHeader h = parse_pte_header(b);
  EXPECT_FALSE(h.has_extended_header);
  EXPECT_EQ(h.program_size, b.size());
}

TEST(PteHeader, OldTwentyFourByteHeaderHasNoDataSize) {
  auto b = make_pte();
  put_u32(b, 12, 24);
  put_u64(b, 32, 999999);  // beyond the header: ignored
  PteHeader h = parse_pte_header(b);
  EXPECT_EQ(h.segment_data_size, 0u);
}

TEST(PteHeader, RejectsBadFiles) {
  auto expect_invalid = [](std::vector<uint8_t> b, const char* why) {
    EXPECT_EQ(error_code_of([&] { parse_pte_header(b); }), ErrorCode::InvalidProgram) << why;
  };
  expect_invalid({}, "empty");
  expect_invalid(std::vector<uint8_t>(7, 0), "too short");
  auto b = make_pte();
  std::memcpy(&b[4], "XX12", 4);
  expect_invalid(b, "not ExecuTorch");
  b = make_pte();
  std::memcpy(&b[4], "ET13", 4);
  expect_invalid(b, "other version");
  b = make_pte();
  put_u32(b, 12, 16);
  expect_invalid(b, "header length below 24");
  b = make_pte();
  put_u32(b, 12, 0xffffffff);
  expect_invalid(b, "header length past the file");
  b = make_pte();
  put_u64(b, 16, 257);
  expect_invalid(b, "program_size past the file");
  b = make_pte();
  put_u64(b, 16, 8);
  expect_invalid(b, "program_size inside the header");
  b = make_pte();
  put_u64(b, 32, 65);
  expect_invalid(b, "segment data past the file");
  b = make_pte();
  put_u64(b, 24, ~uint64_t{0} - 10);
  expect_invalid(b, "segment base overflow");
  b = make_pte();
  put_u64(b, 24, 64);
  expect_invalid(b, "segments inside the flatbuffer");
  b = make_pte();
  b.resize(40);
  expect_invalid(b, "truncated after the header");
}

std::vector<uint8_t> make_ptd() {
  std::vector<uint8_t> b(256, 0);
  std::memcpy(&b[4], "FT01", 4);
  std::memcpy(&b[8], "FH01", 4);
  put_u32(b, 12, 40);
  put_u64(b, 16, 48);
  put_u64(b, 24, 80);
  put_u64(b, 32, 128);
  put_u64(b, 40, 128);
  return b;
}

TEST(PtdHeader, ParsesAndRejects) {
  auto b = make_ptd();
  PtdHeader h = parse_ptd_header(b);
  EXPECT_EQ(h.flatbuffer_offset, 48u);
  EXPECT_EQ(h.segment_base_offset, 128u);
  auto expect_invalid = [](std::vector<uint8_t> bad, const char* why) {
    EXPECT_EQ(error_code_of([&] { parse_ptd_header(bad); }), ErrorCode::InvalidExternalData) << why;
  };
  expect_invalid(std::vector<uint8_t>(20, 0), "short");
  b = make_ptd();
  std::memcpy(&b[8], "FH02", 4);
  expect_invalid(b, "magic");
  b = make_ptd();
  put_u32(b, 12, 39);
  expect_invalid(b, "header length");
  b = make_ptd();
  put_u64(b, 40, 129);
  expect_invalid(b, "segments past the end");
  b = make_ptd();
  put_u64(b, 24, ~uint64_t{0});
  expect_invalid(b, "flatbuffer size overflow");
}

}  // namespace
}  // namespace pterun::format
