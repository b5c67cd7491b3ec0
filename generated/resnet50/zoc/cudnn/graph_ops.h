// The operation graph of a fused convolution (conv + bias [+ residual] [+ activation]) in cuDNN's
// backend (graph) API: owned descriptors, tensors, pointwise ops and the finalized graph.
//
// Why a file of its own: the graph is built the same way whether its engine comes from cuDNN's
// heuristics or from a plan file's measured choice (zoc/cudnn/graph_engine.h picks engines,
// zoc/cudnn/graph.h builds and runs plans). The graph follows the legacy call's formula
// y = act(conv(x, w) + z + bias), in the order of cudnn-frontend's ConvBiasAct sample:
//   conv_fwd(x, w) -> [add z] -> add bias (1xKx1x1, broadcast, same type as y) -> [act] -> y
// with fp32 virtual intermediates and fp32 compute, rounded once into y. The activation is ReLU
// (the legacy call's one) or any that cuDNN's pointwise modes express (act::cudnn_pointwise):
// ReLU6 and hardtanh as ReLU with both clips, SiLU as swish, sigmoid, tanh, GELU (erf, tanh).
// Header-only C++17; needs cudnn.h and cuda_runtime.h (through cuda_check.h and device.h).
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/device.h"
#include "zoc/core/expected.h"
#include "zoc/math/activations.h"

namespace zoc {

struct FusedConvSpec {
  int n, c, h, w;  // input, dims in NCHW order whatever the layout
  int k, r, s;     // output channels, kernel height and width
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  int out_h, out_w;
  bool residual;            // y = act(conv + z + bias), z shaped like y
  bool relu;                // else identity
  cudnnDataType_t io_type;  // CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16 or CUDNN_DATA_FLOAT
  bool nhwc;                // NHWC activations and KRSC filters; else NCHW and KCRS
  bool allow_tf32 = false;  // fp32 only: accept engines that round inputs to TF32 (tensor cores)
  // Instead of ReLU: this activation (act::cudnn_pointwise) with its parameters (hardtanh's
  // bounds).
  bool other_activation = false;
  act::Kind activation = act::Kind::kRelu;
  act::Params activation_params{};
  // Grouped convolution: the filter is [k, c / groups, r, s] and cuDNN infers the group count
  // from the two channel counts (the graph API has no group attribute).
  int groups = 1;
};

// The error of a graph that no engine can run contains this text (see is_no_engine_error).
constexpr const char kNoEngineMarker[] = "no cuDNN engine supports this fused convolution";

inline bool is_no_engine_error(const Error& e) {
  return e.message.find(kNoEngineMarker) != std::string::npos;
}

namespace graph_detail {

constexpr int64_t kUidX = 1, kUidW = 2, kUidB = 3, kUidZ = 4, kUidY = 5;
constexpr int64_t kUidConv = 101, kUidAddZ = 102, kUidAddB = 103;  // virtual
constexpr int64_t kAlignment = 16;  // bytes; bind() checks every pointer against it

// `file` is the zoc header making the call (__FILE__): its base name locates the step.
inline Error backend_error(const char* layer, const char* file, int line, const std::string& step,
                           cudnnStatus_t status) {
  std::string where = file ? file : "";
  where = where.substr(where.find_last_of('/') + 1);
  std::string text = (layer && *layer) ? "layer '" + std::string(layer) + "'" : "zoc";
  text += " (" + where + ":" + std::to_string(line) + "): cuDNN graph API: " + step +
          " failed: " + detail::cudnn_status_text(status);
  return Error{std::move(text)};
}

inline bool is_not_supported(cudnnStatus_t s) {
  return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED;
}

}  // namespace graph_detail
}  // namespace zoc

// Evaluates `call` (a cudnnBackend* call) once; on failure returns an Error naming `step` (a
// std::string expression, evaluated only on failure) and cuDNN's own explanation.
#define ZOC_BACKEND(call, step, layer)                                               \
  do {                                                                               \
    const cudnnStatus_t zoc_backend_status_ = (call);                                \
    if (zoc_backend_status_ != CUDNN_STATUS_SUCCESS) {                               \
      return ::zoc::graph_detail::backend_error((layer), __FILE__, __LINE__, (step), \
                                                zoc_backend_status_);                \
    }                                                                                \
  } while (0)

