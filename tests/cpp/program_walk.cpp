#include "tests/cpp/program_walk.h"

#include "pterun/core/error.h"
#include "pterun/format/xnnpack_reader.h"
#include "pterun/program/program.h"
#include "pterun/program/support.h"

namespace pterun::test {
namespace {

uint64_t touch(std::span<const uint8_t> bytes) {
  return bytes.empty() ? 0 : uint64_t{bytes.front()} + bytes.back();
}

// Reads every XNNPACK payload of `m` as the delegate executor will; a
// payload that does not read is an expected outcome of damage.
uint64_t walk_xnnpack(const format::MethodDesc& m, const format::NamedDataMap& named) {
  uint64_t sum = 0;
  for (size_t i = 0; i < m.delegates.size(); ++i) {
    if (m.delegates[i].id != format::kXnnpackBackendId) continue;
    try {
      format::XnnGraphDesc g = format::read_xnnpack_delegate(m, i, named);
      for (const auto& v : g.values) sum += touch(v.data) + touch(v.quant.scale_data);
      sum += g.nodes.size();
    } catch (const Error&) {
      ++sum;
    }
  }
  return sum;
}

}  // namespace

uint64_t walk_program(const Program& p) {
  uint64_t sum = 0;
  format::NamedDataMap named(p.desc(), p.external_data());
  for (const auto& m : p.desc().methods) {
    MethodMeta meta = p.method_meta(m.name);
    for (size_t i = 0; i < meta.num_inputs(); ++i) {
      if (meta.input_tag(i) == ValueKind::Tensor) sum += meta.input_tensor_meta(i).nbytes;
    }
    for (size_t i = 0; i < meta.num_outputs(); ++i) {
      if (meta.output_tag(i) == ValueKind::Tensor) sum += meta.output_tensor_meta(i).nbytes;
    }
    for (size_t i = 0; i < meta.num_attributes(); ++i) sum += meta.attribute_tensor_meta(i).nbytes;
    for (const auto& v : m.values) {
      if (v.kind == ValueKind::Tensor) sum += touch(v.tensor->data);
    }
    for (const auto& d : m.delegates) {
      sum += touch(d.payload);
      for (const auto& cs : d.compile_specs) sum += touch(cs.value);
    }
    sum += walk_xnnpack(m, named);
    sum += check_support(m, Device::CPU).missing_operators.size();
    // The method as it runs: its XNNPACK delegates expanded (a damaged
    // payload is an Error here, and only here).
    try {
      const format::MethodDesc& runs = p.runnable_method(m.name);
      sum += runs.num_instructions() + runs.values.size();
      sum += check_support(p, m.name, Device::CPU).missing_backends.size();
    } catch (const Error&) {
      ++sum;
    }
    sum += p.missing_external_keys(m.name).size();
  }
  for (const auto& n : p.desc().named_data) sum += touch(n.data);
  if (const auto* ext = p.external_data()) {
    for (const auto& e : ext->entries) sum += touch(e.data);
  }
  return sum;
}

}  // namespace pterun::test
