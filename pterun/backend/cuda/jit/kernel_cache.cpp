// compile_cached (kernel_cache.h). An entry is
//   "PTKC1\n" | u64 request size | request | u64 code size | code | u64 checksum
// with the request the exact text a compile depends on and the checksum an
// FNV-1a of the code; the file's name is a hash of the request.

#include "pterun/backend/cuda/jit/kernel_cache.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

#include "pterun/backend/cuda/jit/nvrtc.h"
#include "pterun/core/str_cat.h"

namespace pterun::cuda::jit {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[] = "PTKC1\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;

uint64_t fnv1a(std::string_view bytes, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::optional<fs::path> folder() {
  if (const char* dir = std::getenv("PTERUN_CACHE_DIR")) {
    if (*dir == '\0') return std::nullopt;
    return fs::path(dir) / "kernels";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return fs::path(xdg) / "pterun" / "kernels";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return fs::path(home) / ".cache" / "pterun" / "kernels";
  }
  return std::nullopt;
}

/// Everything a compile's result depends on, as one text.
std::string request(const std::string& source, int arch) {
  std::string r = str_cat(compiler_identity(arch), "\n");
  for (const Header& h : embedded_headers()) r += str_cat("header ", h.name, "\n", h.text, "\n");
  r += source;
  return r;
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

/// Reads a u64 at `pos` of `data`, advancing it; nullopt past the end.
std::optional<uint64_t> get_u64(const std::string& data, size_t& pos) {
  if (data.size() - pos < 8) return std::nullopt;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(data[pos + i])} << (8 * i);
  pos += 8;
  return v;
}

/// The machine code of an entry whose request is `req`; nullopt when the
/// file is missing, of another request, or damaged.
std::optional<std::string> read_entry(const fs::path& file, const std::string& req) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < kMagicSize || data.compare(0, kMagicSize, kMagic) != 0) return std::nullopt;
  size_t pos = kMagicSize;
  const auto req_size = get_u64(data, pos);
  if (!req_size || *req_size != req.size() || data.size() - pos < *req_size ||
      data.compare(pos, req.size(), req) != 0) {
    return std::nullopt;
  }
  pos += req.size();
  const auto code_size = get_u64(data, pos);
  if (!code_size || data.size() - pos < *code_size) return std::nullopt;
  std::string code = data.substr(pos, *code_size);
  pos += *code_size;
  const auto checksum = get_u64(data, pos);
  if (!checksum || *checksum != fnv1a(code) || pos != data.size()) return std::nullopt;
  return code;
}

void write_entry(const fs::path& file, const std::string& req, const std::string& code) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return;
  std::string data(kMagic, kMagicSize);
  put_u64(data, req.size());
  data += req;
  put_u64(data, code.size());
  data += code;
  put_u64(data, fnv1a(code));
  const fs::path tmp = file.string() + str_cat(".", getpid(), ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

std::string compile_cached(const std::string& source, const char* name, int arch) {
  const std::optional<fs::path> dir = folder();
  if (!dir || !nvrtc_available(nullptr)) return compile(source, name, arch);
  const std::string req = request(source, arch);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(req)));
  const fs::path file = *dir / str_cat(hex, ".cubin");
  if (std::optional<std::string> code = read_entry(file, req)) return *code;
  std::string code = compile(source, name, arch);
  write_entry(file, req, code);
  return code;
}

}  // namespace pterun::cuda::jit
