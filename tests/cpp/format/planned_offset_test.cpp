// A planned tensor whose offset does not keep its elements aligned (a
// damaged allocation_info) is refused at load: kernels read and write
// elements in place, and a misaligned float is undefined behaviour.

#include <gtest/gtest.h>

#include <cstring>

#include "pterun/core/error.h"
#include "pterun/format/schema/program_generated.h"
#include "pterun/program/program.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

TEST(PlannedOffset, AnOffsetOffTheElementSizeIsRefused) {
  std::vector<uint8_t> bytes = test::read_file(test::source_dir() + "/tests/fixtures/add.pte");
  const auto* program = pterun_fb::GetProgram(bytes.data());
  uint8_t* field = nullptr;
  for (const auto* v : *program->execution_plan()->Get(0)->values()) {
    const auto* t = v->val_as_Tensor();
    if (t == nullptr || t->allocation_info() == nullptr) continue;
    // The generated table inherits privately from flatbuffers::Table.
    const auto* table = reinterpret_cast<const flatbuffers::Table*>(t->allocation_info());
    const uint8_t* at = table->GetAddressOf(pterun_fb::AllocationDetails::VT_MEMORY_OFFSET_LOW);
    if (at != nullptr && t->allocation_info()->memory_offset_low() >= 4) {
      field = bytes.data() + (at - bytes.data());
      break;
    }
  }
  ASSERT_NE(field, nullptr) << "add.pte has no planned tensor at a non-zero offset";
  // The original loads.
  EXPECT_NO_THROW(Program::load(format::DataBuffer::copy_of(bytes)));
  uint32_t offset = 0;
  std::memcpy(&offset, field, 4);
  offset -= 1;  // still inside the buffer, no longer a multiple of 4
  std::memcpy(field, &offset, 4);
  try {
    Program::load(format::DataBuffer::copy_of(bytes));
    FAIL() << "a float tensor planned at an odd offset loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidProgram);
    EXPECT_NE(std::string(e.what()).find("not a multiple of its element size"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pterun
