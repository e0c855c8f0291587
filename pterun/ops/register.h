#pragma once

// The operator list (register.cpp) and how a backend registers it.

#include <cstdint>
#include <span>
#include <string_view>

#include "pterun/core/device.h"
#include "pterun/kernels/registry.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/unbox.h"

namespace pterun::ops {

/// One operator: its name, its front-end as a KernelFn, its family and what
/// the loader needs to know of it.
struct OpDef {
  std::string_view name;
  kernels::KernelFn fn = nullptr;
  OpFamily family = OpFamily::Prim;
  bool foldable = false;
  uint8_t num_args = 0;
  const uint16_t* arg_kinds = nullptr;
  /// For an operator that some backends of its family lack: true when
  /// `backend` computes it (nullptr: whenever it computes the family).
  bool (*provided)(const OpBackend& backend) = nullptr;
};

/// Whether constant folding may run an operator at load (deterministic, no
/// side effects).
enum class Fold : bool { No = false, Yes = true };

/// The OpDef of the typed front-end `Fn`.
template <auto Fn>
constexpr OpDef def(std::string_view name, OpFamily family, Fold fold = Fold::No) {
  using B = Boxed<Fn>;
  return OpDef{name,
               &B::call,
               family,
               fold == Fold::Yes,
               static_cast<uint8_t>(B::kArity),
               B::kKinds.empty() ? nullptr : B::kKinds.data()};
}

/// `op`, registered only where `provided` says the backend computes it.
constexpr OpDef only_where(OpDef op, bool (*provided)(const OpBackend&)) {
  op.provided = provided;
  return op;
}

/// Every operator pterun has, each once, in the order of register.cpp.
std::span<const OpDef> all_ops();

/// Makes `backend` the table of `device` and registers every operator whose
/// family it provides.
void register_ops(kernels::KernelRegistry& registry, Device device, const OpBackend& backend);

}  // namespace pterun::ops
