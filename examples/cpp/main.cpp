// Loads a program, runs its `forward` method on two float32 [2, 3] inputs
// and prints the output:  run_add tests/fixtures/add.pte

#include <pterun/executor/method.h>
#include <pterun/program/program.h>

#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: run_add PROGRAM.pte\n";
    return 2;
  }
  try {
    auto program = pterun::Program::load_file(argv[1]);
    auto method = pterun::Method::load(program, "forward");

    std::vector<float> x = {1, 2, 3, 4, 5, 6}, y = {10, 20, 30, 40, 50, 60};
    std::vector<int64_t> shape = {2, 3};
    std::vector<pterun::InputArg> inputs = {
        pterun::InputArg::tensor(x.data(), pterun::DType::Float32, shape),
        pterun::InputArg::tensor(y.data(), pterun::DType::Float32, shape)};
    method->set_inputs(inputs);
    method->execute();

    const pterun::Tensor& out = method->output(0).to_tensor();
    const float* values = out.data_as<const float>();
    std::cout << pterun::describe(out) << ":";
    for (int64_t i = 0; i < out.numel(); ++i) std::cout << " " << values[i];
    std::cout << "\n";
  } catch (const pterun::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
