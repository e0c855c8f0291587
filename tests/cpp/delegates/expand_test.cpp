// Delegate expansion on hand-built methods and payloads: calls become
// kernel calls over the right values, jump destinations follow, internal
// values are planned past the method's memory, constants point at the named
// data (copied only when misaligned), and what cannot be expanded stays a
// delegate call with its reason. Plus the arena planner on its own, and
// the bytes a MethodBuilder owns.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/delegates/arena.h"
#include "pterun/delegates/expand.h"
#include "pterun/format/schema/xnnpack_generated.h"
#include "pterun/format/xnnpack_reader.h"
#include "tests/cpp/delegates/payload_util.h"
#include "tests/cpp/test_util.h"

namespace pterun::delegates {
namespace {

namespace fb = pterun_fb::xnn;
using format::InstructionDesc;
using format::InstructionKind;
using format::kXnnInvalidId;

// A graph y = (x + w) * x over f32[2, 3]: x external 0, y external 1, w the
// named constant "w", t internal; `t_type` lets a test make t quantized.
std::vector<uint8_t> graph_payload(fb::DataType t_type = fb::DataType_fp32) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<uint32_t> dims = {2, 3};
  auto value = [&](fb::DataType type, uint32_t constant, uint32_t external, uint32_t flags,
                   uint32_t id) {
    auto t = fb::CreateTensorValueDirect(b, type, 2, &dims, constant, external, flags, id);
    if (type == fb::DataType_qint8) {
      auto q = fb::CreatePerTensorQuant(b, 0.5f, 0).Union();
      auto qt = fb::CreateQuantizedTensorValue(b, t, fb::QuantParams_PerTensorQuant, q);
      return fb::CreateValue(b, fb::ValueUnion_QuantizedTensorValue, qt.Union());
    }
    return fb::CreateValue(b, fb::ValueUnion_TensorValue, t.Union());
  };
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      value(fb::DataType_fp32, 0, 0, 1, 0), value(fb::DataType_fp32, 1, kXnnInvalidId, 0, 1),
      value(t_type, 0, kXnnInvalidId, 0, 2), value(fb::DataType_fp32, 0, 1, 2, 3)};
  std::vector<flatbuffers::Offset<fb::Node>> nodes = {
      fb::CreateNode(b, fb::NodeUnion_Add, fb::CreateBinaryNode(b, 0, 1, 2, 0).Union(), 1),
      fb::CreateNode(b, fb::NodeUnion_Multiply, fb::CreateBinaryNode(b, 2, 0, 3, 0).Union(), 2)};
  std::vector<flatbuffers::Offset<fb::ConstantDataOffset>> constants = {
      fb::CreateConstantDataOffsetDirect(b, 0, 0, nullptr),
      fb::CreateConstantDataOffsetDirect(b, ~uint64_t{0}, 24, "w")};
  b.Finish(fb::CreateGraphDirect(b, "0", &nodes, &values, 2, nullptr, nullptr, nullptr, nullptr,
                                 &constants),
           "XN01");
  return xnn_test::with_header(b);
}

// Values: x, y, a bool; chain: jump (to the second call), call, move, call.
struct Fixture {
  std::vector<uint8_t> payload = graph_payload();
  alignas(16) uint8_t named_bytes[40] = {};
  size_t named_offset = 0;  // where w's 24 bytes start in named_bytes
  format::ProgramDesc program;
  format::MethodDesc method;

  explicit Fixture(DType x_dtype = DType::Float32) {
    method.name = "forward";
    method.values = {
        xnn_test::planned_value(x_dtype, 0), xnn_test::planned_value(DType::Float32, 64), {}};
    method.values[2].kind = ValueKind::Bool;
    method.inputs = {0};
    method.outputs = {1};
    method.buffer_sizes = {100};
    method.buffer_devices.resize(1);
    format::DelegateDesc d;
    d.id = "XnnpackBackend";
    method.delegates = {d};
    InstructionDesc jump{InstructionKind::JumpFalseCall, 2, 3, {}};
    InstructionDesc call{InstructionKind::DelegateCall, 0, 0, {0, 1}};
    InstructionDesc move{InstructionKind::MoveCall, 1, 1, {}};
    method.chains.push_back({{jump, call, move, call}});
  }

