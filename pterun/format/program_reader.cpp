#include <set>

#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/format/header.h"
#include "pterun/format/program_data.h"
#include "pterun/format/program_desc.h"

namespace pterun::format {
namespace {

// Flatbuffers cannot address more than 2 GiB; the verifier's table limit
// bounds the work a hostile file can cause.
constexpr uint64_t kMaxFlatbufferSize = (uint64_t{1} << 31) - 1;
constexpr flatbuffers::uoffset_t kMaxDepth = 64;
constexpr flatbuffers::uoffset_t kMaxTables = 50'000'000;

}  // namespace

size_t MethodDesc::num_instructions() const {
  size_t n = 0;
  for (const auto& c : chains) n += c.instructions.size();
  return n;
}

const MethodDesc* ProgramDesc::find_method(std::string_view name) const {
  for (const auto& m : methods) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

ProgramDesc read_program(const DataBuffer& buffer) {
  std::span<const uint8_t> file = buffer.bytes();
  PteHeader header = parse_pte_header(file);
  PTERUN_CHECK(header.program_size <= kMaxFlatbufferSize, ErrorCode::InvalidProgram,
               "flatbuffer: ", header.program_size, " bytes exceeds the 2 GiB limit");

  flatbuffers::Verifier::Options options;
  options.max_depth = kMaxDepth;
  options.max_tables = kMaxTables;
  flatbuffers::Verifier verifier(file.data(), header.program_size, options);
  PTERUN_CHECK(pterun_fb::VerifyProgramBuffer(verifier), ErrorCode::InvalidProgram,
               "flatbuffer: verification failed (the program is damaged or not a .pte file)");
  const pterun_fb::Program& program = *pterun_fb::GetProgram(file.data());

  ProgramDesc desc;
  desc.version = program.version();
  desc.has_extended_header = header.has_extended_header;
  desc.file_size = file.size();
  desc.program_size = header.program_size;

  ProgramData data(program, file, header.segment_base_offset,
                   header.segment_base_offset != 0 || header.segment_data_size != 0);
  desc.num_segments = data.num_segments();
  desc.constant_bytes = data.constant_bytes();
  desc.uses_inline_constant_buffer = data.uses_inline_constant_buffer();

  const auto* plans = program.execution_plan();
  PTERUN_CHECK(plans != nullptr && plans->size() > 0, ErrorCode::InvalidProgram,
               "program: has no methods");
  std::set<std::string> names;
  for (flatbuffers::uoffset_t i = 0; i < plans->size(); ++i) {
    const auto* plan = plans->Get(i);
    PTERUN_CHECK(plan != nullptr, ErrorCode::InvalidProgram, "method ", i, ": missing");
    MethodDesc m = read_method(*plan, i, program, data);
    PTERUN_CHECK(names.insert(m.name).second, ErrorCode::InvalidProgram, "program: method name '",
                 printable(m.name), "' appears twice");
    desc.methods.push_back(std::move(m));
  }

  if (const auto* named = program.named_data()) {
    std::set<std::string> keys;
    for (flatbuffers::uoffset_t i = 0; i < named->size(); ++i) {
      const auto* n = named->Get(i);
      PTERUN_CHECK(n != nullptr && n->key() != nullptr, ErrorCode::InvalidProgram, "named data ", i,
                   ": has no key");
      std::string key = read_text(n->key(), ErrorCode::InvalidProgram, str_cat("named data ", i));
      PTERUN_CHECK(keys.insert(key).second, ErrorCode::InvalidProgram, "named data: key '",
                   printable(key), "' appears twice");
      desc.named_data.push_back(
          {key, data.segment(n->segment_index(), str_cat("named data '", printable(key), "'"))});
    }
  }
  return desc;
}

}  // namespace pterun::format
