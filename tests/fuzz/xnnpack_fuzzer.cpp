// libFuzzer target for the XNNPACK payload reader. The first input byte is
// the delegate call's argument count, the rest the payload; constants
// resolve against the named data of tests/fixtures/xnnpack/mobilenet.pte
// (PTERUN_FUZZ_PTE overrides). Any pterun::Error is an expected outcome; a
// crash, sanitizer report, other exception or hang is a bug.
//
// Seeds: run once with PTERUN_FUZZ_WRITE_SEEDS=DIR to write every XNNPACK
// payload of the XNNPACK fixtures into DIR, then fuzz with DIR as corpus.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/format/xnnpack_reader.h"

namespace {

using namespace pterun::format;

struct Companion {
  std::shared_ptr<const DataBuffer> buffer;
  ProgramDesc program;
  std::unique_ptr<NamedDataMap> named;
};

Companion load(const std::string& path) {
  Companion c;
  c.buffer = DataBuffer::map_file(path);
  c.program = read_program(*c.buffer);
  c.named = std::make_unique<NamedDataMap>(c.program);
  return c;
}

const Companion& companion() {
  static const Companion c = [] {
    const char* path = std::getenv("PTERUN_FUZZ_PTE");
    return load(path ? path : PTERUN_SOURCE_DIR "/tests/fixtures/xnnpack/mobilenet.pte");
  }();
  return c;
}

void write_seeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (const auto& e :
       std::filesystem::directory_iterator(PTERUN_SOURCE_DIR "/tests/fixtures/xnnpack")) {
    if (e.path().extension() != ".pte") continue;
    Companion c = load(e.path().string());
    for (const auto& m : c.program.methods) {
      for (size_t i = 0; i < m.delegates.size(); ++i) {
        auto args = delegate_call_num_args(m, i);
        if (m.delegates[i].id != kXnnpackBackendId || !args) continue;
        std::ofstream out(dir + "/" + e.path().stem().string() + "_" + std::to_string(i),
                          std::ios::binary);
        out.put(static_cast<char>(*args));
        out.write(reinterpret_cast<const char*>(m.delegates[i].payload.data()),
                  static_cast<std::streamsize>(m.delegates[i].payload.size()));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("PTERUN_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    // A copy of exactly the payload's size, aligned as payloads are in files.
    std::vector<uint8_t> payload(data + 1, data + size);
    XnnGraphDesc g = read_xnnpack_graph(payload, *companion().named, data[0]);
    volatile uint64_t sink = 0;
    for (const auto& v : g.values) {
      if (!v.data.empty()) sink = sink + v.data.front() + v.data.back();
    }
    for (const auto& n : g.nodes) {
      for (int32_t i : n.inputs) sink = sink + (i == kXnnNoValue ? 0 : g.values[i].numel);
      for (int32_t o : n.outputs) sink = sink + g.values[o].numel;
    }
  } catch (const pterun::Error&) {
  }
  return 0;
}
