// The pterun command: inspect, run, bench, verify, generate.

#include <CLI/CLI.hpp>
#include <iostream>
#include <string_view>

#include "cli/commands.h"
#include "pterun/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"pterun: run ExecuTorch programs (.pte) without PyTorch"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pterun " PTERUN_VERSION " (backends: " PTERUN_BACKENDS ")");

  pterun::cli::InspectOptions inspect;
  auto* inspect_cmd = app.add_subcommand("inspect", "Show what a .pte file holds");
  inspect_cmd->add_option("file", inspect.file, "The .pte file")->required();
  inspect_cmd->add_option("--data", inspect.data, "A .ptd file with external data");
  inspect_cmd->add_flag("--json", inspect.json, "Print machine-readable JSON");

  pterun::cli::RunOptions run, bench;
  auto add_run_options = [](CLI::App* cmd, pterun::cli::RunOptions& o) {
    cmd->add_option("file", o.file, "The .pte file")->required();
    cmd->add_option("--data", o.data, "A .ptd file with external data");
    cmd->add_option("--method", o.method, "Method to run")->capture_default_str();
    cmd->add_option("--device", o.device, "cpu, cuda or cuda:N (CUDA builds)")
        ->capture_default_str();
    cmd->add_option("--input", o.input_files, "An .npy file per input, in order");
    cmd->add_option("--inputs", o.inputs_npz, "An .npz holding the inputs (archive order)");
    cmd->add_option("--keys", o.keys, "Comma-separated .npz keys to use as inputs, in order");
    cmd->add_option("--threads", o.threads, "CPU threads (default: PTERUN_NUM_THREADS or all)");
  };
  auto* run_cmd = app.add_subcommand("run", "Run a method once and print its outputs");
  add_run_options(run_cmd, run);
  run_cmd->add_option("--output", run.output, "Write tensor outputs to this .npz");
  auto* bench_cmd = app.add_subcommand("bench", "Time loading and calling a method");
  add_run_options(bench_cmd, bench);
  bench_cmd->add_option("--iterations,-n", bench.iterations, "Timed calls (default: ~1 s)");
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed calls first")->capture_default_str();

  pterun::cli::VerifyOptions verify;
  auto* verify_cmd = app.add_subcommand(
      "verify", "Run a bundled program's (.bpte) test cases and check the outputs");
  verify_cmd->add_option("file", verify.file, "The .bpte file")->required();
  verify_cmd->add_option("--data", verify.data, "A .ptd file with external data");
  verify_cmd->add_option("--method", verify.method, "Only this method's cases");
  verify_cmd->add_option("--device", verify.device, "cpu, cuda or cuda:N (CUDA builds)")
      ->capture_default_str();
  verify_cmd->add_option("--rtol", verify.rtol, "Relative tolerance")->capture_default_str();
  verify_cmd->add_option("--atol", verify.atol, "Absolute tolerance")->capture_default_str();

  // Its options are Python's (pterun/llm/cli.py): everything after the
  // word goes there unparsed, --help included.
  app.add_subcommand("generate",
                     "Generate text with an LLM program (runs python -m pterun.llm; "
                     "`pterun generate --help` lists its options)")
      ->allow_extras();
  if (argc >= 2 && std::string_view(argv[1]) == "generate") {
    return pterun::cli::run_generate(argc, argv);
  }

  CLI11_PARSE(app, argc, argv);
  try {
    if (inspect_cmd->parsed()) return pterun::cli::run_inspect(inspect);
    if (run_cmd->parsed()) return pterun::cli::run_run(run);
    if (bench_cmd->parsed()) return pterun::cli::run_bench(bench);
    if (verify_cmd->parsed()) return pterun::cli::run_verify(verify);
  } catch (const pterun::Error& e) {
    std::cerr << "pterun: error (" << pterun::error_code_name(e.code()) << "): " << e.what()
              << "\n";
    return e.code() == pterun::ErrorCode::FileNotFound ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "pterun: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
