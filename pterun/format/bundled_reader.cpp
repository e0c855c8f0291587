#include "pterun/format/bundled_reader.h"

#include <algorithm>
#include <cstring>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/format/schema/bundled_program_generated.h"

namespace pterun::format {
namespace {

constexpr uint64_t kMaxFlatbufferSize = (uint64_t{1} << 31) - 1;
constexpr size_t kMaxRank = 16;

BundledValue read_tensor(const pterun_bp::TensorValue& t, const std::string& what) {
  BundledValue v;
  v.kind = ValueKind::Tensor;
  auto dtype = dtype_from_number(t.scalar_type());
  PTERUN_CHECK(dtype.has_value(), ErrorCode::InvalidProgram, what, ": unknown scalar type ",
               int{t.scalar_type()});
  v.dtype = *dtype;
  PTERUN_CHECK(t.sizes() != nullptr && t.data() != nullptr, ErrorCode::InvalidProgram, what,
               ": tensor lacks sizes or data");
  const size_t rank = t.sizes()->size();
  PTERUN_CHECK(rank <= kMaxRank, ErrorCode::InvalidProgram, what, ": rank ", rank,
               " exceeds the limit of ", kMaxRank);
  v.sizes.assign(t.sizes()->begin(), t.sizes()->end());
  // ExecuTorch writes the dim order; an absent one means row-major.
  if (t.dim_order() != nullptr && t.dim_order()->size() > 0) {
    v.dim_order.assign(t.dim_order()->begin(), t.dim_order()->end());
  } else {
    for (size_t d = 0; d < rank; ++d) v.dim_order.push_back(static_cast<uint8_t>(d));
  }
  PTERUN_CHECK(v.dim_order.size() == rank, ErrorCode::InvalidProgram, what, ": dim_order has ",
               v.dim_order.size(), " entries for rank ", rank);
  std::vector<bool> seen(rank, false);
  for (uint8_t d : v.dim_order) {
    PTERUN_CHECK(d < rank && !seen[d], ErrorCode::InvalidProgram, what,
                 ": dim_order is not a permutation");
    seen[d] = true;
  }
  auto numel = checked_numel(std::span<const int64_t>(v.sizes));
  auto nbytes = numel ? checked_mul(*numel, element_size(v.dtype)) : std::nullopt;
  PTERUN_CHECK(nbytes.has_value(), ErrorCode::InvalidProgram, what,
               ": negative size or byte size overflow");
  PTERUN_CHECK(t.data()->size() == *nbytes, ErrorCode::InvalidProgram, what, ": ", t.data()->size(),
               " data bytes for ", dtype_name(v.dtype), " of ", *numel, " elements (", *nbytes,
               " bytes)");
  v.data = {t.data()->data(), t.data()->size()};
  // Strides of the dim order: the last dimension in memory is the densest.
  v.strides.assign(rank, 1);
  int64_t step = 1;
  for (size_t k = rank; k-- > 0;) {
    v.strides[v.dim_order[k]] = step;
    step *= std::max<int64_t>(v.sizes[v.dim_order[k]], 1);
  }
  return v;
}

BundledValue read_value(const pterun_bp::Value* value, const std::string& what) {
  PTERUN_CHECK(value != nullptr, ErrorCode::InvalidProgram, what, ": missing");
  BundledValue v;
  switch (value->val_type()) {
    case pterun_bp::ValueUnion_TensorValue: return read_tensor(*value->val_as_TensorValue(), what);
    case pterun_bp::ValueUnion_IntValue:
      v.kind = ValueKind::Int;
      v.int_value = value->val_as_IntValue()->value();
      return v;
    case pterun_bp::ValueUnion_BoolValue:
      v.kind = ValueKind::Bool;
      v.bool_value = value->val_as_BoolValue()->value();
      return v;
    case pterun_bp::ValueUnion_DoubleValue:
      v.kind = ValueKind::Double;
      v.double_value = value->val_as_DoubleValue()->value();
      return v;
    default:
      throw_error(ErrorCode::InvalidProgram,
                  str_cat(what, ": unknown value type ", static_cast<int>(value->val_type())));
  }
}

std::vector<BundledValue> read_values(
    const flatbuffers::Vector<flatbuffers::Offset<pterun_bp::Value>>* values,
    const std::string& what) {
  std::vector<BundledValue> out;
  if (values == nullptr) return out;
  for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i) {
    out.push_back(read_value(values->Get(i), str_cat(what, " ", i)));
  }
  return out;
}

}  // namespace

bool is_bundled_program(std::span<const uint8_t> file) {
  return file.size() >= 8 && std::memcmp(file.data() + 4, pterun_bp::BundleIdentifier(), 4) == 0;
}

BundledDesc read_bundled_program(const DataBuffer& buffer) {
  std::span<const uint8_t> file = buffer.bytes();
  PTERUN_CHECK(is_bundled_program(file), ErrorCode::InvalidProgram,
               "bundled program: no 'BP08' identifier (not a .bpte file)");
  PTERUN_CHECK(file.size() <= kMaxFlatbufferSize, ErrorCode::InvalidProgram,
               "bundled program: larger than the 2 GiB flatbuffer limit");
  flatbuffers::Verifier verifier(file.data(), file.size());
  PTERUN_CHECK(pterun_bp::VerifyBundleBuffer(verifier), ErrorCode::InvalidProgram,
               "bundled program: flatbuffer verification failed (damaged file)");
  const auto& root = *pterun_bp::GetBundle(file.data());
  PTERUN_CHECK(root.version() == kBundledVersion, ErrorCode::InvalidProgram,
               "bundled program: unsupported schema version ", root.version(), " (expected ",
               kBundledVersion, ")");
  PTERUN_CHECK(root.program() != nullptr && root.program()->size() > 0, ErrorCode::InvalidProgram,
               "bundled program: holds no program");
  BundledDesc out;
  out.version = root.version();
  out.program = {root.program()->data(), root.program()->size()};
  if (root.method_test_suites() == nullptr) return out;
  for (flatbuffers::uoffset_t s = 0; s < root.method_test_suites()->size(); ++s) {
    const auto* suite = root.method_test_suites()->Get(s);
    PTERUN_CHECK(suite != nullptr && suite->method_name() != nullptr, ErrorCode::InvalidProgram,
                 "bundled program: test suite ", s, " has no method name");
    BundledSuite bs;
    bs.method_name.assign(suite->method_name()->c_str(), suite->method_name()->size());
    if (suite->test_cases() != nullptr) {
      for (flatbuffers::uoffset_t c = 0; c < suite->test_cases()->size(); ++c) {
        const auto* tc = suite->test_cases()->Get(c);
        std::string what = str_cat("bundled program, method '", bs.method_name, "' case ", c);
        PTERUN_CHECK(tc != nullptr, ErrorCode::InvalidProgram, what, ": missing");
        BundledCase bc;
        bc.inputs = read_values(tc->inputs(), what + ", input");
        bc.expected_outputs = read_values(tc->expected_outputs(), what + ", expected output");
        bs.cases.push_back(std::move(bc));
      }
    }
    out.suites.push_back(std::move(bs));
  }
  return out;
}

}  // namespace pterun::format
