#include "pterun/format/data_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "pterun/core/error.h"

namespace pterun::format {
namespace {

// Every mapping and allocation gets at least one readable page, so an empty
// file still has a valid, aligned data pointer.
constexpr size_t kMinAllocation = DataBuffer::kAlignment;

uint8_t* allocate_aligned(size_t size) {
  void* p = std::aligned_alloc(
      DataBuffer::kAlignment,
      (size + DataBuffer::kAlignment - 1) / DataBuffer::kAlignment * DataBuffer::kAlignment +
          kMinAllocation);
  PTERUN_CHECK(p != nullptr, ErrorCode::MemoryAllocationFailed, "load: cannot allocate ", size,
               " bytes for the program");
  return static_cast<uint8_t*>(p);
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::shared_ptr<const DataBuffer> DataBuffer::map_file(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    int err = errno;
    PTERUN_CHECK(err != ENOENT && err != ENOTDIR, ErrorCode::FileNotFound, "load: no such file: '",
                 path, "'");
    throw_error(ErrorCode::AccessFailed,
                str_cat("load: cannot open '", path, "': ", std::strerror(err)));
  }
  struct stat st {};
  PTERUN_CHECK(::fstat(fd.get(), &st) == 0, ErrorCode::AccessFailed, "load: cannot stat '", path,
               "': ", std::strerror(errno));
  PTERUN_CHECK(S_ISREG(st.st_mode), ErrorCode::AccessFailed, "load: '", path,
               "' is not a regular file");
  auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    // mmap refuses empty files; an owned empty buffer behaves the same.
    auto buffer = copy_of({});
    const_cast<DataBuffer&>(*buffer).origin_ = path;
    return buffer;
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  PTERUN_CHECK(p != MAP_FAILED, ErrorCode::AccessFailed, "load: cannot map '", path,
               "': ", std::strerror(errno));
  return std::shared_ptr<const DataBuffer>(
      new DataBuffer(Kind::Mapped, static_cast<const uint8_t*>(p), size, path));
}

std::shared_ptr<const DataBuffer> DataBuffer::copy_of(std::span<const uint8_t> bytes) {
  uint8_t* p = allocate_aligned(bytes.size());
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
  return std::shared_ptr<const DataBuffer>(new DataBuffer(Kind::Owned, p, bytes.size(), "<bytes>"));
}

std::shared_ptr<const DataBuffer> DataBuffer::borrow(std::span<const uint8_t> bytes,
                                                     std::shared_ptr<void> keep_alive,
                                                     std::string origin) {
  if (bytes.empty() || reinterpret_cast<uintptr_t>(bytes.data()) % kAlignment != 0) {
    auto copy = copy_of(bytes);
    const_cast<DataBuffer&>(*copy).origin_ = std::move(origin);
    return copy;
  }
  auto* buffer = new DataBuffer(Kind::Borrowed, bytes.data(), bytes.size(), std::move(origin));
  buffer->keep_alive_ = std::move(keep_alive);
  return std::shared_ptr<const DataBuffer>(buffer);
}

DataBuffer::~DataBuffer() {
  switch (kind_) {
    case Kind::Mapped: ::munmap(const_cast<uint8_t*>(data_), size_); break;
    case Kind::Owned: std::free(const_cast<uint8_t*>(data_)); break;
    case Kind::Borrowed: break;
  }
}

}  // namespace pterun::format