// Sets one attribute; the error names the attribute and the descriptor (`what`).
#define ZOC_SET_ATTR(desc, attr, type, count, ptr, what, layer)               \
  ZOC_BACKEND(cudnnBackendSetAttribute((desc).get(), attr, type, count, ptr), \
              std::string("set " #attr " on ") + (what), layer)

// Sets an attribute that is one backend descriptor (`raw`, a cudnnBackendDescriptor_t).
#define ZOC_SET_DESC(desc, attr, raw, what, layer)                                           \
  do {                                                                                       \
    cudnnBackendDescriptor_t zoc_raw_desc_ = (raw);                                          \
    ZOC_SET_ATTR(desc, attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &zoc_raw_desc_, what, layer); \
  } while (0)

namespace zoc {

// Owns one backend descriptor; move-only, destroyed with its owner on every path.
class BackendDesc {
 public:
  BackendDesc() = default;
  ~BackendDesc() { reset(); }
  BackendDesc(BackendDesc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  BackendDesc& operator=(BackendDesc&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  BackendDesc(const BackendDesc&) = delete;
  BackendDesc& operator=(const BackendDesc&) = delete;

  static Expected<BackendDesc> create(cudnnBackendDescriptorType_t type, const std::string& what,
                                      const char* layer) {
    BackendDesc d;
    ZOC_BACKEND(cudnnBackendCreateDescriptor(type, &d.d_), "create descriptor for " + what, layer);
    return Expected<BackendDesc>(std::move(d));
  }
  cudnnBackendDescriptor_t get() const { return d_; }
  void reset() {
    if (d_) (void)cudnnBackendDestroyDescriptor(d_);  // nothing useful to do with a failure here
    d_ = nullptr;
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

namespace graph_detail {

inline Status finalize(const BackendDesc& d, const std::string& what, const char* layer) {
  ZOC_BACKEND(cudnnBackendFinalize(d.get()), "finalize " + what, layer);
  return Status();
}

// dims in NCHW order (n, c, h, w) -> strides of the chosen layout.
inline void strides_for(const int64_t d[4], bool nhwc, int64_t out[4]) {
  out[0] = d[1] * d[2] * d[3];
  out[1] = nhwc ? 1 : d[2] * d[3];
  out[2] = nhwc ? d[1] * d[3] : d[3];
  out[3] = nhwc ? d[1] : 1;
}

// Moves `d` into the keep list (creation order) and returns its handle for wiring.
inline cudnnBackendDescriptor_t keep_desc(std::vector<BackendDesc>* keep, BackendDesc d) {
  keep->push_back(std::move(d));
  return keep->back().get();
}

inline Expected<cudnnBackendDescriptor_t> make_tensor(int64_t uid, cudnnDataType_t type,
                                                      const int64_t dims[4], bool nhwc,
                                                      bool is_virtual, const char* name,
                                                      std::vector<BackendDesc>* keep,
                                                      const char* layer) {
  const std::string what = std::string("tensor '") + name + "'";
  ZOC_ASSIGN_OR_RETURN(BackendDesc t,
                       BackendDesc::create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what, layer));
  int64_t strides[4];
  strides_for(dims, nhwc, strides);
  int64_t alignment = kAlignment;
  bool virt = is_virtual;
  ZOC_SET_ATTR(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, what, layer);
  ZOC_SET_ATTR(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, what, layer);
  ZOC_SET_ATTR(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, what, layer);
  ZOC_SET_ATTR(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, what, layer);
  ZOC_SET_ATTR(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, what, layer);
  ZOC_SET_ATTR(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, what, layer);
  ZOC_TRY(finalize(t, what, layer));
  return keep_desc(keep, std::move(t));
}

// The operation applying the finalized pointwise descriptor `raw_pw` to x [and b] into y.
inline Expected<cudnnBackendDescriptor_t> make_pointwise_op(
    cudnnBackendDescriptor_t raw_pw, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
    cudnnBackendDescriptor_t y, const char* name, std::vector<BackendDesc>* keep,
    const char* layer) {
  const std::string op_what = std::string("pointwise operation '") + name + "'";
  ZOC_ASSIGN_OR_RETURN(
      BackendDesc op,
      BackendDesc::create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op_what, layer));
  float one = 1.0f;
  ZOC_SET_DESC(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, raw_pw, op_what, layer);
  ZOC_SET_DESC(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, op_what, layer);
  if (b) ZOC_SET_DESC(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b, op_what, layer);
  ZOC_SET_DESC(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, op_what, layer);
  ZOC_SET_ATTR(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, op_what,
               layer);
  ZOC_SET_ATTR(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, op_what,
               layer);
  ZOC_TRY(finalize(op, op_what, layer));
  return keep_desc(keep, std::move(op));
}

// A pointwise descriptor of `mode` computing in fp32, not finalized (its mode's attributes go
// on it first).
inline Expected<BackendDesc> pointwise_desc(cudnnPointwiseMode_t mode, const std::string& what,
                                            const char* layer) {
  ZOC_ASSIGN_OR_RETURN(BackendDesc pw,
                       BackendDesc::create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what, layer));
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  ZOC_SET_ATTR(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what, layer);
  ZOC_SET_ATTR(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, what, layer);
  return Expected<BackendDesc>(std::move(pw));  // explicit: C++17 (CUDA) has no implicit move here
}

// One pointwise operation y = mode(x[, b]) computed in fp32; returns the operation.
inline Expected<cudnnBackendDescriptor_t> make_pointwise(
    cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
    cudnnBackendDescriptor_t y, const char* name, std::vector<BackendDesc>* keep,
    const char* layer) {
  const std::string what = std::string("pointwise descriptor '") + name + "'";
  ZOC_ASSIGN_OR_RETURN(BackendDesc pw, pointwise_desc(mode, what, layer));
  ZOC_TRY(finalize(pw, what, layer));
  return make_pointwise_op(keep_desc(keep, std::move(pw)), x, b, y, name, keep, layer);
}

// The epilogue's activation y = f(x) as one pointwise operation. ReLU as the measured engines
// saw it (cuDNN's documented defaults: clip below at 0, slope 0 there, no upper clip); hardtanh
// (ReLU6) as ReLU clipped at its bounds, slope 0 below; SiLU as swish with beta 1. The
// parameters are float, the operation's math precision (as cudnn-frontend sets them).
inline Expected<cudnnBackendDescriptor_t> make_activation(const FusedConvSpec& s,
                                                          cudnnBackendDescriptor_t x,
                                                          cudnnBackendDescriptor_t y,
                                                          std::vector<BackendDesc>* keep,
                                                          const char* layer) {
  const act::Kind k = s.other_activation ? s.activation : act::Kind::kRelu;
  float lower = 0, upper = 0, slope = 0, beta = 1;
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_RELU_FWD;
  switch (k) {
    case act::Kind::kRelu:
      break;
    case act::Kind::kHardtanh:
      lower = float(s.activation_params.a), upper = float(s.activation_params.b);
      break;
    case act::Kind::kSilu:
      mode = CUDNN_POINTWISE_SWISH_FWD;
      break;
    case act::Kind::kSigmoid:
      mode = CUDNN_POINTWISE_SIGMOID_FWD;
      break;
    case act::Kind::kTanh:
      mode = CUDNN_POINTWISE_TANH_FWD;
      break;
    case act::Kind::kGelu:
      mode = CUDNN_POINTWISE_GELU_FWD;
      break;
    case act::Kind::kGeluTanh:
      mode = CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
      break;
    case act::Kind::kLeakyRelu:
      upper = std::numeric_limits<float>::max(), slope = float(s.activation_params.a);
      break;
    case act::Kind::kElu:
      mode = CUDNN_POINTWISE_ELU_FWD;
      break;
    case act::Kind::kHardswish:
    case act::Kind::kHardsigmoid:
      break;  // refused by validate()
  }
  const std::string what = "pointwise descriptor 'activation'";
  ZOC_ASSIGN_OR_RETURN(BackendDesc pw, pointwise_desc(mode, what, layer));
  if (k == act::Kind::kHardtanh || k == act::Kind::kLeakyRelu) {
    ZOC_SET_ATTR(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_FLOAT, 1, &lower, what,
                 layer);
    ZOC_SET_ATTR(pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_FLOAT, 1, &upper, what,
                 layer);
    ZOC_SET_ATTR(pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_FLOAT, 1, &slope, what,
                 layer);
  } else if (mode == CUDNN_POINTWISE_SWISH_FWD) {
    ZOC_SET_ATTR(pw, CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_FLOAT, 1, &beta, what, layer);
  } else if (mode == CUDNN_POINTWISE_ELU_FWD) {
    const float alpha = float(s.activation_params.a);
    ZOC_SET_ATTR(pw, CUDNN_ATTR_POINTWISE_ELU_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, what, layer);
  }
  ZOC_TRY(finalize(pw, what, layer));
  return make_pointwise_op(keep_desc(keep, std::move(pw)), x, nullptr, y, "activation", keep,
                           layer);
}

// Builds and finalizes the operation graph of `s` and returns it; every descriptor goes into
// *keep in creation order (users after what they use), to outlive the plans made from it.
// `handle` may be null (it names the device for the heuristics; optional since cuDNN 9.8).
inline Expected<cudnnBackendDescriptor_t> make_op_graph(cudnnHandle_t handle,
                                                        const FusedConvSpec& s,
                                                        std::vector<BackendDesc>* keep,
                                                        const char* layer) {
  const int64_t xd[4] = {s.n, s.c, s.h, s.w}, wd[4] = {s.k, s.c / s.groups, s.r, s.s};
  const int64_t yd[4] = {s.n, s.k, s.out_h, s.out_w}, bd[4] = {1, s.k, 1, 1};
  const cudnnDataType_t io = s.io_type, f32 = CUDNN_DATA_FLOAT;
  using T = cudnnBackendDescriptor_t;
  ZOC_ASSIGN_OR_RETURN(const T x, make_tensor(kUidX, io, xd, s.nhwc, false, "x", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T w, make_tensor(kUidW, io, wd, s.nhwc, false, "w", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T b, make_tensor(kUidB, io, bd, s.nhwc, false, "bias", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T y, make_tensor(kUidY, io, yd, s.nhwc, false, "y", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T conv_out,
                       make_tensor(kUidConv, f32, yd, s.nhwc, true, "conv_out", keep, layer));

  // Convolution: conv_out = conv(x, w), alpha 1, beta 0, cross-correlation as in PyTorch.
  const char* cd_what = "convolution descriptor";
  ZOC_ASSIGN_OR_RETURN(BackendDesc cd,
                       BackendDesc::create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, cd_what, layer));
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t dims = 2, pad[2] = {s.pad_h, s.pad_w}, stride[2] = {s.stride_h, s.stride_w},
          dil[2] = {s.dil_h, s.dil_w};
  ZOC_SET_ATTR(cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, cd_what,
               layer);
  ZOC_SET_ATTR(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, cd_what,
               layer);
  ZOC_SET_ATTR(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, cd_what, layer);
  ZOC_SET_ATTR(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad, cd_what, layer);
  ZOC_SET_ATTR(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad, cd_what, layer);
  ZOC_SET_ATTR(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride, cd_what,
               layer);
  ZOC_SET_ATTR(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil, cd_what, layer);
  ZOC_TRY(finalize(cd, cd_what, layer));
  const T raw_cd = keep_desc(keep, std::move(cd));

  const char* what = "convolution operation";
  ZOC_ASSIGN_OR_RETURN(
      BackendDesc conv,
      BackendDesc::create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, what, layer));
  float alpha = 1.0f, beta = 0.0f;
  ZOC_SET_DESC(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x, what, layer);
  ZOC_SET_DESC(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w, what, layer);
  ZOC_SET_DESC(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, conv_out, what, layer);
  ZOC_SET_DESC(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, raw_cd, what, layer);
  ZOC_SET_ATTR(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha,
               what, layer);
  ZOC_SET_ATTR(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta,
               what, layer);
  ZOC_TRY(finalize(conv, what, layer));
  std::vector<T> ops = {keep_desc(keep, std::move(conv))};

  // Epilogue: [+ z] + bias [relu]; each op reads the previous op's (virtual, fp32) output.
  T cur = conv_out;
  if (s.residual) {
    ZOC_ASSIGN_OR_RETURN(const T z, make_tensor(kUidZ, io, yd, s.nhwc, false, "z", keep, layer));
    ZOC_ASSIGN_OR_RETURN(const T after_z,
                         make_tensor(kUidAddZ, f32, yd, s.nhwc, true, "after_add_z", keep, layer));
    ZOC_ASSIGN_OR_RETURN(
        const T op, make_pointwise(CUDNN_POINTWISE_ADD, cur, z, after_z, "add_z", keep, layer));
    ops.push_back(op);
    cur = after_z;
  }
  const bool activation = s.relu || s.other_activation;
  T bias_out = y;
  if (activation) {
    ZOC_ASSIGN_OR_RETURN(
        bias_out, make_tensor(kUidAddB, f32, yd, s.nhwc, true, "after_add_bias", keep, layer));
  }
  ZOC_ASSIGN_OR_RETURN(const T add_b, make_pointwise(CUDNN_POINTWISE_ADD, cur, b, bias_out,
                                                     "add_bias", keep, layer));
  ops.push_back(add_b);
  if (activation) {
    ZOC_ASSIGN_OR_RETURN(const T act, make_activation(s, bias_out, y, keep, layer));
    ops.push_back(act);
  }

  ZOC_ASSIGN_OR_RETURN(
      BackendDesc graph,
      BackendDesc::create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph", layer));
  ZOC_SET_ATTR(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
               int64_t(ops.size()), ops.data(), "operation graph", layer);
  if (handle) {
    cudnnHandle_t hh = handle;
    ZOC_SET_ATTR(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &hh,
                 "operation graph", layer);
  }
  const cudnnStatus_t st = cudnnBackendFinalize(graph.get());
  if (st != CUDNN_STATUS_SUCCESS) {
    const std::string step = is_not_supported(st)
                                 ? std::string(kNoEngineMarker) + ": finalize operation graph"
                                 : std::string("finalize operation graph");
    return backend_error(layer, __FILE__, __LINE__, step, st);
  }
  return keep_desc(keep, std::move(graph));
}

// Checks a spec before any descriptor is made: sizes, the output shape rule, the data type.
inline Status validate(const FusedConvSpec& s, const char* layer) {
  const std::string who = "layer '" + std::string(layer ? layer : "") + "': FusedConvSpec: ";
  const int v[] = {s.n,        s.c,        s.h,     s.w,     s.k,     s.r,    s.s,
                   s.stride_h, s.stride_w, s.dil_h, s.dil_w, s.out_h, s.out_w};
  for (int x : v) {
    if (x < 1) return Error{who + "sizes, strides and dilations must be >= 1"};
  }
  if (s.pad_h < 0 || s.pad_w < 0) return Error{who + "negative padding"};
  if (s.groups < 1 || s.c % s.groups != 0 || s.k % s.groups != 0) {
    return Error{who + "groups must divide the input and output channels"};
  }
  const int64_t oh =
      (int64_t(s.h) + 2 * int64_t(s.pad_h) - int64_t(s.dil_h) * (s.r - 1) - 1) / s.stride_h + 1;
  const int64_t ow =
      (int64_t(s.w) + 2 * int64_t(s.pad_w) - int64_t(s.dil_w) * (s.s - 1) - 1) / s.stride_w + 1;
  if (oh != s.out_h || ow != s.out_w) {
    return Error{who + "output " + std::to_string(s.out_h) + "x" + std::to_string(s.out_w) +
                 " does not match the convolution's " + std::to_string(oh) + "x" +
                 std::to_string(ow)};
  }
  if (s.io_type != CUDNN_DATA_HALF && s.io_type != CUDNN_DATA_BFLOAT16 &&
      s.io_type != CUDNN_DATA_FLOAT) {
    return Error{who + "io_type must be CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16 or CUDNN_DATA_FLOAT"};
  }
  if (s.other_activation && (s.relu || !act::cudnn_pointwise(s.activation))) {
    return Error{who + (s.relu ? "ReLU and another activation at once"
                               : "the activation has no cuDNN pointwise mode")};
  }
  // Element counts of x, w and y must fit in int64 (each factor is < 2^31, so two steps suffice).
  const double biggest =
      double(s.n) * std::max(double(s.c) * s.h * s.w, double(s.k) * s.out_h * s.out_w);
  if (biggest > 9.0e18 || double(s.k) * s.c * s.r * s.s > 9.0e18)
    return Error{who + "tensor too large"};
  return Status();
}

}  // namespace graph_detail
}  // namespace zoc
