#include "pterun/ops/backend.h"

namespace pterun::ops {

namespace detail {
const OpBackend* g_backends[kNumDevices] = {};
}  // namespace detail

const char* op_family_name(OpFamily family) {
  switch (family) {
    case OpFamily::Prim: return "prim";
    case OpFamily::Shape: return "shape";
    case OpFamily::Copy: return "copy";
    case OpFamily::Creation: return "creation";
    case OpFamily::Elementwise: return "elementwise";
    case OpFamily::Reduce: return "reduce";
    case OpFamily::Softmax: return "softmax";
    case OpFamily::Norm: return "norm";
    case OpFamily::Matmul: return "matmul";
    case OpFamily::Conv: return "conv";
    case OpFamily::Pool: return "pool";
    case OpFamily::Index: return "index";
    case OpFamily::Nonzero: return "nonzero";
    case OpFamily::Quant: return "quant";
    case OpFamily::Attention: return "attention";
  }
  return "?";
}

bool OpBackend::provides(OpFamily family) const {
  switch (family) {
    case OpFamily::Prim: return true;
    case OpFamily::Shape: return shape != nullptr;
    case OpFamily::Copy: return copy != nullptr;
    case OpFamily::Creation: return creation != nullptr;
    case OpFamily::Elementwise: return elementwise != nullptr;
    case OpFamily::Reduce: return reduce != nullptr;
    case OpFamily::Softmax: return softmax != nullptr;
    case OpFamily::Norm: return norm != nullptr;
    case OpFamily::Matmul: return matmul != nullptr;
    case OpFamily::Conv: return conv != nullptr;
    case OpFamily::Pool: return pool != nullptr;
    case OpFamily::Index: return index != nullptr;
    case OpFamily::Nonzero: return nonzero != nullptr;
    case OpFamily::Quant: return quant != nullptr;
    case OpFamily::Attention: return attention != nullptr;
  }
  return false;
}

}  // namespace pterun::ops
