// libFuzzer target for the XNNPACK payload reader, the expansion of a
// delegate into kernel calls, and running them. The first input byte is the
// delegate call's argument count, the rest the payload; constants resolve
// against the named data of every program in tests/fixtures/xnnpack
// (PTERUN_FUZZ_PTE names one program to use instead), so that each seed
// reads through to its nodes. The payload is then put in place of the
// delegate of a fixture whose delegate call passes that many arguments (cut
// or zero-padded to that delegate's size, so the program's layout stays),
// and that program is loaded, its methods expanded, loaded and run on the
// CPU. Any pterun::Error is an expected outcome; a crash, sanitizer report,
// other exception or hang is a bug.
//
// Seeds: run once with PTERUN_FUZZ_WRITE_SEEDS=DIR to write every XNNPACK
// payload of the XNNPACK fixtures into DIR, then fuzz with DIR as corpus
// (`scripts/fuzz xnnpack [seconds]` does both).

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/core/threads.h"
#include "pterun/format/xnnpack_reader.h"
#include "pterun/program/program.h"
#include "tests/cpp/fuzz_input.h"

namespace {

using namespace pterun::format;

const char* const kFixtures = PTERUN_SOURCE_DIR "/tests/fixtures/xnnpack";

struct Loaded {
  std::shared_ptr<const DataBuffer> buffer;
  ProgramDesc program;
};

Loaded load(const std::string& path) {
  Loaded l;
  l.buffer = DataBuffer::map_file(path);
  l.program = read_program(*l.buffer);
  return l;
}

std::vector<std::string> fixture_paths() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(kFixtures)) {
    if (e.path().extension() == ".pte") paths.push_back(e.path().string());
  }
  return paths;
}

// The programs stay mapped; `merged` holds their named data (views) as one
// program's, the first of a duplicate key kept.
struct Companion {
  std::vector<Loaded> programs;
  ProgramDesc merged;
  std::unique_ptr<NamedDataMap> named;
};

const Companion& companion() {
  static const Companion c = [] {
    Companion out;
    const char* path = std::getenv("PTERUN_FUZZ_PTE");
    for (const auto& p : path ? std::vector<std::string>{path} : fixture_paths()) {
      out.programs.push_back(load(p));
    }
    for (const auto& l : out.programs) {
      for (const auto& n : l.program.named_data) out.merged.named_data.push_back(n);
    }
    out.named = std::make_unique<NamedDataMap>(out.merged);
    return out;
  }();
  return c;
}

// A fixture with one XNNPACK delegate: its bytes, and where the payload of
// the delegate its first method calls lies in them.
struct Host {
  std::vector<uint8_t> bytes;
  size_t payload_offset = 0, payload_size = 0;
  size_t num_args = 0;
};

const std::vector<Host>& hosts() {
  static const std::vector<Host> h = [] {
    std::vector<Host> out;
    for (const auto& path : fixture_paths()) {
      Loaded l = load(path);
      const MethodDesc& m = l.program.methods.at(0);
      if (m.delegates.size() != 1 || m.delegates[0].id != kXnnpackBackendId) continue;
      auto args = delegate_call_num_args(m, 0);
      if (!args) continue;
      Host host;
      host.bytes.assign(l.buffer->data(), l.buffer->data() + l.buffer->size());
      host.payload_offset = static_cast<size_t>(m.delegates[0].payload.data() - l.buffer->data());
      host.payload_size = m.delegates[0].payload.size();
      host.num_args = *args;
      out.push_back(std::move(host));
    }
    return out;
  }();
  return h;
}

// Loads the host program carrying `payload` (for a call of `num_args`
// arguments), expands, loads and runs its methods.
uint64_t run_in_host(std::span<const uint8_t> payload, size_t num_args) {
  const Host* best = nullptr;
  for (const Host& h : hosts()) {
    if (h.num_args != num_args) continue;
    // The smallest delegate that holds the payload, else the largest.
    if (best == nullptr ||
        (best->payload_size < payload.size() && h.payload_size > best->payload_size) ||
        (h.payload_size >= payload.size() && h.payload_size < best->payload_size)) {
      best = &h;
    }
  }
  if (best == nullptr) return 0;
  std::vector<uint8_t> bytes = best->bytes;
  std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(best->payload_offset), best->payload_size,
              uint8_t{0});
  std::copy_n(payload.begin(), std::min(payload.size(), best->payload_size),
              bytes.begin() + static_cast<std::ptrdiff_t>(best->payload_offset));
  auto program = pterun::Program::load(DataBuffer::copy_of(bytes));
  return pterun::test::load_and_run_methods(program, pterun::test::InputRecipe::from_byte(2));
}

void write_seeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (const auto& path : fixture_paths()) {
    Loaded l = load(path);
    std::string stem = std::filesystem::path(path).stem().string();
    for (const auto& m : l.program.methods) {
      for (size_t i = 0; i < m.delegates.size(); ++i) {
        auto args = delegate_call_num_args(m, i);
        if (m.delegates[i].id != kXnnpackBackendId || !args) continue;
        std::ofstream out(dir + "/" + stem + "_" + std::to_string(i), std::ios::binary);
        out.put(static_cast<char>(*args));
        out.write(reinterpret_cast<const char*>(m.delegates[i].payload.data()),
                  static_cast<std::streamsize>(m.delegates[i].payload.size()));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pterun::set_num_threads(1);
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
  try {
    volatile uint64_t sink = run_in_host({data + 1, size - 1}, data[0]);
    (void)sink;
  } catch (const pterun::Error&) {
  }
  return 0;
}