  ExpandedMethod expand() {
    method.delegates[0].payload = payload;
    for (int i = 0; i < 6; ++i) {
      float f = static_cast<float>(i);
      std::memcpy(named_bytes + named_offset + 4 * i, &f, 4);
    }
    program.named_data = {{"w", {named_bytes + named_offset, 24}}};
    format::NamedDataMap named(program);
    return expand_delegates(method, named);
  }
};

TEST(ExpandDelegates, CallsBecomeKernelCallsAndJumpsFollow) {
  Fixture f;
  ExpandedMethod e = f.expand();
  ASSERT_TRUE(e.unsupported.empty());
  const auto& instrs = e.desc.chains[0].instructions;
  ASSERT_EQ(instrs.size(), 6u);  // jump, 2 nodes, move, 2 nodes
  EXPECT_EQ(instrs[0].kind, InstructionKind::JumpFalseCall);
  EXPECT_EQ(instrs[0].target, 4) << "the jump lands on the second call's first node";
  EXPECT_EQ(instrs[3].kind, InstructionKind::MoveCall);
  for (size_t k : {1, 2, 4, 5}) ASSERT_EQ(instrs[k].kind, InstructionKind::KernelCall);
  EXPECT_EQ(e.desc.operators[instrs[1].index].name, "xnnpack::add");
  EXPECT_EQ(e.desc.operators[instrs[2].index].name, "xnnpack::multiply");
  EXPECT_EQ(instrs[1].index, instrs[4].index) << "operators listed once";

  // add(x, w, out_min, out_max, t, t): x is the call's argument 0, w a
  // constant over the named bytes, t a new planned value past the
  // method's 100 bytes.
  const auto& add = instrs[1].args;
  ASSERT_EQ(add.size(), 6u);
  EXPECT_EQ(add[0], 0);
  const auto& w = *e.desc.values[add[1]].tensor;
  EXPECT_EQ(w.storage, format::TensorStorage::Constant);
  EXPECT_EQ(w.data.data(), f.named_bytes) << "aligned named data is used in place";
  EXPECT_TRUE(w.name.empty()) << "not an attribute of the method";
  EXPECT_EQ(e.desc.values[add[2]].kind, ValueKind::Double);
  EXPECT_EQ(e.desc.values[add[4]].kind, ValueKind::Tensor);
  EXPECT_EQ(add[4], add[5]) << "out, then out again as the returned value";
  const auto& t = *e.desc.values[add[4]].tensor;
  EXPECT_EQ(t.storage, format::TensorStorage::Planned);
  EXPECT_EQ(t.memory_id, 1u);
  EXPECT_EQ(t.memory_offset, 128u) << "the first 64-byte boundary past the method's memory";
  EXPECT_EQ(e.desc.buffer_sizes[0], 192u);
  // multiply(t, x, ..., y, y): y is the call's argument 1.
  const auto& mul = instrs[2].args;
  EXPECT_EQ(mul[0], add[4]);
  EXPECT_EQ(mul[1], 0);
  EXPECT_EQ(mul[4], 1);
  // The second call reuses the constant and gets its own internal value at
  // the same place (one call runs at a time).
  EXPECT_EQ(instrs[4].args[1], add[1]);
  EXPECT_NE(instrs[4].args[4], add[4]);
  EXPECT_EQ(e.desc.values[instrs[4].args[4]].tensor->memory_offset, 128u);
  // The original method is untouched.
  EXPECT_EQ(f.method.chains[0].instructions.size(), 4u);
  EXPECT_EQ(f.method.buffer_sizes[0], 100u);
}

TEST(ExpandDelegates, MisalignedConstantsAreCopied) {
  Fixture f;
  f.named_offset = 2;
  ExpandedMethod e = f.expand();
  const auto& w = *e.desc.values[e.desc.chains[0].instructions[1].args[1]].tensor;
  EXPECT_NE(w.data.data(), f.named_bytes + 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data.data()) % 4, 0u);
  ASSERT_EQ(w.data.size(), 24u);
  EXPECT_EQ(std::memcmp(w.data.data(), f.named_bytes + 2, 24), 0);
  EXPECT_FALSE(e.owned.empty());
}

