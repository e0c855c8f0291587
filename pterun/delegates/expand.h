#pragma once

// Delegates, expanded at load into ordinary kernel calls (docs/format.md,
// "How delegates run"): the rest of the runtime (support checks, constants
// on a GPU, memory planning, constant folding, CUDA graphs, dynamic shapes)
// then treats a delegated method like any other.

#include <string>
#include <vector>

#include "pterun/delegates/method_builder.h"
#include "pterun/format/named_data_map.h"
#include "pterun/format/program_desc.h"

namespace pterun::delegates {

/// A method with its delegate calls expanded where pterun can run them.
struct ExpandedMethod {
  /// The method as it runs: every call of a delegate pterun runs is
  /// replaced by kernel calls over new values (jump targets follow); the
  /// inputs, outputs and existing values are the original method's.
  format::MethodDesc desc;
  /// Bytes the expansion made, which constants in `desc` point into.
  OwnedBytes owned;
  /// Delegates left as DelegateCall instructions because pterun cannot run
  /// them, each "<id> (delegate <i>: <why>)".
  std::vector<std::string> unsupported;
};

/// Expands every XnnpackBackend delegate call of `method` (constants from
/// `named_data`) whose graph pterun can run; other delegates, and XNNPACK
/// graphs with node types or datatypes pterun lacks, stay as they are and
/// are listed in `unsupported`. Error InvalidProgram for a damaged payload
/// or a call whose arguments do not match its graph. The result refers to
/// `method`'s and `named_data`'s bytes: their owners must outlive it.
ExpandedMethod expand_delegates(const format::MethodDesc& method,
                                const format::NamedDataMap& named_data);

}  // namespace pterun::delegates
