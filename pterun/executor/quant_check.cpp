// The load-time check of quantization parameters (quant_check.h).

#include "pterun/executor/quant_check.h"

#include <array>
#include <string_view>

#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/ops/quant_checks.h"

namespace pterun {
namespace {

using format::InstructionKind;
using format::ValueDesc;

/// Argument positions of one (scale, zero point, quant_min, quant_max) set;
/// -1: absent.
struct ParamSet {
  int scale = -1, zero_point = -1, quant_min = -1, quant_max = -1;
};

/// Where an operator keeps its quantization parameters.
struct QuantOpLayout {
  std::string_view name;
  int quantized;  // the tensor in the quantized dtype (dequantize: input; quantize: out)
  int dtype;      // the ScalarType argument, or -1: the quantized tensor's dtype
  std::array<ParamSet, 3> sets;
  std::array<int, 2> more_quantized = {-1, -1};  // further tensors of that dtype
};

constexpr QuantOpLayout kLayouts[] = {
    {"quantized_decomposed::quantize_per_tensor.out", 6, 5, {{{1, 2, 3, 4}}}},
    {"quantized_decomposed::quantize_per_tensor.Tensor_out", 6, 5, {{{1, 2, 3, 4}}}},
    {"quantized_decomposed::dequantize_per_tensor.out", 0, 5, {{{1, 2, 3, 4}}}},
    {"quantized_decomposed::dequantize_per_tensor.Tensor_out", 0, 5, {{{1, 2, 3, 4}}}},
    {"quantized_decomposed::quantize_per_channel.out", 7, 6, {{{1, 2, 4, 5}}}},
    {"quantized_decomposed::dequantize_per_channel.out", 0, 6, {{{1, 2, 4, 5}}}},
    {"quantized_decomposed::quantize_per_token.out", 6, 5, {{{1, 2, 3, 4}}}},
    {"quantized_decomposed::dequantize_per_token.out", 0, 5, {{{1, 2, 3, 4}}}},
    {"quantized_decomposed::quantize_per_channel_group.out", 7, 5, {{{1, 2, 3, 4}}}},
    {"quantized_decomposed::dequantize_per_channel_group.out", 0, 5, {{{1, 2, 3, 4}}}},
    {"quantized_decomposed::choose_qparams.Tensor_out", -1, 4, {{{-1, -1, 1, 2}}}},
    {"quantized_decomposed::add.out",
     0,
     -1,
     {{{1, 2, 3, 4}, {6, 7, 8, 9}, {10, 11, 12, 13}}},
     {5, 14}},
};

const QuantOpLayout* layout_of(std::string_view name) {
  for (const QuantOpLayout& l : kLayouts) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

/// The bytes of a constant tensor, when the program holds all of them.
const uint8_t* constant_bytes(const ValueDesc& v) {
  if (v.kind != ValueKind::Tensor || !v.tensor->is_constant()) return nullptr;
  const auto& t = *v.tensor;
  return t.data.size() >= t.nbytes ? t.data.data() : nullptr;
}

void check_instruction(const format::MethodDesc& d, const format::InstructionDesc& instr,
                       const QuantOpLayout& l, const char* op) {
  auto arg = [&](int i) -> const ValueDesc* {
    return i >= 0 && static_cast<size_t>(i) < instr.args.size() ? &d.values[instr.args[i]]
                                                                : nullptr;
  };
  auto tensor_dtype = [&](int i) -> std::optional<DType> {
    const ValueDesc* v = arg(i);
    if (v == nullptr || v->kind != ValueKind::Tensor) return std::nullopt;
    return v->tensor->dtype;
  };
  DType dtype;
  if (l.dtype >= 0) {
    const ValueDesc* v = arg(l.dtype);
    if (v == nullptr || v->kind != ValueKind::Int) return;  // the loader's kind check reports it
    dtype = ops::quant_dtype(v->int_value, "dtype", op);
  } else {
    const auto t = tensor_dtype(l.quantized);
    if (!t) return;
    dtype = *t;
    if (ops::dtype_highest(dtype) == 0) return;  // not an integer: the call reports it
  }
  for (int q : {l.quantized, l.more_quantized[0], l.more_quantized[1]}) {
    const auto t = tensor_dtype(q);
    PTERUN_CHECK(!t || *t == dtype, ErrorCode::InvalidArgument, op, ": a quantized tensor is ",
                 dtype_name(*t), ", not ", dtype_name(dtype));
  }
  for (const ParamSet& s : l.sets) {
    const ValueDesc* qmin = arg(s.quant_min);
    const ValueDesc* qmax = arg(s.quant_max);
    if (qmin == nullptr || qmax == nullptr || qmin->kind != ValueKind::Int ||
        qmax->kind != ValueKind::Int) {
      continue;
    }
    ops::check_quant_range(qmin->int_value, qmax->int_value, dtype, op);
    if (const ValueDesc* scale = arg(s.scale)) {
      if (scale->kind == ValueKind::Double || scale->kind == ValueKind::Int) {
        ops::check_scale(scale->kind == ValueKind::Double ? scale->double_value
                                                          : static_cast<double>(scale->int_value),
                         "scale", op);
      } else if (const uint8_t* bytes = constant_bytes(*scale)) {
        const DType t = scale->tensor->dtype;
        if (t == DType::Float64 || t == DType::Float32 || t == DType::Float16 ||
            t == DType::BFloat16) {
          ops::check_scales(bytes, t, static_cast<int64_t>(scale->tensor->numel), op);
        }
      }
    }
    if (const ValueDesc* zp = arg(s.zero_point)) {
      if (zp->kind == ValueKind::Int) {
        ops::check_zero_point(zp->int_value, qmin->int_value, qmax->int_value, "zero_point", op);
      } else if (const uint8_t* bytes = constant_bytes(*zp)) {
        const DType t = zp->tensor->dtype;
        if (t == DType::Int64 || t == DType::Int32) {
          ops::check_zero_points(bytes, t, static_cast<int64_t>(zp->tensor->numel), qmin->int_value,
                                 qmax->int_value, op);
        }
      }
    }
  }
}

}  // namespace

void check_quant_params(const format::MethodDesc& d) {
  size_t position = 0;
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      ++position;
      if (instr.kind != InstructionKind::KernelCall) continue;
      const std::string name = d.operators[instr.index].full_name();
      const QuantOpLayout* l = layout_of(name);
      if (l == nullptr) continue;
      try {
        check_instruction(d, instr, *l, l->name.data());
      } catch (const Error& e) {
        throw Error(ErrorCode::InvalidProgram,
                    str_cat("method '", printable(d.name), "', instruction ", position - 1, ": ",
                            e.what()));
      }
    }
  }
}

}  // namespace pterun
