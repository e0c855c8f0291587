// open_cuda_library (cuda_library.h): where NVIDIA's wheels put their
// libraries relative to the pterun module or command, then the build's
// folder, then dlopen's own search.

#include "pterun/backend/cuda/cuda_library.h"

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "pterun/core/str_cat.h"

namespace pterun::cuda {
namespace {

namespace fs = std::filesystem;

/// Folders that may hold an installed NVIDIA wheel's libraries, relative
/// to the file holding this code: the Python module (site-packages/pterun/)
/// or the command (<prefix>/bin/).
std::vector<fs::path> wheel_dirs() {
  std::vector<fs::path> homes;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&wheel_dirs), &info) != 0 && info.dli_fname != nullptr &&
      fs::path(info.dli_fname).is_absolute()) {
    homes.push_back(fs::path(info.dli_fname).parent_path());
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) homes.push_back(exe.parent_path());

  // nvidia-cublas and nvidia-cuda-nvrtc install into nvidia/cu13/lib,
  // nvidia-cudnn-cu13 into nvidia/cudnn/lib.
  std::vector<fs::path> dirs;
  auto add = [&dirs](const fs::path& site) {
    for (const char* wheel : {"cu13", "cudnn"}) dirs.push_back(site / "nvidia" / wheel / "lib");
  };
  for (const fs::path& home : homes) {
    add(home / "..");
    for (const auto& entry : fs::directory_iterator(home / ".." / "lib", ec)) {
      if (entry.path().filename().string().rfind("python3", 0) != 0) continue;
      for (const char* site : {"site-packages", "dist-packages"}) add(entry.path() / site);
    }
  }
  return dirs;
}

}  // namespace

void* open_cuda_library(const char* soname, const std::string& built_with, std::string& error) {
  std::vector<fs::path> dirs = wheel_dirs();
  for (size_t start = 0; start < built_with.size();) {
    size_t end = built_with.find(':', start);
    if (end == std::string::npos) end = built_with.size();
    if (end > start) dirs.emplace_back(built_with.substr(start, end - start));
    start = end + 1;
  }
  error.clear();
  for (const fs::path& dir : dirs) {
    const fs::path file = dir / soname;
    std::error_code ec;
    if (!fs::exists(file, ec)) continue;
    if (void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    error += str_cat(error.empty() ? "" : "; ", dlerror());
  }
  // The loader's own search: LD_LIBRARY_PATH, the system's CUDA toolkit.
  if (void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) return handle;
  error += str_cat(error.empty() ? "" : "; ", dlerror());
  return nullptr;
}

}  // namespace pterun::cuda
