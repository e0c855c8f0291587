#include "pterun/devtools/bundled_program.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/half.h"

namespace pterun {
namespace {

bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

double load_floating(const uint8_t* p, DType d) {
  switch (d) {
    case DType::Float32: {
      float f;
      std::memcpy(&f, p, sizeof f);
      return f;
    }
    case DType::Float64: {
      double f;
      std::memcpy(&f, p, sizeof f);
      return f;
    }
    case DType::Float16: {
      Half h;
      std::memcpy(&h.bits, p, sizeof h.bits);
      return static_cast<float>(h);
    }
    default: {
      BFloat16 b;
      std::memcpy(&b.bits, p, sizeof b.bits);
      return static_cast<float>(b);
    }
  }
}

/// An element for a message: its value for numbers, its bytes otherwise.
/// No iostreams: number formatting through them has crashed inside some
/// Python processes (core/str_cat.h), and this runs inside Python's verify().
std::string element_text(const uint8_t* p, DType d) {
  if (is_floating(d)) {
    char digits[32];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, load_floating(p, d),
                                   std::chars_format::general, 9);
    return std::string(digits, ec == std::errc() ? end : digits);
  }
  auto as = [&](auto v) {
    std::memcpy(&v, p, sizeof v);
    return str_cat(+v);
  };
  switch (d) {
    case DType::Bool: return *p != 0 ? "true" : "false";
    case DType::UInt8: return as(uint8_t{});
    case DType::Int8: return as(int8_t{});
    case DType::Int16: return as(int16_t{});
    case DType::Int32: return as(int32_t{});
    case DType::Int64: return as(int64_t{});
    default: break;
  }
  static const char* hex = "0123456789abcdef";
  std::string out = "0x";
  for (size_t i = element_size(d); i-- > 0;) {
    out += hex[p[i] >> 4];
    out += hex[p[i] & 15];
  }
  return out;
}

std::string list_text(std::span<const int64_t> v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += str_cat(i ? ", " : "", v[i]);
  return out + "]";
}

/// Compares one output tensor (host bytes at `got` with `strides`) with the
/// expected value, recording the first difference in `result`.
void compare_tensor(const uint8_t* got, const Tensor& t, std::span<const int64_t> strides,
                    const format::BundledValue& want, double rtol, double atol,
                    const std::string& what, CaseResult& result) {
  auto fail = [&](std::string message) {
    result.passed = false;
    if (result.message.empty()) result.message = str_cat(what, ": ", message);
  };
  if (t.dtype() != want.dtype) {
    fail(str_cat("dtype ", dtype_name(t.dtype()), ", expected ", dtype_name(want.dtype)));
    return;
  }
  if (!std::ranges::equal(t.sizes(), want.sizes)) {
    fail(str_cat("shape ", list_text(t.sizes()), ", expected ", list_text(want.sizes)));
    return;
  }
  const size_t rank = want.sizes.size();
  const size_t esize = element_size(want.dtype);
  const int64_t numel = t.numel();
  const bool floating = is_floating(want.dtype);
  std::vector<int64_t> index(rank, 0), first_bad;
  int64_t bad = 0;
  std::string first_got, first_want;
  for (int64_t n = 0; n < numel; ++n) {
    int64_t og = 0, ow = 0;
    for (size_t d = 0; d < rank; ++d) {
      og += index[d] * strides[d];
      ow += index[d] * want.strides[d];
    }
    const uint8_t* a_ptr = got + og * static_cast<int64_t>(esize);
    const uint8_t* b_ptr = want.data.data() + ow * static_cast<int64_t>(esize);
    bool ok;
    if (floating) {
      const double a = load_floating(a_ptr, want.dtype), b = load_floating(b_ptr, want.dtype);
      const double err = std::fabs(a - b);
      if (std::isnan(a) || std::isnan(b)) {
        ok = std::isnan(a) && std::isnan(b);
      } else if (std::isinf(b) || std::isinf(a)) {
        ok = a == b;
      } else {
        ok = err <= atol + rtol * std::fabs(b);
        result.max_abs_error = std::max(result.max_abs_error, err);
        result.max_rel_error = std::max(result.max_rel_error, err / std::max(1e-8, std::fabs(b)));
      }
    } else {
      ok = std::memcmp(a_ptr, b_ptr, esize) == 0;
    }
    if (!ok && bad++ == 0) {
      first_bad = index;
      first_got = element_text(a_ptr, want.dtype);
      first_want = element_text(b_ptr, want.dtype);
    }
    for (size_t d = rank; d-- > 0;) {  // next logical index, last dimension fastest
      if (++index[d] < want.sizes[d]) break;
      index[d] = 0;
    }
  }
  if (bad > 0) {
    fail(str_cat(bad, " of ", numel, " elements differ",
                 floating ? str_cat(" (rtol ", rtol, ", atol ", atol, ")") : std::string(),
                 "; first at ", list_text(first_bad), ": got ", first_got, ", expected ",
                 first_want));
  }
}

void compare_scalar(const Value& got, const format::BundledValue& want, const std::string& what,
                    CaseResult& result) {
  bool ok = got.kind() == want.kind;
  if (ok && want.kind == ValueKind::Int) ok = got.to_int() == want.int_value;
  if (ok && want.kind == ValueKind::Bool) ok = got.to_bool() == want.bool_value;
  if (ok && want.kind == ValueKind::Double) ok = got.to_double() == want.double_value;
  if (!ok && result.passed) {
    result.passed = false;
    result.message = str_cat(what, ": a ", value_kind_name(got.kind()), " value differs from the ",
                             value_kind_name(want.kind), " expected");
  }
}

}  // namespace

