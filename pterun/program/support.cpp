#include "pterun/program/support.h"

#include <algorithm>

#include "pterun/core/str_cat.h"
#include "pterun/core/text.h"
#include "pterun/kernels/registry.h"
#include "pterun/program/program.h"

namespace pterun {
namespace {

void add_once(std::vector<std::string>& list, std::string item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + printable(s);
  return out;
}

}  // namespace

std::string SupportReport::describe(const std::string& method, Device device) const {
  std::string out = str_cat("method '", printable(method), "' cannot run on ", device_name(device),
                            " in this build of pterun");
  if (!missing_operators.empty()) out += "; missing operators: " + join(missing_operators);
  if (!missing_backends.empty()) out += "; missing delegate backends: " + join(missing_backends);
  if (!other.empty()) out += "; " + join(other);
  return out;
}

SupportReport check_support(const format::MethodDesc& method, Device device) {
  SupportReport report;
  const auto& registry = kernels::KernelRegistry::global();
  std::vector<bool> used(method.operators.size(), false);
  std::vector<std::string> names(method.operators.size());
  for (const auto& chain : method.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind == format::InstructionKind::KernelCall) used[instr.index] = true;
    }
  }
  for (size_t i = 0; i < method.operators.size(); ++i) {
    names[i] = method.operators[i].full_name();
    if (used[i] && registry.find(names[i], device) == nullptr) {
      add_once(report.missing_operators, names[i]);
    }
  }
  // Dtypes a backend does not compute: judged by the first tensor argument.
  for (const auto& chain : method.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind != format::InstructionKind::KernelCall) continue;
      const kernels::KernelInfo* info = registry.info(names[instr.index], device);
      if (info == nullptr || info->dtypes == DTypeSet::all()) continue;
      for (size_t a = 0; a + 1 < instr.args.size(); ++a) {
        const auto& v = method.values[instr.args[a]];
        if (v.kind != format::ValueKind::Tensor) continue;
        if (!info->dtypes.contains(v.tensor->dtype)) {
          add_once(report.missing_operators,
                   str_cat(names[instr.index], " for ", dtype_name(v.tensor->dtype), " tensors"));
        }
        break;
      }
    }
  }
  // A delegate call left in a method is one pterun cannot run
  // (Program::runnable_method expands the others).
  for (const auto& chain : method.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind == format::InstructionKind::DelegateCall) {
        add_once(report.missing_backends, method.delegates[instr.index].id);
      }
    }
  }
  for (const auto& v : method.values) {
    if (v.kind == format::ValueKind::Tensor &&
        v.tensor->dynamism == format::ShapeDynamism::DynamicUnbound) {
      add_once(report.other, "tensors with unbounded dynamic shapes are not supported");
    }
  }
  return report;
}

SupportReport check_support(const Program& program, const std::string& name, Device device) {
  SupportReport report = check_support(program.runnable_method(name), device);
  report.missing_backends = program.unsupported_delegates(name);
  return report;
}

}  // namespace pterun
