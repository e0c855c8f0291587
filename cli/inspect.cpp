#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "pterun/backend/device_info.h"
#include "pterun/core/error.h"
#include "pterun/format/xnnpack_reader.h"
#include "pterun/program/program.h"
#include "pterun/program/support.h"

namespace pterun::cli {
namespace {

using nlohmann::ordered_json;

ordered_json describe_io(const format::MethodDesc& m, int32_t value_index) {
  const auto& v = m.values[value_index];
  ordered_json j;
  j["tag"] = format::value_kind_name(v.kind);
  j["value"] = value_index;
  if (v.kind == format::ValueKind::Tensor) {
    TensorInfo t = TensorInfo::from(*v.tensor);
    j["dtype"] = std::string(dtype_name(t.dtype));
    j["sizes"] = t.sizes;
    std::vector<int> dim_order(t.dim_order.begin(), t.dim_order.end());
    j["dim_order"] = dim_order;
    j["shape_dynamism"] = shape_dynamism_name(t.dynamism);
    j["is_memory_planned"] = t.is_memory_planned;
    j["nbytes"] = t.nbytes;
    if (!t.name.empty()) j["name"] = t.name;
  } else if (v.kind == format::ValueKind::Int) {
    j["int"] = v.int_value;
  } else if (v.kind == format::ValueKind::Double) {
    j["double"] = v.double_value;
  } else if (v.kind == format::ValueKind::Bool) {
    j["bool"] = v.bool_value;
  } else if (v.kind == format::ValueKind::String) {
    j["string"] = v.string_value;
  }
  return j;
}

// Each XNNPACK delegate of `m`: its graph's size and node counts by type,
// or why its payload cannot be read.
ordered_json describe_xnnpack(const format::MethodDesc& m, const format::NamedDataMap& named) {
  ordered_json list = ordered_json::array();
  for (size_t i = 0; i < m.delegates.size(); ++i) {
    if (m.delegates[i].id != format::kXnnpackBackendId) continue;
    ordered_json d;
    d["delegate"] = i;
    try {
      format::XnnGraphDesc g = format::read_xnnpack_delegate(m, i, named);
      d["payload_bytes"] = m.delegates[i].payload.size();
      d["num_nodes"] = g.nodes.size();
      d["num_values"] = g.values.size();
      d["num_constants"] = g.num_constants();
      d["constant_bytes"] = g.constant_bytes();
      d["num_inputs"] = g.inputs.size();
      d["num_outputs"] = g.outputs.size();
      std::map<std::string, size_t> counts;
      for (const auto& n : g.nodes) ++counts[std::string(format::xnn_node_type_name(n.type))];
      d["nodes"] = counts;
    } catch (const Error& e) {
      d["error"] = e.what();
    }
    list.push_back(d);
  }
  return list;
}

ordered_json describe(const Program& program) {
  const auto& d = program.desc();
  ordered_json j;
  j["format"] = {{"identifier", "ET12"},
                 {"version", d.version},
                 {"extended_header", d.has_extended_header},
                 {"file_size", d.file_size},
                 {"program_size", d.program_size},
                 {"segments", d.num_segments},
                 {"constant_bytes", d.constant_bytes},
                 {"inline_constant_buffer", d.uses_inline_constant_buffer},
                 {"named_data", d.named_data.size()}};
  j["methods"] = ordered_json::array();
  format::NamedDataMap named(d, program.external_data());
  for (const auto& m : d.methods) {
    ordered_json mj;
    mj["name"] = m.name;
    mj["inputs"] = ordered_json::array();
    for (int32_t i : m.inputs) mj["inputs"].push_back(describe_io(m, i));
    mj["outputs"] = ordered_json::array();
    for (int32_t i : m.outputs) mj["outputs"].push_back(describe_io(m, i));
    std::map<std::string, int> op_counts;
    for (const auto& c : m.chains) {
      for (const auto& instr : c.instructions) {
        if (instr.kind == format::InstructionKind::KernelCall) {
          ++op_counts[m.operators[instr.index].full_name()];
        }
      }
    }
    mj["operators"] = op_counts;
    MethodMeta meta = program.method_meta(m.name);
    mj["delegates"] = meta.backends();
    ordered_json xnnpack = describe_xnnpack(m, named);
    if (!xnnpack.empty()) {
      std::map<std::string, size_t> totals;
      for (const auto& x : xnnpack) {
        if (!x.contains("nodes")) continue;
        for (const auto& [name, count] : x["nodes"].items()) totals[name] += count.get<size_t>();
      }
      mj["xnnpack"] = xnnpack;
      mj["xnnpack_nodes"] = totals;
    }
    mj["memory_planned_buffer_sizes"] = m.buffer_sizes;
    mj["num_instructions"] = m.num_instructions();
    mj["num_values"] = m.values.size();
    ordered_json attrs = ordered_json::array();
    for (size_t i = 0; i < meta.num_attributes(); ++i) {
      attrs.push_back(meta.attribute_tensor_meta(i).name);
    }
    mj["attributes"] = attrs;
    mj["external_keys_missing"] = program.missing_external_keys(m.name);
    ordered_json support;
    for (auto device : {Device::CPU, Device::CUDA}) {
      // As the method runs (its XNNPACK delegates expanded); a payload that
      // cannot be read is reported, not fatal.
      SupportReport r;
      try {
        r = check_support(program, m.name, device);
      } catch (const Error& e) {
        r = check_support(m, device);
        r.other.push_back(e.what());
      }
      if (device == Device::CUDA && !backend::built_with_cuda()) {
        r.other.push_back("this build has no CUDA backend");
      }
      support[device_name(device)] = {{"runnable", r.ok()},
                                      {"missing_operators", r.missing_operators},
                                      {"missing_backends", r.missing_backends},
                                      {"other", r.other}};
    }
    mj["support"] = support;
    j["methods"].push_back(mj);
  }
  return j;
}

std::string shape_text(const ordered_json& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + sizes[i].dump();
  return s + "]";
}

void print_io(const char* title, const ordered_json& list) {
  std::cout << "  " << title << ":\n";
  if (list.empty()) std::cout << "    (none)\n";
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& io = list[i];
    std::cout << "    " << i << ": " << io["tag"].get<std::string>();
    if (io["tag"] == "Tensor") {
      std::cout << " " << io["dtype"].get<std::string>() << shape_text(io["sizes"])
                << " dim_order=" << shape_text(io["dim_order"]) << " "
                << io["shape_dynamism"].get<std::string>()
                << (io["is_memory_planned"].get<bool>() ? " planned" : " unplanned") << " "
                << io["nbytes"].get<uint64_t>() << " B";
      if (io.contains("name")) std::cout << " '" << io["name"].get<std::string>() << "'";
    } else if (io.contains("int")) {
      std::cout << " = " << io["int"].dump();
    } else if (io.contains("double")) {
      std::cout << " = " << io["double"].dump();
    } else if (io.contains("bool")) {
      std::cout << " = " << io["bool"].dump();
    }
    std::cout << "\n";
  }
}

void print_node_counts(const ordered_json& counts) {
  for (const auto& [name, count] : counts.items()) {
    std::cout << "    " << std::left << std::setw(48) << name << " x" << count.dump() << "\n";
  }
}

void print_xnnpack(const ordered_json& list, const ordered_json& totals) {
  for (const auto& d : list) {
    std::cout << "  XNNPACK delegate " << d["delegate"].dump() << ": ";
    if (d.contains("error")) {
      std::cout << "unreadable payload: " << d["error"].get<std::string>() << "\n";
      continue;
    }
    std::cout << d["num_nodes"].dump() << " nodes, " << d["num_values"].dump() << " values ("
              << d["num_constants"].dump() << " constants, " << d["constant_bytes"].dump()
              << " bytes), " << d["num_inputs"].dump() << " inputs, " << d["num_outputs"].dump()
              << " outputs\n";
    print_node_counts(d["nodes"]);
  }
  if (list.size() > 1) {
    std::cout << "  XNNPACK nodes over all " << list.size() << " delegates:\n";
    print_node_counts(totals);
  }
}

void print_text(const std::string& file, const ordered_json& j) {
  const auto& f = j["format"];
  std::cout << file << ": ExecuTorch program (ET12, schema version " << f["version"].dump() << "), "
            << f["file_size"].dump() << " bytes\n"
            << "  extended header: " << (f["extended_header"].get<bool>() ? "yes" : "no")
            << ", flatbuffer " << f["program_size"].dump() << " bytes, " << f["segments"].dump()
            << " segments, named data " << f["named_data"].dump() << "\n"
            << "  constants: " << f["constant_bytes"].dump() << " bytes"
            << (f["inline_constant_buffer"].get<bool>() ? " (deprecated inline buffer)" : "")
            << "\n";
  for (const auto& m : j["methods"]) {
    std::cout << "\nmethod '" << m["name"].get<std::string>()
              << "': " << m["num_instructions"].dump() << " instructions, "
              << m["num_values"].dump() << " values\n";
    print_io("inputs", m["inputs"]);
    print_io("outputs", m["outputs"]);
    std::cout << "  operators:";
    if (m["operators"].empty()) std::cout << " (none)";
    std::cout << "\n";
    for (const auto& [name, count] : m["operators"].items()) {
      std::cout << "    " << std::left << std::setw(48) << name << " x" << count.dump() << "\n";
    }
    std::cout << "  delegates: " << (m["delegates"].empty() ? "(none)" : "");
    for (const auto& d : m["delegates"]) std::cout << d.get<std::string>() << " ";
    std::cout << "\n";
    if (m.contains("xnnpack")) print_xnnpack(m["xnnpack"], m["xnnpack_nodes"]);
    std::cout << "  memory-planned buffers (bytes): " << m["memory_planned_buffer_sizes"].dump()
              << "\n";
    if (!m["attributes"].empty()) std::cout << "  attributes: " << m["attributes"].dump() << "\n";
    if (!m["external_keys_missing"].empty()) {
      std::cout << "  needs external data (.ptd) for: " << m["external_keys_missing"].dump()
                << "\n";
    }
    for (const auto& [device, s] : m["support"].items()) {
      std::cout << "  runs on " << device << ": ";
      if (s["runnable"].get<bool>()) {
        std::cout << "yes\n";
        continue;
      }
      std::cout << "no";
      if (!s["missing_operators"].empty()) {
        std::cout << "; no kernel for " << s["missing_operators"].size() << " operator(s): ";
        for (size_t i = 0; i < s["missing_operators"].size(); ++i) {
          std::cout << (i ? ", " : "") << s["missing_operators"][i].get<std::string>();
        }
      }
      if (!s["missing_backends"].empty()) {
        std::cout << "; no delegate backend " << s["missing_backends"].dump();
      }
      for (const auto& o : s["other"]) std::cout << "; " << o.get<std::string>();
      std::cout << "\n";
    }
  }
}

}  // namespace

int run_inspect(const InspectOptions& options) {
  auto program = Program::load_file(options.file, options.data);
  ordered_json j = describe(*program);
  if (options.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    print_text(options.file, j);
  }
  return 0;
}

}  // namespace pterun::cli
