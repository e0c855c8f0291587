#include "pterun/program/program.h"

#include <set>

#include "pterun/core/error.h"
#include "pterun/core/logging.h"
#include "pterun/core/text.h"
#include "pterun/format/bundled_reader.h"

namespace pterun {

Program::Buffer Program::unbundle(Buffer file) {
  if (file == nullptr || !format::is_bundled_program(file->bytes())) return file;
  format::BundledDesc bundle = format::read_bundled_program(*file);
  std::string origin = str_cat(file->origin(), " (the program inside the bundle)");
  return format::DataBuffer::borrow(
      bundle.program, std::const_pointer_cast<format::DataBuffer>(file), std::move(origin));
}

std::shared_ptr<const Program> Program::load(Buffer program, Buffer data) {
  PTERUN_CHECK(program != nullptr, ErrorCode::InvalidArgument, "load: no program bytes");
  // A bundled program (.bpte) runs the program it holds.
  program = unbundle(std::move(program));
  std::shared_ptr<Program> p(new Program());
  p->desc_ = format::read_program(*program);
  if (data != nullptr) p->external_ = format::read_external_data(*data);
  if (p->desc_.uses_inline_constant_buffer && p->desc_.constant_bytes > 0) {
    log(LogLevel::Warning, "program '" + printable(program->origin()) +
                               "' keeps its constants in the deprecated inline constant_buffer; "
                               "re-export it with a current ExecuTorch");
  }
  p->program_buffer_ = std::move(program);
  p->data_buffer_ = std::move(data);
  return p;
}

std::shared_ptr<const Program> Program::load_file(const std::string& path,
                                                  const std::string& data_path) {
  Buffer program = format::DataBuffer::map_file(path);
  Buffer data = data_path.empty() ? nullptr : format::DataBuffer::map_file(data_path);
  return load(std::move(program), std::move(data));
}

std::vector<std::string> Program::method_names() const {
  std::vector<std::string> names;
  for (const auto& m : desc_.methods) names.push_back(m.name);
  return names;
}

const format::MethodDesc& Program::method(const std::string& name) const {
  const format::MethodDesc* m = desc_.find_method(name);
  if (m == nullptr) {
    std::string known;
    for (const auto& n : desc_.methods)
      known += (known.empty() ? "'" : ", '") + printable(n.name) + "'";
    throw_error(ErrorCode::InvalidArgument,
                str_cat("program: no method named '", printable(name), "' (it has ", known, ")"));
  }
  return *m;
}

const Program::Expansion& Program::expansion(const std::string& name) const {
  const format::MethodDesc& m = method(name);
  std::lock_guard lock(expand_mutex_);
  auto it = expansions_.find(name);
  if (it != expansions_.end()) return it->second;
  Expansion& e = expansions_[name];
  bool delegated = false;
  for (const auto& chain : m.chains) {
    for (const auto& instr : chain.instructions) {
      delegated = delegated || instr.kind == format::InstructionKind::DelegateCall;
    }
  }
  if (!delegated) return e;
  try {
    format::NamedDataMap named(desc_, external_data());
    e.method =
        std::make_shared<const delegates::ExpandedMethod>(delegates::expand_delegates(m, named));
  } catch (...) {
    e.error = std::current_exception();
  }
  return e;
}

const format::MethodDesc& Program::runnable_method(const std::string& name) const {
  const Expansion& e = expansion(name);
  if (e.error) std::rethrow_exception(e.error);
  return e.method ? e.method->desc : method(name);
}

std::vector<std::string> Program::unsupported_delegates(const std::string& name) const {
  const Expansion& e = expansion(name);
  if (e.error) std::rethrow_exception(e.error);
  return e.method ? e.method->unsupported : std::vector<std::string>{};
}

MethodMeta Program::method_meta(const std::string& name) const {
  return MethodMeta(shared_from_this(), method(name));
}

std::shared_ptr<SharedState> Program::shared_state(int device_type, int device_index) const {
  std::lock_guard lock(state_mutex_);
  auto& slot = shared_states_[{device_type, device_index}];
  if (!slot) {
    slot = std::make_shared<SharedState>(static_cast<Device>(device_type), device_index);
  }
  return slot;
}

std::shared_ptr<DeviceConstants> Program::device_constants(int device_index) const {
  std::lock_guard lock(state_mutex_);
  auto& slot = device_constants_[device_index];
  if (!slot) slot = std::make_shared<DeviceConstants>(device_index);
  return slot;
}

std::vector<std::string> Program::missing_external_keys(const std::string& name) const {
  std::set<std::string> missing;
  for (const auto& v : method(name).values) {
    if (v.kind != format::ValueKind::Tensor) continue;
    const auto& t = *v.tensor;
    bool external = t.storage == format::TensorStorage::External ||
                    t.storage == format::TensorStorage::ExternalMutable;
    if (external && (!external_ || external_->find(t.name) == nullptr)) missing.insert(t.name);
  }
  return {missing.begin(), missing.end()};
}

}  // namespace pterun
