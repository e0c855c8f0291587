// `pterun verify FILE.bpte`: runs every test case of a bundled program and
// prints each case's result (the rules are in pterun/devtools).

#include <iostream>

#include "cli/commands.h"
#include "pterun/devtools/bundled_program.h"

namespace pterun::cli {
int run_verify(const VerifyOptions& o) {
  const MethodOptions options = method_options(o.device);
  auto bundle = BundledProgram::load_file(o.file, o.data);
  int passed = 0, failed = 0, ran = 0;
  std::cout.precision(3);
  for (const auto& suite : bundle->suites()) {
    if (!o.method.empty() && suite.method_name != o.method) continue;
    auto method = Method::load(bundle->program(), suite.method_name, options);
    for (size_t k = 0; k < suite.cases.size(); ++k) {
      CaseResult r;
      try {
        r = run_case(*method, suite.cases[k], k, o.rtol, o.atol);
      } catch (const Error& e) {  // the case's inputs or the run itself failed
        r.passed = false;
        r.compared = true;
        r.message = e.what();
      }
      std::cout << suite.method_name << "[" << k << "]: ";
      if (!r.compared) {
        ++ran;
        std::cout << "ran (no expected outputs)\n";
      } else if (r.passed) {
        ++passed;
        std::cout << "passed (max abs error " << r.max_abs_error << ", max rel error "
                  << r.max_rel_error << ")\n";
      } else {
        ++failed;
        std::cout << "FAILED: " << r.message << "\n";
      }
    }
  }
  PTERUN_CHECK(passed + failed + ran > 0 || o.method.empty(), ErrorCode::InvalidArgument,
               "verify: the bundle has no test cases for method '", o.method, "'");
  std::cout << passed << " passed, " << failed << " failed";
  if (ran > 0) std::cout << ", " << ran << " ran without expected outputs";
  std::cout << " (rtol " << o.rtol << ", atol " << o.atol << ", " << o.device << ")\n";
  return failed == 0 ? 0 : 1;
}

}  // namespace pterun::cli
