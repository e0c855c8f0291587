#pragma once

// The fixtures' recorded calls (tests/fixtures/manifest.json + .npz) and
// comparison with the exporter's outputs, shared by the CPU and CUDA
// fixture tests.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/npy.h"
#include "pterun/core/value.h"
#include "pterun/executor/input.h"
#include "pterun/format/program_desc.h"
#include "pterun/program/program.h"

namespace pterun::test {

struct Call {
  std::string method;
  std::vector<cli::NpyArray> inputs;
  std::vector<std::string> input_kinds;
  std::vector<std::optional<cli::NpyArray>> outputs;  // nullopt: None
  std::vector<std::string> output_dtypes;
};

/// The calls recorded for one manifest entry whose files are in `dir`
/// (empty: tests/fixtures).
std::vector<Call> load_calls(const nlohmann::json& entry, const std::string& dir = {});

/// Host inputs for `call` (views of its arrays).
std::vector<InputArg> make_inputs(const Call& call);

/// Expects `got` to match the exporter's output. `host_data`, when given,
/// holds a host copy of a tensor output's bytes (from data() to its last
/// element) to read instead of data(), for outputs on a GPU. Floats match
/// within `rtol` times (|expected| + the largest |expected|, at least 1);
/// rtol 0 picks the dtype's default (float32 1e-5).
void expect_matches(const Value& got, const std::optional<cli::NpyArray>& expected,
                    const std::string& dtype_name_str, const std::string& where,
                    const void* host_data = nullptr, double rtol = 0);

/// The fixture's program (with its .ptd when it has one), from `dir`
/// (empty: tests/fixtures).
std::shared_ptr<const Program> load_fixture(const nlohmann::json& entry,
                                            const std::string& dir = {});

/// The `keep` a load-time finder gets for `d` when only its inputs and
/// outputs must stay as they are.
std::vector<bool> inputs_and_outputs(const format::MethodDesc& d);

/// The `idle` a load-time finder gets for `d` before any pass ran.
std::vector<std::vector<bool>> none_idle(const format::MethodDesc& d);

/// The `idle` after constant folding on the CPU (the instructions it takes
/// out, such as a causal mask's steps).
std::vector<std::vector<bool>> folded(const format::MethodDesc& d);

/// The full name of instruction k of chain `chain`'s operator.
std::string op_at(const format::MethodDesc& d, size_t chain, size_t k);

}  // namespace pterun::test
