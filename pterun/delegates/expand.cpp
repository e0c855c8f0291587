// Rewrites a method's chains: each DelegateCall of a delegate pterun runs
// becomes the kernel calls its lowering gives, and jump destinations are
// moved to where their instructions went.

#include "pterun/delegates/expand.h"

#include <memory>
#include <optional>

#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"
#include "pterun/core/text.h"
#include "pterun/delegates/arena.h"
#include "pterun/delegates/xnnpack_lowering.h"
#include "pterun/format/xnnpack_reader.h"

namespace pterun::delegates {
namespace {

using format::InstructionDesc;
using format::InstructionKind;

// Internal values of expanded calls start past the method's own planned
// memory (memory id 1), at this alignment.
uint64_t arena_base(const format::MethodDesc& m) {
  const uint64_t used = m.buffer_sizes.empty() ? 0 : m.buffer_sizes[0];
  return (used + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool called(const format::MethodDesc& m, size_t delegate) {
  for (const auto& chain : m.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind == InstructionKind::DelegateCall &&
          static_cast<size_t>(instr.index) == delegate) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

ExpandedMethod expand_delegates(const format::MethodDesc& method,
                                const format::NamedDataMap& named_data) {
  ExpandedMethod out;
  out.desc = method;
  MethodBuilder builder(out.desc, out.owned);

  // Each called delegate's graph, read once, or why it stays.
  std::vector<std::optional<format::XnnGraphDesc>> graphs(method.delegates.size());
  std::vector<std::unique_ptr<XnnpackLowering>> lowerings(method.delegates.size());
  for (size_t d = 0; d < method.delegates.size(); ++d) {
    const std::string& id = method.delegates[d].id;
    if (!called(method, d)) continue;
    if (id != format::kXnnpackBackendId) {
      out.unsupported.push_back(printable(id));
      continue;
    }
    graphs[d] = format::read_xnnpack_delegate(method, d, named_data);
    std::string why = xnnpack_unsupported(*graphs[d]);
    if (!why.empty()) {
      out.unsupported.push_back(str_cat(id, " (delegate ", d, ": ", why, ")"));
      continue;
    }
    lowerings[d] = std::make_unique<XnnpackLowering>(
        builder, *graphs[d],
        str_cat("method '", printable(method.name), "', delegate ", d, " (", id, ")"));
  }

  const uint64_t base = arena_base(method);
  uint64_t arena = 0;
  for (auto& chain : out.desc.chains) {
    std::vector<InstructionDesc> instrs;
    // new_pc[k]: where old instruction k starts; new_pc[size]: the end.
    std::vector<int32_t> new_pc;
    new_pc.reserve(chain.instructions.size() + 1);
    for (const InstructionDesc& instr : chain.instructions) {
      new_pc.push_back(static_cast<int32_t>(instrs.size()));
      XnnpackLowering* lowering =
          instr.kind == InstructionKind::DelegateCall ? lowerings[instr.index].get() : nullptr;
      if (lowering == nullptr) {
        instrs.push_back(instr);
        continue;
      }
      arena = std::max(arena, lowering->lower_call(instr.args, base, instrs));
      PTERUN_CHECK(instrs.size() < (size_t{1} << 30), ErrorCode::InvalidProgram, "method '",
                   printable(method.name),
                   "': its delegates expand into more than 2^30 "
                   "instructions");
    }
    new_pc.push_back(static_cast<int32_t>(instrs.size()));
    for (InstructionDesc& instr : instrs) {
      // The reader checked every destination against the old chain.
      if (instr.kind == InstructionKind::JumpFalseCall) instr.target = new_pc[instr.target];
    }
    chain.instructions = std::move(instrs);
  }

  if (arena > 0) {
    const uint64_t end = base + arena;
    PTERUN_CHECK(end >= base && end < (uint64_t{1} << 62), ErrorCode::InvalidProgram, "method '",
                 printable(method.name), "': its delegates need ", arena,
                 " bytes of planned memory");
    if (out.desc.buffer_sizes.empty()) {
      out.desc.buffer_sizes.push_back(0);
      out.desc.buffer_devices.emplace_back();
    }
    out.desc.buffer_sizes[0] = std::max(out.desc.buffer_sizes[0], end);
  }
  return out;
}

}  // namespace pterun::delegates
