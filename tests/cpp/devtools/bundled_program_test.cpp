// Bundled programs written by ExecuTorch's devtools (tests/fixtures/
// bundled_*.bpte): the reader, the program inside, and verification with
// ExecuTorch's rules.

#include "pterun/devtools/bundled_program.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

std::shared_ptr<const BundledProgram> load(const std::string& name) {
  return BundledProgram::load_file(test::fixtures_dir() + "/" + name + ".bpte");
}

std::vector<CaseResult> verify_all(const BundledProgram& b, double rtol = kBundledRtol,
                                   double atol = kBundledAtol) {
  std::vector<CaseResult> out;
  for (const auto& suite : b.suites()) {
    auto m = Method::load(b.program(), suite.method_name);
    for (size_t k = 0; k < suite.cases.size(); ++k) {
      out.push_back(run_case(*m, suite.cases[k], k, rtol, atol));
    }
  }
  return out;
}

TEST(BundledProgram, ReadsSuitesCasesAndValues) {
  auto b = load("bundled_multi");
  // In file order: ExecuTorch's serializer writes the suites sorted by name.
  ASSERT_EQ(b->suites().size(), 2u);
  EXPECT_EQ(b->suites()[0].method_name, "encode");
  EXPECT_EQ(b->suites()[1].method_name, "forward");
  const auto& c = b->test_case("encode", 1);
  ASSERT_EQ(c.inputs.size(), 2u);
  EXPECT_EQ(c.inputs[1].kind, ValueKind::Tensor);
  EXPECT_EQ(c.inputs[1].dtype, DType::Int64);
  EXPECT_EQ(c.inputs[1].sizes, (std::vector<int64_t>{3}));
  int64_t b1[3];
  std::memcpy(b1, c.inputs[1].data.data(), sizeof b1);
  EXPECT_EQ(b1[0], 7);  // the case's input, torch.tensor([7, 8, 9])
  EXPECT_EQ(b1[2], 9);
  EXPECT_EQ(b->program()->method_names(), (std::vector<std::string>{"encode", "forward"}));
  EXPECT_EQ(test::error_code_of([&] { b->cases("decode"); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(test::error_code_of([&] { b->test_case("encode", 2); }), ErrorCode::IndexOutOfRange);
}

TEST(BundledProgram, NumberInputsAndCasesWithoutExpectations) {
  auto b = load("bundled_scalars");
  const auto& c = b->test_case("forward", 0);
  ASSERT_EQ(c.inputs.size(), 4u);
  EXPECT_EQ(c.inputs[1].kind, ValueKind::Int);
  EXPECT_EQ(c.inputs[1].int_value, 3);
  EXPECT_EQ(c.inputs[2].kind, ValueKind::Double);
  EXPECT_EQ(c.inputs[2].double_value, 0.5);
  EXPECT_EQ(c.inputs[3].kind, ValueKind::Bool);
  EXPECT_TRUE(c.inputs[3].bool_value);
  auto results = verify_all(*b);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].compared && results[0].passed) << results[0].message;
  EXPECT_FALSE(results[1].compared);
  EXPECT_TRUE(results[1].passed);
}

TEST(BundledProgram, EveryCasePassesWhereExecuTorchPasses) {
  for (const char* name : {"bundled_add", "bundled_multi"}) {
    for (const auto& r : verify_all(*load(name))) {
      EXPECT_TRUE(r.compared && r.passed)
          << name << " " << r.method << "[" << r.index << "]: " << r.message;
      EXPECT_LT(r.max_abs_error, 1e-6);
    }
  }
}

TEST(BundledProgram, AWrongExpectationFailsAtTheDefaultTolerances) {
  auto b = load("bundled_wrong");
  auto results = verify_all(*b);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].passed);
  EXPECT_FALSE(results[1].passed);
  EXPECT_TRUE(results[2].passed);
  EXPECT_NE(results[1].message.find("output 0: 6 of 6 elements differ"), std::string::npos)
      << results[1].message;
  EXPECT_NEAR(results[1].max_abs_error, 1e-3, 1e-4);
  for (const auto& r : verify_all(*b, kBundledRtol, 1e-2)) EXPECT_TRUE(r.passed) << r.message;
}

