#pragma once

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pterun/delegates/expand.h"
#include "pterun/format/data_buffer.h"
#include "pterun/format/program_desc.h"
#include "pterun/program/device_constants.h"
#include "pterun/program/method_meta.h"
#include "pterun/program/shared_state.h"

namespace pterun {

/// A loaded, verified, immutable ExecuTorch program and its optional
/// external data. Shared by every Method loaded from it; always held by
/// shared_ptr.
class Program : public std::enable_shared_from_this<Program> {
 public:
  using Buffer = std::shared_ptr<const format::DataBuffer>;

  /// Loads a program from bytes (and a .ptd from `data`, when given); the
  /// bytes of a bundled program (.bpte) load the program inside it.
  /// Error InvalidProgram / InvalidExternalData for damaged files.
  static std::shared_ptr<const Program> load(Buffer program, Buffer data = nullptr);

  /// The .pte bytes inside a bundled program (kept alive by them), or
  /// `file` itself when it is not one.
  static Buffer unbundle(Buffer file);

  /// Memory-maps and loads `path` (and `data_path` when not empty). Error
  /// FileNotFound when a file does not exist.
  static std::shared_ptr<const Program> load_file(const std::string& path,
                                                  const std::string& data_path = {});

  /// Method names in file order.
  std::vector<std::string> method_names() const;

  /// Metadata of method `name`. Error InvalidArgument naming the methods
  /// that exist when there is no such method.
  MethodMeta method_meta(const std::string& name) const;

  /// The decoded method `name`, with the same error as method_meta.
  const format::MethodDesc& method(const std::string& name) const;

  /// Method `name` as it runs: its delegate calls expanded into kernel
  /// calls where pterun can run them (delegates/expand.h); the method itself
  /// when it has none. Computed on first use and kept (thread-safe). Errors
  /// as method(), and InvalidProgram for a damaged delegate payload (again
  /// on every later call).
  const format::MethodDesc& runnable_method(const std::string& name) const;

  /// The delegates of method `name` that stay delegate calls because pterun
  /// cannot run them, each with the reason ("XnnpackBackend (delegate 0:
  /// ...)"). Errors as runnable_method().
  std::vector<std::string> unsupported_delegates(const std::string& name) const;

  const format::ProgramDesc& desc() const { return desc_; }
  /// The .ptd contents, or nullptr when none was given.
  const format::ExternalData* external_data() const { return external_ ? &*external_ : nullptr; }

  /// The state buffers shared by this program's methods on one device
  /// (docs/python-api.md, B15a); created on first use.
  std::shared_ptr<SharedState> shared_state(int device_type, int device_index) const;

  /// The program's constants on GPU `device_index` (uploaded on first use,
  /// shared by every method of this program on that GPU).
  std::shared_ptr<DeviceConstants> device_constants(int device_index) const;

  /// Keys of external tensors that method `name` needs and the given data
  /// lacks (all of them when no data was given).
  std::vector<std::string> missing_external_keys(const std::string& name) const;

 private:
  Program() = default;

  Buffer program_buffer_;
  Buffer data_buffer_;
  format::ProgramDesc desc_;
  std::optional<format::ExternalData> external_;
  mutable std::mutex state_mutex_;
  mutable std::map<std::pair<int, int>, std::shared_ptr<SharedState>> shared_states_;
  mutable std::map<int, std::shared_ptr<DeviceConstants>> device_constants_;  // by GPU index

  // Expanded methods by name (null: the method has no delegate calls), or
  // the error expanding one gave.
  struct Expansion {
    std::shared_ptr<const delegates::ExpandedMethod> method;
    std::exception_ptr error;
  };
  const Expansion& expansion(const std::string& name) const;
  mutable std::mutex expand_mutex_;
  mutable std::map<std::string, Expansion, std::less<>> expansions_;
};

}  // namespace pterun
