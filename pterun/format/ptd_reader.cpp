#include <set>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/format/header.h"
#include "pterun/format/program_data.h"
#include "pterun/format/program_desc.h"
#include "pterun/format/schema/flat_tensor_generated.h"

namespace pterun::format {
namespace {

constexpr uint64_t kMaxFlatbufferSize = (uint64_t{1} << 31) - 1;
constexpr size_t kMaxRank = 16;

ExternalLayout read_layout(const pterun_ptd::TensorLayout& l, const std::string& what) {
  ExternalLayout out;
  auto dtype = dtype_from_number(l.scalar_type());
  PTERUN_CHECK(dtype.has_value(), ErrorCode::InvalidExternalData, what, ": unknown scalar type ",
               int{l.scalar_type()});
  out.dtype = *dtype;
  PTERUN_CHECK(l.sizes() != nullptr && l.dim_order() != nullptr, ErrorCode::InvalidExternalData,
               what, ": tensor layout lacks sizes or dim_order");
  size_t rank = l.sizes()->size();
  PTERUN_CHECK(rank <= kMaxRank, ErrorCode::InvalidExternalData, what, ": rank ", rank,
               " exceeds the limit of ", kMaxRank);
  PTERUN_CHECK(l.dim_order()->size() == rank, ErrorCode::InvalidExternalData, what,
               ": dim_order has ", l.dim_order()->size(), " entries for rank ", rank);
  out.sizes.assign(l.sizes()->begin(), l.sizes()->end());
  out.dim_order.assign(l.dim_order()->begin(), l.dim_order()->end());
  std::vector<bool> seen(rank, false);
  for (uint8_t d : out.dim_order) {
    PTERUN_CHECK(d < rank && !seen[d], ErrorCode::InvalidExternalData, what,
                 ": dim_order is not a permutation");
    seen[d] = true;
  }
  auto numel = checked_numel(std::span<const int64_t>(out.sizes));
  auto nbytes = numel ? checked_mul(*numel, element_size(out.dtype)) : std::nullopt;
  PTERUN_CHECK(nbytes.has_value(), ErrorCode::InvalidExternalData, what,
               ": negative size or byte size overflow");
  out.nbytes = *nbytes;
  return out;
}

}  // namespace

const ExternalEntry* ExternalData::find(std::string_view key) const {
  for (const auto& e : entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

ExternalData read_external_data(const DataBuffer& buffer) {
  std::span<const uint8_t> file = buffer.bytes();
  PtdHeader header = parse_ptd_header(file);
  uint64_t fb_size = header.flatbuffer_offset + header.flatbuffer_size;  // checked by the parser
  PTERUN_CHECK(fb_size <= kMaxFlatbufferSize, ErrorCode::InvalidExternalData,
               "data file: flatbuffer exceeds the 2 GiB limit");
  flatbuffers::Verifier verifier(file.data(), fb_size);
  PTERUN_CHECK(pterun_ptd::VerifyFlatTensorBuffer(verifier), ErrorCode::InvalidExternalData,
               "data file: flatbuffer verification failed (damaged or not a .ptd file)");
  const auto& root = *pterun_ptd::GetFlatTensor(file.data());
  PTERUN_CHECK(root.version() == 0, ErrorCode::InvalidExternalData,
               "data file: unsupported version ", root.version(), " (expected 0)");
  PTERUN_CHECK(root.segments() != nullptr && root.named_data() != nullptr,
               ErrorCode::InvalidExternalData, "data file: lacks its segment or key tables");

  std::span<const uint8_t> segment_data =
      file.subspan(header.segment_base_offset, header.segment_data_size);
  ExternalData out;
  std::set<std::string> keys;
  for (flatbuffers::uoffset_t i = 0; i < root.named_data()->size(); ++i) {
    const auto* n = root.named_data()->Get(i);
    PTERUN_CHECK(n != nullptr && n->key() != nullptr, ErrorCode::InvalidExternalData,
                 "data file: entry ", i, " has no key");
    ExternalEntry e;
    e.key = read_text(n->key(), ErrorCode::InvalidExternalData, str_cat("data file: entry ", i));
    std::string what = str_cat("data file, key '", printable(e.key), "'");
    PTERUN_CHECK(keys.insert(e.key).second, ErrorCode::InvalidExternalData, what,
                 ": appears twice");
    PTERUN_CHECK(n->segment_index() < root.segments()->size(), ErrorCode::InvalidExternalData, what,
                 ": segment ", n->segment_index(), " is out of range (", root.segments()->size(),
                 " segments)");
    const auto* seg = root.segments()->Get(n->segment_index());
    PTERUN_CHECK(seg != nullptr, ErrorCode::InvalidExternalData, what, ": missing segment");
    auto end = checked_add(seg->offset(), seg->size());
    PTERUN_CHECK(end && *end <= segment_data.size(), ErrorCode::InvalidExternalData, what,
                 ": segment [", seg->offset(), ", +", seg->size(), ") runs past the ",
                 segment_data.size(), " bytes of segment data");
    e.data = segment_data.subspan(seg->offset(), seg->size());
    if (const auto* layout = n->tensor_layout()) {
      e.layout = read_layout(*layout, what);
      PTERUN_CHECK(e.layout->nbytes <= e.data.size(), ErrorCode::InvalidExternalData, what,
                   ": the layout needs ", e.layout->nbytes, " bytes but the segment has ",
                   e.data.size());
    }
    out.entries.push_back(std::move(e));
  }
  return out;
}

}  // namespace pterun::format
