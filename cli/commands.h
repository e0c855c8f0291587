#pragma once

#include <string>
#include <vector>

#include "pterun/executor/method.h"

namespace pterun::cli {

struct InspectOptions {
  std::string file;
  std::string data;  // optional .ptd
  bool json = false;
};

/// Options shared by `run` and `bench`.
struct RunOptions {
  std::string file;
  std::string data;
  std::string method = "forward";
  std::string device = "cpu";
  std::vector<std::string> input_files;  // .npy, one per input
  std::string inputs_npz;                // or one .npz
  std::string keys;                      // comma-separated npz keys to use, in order
  std::string output;                    // run: .npz to write
  int iterations = 0;                    // bench: 0 = about one second's worth
  int warmup = 3;
  int threads = 0;  // 0 = default
};

/// Options of `verify`.
struct VerifyOptions {
  std::string file;    // .bpte
  std::string data;    // optional .ptd for the program inside
  std::string method;  // empty: every method with test cases
  std::string device = "cpu";
  double rtol = 1e-5;  // ExecuTorch's defaults
  double atol = 1e-8;
};

/// A `--device` value ("cpu", "cuda", "cuda:N") as MethodOptions; Error
/// InvalidArgument for anything else.
MethodOptions method_options(const std::string& device);

/// `pterun inspect`: prints what a program holds and what this build can run.
int run_inspect(const InspectOptions& options);

/// `pterun run`: runs a method once and prints (or saves) its outputs.
int run_run(const RunOptions& options);

/// `pterun bench`: load time, first call, median and p90 per call.
int run_bench(const RunOptions& options);

/// `pterun verify`: runs a bundled program's test cases, prints each
/// result; 0 when none failed.
int run_verify(const VerifyOptions& options);

/// `pterun generate ARGS`: replaces this process with `python -m pterun.llm
/// ARGS` (argv[2..]); returns 1 only when no interpreter could be started.
/// The interpreter is $PTERUN_PYTHON, else the python3 of the environment
/// the command is installed in, else python3 from PATH.
int run_generate(int argc, char** argv);

}  // namespace pterun::cli
