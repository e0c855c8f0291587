#pragma once

#include <string>

namespace pterun::cli {

struct InspectOptions {
  std::string file;
  std::string data;  // optional .ptd
  bool json = false;
};

/// `pterun inspect`: prints what a program holds and what this build can run.
int run_inspect(const InspectOptions& options);

}  // namespace pterun::cli
