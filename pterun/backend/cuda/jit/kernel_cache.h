#pragma once

// Compiled kernels kept on disk between processes: a generated kernel
// costs NVRTC 60-300 ms, so a process that meets a program another one
// compiled reads its machine code instead.
//
// The folder is $PTERUN_CACHE_DIR, else $XDG_CACHE_HOME/pterun, else
// ~/.cache/pterun; PTERUN_CACHE_DIR set to an empty string turns the cache
// off. An entry holds the whole compile request (the source, the embedded
// headers, the architecture and NVRTC's version) and a checksum of the
// machine code: an entry that does not match, or is damaged, is compiled
// again and rewritten. Entries are written to a temporary file and renamed
// into place, so concurrent processes never read half an entry. The cache
// is an optimisation only: a folder that cannot be read or written is
// ignored.

#include <string>

namespace pterun::cuda::jit {

/// compile(source, name, arch) (nvrtc.h), through the disk cache.
std::string compile_cached(const std::string& source, const char* name, int arch);

}  // namespace pterun::cuda::jit
