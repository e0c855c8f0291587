// Every fixture loads, and its metadata equals what the export script read
// from the same file with ExecuTorch's own deserializer (manifest.json).

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "pterun/program/program.h"
#include "tests/cpp/test_util.h"

namespace pterun {
namespace {

using nlohmann::json;

std::shared_ptr<const Program> load_fixture(const json& files) {
  std::string dir = test::fixtures_dir() + "/";
  std::string data = files.contains("ptd") && !files["ptd"].is_null()
                         ? dir + files["ptd"].get<std::string>()
                         : std::string();
  return Program::load_file(dir + files["pte"].get<std::string>(), data);
}

void expect_io(const format::MethodDesc& m, int32_t value, const json& expected,
               const std::string& where) {
  const auto& v = m.values[value];
  EXPECT_EQ(format::value_kind_name(v.kind), expected["tag"].get<std::string>()) << where;
  if (v.kind != format::ValueKind::Tensor || expected["tag"] != "Tensor") return;
  TensorInfo t = TensorInfo::from(*v.tensor);
  EXPECT_EQ(dtype_name(t.dtype), expected["dtype"].get<std::string>()) << where;
  EXPECT_EQ(t.sizes, expected["sizes"].get<std::vector<int64_t>>()) << where;
  std::vector<int> order(t.dim_order.begin(), t.dim_order.end());
  EXPECT_EQ(order, expected["dim_order"].get<std::vector<int>>()) << where;
  EXPECT_EQ(shape_dynamism_name(t.dynamism), expected["shape_dynamism"].get<std::string>())
      << where;
  EXPECT_EQ(t.is_memory_planned, expected["is_memory_planned"].get<bool>()) << where;
  EXPECT_EQ(t.nbytes, expected["nbytes"].get<uint64_t>()) << where;
}

TEST(Fixtures, MetadataMatchesTheExporter) {
  const json& fixtures = test::manifest()["fixtures"];
  ASSERT_GE(fixtures.size(), 20u);
  for (const auto& [name, fx] : fixtures.items()) {
    SCOPED_TRACE(name);
    auto p = load_fixture(fx["files"]);
    const json& methods = fx["methods"];
    std::vector<std::string> names = p->method_names();
    ASSERT_EQ(names.size(), methods.size());
    for (const auto& [mname, mx] : methods.items()) {
      SCOPED_TRACE(mname);
      const auto& m = p->method(mname);
      ASSERT_EQ(m.inputs.size(), mx["inputs"].size());
      ASSERT_EQ(m.outputs.size(), mx["outputs"].size());
      for (size_t i = 0; i < m.inputs.size(); ++i) {
        expect_io(m, m.inputs[i], mx["inputs"][i], "input " + std::to_string(i));
      }
      for (size_t i = 0; i < m.outputs.size(); ++i) {
        expect_io(m, m.outputs[i], mx["outputs"][i], "output " + std::to_string(i));
      }
      std::map<std::string, int> ops;
      for (const auto& c : m.chains) {
        for (const auto& instr : c.instructions) {
          if (instr.kind == format::InstructionKind::KernelCall) {
            ++ops[m.operators[instr.index].full_name()];
          }
        }
      }
      EXPECT_EQ(ops, (mx["operators"].get<std::map<std::string, int>>()));
      EXPECT_EQ(p->method_meta(mname).backends(), mx["delegates"].get<std::vector<std::string>>());
      EXPECT_EQ(m.buffer_sizes, mx["memory_planned_buffer_sizes"].get<std::vector<uint64_t>>());
      EXPECT_EQ(m.num_instructions(), mx["num_instructions"].get<size_t>());
      EXPECT_EQ(m.values.size(), mx["num_values"].get<size_t>());
      EXPECT_TRUE(p->missing_external_keys(mname).empty());
    }
    const json& prog = fx["program"];
    EXPECT_EQ(p->desc().constant_bytes, prog["constant_bytes"].get<uint64_t>());
    EXPECT_EQ(p->desc().num_segments, prog["num_segments"].get<size_t>());
    EXPECT_EQ(p->desc().has_extended_header, prog["has_extended_header"].get<bool>());
    EXPECT_EQ(p->desc().file_size, prog["file_size"].get<uint64_t>());
  }
}

TEST(Fixtures, ExternalWeightsNeedTheirDataFile) {
  auto p = Program::load_file(test::fixtures_dir() + "/external_weights.pte");
  EXPECT_FALSE(p->missing_external_keys("forward").empty());
  auto with = Program::load_file(test::fixtures_dir() + "/external_weights.pte",
                                 test::fixtures_dir() + "/external_weights.ptd");
  EXPECT_TRUE(with->missing_external_keys("forward").empty());
  ASSERT_NE(with->external_data(), nullptr);
  for (const auto& e : with->external_data()->entries) {
    ASSERT_TRUE(e.layout.has_value()) << e.key;
    EXPECT_EQ(e.layout->nbytes, e.data.size()) << e.key;
  }
}

}  // namespace
}  // namespace pterun