TEST(MethodBuilder, OwnedBytesAreZeroedAlignedAndApart) {
  format::MethodDesc desc;
  OwnedBytes owned;
  MethodBuilder b(desc, owned);
  // Small buffers each on their own; from 64 KiB on, cut from regions of
  // 32 MiB or more (a new one when the current one's rest is too small).
  const size_t sizes[] = {0, 5, 100, 64 << 10, (3 << 20) + 7, 33 << 20, 200 << 10};
  std::vector<std::span<uint8_t>> got;
  for (size_t n : sizes) {
    std::span<uint8_t> s = b.own(n);
    ASSERT_EQ(s.size(), n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data()) % (n >= (64 << 10) ? 64 : 16), 0u) << n;
    EXPECT_TRUE(std::all_of(s.begin(), s.end(), [](uint8_t v) { return v == 0; })) << n;
    std::memset(s.data(), static_cast<int>(got.size() + 1), n);
    got.push_back(s);
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const auto mine = static_cast<uint8_t>(i + 1);
    EXPECT_TRUE(std::all_of(got[i].begin(), got[i].end(), [&](uint8_t v) { return v == mine; }))
        << "buffer " << i << " was written by another";
  }
}

TEST(ExpandDelegates, UnsupportedGraphsStayDelegateCallsWithTheReason) {
  Fixture f;
  f.payload = graph_payload(fb::DataType_qint8);
  ExpandedMethod e = f.expand();
  ASSERT_EQ(e.unsupported.size(), 1u);
  EXPECT_NE(e.unsupported[0].find("XnnpackBackend (delegate 0: node 0 (Add)"), std::string::npos)
      << e.unsupported[0];
  EXPECT_NE(e.unsupported[0].find("qint8"), std::string::npos) << e.unsupported[0];
  EXPECT_EQ(e.desc.chains[0].instructions.size(), 4u);
  EXPECT_EQ(e.desc.chains[0].instructions[1].kind, InstructionKind::DelegateCall);

  Fixture other;
  other.method.delegates[0].id = "OtherBackend";
  e = other.expand();
  EXPECT_EQ(e.unsupported, std::vector<std::string>{"OtherBackend"});
}

TEST(ExpandDelegates, DamagedPayloadsAndMismatchedArgumentsAreInvalidPrograms) {
  Fixture truncated;
  truncated.payload.resize(truncated.payload.size() / 2);
  EXPECT_EQ(test::error_code_of([&] { truncated.expand(); }), ErrorCode::InvalidProgram);
  Fixture wrong_dtype(DType::Int64);  // x is int64, the graph says fp32
  EXPECT_EQ(test::error_code_of([&] { wrong_dtype.expand(); }), ErrorCode::InvalidProgram);
}

// Requests alive at the same time never share bytes; dead ones are reused.
TEST(ArenaPlan, LiveValuesNeverOverlapAndDeadOnesShareBytes) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<ArenaRequest> reqs(1 + rng() % 40);
    for (auto& r : reqs) {
      r.bytes = rng() % 5000;
      r.first = rng() % 30;
      r.last = r.first + rng() % 8;
    }
    ArenaPlan plan = plan_arena(reqs);
    ASSERT_EQ(plan.offsets.size(), reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(plan.offsets[i] % kArenaAlignment, 0u);
      EXPECT_LE(plan.offsets[i] + reqs[i].bytes, plan.size);
      for (size_t j = 0; j < i; ++j) {
        const bool live = reqs[i].first <= reqs[j].last && reqs[j].first <= reqs[i].last;
        const bool apart = plan.offsets[i] + reqs[i].bytes <= plan.offsets[j] ||
                           plan.offsets[j] + reqs[j].bytes <= plan.offsets[i];
        if (live && reqs[i].bytes > 0 && reqs[j].bytes > 0) {
          EXPECT_TRUE(apart) << "requests " << i << " and " << j;
        }
      }
    }
  }
  // Three values each dead before the next is born fit in one slot.
  std::vector<ArenaRequest> chain = {{100, 0, 1}, {100, 2, 3}, {100, 4, 5}};
  EXPECT_EQ(plan_arena(chain).size, 128u);
}

}  // namespace
}  // namespace pterun::delegates