TEST(BundledProgram, IntegersCompareBitwiseWhateverTheTolerance) {
  auto b = load("bundled_multi");
  auto m = Method::load(b->program(), "encode");
  format::BundledCase c = b->test_case("encode", 0);
  // encode's second output is int64 b*2+1: one element off by one fails
  // even with a tolerance of 10.
  ASSERT_EQ(c.expected_outputs[1].dtype, DType::Int64);
  std::vector<uint8_t> changed(c.expected_outputs[1].data.begin(),
                               c.expected_outputs[1].data.end());
  int64_t first;
  std::memcpy(&first, changed.data(), sizeof first);
  first += 1;
  std::memcpy(changed.data(), &first, sizeof first);
  c.expected_outputs[1].data = changed;
  CaseResult r = run_case(*m, c, 0, 10.0, 10.0);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("output 1: 1 of 3 elements differ; first at [0]"), std::string::npos)
      << r.message;
}

TEST(BundledProgram, ExpectationsInAnotherDimOrderCompareByPosition) {
  auto b = load("bundled_add");
  auto m = Method::load(b->program(), "forward");
  format::BundledCase c = b->test_case("forward", 0);
  // The same values stored column-major, with that dim order: still a pass.
  const format::BundledValue& rows = c.expected_outputs[0];
  std::vector<float> src(6), cols(6);
  std::memcpy(src.data(), rows.data.data(), rows.data.size());
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) cols[j * 2 + i] = src[i * 3 + j];
  }
  format::BundledValue v = rows;
  v.dim_order = {1, 0};
  v.strides = {1, 2};
  v.data = {reinterpret_cast<const uint8_t*>(cols.data()), cols.size() * sizeof(float)};
  c.expected_outputs[0] = v;
  CaseResult r = run_case(*m, c, 0, kBundledRtol, kBundledAtol);
  EXPECT_TRUE(r.passed) << r.message;
}

TEST(BundledProgram, ShapeAndDtypeMismatchesFail) {
  auto b = load("bundled_add");
  auto m = Method::load(b->program(), "forward");
  format::BundledCase c = b->test_case("forward", 0);
  c.expected_outputs[0].dtype = DType::Int32;
  EXPECT_NE(run_case(*m, c, 0, 1e-5, 1e-8).message.find("dtype float32, expected int32"),
            std::string::npos);
  c = b->test_case("forward", 0);
  c.expected_outputs[0].sizes = {3, 2};
  EXPECT_NE(run_case(*m, c, 0, 1e-5, 1e-8).message.find("shape [2, 3], expected [3, 2]"),
            std::string::npos);
  c = b->test_case("forward", 0);
  c.expected_outputs.push_back(c.expected_outputs[0]);
  EXPECT_NE(run_case(*m, c, 0, 1e-5, 1e-8).message.find("has 1 outputs, the case expects 2"),
            std::string::npos);
}

TEST(BundledProgram, ProgramLoadRunsTheProgramInside) {
  auto p = Program::load_file(test::fixtures_dir() + "/bundled_add.bpte");
  EXPECT_EQ(p->method_names(), std::vector<std::string>{"forward"});
  EXPECT_NE(p->desc().file_size, 0u);
}

TEST(BundledProgram, DamagedOrForeignFilesAreErrors) {
  auto bytes = test::read_file(test::fixtures_dir() + "/bundled_add.bpte");
  auto pte = test::read_file(test::fixtures_dir() + "/add.pte");
  EXPECT_FALSE(format::is_bundled_program(pte));
  EXPECT_TRUE(format::is_bundled_program(bytes));
  EXPECT_EQ(test::error_code_of([&] { BundledProgram::load(format::DataBuffer::copy_of(pte)); }),
            ErrorCode::InvalidProgram);
  std::vector<uint8_t> half(bytes.begin(), bytes.begin() + bytes.size() / 2);
  EXPECT_EQ(test::error_code_of([&] { BundledProgram::load(format::DataBuffer::copy_of(half)); }),
            ErrorCode::InvalidProgram);
  // Every single-byte change: a clean error or a clean load, never a crash.
  for (size_t pos = 8; pos < bytes.size(); pos += 7) {
    auto damaged = bytes;
    damaged[pos] ^= 0x5a;
    try {
      auto b = BundledProgram::load(format::DataBuffer::copy_of(damaged));
      for (const auto& suite : b->suites()) {
        auto m = Method::load(b->program(), suite.method_name);
        for (size_t k = 0; k < suite.cases.size(); ++k) {
          run_case(*m, suite.cases[k], k, kBundledRtol, kBundledAtol);
        }
      }
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace pterun
