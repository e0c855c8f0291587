#include "pterun/format/program_data.h"

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/core/text.h"

namespace pterun::format {

void throw_misaligned(const std::string& what) {
  throw_error(ErrorCode::InvalidProgram, what + ": misaligned 8-byte vector");
}

std::string read_text(const flatbuffers::String* s, ErrorCode code, std::string_view what) {
  if (s == nullptr) return {};
  std::string text(s->c_str(), s->size());
  PTERUN_CHECK(is_valid_utf8(text), code, what, " '", printable(text), "' is not valid UTF-8");
  return text;
}

ProgramData::ProgramData(const pterun_fb::Program& program, std::span<const uint8_t> file,
                         uint64_t segment_base_offset, bool has_segments) {
  if (const auto* segments = program.segments()) {
    segments_.reserve(segments->size());
    for (flatbuffers::uoffset_t i = 0; i < segments->size(); ++i) {
      const auto* s = segments->Get(i);
      PTERUN_CHECK(s != nullptr, ErrorCode::InvalidProgram, "segment ", i, ": missing entry");
      if (s->size() == 0) {
        segments_.emplace_back();
        continue;
      }
      PTERUN_CHECK(has_segments, ErrorCode::InvalidProgram, "segment ", i, ": has ", s->size(),
                   " bytes but the file has no extended header locating segment data");
      auto start = checked_add(segment_base_offset, s->offset());
      auto end = start ? checked_add(*start, s->size()) : std::nullopt;
      PTERUN_CHECK(end && *end <= file.size(), ErrorCode::InvalidProgram, "segment ", i, ": [",
                   segment_base_offset, " + ", s->offset(), ", +", s->size(),
                   ") runs past the end of the ", file.size(), "-byte file");
      segments_.push_back(file.subspan(*start, s->size()));
    }
  }

  const auto* cs = program.constant_segment();
  const auto* inline_buffers = program.constant_buffer();
  if (cs != nullptr && cs->offsets() != nullptr && cs->offsets()->size() > 0) {
    if (cs->offsets()->size() > 1) {
      PTERUN_CHECK(inline_buffers == nullptr || inline_buffers->size() == 0,
                   ErrorCode::InvalidProgram,
                   "constants: the program has both a constant segment and an inline "
                   "constant_buffer");
      check_aligned(cs->offsets(), "constant segment offsets");
      constant_segment_ = segment(cs->segment_index(), "constant segment");
      constant_offsets_.assign(cs->offsets()->begin(), cs->offsets()->end());
      constant_bytes_ = constant_segment_.size();
    }
  } else if (inline_buffers != nullptr) {
    inline_constants_ = true;
    inline_buffers_.reserve(inline_buffers->size());
    for (flatbuffers::uoffset_t i = 0; i < inline_buffers->size(); ++i) {
      const auto* b = inline_buffers->Get(i);
      const auto* storage = b ? b->storage() : nullptr;
      if (storage == nullptr) {
        inline_buffers_.emplace_back();
        continue;
      }
      inline_buffers_.emplace_back(storage->data(), storage->size());
      constant_bytes_ += storage->size();
    }
  }

  if (const auto* entries = program.mutable_data_segments()) {
    for (flatbuffers::uoffset_t i = 0; i < entries->size(); ++i) {
      const auto* e = entries->Get(i);
      PTERUN_CHECK(e != nullptr, ErrorCode::InvalidProgram, "mutable data entry ", i, ": missing");
      MutableEntry entry;
      entry.segment = segment(e->segment_index(), str_cat("mutable data entry ", i));
      check_aligned(e->offsets(), str_cat("mutable data entry ", i));
      if (e->offsets()) entry.offsets.assign(e->offsets()->begin(), e->offsets()->end());
      mutable_entries_.push_back(std::move(entry));
    }
  }
}

std::span<const uint8_t> ProgramData::segment(uint64_t index, const std::string& what) const {
  PTERUN_CHECK(index < segments_.size(), ErrorCode::InvalidProgram, what, ": segment index ", index,
               " is out of range (the program has ", segments_.size(), " segments)");
  return segments_[index];
}

namespace {

std::span<const uint8_t> slice(std::span<const uint8_t> bytes, uint64_t offset, uint64_t nbytes,
                               const std::string& what) {
  auto end = checked_add(offset, nbytes);
  PTERUN_CHECK(end && *end <= bytes.size(), ErrorCode::InvalidProgram, what, ": ", nbytes,
               " bytes at offset ", offset, " run past the end of their ", bytes.size(),
               "-byte segment");
  return bytes.subspan(offset, nbytes);
}

}  // namespace

std::span<const uint8_t> ProgramData::constant(uint32_t index, uint64_t nbytes,
                                               const std::string& what) const {
  if (inline_constants_) {
    PTERUN_CHECK(index < inline_buffers_.size(), ErrorCode::InvalidProgram, what,
                 ": constant buffer ", index, " is out of range (the program has ",
                 inline_buffers_.size(), ")");
    return slice(inline_buffers_[index], 0, nbytes, what);
  }
  PTERUN_CHECK(index < constant_offsets_.size(), ErrorCode::InvalidProgram, what, ": constant ",
               index, " is out of range (the constant segment has ", constant_offsets_.size(),
               " entries)");
  return slice(constant_segment_, constant_offsets_[index], nbytes, what);
}

std::span<const uint8_t> ProgramData::mutable_data(uint64_t entry, uint32_t index, uint64_t nbytes,
                                                   const std::string& what) const {
  PTERUN_CHECK(entry < mutable_entries_.size(), ErrorCode::InvalidProgram, what,
               ": mutable data entry ", entry, " is out of range (the program has ",
               mutable_entries_.size(), ")");
  const auto& e = mutable_entries_[entry];
  PTERUN_CHECK(index < e.offsets.size(), ErrorCode::InvalidProgram, what, ": initial value index ",
               index, " is out of range (", e.offsets.size(), " entries)");
  return slice(e.segment, e.offsets[index], nbytes, what);
}

}  // namespace pterun::format
