#include "cli/npy.h"

#include <zip.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "pterun/core/error.h"
#include "pterun/format/header.h"

namespace pterun::cli {
namespace {

struct Descr {
  char kind;
  int size;
  DType dtype;
};

constexpr Descr kDescrs[] = {
    {'b', 1, DType::Bool},      {'i', 1, DType::Int8},        {'i', 2, DType::Int16},
    {'i', 4, DType::Int32},     {'i', 8, DType::Int64},       {'u', 1, DType::UInt8},
    {'u', 2, DType::UInt16},    {'u', 4, DType::UInt32},      {'u', 8, DType::UInt64},
    {'f', 2, DType::Float16},   {'f', 4, DType::Float32},     {'f', 8, DType::Float64},
    {'c', 8, DType::Complex64}, {'c', 16, DType::Complex128},
};

std::string value_of(const std::string& header, const std::string& key, const std::string& what) {
  size_t k = header.find("'" + key + "'");
  PTERUN_CHECK(k != std::string::npos, ErrorCode::InvalidArgument, what, ": .npy header lacks '",
               key, "'");
  size_t colon = header.find(':', k);
  PTERUN_CHECK(colon != std::string::npos, ErrorCode::InvalidArgument, what, ": bad .npy header");
  size_t start = header.find_first_not_of(' ', colon + 1);
  PTERUN_CHECK(start != std::string::npos, ErrorCode::InvalidArgument, what, ": bad .npy header");
  size_t end;
  if (header[start] == '(') {
    end = header.find(')', start);
    PTERUN_CHECK(end != std::string::npos, ErrorCode::InvalidArgument, what, ": bad shape");
    return header.substr(start + 1, end - start - 1);
  }
  if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    PTERUN_CHECK(end != std::string::npos, ErrorCode::InvalidArgument, what, ": bad descr");
    return header.substr(start + 1, end - start - 1);
  }
  end = header.find_first_of(",}", start);
  return header.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

const char* descr_of(DType d, int& size) {
  for (const auto& x : kDescrs) {
    if (x.dtype == d) {
      size = x.size;
      static thread_local std::string s;
      s = std::string(x.size == 1 ? "|" : "<") + x.kind + std::to_string(x.size);
      return s.c_str();
    }
  }
  throw_error(ErrorCode::InvalidArgument,
              str_cat("npy: dtype ", dtype_name(d), " cannot be written to .npy"));
}

}  // namespace

NpyArray parse_npy(std::span<const uint8_t> bytes, const std::string& what) {
  PTERUN_CHECK(bytes.size() >= 10 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0,
               ErrorCode::InvalidArgument, what, ": not a .npy file");
  uint8_t major = bytes[6];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = bytes[8] | (size_t{bytes[9]} << 8);
    header_start = 10;
  } else {
    PTERUN_CHECK(bytes.size() >= 12 && (major == 2 || major == 3), ErrorCode::InvalidArgument, what,
                 ": unsupported .npy version ", int{major});
    header_len = format::read_u32le(bytes.data() + 8);
    header_start = 12;
  }
  PTERUN_CHECK(header_start + header_len <= bytes.size(), ErrorCode::InvalidArgument, what,
               ": truncated .npy header");
  std::string header(reinterpret_cast<const char*>(bytes.data() + header_start), header_len);
  std::string descr = value_of(header, "descr", what);
  PTERUN_CHECK(descr.size() >= 3, ErrorCode::InvalidArgument, what, ": bad dtype '", descr, "'");
  PTERUN_CHECK(descr[0] != '>', ErrorCode::InvalidArgument, what,
               ": big-endian arrays are not supported");
  NpyArray out;
  bool found = false;
  int size = std::atoi(descr.c_str() + 2);
  for (const auto& x : kDescrs) {
    if (x.kind == descr[1] && x.size == size) {
      out.dtype = x.dtype;
      found = true;
    }
  }
  PTERUN_CHECK(found, ErrorCode::InvalidArgument, what, ": unsupported dtype '", descr, "'");
  bool fortran = value_of(header, "fortran_order", what).find("True") != std::string::npos;
  std::string shape = value_of(header, "shape", what);
  size_t pos = 0;
  while (pos < shape.size()) {
    size_t next = shape.find(',', pos);
    std::string item =
        shape.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (item.find_first_of("0123456789") != std::string::npos) {
      long long v = std::atoll(item.c_str());
      PTERUN_CHECK(v >= 0, ErrorCode::InvalidArgument, what, ": negative dimension");
      out.shape.push_back(v);
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  uint64_t numel = 1;
  for (int64_t s : out.shape) {
    PTERUN_CHECK(s == 0 || numel <= (uint64_t{1} << 48) / static_cast<uint64_t>(s),
                 ErrorCode::InvalidArgument, what, ": array too large");
    numel *= static_cast<uint64_t>(s);
  }
  uint64_t nbytes = numel * static_cast<uint64_t>(size);
  size_t data_start = header_start + header_len;
  PTERUN_CHECK(bytes.size() - data_start >= nbytes, ErrorCode::InvalidArgument, what, ": has ",
               bytes.size() - data_start, " data bytes, needs ", nbytes);
  out.data.assign(bytes.begin() + data_start, bytes.begin() + data_start + nbytes);
  out.strides.resize(out.shape.size());
  int64_t stride = 1;
  if (fortran) {
    for (size_t i = 0; i < out.shape.size(); ++i) {
      out.strides[i] = stride;
      stride *= out.shape[i] == 0 ? 1 : out.shape[i];
    }
  } else {
    for (size_t i = out.shape.size(); i-- > 0;) {
      out.strides[i] = stride;
      stride *= out.shape[i] == 0 ? 1 : out.shape[i];
    }
  }
  return out;
}

std::vector<uint8_t> format_npy(const NpyArray& a) {
  int size = 0;
  std::string descr = descr_of(a.dtype, size);
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) shape += std::to_string(a.shape[i]) + ", ";
  if (a.shape.size() > 1) shape.resize(shape.size() - 2);
  if (a.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out(10 + header.size() + a.data.size());
  const uint8_t magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  std::memcpy(out.data(), magic, 8);
  out[8] = static_cast<uint8_t>(header.size() & 0xff);
  out[9] = static_cast<uint8_t>(header.size() >> 8);
  std::memcpy(out.data() + 10, header.data(), header.size());
  if (!a.data.empty()) std::memcpy(out.data() + 10 + header.size(), a.data.data(), a.data.size());
  return out;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PTERUN_CHECK(in.good(), ErrorCode::FileNotFound, "npy: cannot open '", path, "'");
  std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_npy(bytes, path);
}

std::vector<std::pair<std::string, NpyArray>> read_npz(const std::string& path) {
  int err = 0;
  std::unique_ptr<zip_t, decltype(&zip_discard)> archive(zip_open(path.c_str(), ZIP_RDONLY, &err),
                                                         &zip_discard);
  PTERUN_CHECK(archive != nullptr,
               err == ZIP_ER_NOENT ? ErrorCode::FileNotFound : ErrorCode::InvalidArgument,
               "npz: cannot open '", path, "' (libzip error ", err, ")");
  std::vector<std::pair<std::string, NpyArray>> out;
  zip_int64_t n = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    PTERUN_CHECK(zip_stat_index(archive.get(), i, 0, &st) == 0, ErrorCode::InvalidArgument,
                 "npz: bad entry in '", path, "'");
    std::string name = st.name;
    std::unique_ptr<zip_file_t, decltype(&zip_fclose)> file(zip_fopen_index(archive.get(), i, 0),
                                                            &zip_fclose);
    PTERUN_CHECK(file != nullptr, ErrorCode::InvalidArgument, "npz: cannot read '", name, "'");
    std::vector<uint8_t> bytes(st.size);
    zip_int64_t got = zip_fread(file.get(), bytes.data(), st.size);
    PTERUN_CHECK(got == static_cast<zip_int64_t>(st.size), ErrorCode::InvalidArgument,
                 "npz: short read of '", name, "'");
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    out.emplace_back(name, parse_npy(bytes, path + ":" + name));
  }
  return out;
}

void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, NpyArray>>& arrays) {
  int err = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  PTERUN_CHECK(archive != nullptr, ErrorCode::AccessFailed, "npz: cannot create '", path, "'");
  std::vector<std::vector<uint8_t>> blobs;  // must outlive zip_close
  blobs.reserve(arrays.size());
  for (const auto& [name, array] : arrays) {
    blobs.push_back(format_npy(array));
    zip_source_t* src = zip_source_buffer(archive, blobs.back().data(), blobs.back().size(), 0);
    if (src == nullptr ||
        zip_file_add(archive, (name + ".npy").c_str(), src, ZIP_FL_OVERWRITE) < 0) {
      if (src) zip_source_free(src);
      zip_discard(archive);
      throw_error(ErrorCode::AccessFailed, str_cat("npz: cannot add '", name, "' to '", path, "'"));
    }
  }
  PTERUN_CHECK(zip_close(archive) == 0, ErrorCode::AccessFailed, "npz: cannot write '", path, "'");
}

}  // namespace pterun::cli
