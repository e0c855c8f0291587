#pragma once

#include <cstdint>

#include "pterun/program/program.h"

namespace pterun::test {

/// Reads everything a loaded program hands on (metadata of every input,
/// output and attribute; the first and last byte of every data span;
/// XNNPACK payloads read as the delegate executor reads them; support
/// checks), so that sanitizers see any reference outside the file.
/// Returns a checksum to keep the reads alive.
uint64_t walk_program(const Program& program);

}  // namespace pterun::test
