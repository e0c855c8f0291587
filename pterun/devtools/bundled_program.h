#pragma once

// Bundled programs (.bpte): the program inside, its test cases, and
// verification of a method's outputs against the expected ones with
// ExecuTorch's rules (docs/executorch-runtime.md, "Bundled programs"), turned into
// results instead of aborts.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "pterun/executor/input.h"
#include "pterun/executor/method.h"
#include "pterun/format/bundled_reader.h"
#include "pterun/program/program.h"

namespace pterun {

/// ExecuTorch's default tolerances for bundled outputs.
constexpr double kBundledRtol = 1e-5;
constexpr double kBundledAtol = 1e-8;

/// What running one test case gave.
struct CaseResult {
  std::string method;
  size_t index = 0;
  /// False when the case has no expected outputs: it only ran.
  bool compared = false;
  /// Every output matched (always true for a case that only ran).
  bool passed = true;
  /// Why it failed: the first output that differs and how; empty if passed.
  std::string message;
  /// Largest |actual - expected| and |actual - expected| / max(1e-8,
  /// |expected|) over the floating-point outputs compared.
  double max_abs_error = 0;
  double max_rel_error = 0;
};

class BundledProgram {
 public:
  using Buffer = std::shared_ptr<const format::DataBuffer>;

  /// Loads a bundled program and the program inside it (with an optional
  /// .ptd, which bundles never hold). Error InvalidProgram for a damaged
  /// file or one that is not a bundle.
  static std::shared_ptr<const BundledProgram> load(Buffer file, Buffer data = nullptr);
  static std::shared_ptr<const BundledProgram> load_file(const std::string& path,
                                                         const std::string& data_path = {});

  const std::shared_ptr<const Program>& program() const { return program_; }
  const std::vector<format::BundledSuite>& suites() const { return desc_.suites; }

  /// The cases of method `name`. Error InvalidArgument when the bundle has
  /// no suite for it.
  const std::vector<format::BundledCase>& cases(const std::string& name) const;

  /// Case `index` of method `name`; Error IndexOutOfRange past the end.
  const format::BundledCase& test_case(const std::string& name, size_t index) const;

 private:
  BundledProgram() = default;
  Buffer file_;
  format::BundledDesc desc_;
  std::shared_ptr<const Program> program_;
};

/// The inputs of a case as method inputs; tensors point into the bundle,
/// which must outlive their use.
std::vector<InputArg> bundled_inputs(const format::BundledCase& c);

/// Compares the outputs of the last run of `method` with the case's
/// expectations: dtype and sizes must match; float32, float64, float16 and
/// bfloat16 elements pass when |a - b| <= atol + rtol * |b| (b expected; NaN
/// matches NaN, infinities match in sign); every other dtype must match
/// bit for bit. Element positions are logical, so a dim order that differs
/// from the program's compares correctly.
CaseResult compare_outputs(const Method& method, const format::BundledCase& c, double rtol,
                           double atol);

/// Sets the case's inputs, runs `method` and compares.
CaseResult run_case(Method& method, const format::BundledCase& c, size_t index, double rtol,
                    double atol);

}  // namespace pterun
