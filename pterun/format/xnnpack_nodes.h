#pragma once

// Internal to format/: node decoding for xnnpack_reader.cpp.

#include <string>
#include <unordered_map>
#include <vector>

#include "pterun/format/schema/xnnpack_generated.h"
#include "pterun/format/xnnpack_reader.h"

namespace pterun::format {

/// Decodes node `node` of the graph whose values are `values`, resolving
/// every id through `index_of_id` (serialized id -> value index) and
/// checking each node type's fields against the values they name. `what`
/// names the node in messages. Error InvalidProgram when anything is off.
XnnNodeDesc read_xnn_node(const pterun_fb::xnn::Node& node, const std::vector<XnnValueDesc>& values,
                          const std::unordered_map<uint32_t, int32_t>& index_of_id,
                          const std::string& what);

}  // namespace pterun::format