std::shared_ptr<const BundledProgram> BundledProgram::load(Buffer file, Buffer data) {
  PTERUN_CHECK(file != nullptr, ErrorCode::InvalidArgument, "bundled program: no bytes");
  std::shared_ptr<BundledProgram> b(new BundledProgram());
  b->desc_ = format::read_bundled_program(*file);
  std::string origin = str_cat(file->origin(), " (the program inside the bundle)");
  b->program_ = Program::load(
      format::DataBuffer::borrow(b->desc_.program,
                                 std::const_pointer_cast<format::DataBuffer>(file), origin),
      std::move(data));
  const std::vector<std::string> names = b->program_->method_names();
  for (const auto& suite : b->desc_.suites) {
    PTERUN_CHECK(std::ranges::find(names, suite.method_name) != names.end(),
                 ErrorCode::InvalidProgram, "bundled program: test cases for method '",
                 suite.method_name, "', which its program does not have");
  }
  b->file_ = std::move(file);
  return b;
}

std::shared_ptr<const BundledProgram> BundledProgram::load_file(const std::string& path,
                                                                const std::string& data_path) {
  Buffer file = format::DataBuffer::map_file(path);
  Buffer data = data_path.empty() ? nullptr : format::DataBuffer::map_file(data_path);
  return load(std::move(file), std::move(data));
}

const std::vector<format::BundledCase>& BundledProgram::cases(const std::string& name) const {
  std::string known;
  for (const auto& suite : desc_.suites) {
    if (suite.method_name == name) return suite.cases;
    known += str_cat(known.empty() ? "'" : ", '", suite.method_name, "'");
  }
  throw_error(ErrorCode::InvalidArgument,
              str_cat("bundled program: no test cases for method '", name, "' (it has cases for ",
                      known.empty() ? "no method" : known, ")"));
}

const format::BundledCase& BundledProgram::test_case(const std::string& name, size_t index) const {
  const auto& all = cases(name);
  PTERUN_CHECK(index < all.size(), ErrorCode::IndexOutOfRange, "bundled program: method '", name,
               "' has ", all.size(), " test cases, no case ", index);
  return all[index];
}

std::vector<InputArg> bundled_inputs(const format::BundledCase& c) {
  std::vector<InputArg> out;
  for (const auto& v : c.inputs) {
    switch (v.kind) {
      case ValueKind::Tensor:
        out.push_back(InputArg::tensor(v.data.data(), v.dtype, v.sizes, v.strides));
        break;
      case ValueKind::Int: out.push_back(InputArg::from_int(v.int_value)); break;
      case ValueKind::Double: out.push_back(InputArg::from_double(v.double_value)); break;
      case ValueKind::Bool: out.push_back(InputArg::from_bool(v.bool_value)); break;
      default: out.push_back(InputArg::none()); break;
    }
  }
  return out;
}

CaseResult compare_outputs(const Method& method, const format::BundledCase& c, double rtol,
                           double atol) {
  CaseResult result;
  result.method = method.name();
  result.compared = !c.expected_outputs.empty();
  if (!result.compared) return result;
  if (method.num_outputs() != c.expected_outputs.size()) {
    result.passed = false;
    result.message = str_cat("the method has ", method.num_outputs(), " outputs, the case expects ",
                             c.expected_outputs.size());
    return result;
  }
  for (size_t i = 0; i < c.expected_outputs.size(); ++i) {
    const std::string what = str_cat("output ", i);
    const format::BundledValue& want = c.expected_outputs[i];
    const Value& got = method.output(i);
    if (want.kind != ValueKind::Tensor || !got.is_tensor()) {
      compare_scalar(got, want, what, result);
      continue;
    }
    const Tensor& t = got.to_tensor();
    if (!method.output_on_device(i) || t.numel() == 0) {
      compare_tensor(static_cast<const uint8_t*>(t.data()), t, t.strides(), want, rtol, atol, what,
                     result);
      continue;
    }
    // A device output: its bytes from data() to its last element, on the host.
    int64_t last = 0;
    for (size_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    std::vector<uint8_t> host(static_cast<size_t>(last + 1) * t.element_size());
    backend::download(method.device_index(), host.data(), t.data(), host.size());
    compare_tensor(host.data(), t, t.strides(), want, rtol, atol, what, result);
  }
  return result;
}

CaseResult run_case(Method& method, const format::BundledCase& c, size_t index, double rtol,
                    double atol) {
  method.set_inputs(bundled_inputs(c));
  method.execute();
  CaseResult result = compare_outputs(method, c, rtol, atol);
  result.index = index;
  return result;
}

}  // namespace pterun
