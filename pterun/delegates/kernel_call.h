#pragma once

// Building one kernel call of a lowered delegate node (Call). Internal to
// delegates/.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

#include "pterun/delegates/method_builder.h"
#include "pterun/format/xnnpack_reader.h"

namespace pterun::delegates {

/// One kernel call's arguments, in the operator's order, ending with its
/// out value twice (as ExecuTorch emits out variants: the last entry is the
/// returned value).
class Call {
 public:
  Call(MethodBuilder& b, const char* op) : b_(b) { instr_.index = b.op(op); }
  Call& value(int32_t v) {
    instr_.args.push_back(v);
    return *this;
  }
  Call& i(int64_t v) { return value(b_.add_int(v)); }
  Call& f(double v) { return value(b_.add_double(v)); }
  Call& flag(bool v) { return value(b_.add_bool(v)); }
  Call& list(std::initializer_list<int64_t> v) {
    return value(b_.add_int_list({v.begin(), v.size()}));
  }
  Call& list(const std::vector<uint32_t>& v) {
    std::vector<int64_t> items(v.begin(), v.end());
    return value(b_.add_int_list(items));
  }
  /// A per-tensor quantization's scale and zero point, then (with
  /// `int8_range`) int8's whole range as quant_min and quant_max.
  Call& qparams(double scale, int64_t zero_point, bool int8_range) {
    f(scale).i(zero_point);
    return int8_range ? i(-128).i(127) : *this;
  }
  /// The output range of a node that honours output_min_max.
  Call& range(const format::XnnNodeDesc& node) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    return f(node.output_min_max ? node.output_min_max->min : -kInf)
        .f(node.output_min_max ? node.output_min_max->max : kInf);
  }
  format::InstructionDesc done(int32_t out) {
    instr_.args.push_back(out);
    instr_.args.push_back(out);
    return std::move(instr_);
  }
  format::InstructionDesc done_list(int32_t list) {
    instr_.args.push_back(list);
    return std::move(instr_);
  }

 private:
  MethodBuilder& b_;
  format::InstructionDesc instr_;
};

}  // namespace pterun::delegates
