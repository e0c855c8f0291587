#pragma once

namespace pterun {

/// Bound on the CPU threads one method call may use (docs/python-api.md, B15). Defaults to
/// PTERUN_NUM_THREADS when set, else the number of available cores.
int get_num_threads();

/// Sets the bound; Error InvalidArgument when n < 1.
void set_num_threads(int n);

}  // namespace pterun
