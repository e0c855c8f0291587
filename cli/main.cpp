// The pterun command: inspect (and, as the runtime grows, run and bench).

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "pterun/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"pterun: run ExecuTorch programs (.pte) without PyTorch"};
  app.require_subcommand(1);

  pterun::cli::InspectOptions inspect;
  auto* inspect_cmd = app.add_subcommand("inspect", "Show what a .pte file holds");
  inspect_cmd->add_option("file", inspect.file, "The .pte file")->required();
  inspect_cmd->add_option("--data", inspect.data, "A .ptd file with external data");
  inspect_cmd->add_flag("--json", inspect.json, "Print machine-readable JSON");

  CLI11_PARSE(app, argc, argv);
  try {
    if (inspect_cmd->parsed()) return pterun::cli::run_inspect(inspect);
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
