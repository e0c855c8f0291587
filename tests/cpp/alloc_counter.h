#pragma once

namespace pterun::test {

/// Counts operator new calls between start() and stop() (this test binary
/// replaces the global allocation functions).
void start_counting_allocations();
long stop_counting_allocations();

}  // namespace pterun::test
