// The programs in shared/reference/vectors (outside the repository),
// written by ExecuTorch's own tools in older format variants, load with the
// contents docs/format.md, "Reference vectors", describes. They belong to the outside reference,
// not to this repository: without them these tests skip.

#include <gtest/gtest.h>

#include <cstring>

#include "pterun/program/program.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

std::vector<float> floats_of(std::span<const uint8_t> bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

TEST(ReferenceVectors, AddWithoutExtendedHeader) {
  SKIP_WITHOUT_VECTORS();
  auto p = Program::load_file(test::vectors_dir() + "/et_add_no_extended_header.pte");
  const auto& d = p->desc();
  EXPECT_FALSE(d.has_extended_header);
  ASSERT_EQ(p->method_names(), std::vector<std::string>{"forward"});
  const auto& m = p->method("forward");
  EXPECT_EQ(m.inputs, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(m.outputs, (std::vector<int32_t>{2}));
  EXPECT_EQ(m.buffer_sizes, (std::vector<uint64_t>{48}));
  ASSERT_EQ(m.chains.size(), 1u);
  ASSERT_EQ(m.chains[0].instructions.size(), 1u);
  const auto& call = m.chains[0].instructions[0];
  EXPECT_EQ(m.operators[call.index].full_name(), "aten::add.out");
  EXPECT_EQ(call.args, (std::vector<int32_t>{0, 1, 3, 2, 2}));
  EXPECT_EQ(m.values[3].kind, format::ValueKind::Int);
  EXPECT_EQ(m.values[3].int_value, 1);
  MethodMeta meta = p->method_meta("forward");
  TensorInfo in0 = meta.input_tensor_meta(0);
  EXPECT_EQ(in0.sizes, (std::vector<int64_t>{1}));
  EXPECT_EQ(in0.dtype, DType::Float32);
  EXPECT_TRUE(in0.is_memory_planned);
  const auto& t1 = *m.values[1].tensor;
  EXPECT_EQ(t1.memory_id, 1u);
  EXPECT_EQ(t1.memory_offset, 16u);
}

TEST(ReferenceVectors, AddOneReadsItsConstantFromASegment) {
  SKIP_WITHOUT_VECTORS();
  auto p = Program::load_file(test::vectors_dir() + "/et_add_one.pte");
  const auto& d = p->desc();
  EXPECT_TRUE(d.has_extended_header);
  EXPECT_EQ(d.file_size, 1156u);
  EXPECT_EQ(d.program_size, 0x410u);
  const auto& m = p->method("forward");
  const auto& c = *m.values[0].tensor;
  EXPECT_EQ(c.storage, format::TensorStorage::Constant);
  EXPECT_TRUE(c.sizes.empty());
  EXPECT_EQ(floats_of(c.data), (std::vector<float>{1.0f}));
  EXPECT_EQ(m.buffer_sizes, (std::vector<uint64_t>{32}));
}

TEST(ReferenceVectors, InlineConstantBuffer) {
  SKIP_WITHOUT_VECTORS();
  auto p = Program::load_file(test::vectors_dir() + "/et_inline_constant_buffer.pte");
  EXPECT_TRUE(p->desc().uses_inline_constant_buffer);
  const auto& m = p->method("forward");
  std::vector<std::vector<float>> constants;
  for (const auto& v : m.values) {
    if (v.kind == format::ValueKind::Tensor &&
        v.tensor->storage == format::TensorStorage::Constant) {
      constants.push_back(floats_of(v.tensor->data));
    }
  }
  ASSERT_EQ(constants.size(), 2u);
  std::sort(constants.begin(), constants.end());
  EXPECT_EQ(constants[0], std::vector<float>(4, 2.0f));
  EXPECT_EQ(constants[1], std::vector<float>(4, 3.0f));
  // The output is planned on top of the input.
  const auto& in = *m.values[m.inputs[0]].tensor;
  const auto& out = *m.values[m.outputs[0]].tensor;
  EXPECT_EQ(in.memory_id, out.memory_id);
  EXPECT_EQ(in.memory_offset, out.memory_offset);
}

// The project's own behaviour, on the project's own fixtures.

TEST(ProgramLoad, FromBytesAndBorrowedBuffers) {
  auto bytes = test::read_file(test::fixtures_dir() + "/mlp.pte");
  auto owned = Program::load(format::DataBuffer::copy_of(bytes));
  EXPECT_EQ(owned->method_names(), std::vector<std::string>{"forward"});
  // A misaligned caller buffer is copied, so constants stay aligned.
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  auto borrowed = Program::load(
      format::DataBuffer::borrow(std::span<const uint8_t>(shifted).subspan(1), nullptr));
  int constants = 0;
  for (const auto& v : borrowed->method("forward").values) {
    if (v.kind != format::ValueKind::Tensor ||
        v.tensor->storage != format::TensorStorage::Constant) {
      continue;
    }
    ++constants;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.tensor->data.data()) % 4, 0u);
  }
  EXPECT_GT(constants, 0);
}

TEST(ProgramLoad, MissingFileAndMissingMethod) {
  EXPECT_EQ(test::error_code_of([] { Program::load_file("/nonexistent/x.pte"); }),
            ErrorCode::FileNotFound);
  auto p = Program::load_file(test::fixtures_dir() + "/add.pte");
  EXPECT_EQ(test::error_code_of([&] { p->method_meta("backward"); }), ErrorCode::InvalidArgument);
  MethodMeta meta = p->method_meta("forward");
  EXPECT_EQ(test::error_code_of([&] { meta.input_tag(2); }), ErrorCode::IndexOutOfRange);
}

}  // namespace
}  // namespace pterun
