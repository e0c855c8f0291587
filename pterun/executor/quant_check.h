#pragma once

#include "pterun/format/program_desc.h"

namespace pterun {

/// Checks, at load, what a method's quantized_decomposed instructions take
/// from the file: each quant range against its dtype argument, the dtype of
/// the quantized tensor, scalar scales and zero points, and the values of
/// constant scale and zero-point tensors, by the rules of
/// ops/quant_checks.h. A damaged file (a scale of 0 or NaN, a zero point
/// outside its range) is then refused with ProgramError (InvalidProgram)
/// naming the method, the instruction and the value, before any call;
/// parameters computed at run time are checked by the kernels.
void check_quant_params(const format::MethodDesc& d);

}  // namespace pterun
