#pragma once

// cuDNN's convolution entry points, resolved from libcudnn.so.9 at run
// time (the nvidia-cudnn-cu13 wheel, the `cuda` extra, or the system's
// cuDNN 9). The few types and values pterun passes are declared here from
// cuDNN 9's C API, so building needs neither its headers nor its library,
// and a machine without cuDNN runs every convolution on pterun's own
// kernels (ops/conv_cudnn.h falls back).

#include <cstddef>
#include <cstdint>
#include <string>

#include "pterun/kernels/kernel.h"

namespace pterun::cuda::cudnn {

using Status = int;  // cudnnStatus_t; 0 is CUDNN_STATUS_SUCCESS

// Opaque objects behind cuDNN's handle and descriptor pointers.
struct Context;
struct TensorObject;
struct FilterObject;
struct ConvObject;
using Handle = Context*;
using TensorDesc = TensorObject*;
using FilterDesc = FilterObject*;
using ConvDesc = ConvObject*;

// Enumerators of cudnnDataType_t, cudnnTensorFormat_t, cudnnMathType_t and
// cudnnConvolutionMode_t (C enums: int-sized).
enum DataType : int { kFloat = 0, kHalf = 2, kBFloat16 = 9 };
enum Format : int { kNchw = 0, kNhwc = 1 };
enum MathType : int { kDefaultMath = 0, kTensorOpMath = 1, kFmaMath = 3 };
enum ConvMode : int { kCrossCorrelation = 1 };

/// cudnnConvolutionFwdAlgoPerf_t.
struct FwdAlgoPerf {
  int algo;
  Status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

// cuDNN 9's backend (graph) API: descriptors built attribute by attribute
// (cudnn_graph.h). Only the enumerators pterun passes.
using BackendDesc = void*;
enum BackendType : int {
  kEngineDesc = 2,
  kEngineConfigDesc = 3,
  kEngineHeuristicsDesc = 4,
  kExecutionPlanDesc = 5,
  kConvForwardOpDesc = 10,
  kOperationGraphDesc = 15,
  kVariantPackDesc = 16,
  kTensorDesc = 17,
  kConvolutionDesc = 1,
};
enum Attribute : int {
  kConvCompType = 100,
  kConvMode = 101,
  kConvDilations = 102,
  kConvFilterStrides = 103,
  kConvPostPaddings = 104,
  kConvPrePaddings = 105,
  kConvSpatialDims = 106,
  kHeuristicsMode = 200,
  kHeuristicsGraph = 201,
  kHeuristicsResults = 202,
  kEngineConfigEngine = 300,
  kPlanHandle = 400,
  kPlanEngineConfig = 401,
  kPlanWorkspaceSize = 402,
  kConvForwardAlpha = 700,
  kConvForwardBeta = 701,
  kConvForwardConv = 702,
  kConvForwardW = 703,
  kConvForwardX = 704,
  kConvForwardY = 705,
  kGraphHandle = 800,
  kGraphOps = 801,
  kTensorAlignment = 900,
  kTensorDataType = 901,
  kTensorDims = 902,
  kTensorStrides = 903,
  kTensorUid = 906,
  kPackUids = 1000,
  kPackPointers = 1001,
  kPackWorkspace = 1003,
  kEngineNumericalNote = 1303,
};
enum AttributeType : int {
  kTypeHandle = 0,
  kTypeDataType = 1,
  kTypeInt64 = 3,
  kTypeFloat = 4,
  kTypeVoidPtr = 6,
  kTypeConvMode = 7,
  kTypeHeuristicsMode = 8,
  kTypeNumericalNote = 11,
  kTypeDescriptor = 15,
};
enum HeuristicsMode : int { kHeuristicsInstant = 0 };
enum NumericalNote : int { kNoteTensorCore = 0, kNoteDownConvertInputs = 1 };

struct Api {
  const char* (*error_string)(Status) = nullptr;
  Status (*create)(Handle*) = nullptr;
  Status (*destroy)(Handle) = nullptr;
  Status (*set_stream)(Handle, void* stream) = nullptr;
  Status (*create_tensor)(TensorDesc*) = nullptr;
  Status (*set_tensor_4d_ex)(TensorDesc, int type, int n, int c, int h, int w, int ns, int cs,
                             int hs, int ws) = nullptr;
  Status (*destroy_tensor)(TensorDesc) = nullptr;
  Status (*create_filter)(FilterDesc*) = nullptr;
  Status (*set_filter_4d)(FilterDesc, int type, int format, int k, int c, int h, int w) = nullptr;
  Status (*destroy_filter)(FilterDesc) = nullptr;
  Status (*create_conv)(ConvDesc*) = nullptr;
  Status (*set_conv_2d)(ConvDesc, int pad_h, int pad_w, int stride_h, int stride_w, int dil_h,
                        int dil_w, int mode, int compute_type) = nullptr;
  Status (*set_group_count)(ConvDesc, int groups) = nullptr;
  Status (*set_math_type)(ConvDesc, int math) = nullptr;
  Status (*destroy_conv)(ConvDesc) = nullptr;
  Status (*forward_algorithms)(Handle, TensorDesc x, FilterDesc w, ConvDesc conv, TensorDesc y,
                               int requested, int* returned, FwdAlgoPerf* results) = nullptr;
  Status (*find_algorithms)(Handle, TensorDesc xd, const void* x, FilterDesc wd, const void* w,
                            ConvDesc conv, TensorDesc yd, void* y, int requested, int* returned,
                            FwdAlgoPerf* results, void* workspace,
                            size_t workspace_bytes) = nullptr;
  Status (*forward)(Handle, const void* alpha, TensorDesc xd, const void* x, FilterDesc wd,
                    const void* w, ConvDesc conv, int algo, void* workspace, size_t workspace_bytes,
                    const void* beta, TensorDesc yd, void* y) = nullptr;
  Status (*add_tensor)(Handle, const void* alpha, TensorDesc ad, const void* a, const void* beta,
                       TensorDesc cd, void* c) = nullptr;
  // The backend API; null when the library lacks it (then only the above).
  Status (*create_backend)(int type, BackendDesc* desc) = nullptr;
  Status (*destroy_backend)(BackendDesc desc) = nullptr;
  Status (*finalize)(BackendDesc desc) = nullptr;
  Status (*set_attribute)(BackendDesc desc, int name, int type, int64_t count,
                          const void* values) = nullptr;
  Status (*get_attribute)(BackendDesc desc, int name, int type, int64_t requested, int64_t* count,
                          void* values) = nullptr;
  Status (*execute)(Handle, BackendDesc plan, BackendDesc pack) = nullptr;
};

/// The loaded library, or null when cuDNN is missing, turned off
/// (PTERUN_CUDNN=0) or lacks an entry point (then `why`, if given, says
/// which).
const Api* api(std::string* why = nullptr);

/// Throws pterun::Error (Internal) naming `what` unless `status` is success.
void check(const Api& a, Status status, const char* what);

/// The method's cuDNN handle on its stream, created on first use; null
/// when there is no cuDNN.
Handle handle(kernels::KernelContext& context);

}  // namespace pterun::cuda::cudnn
