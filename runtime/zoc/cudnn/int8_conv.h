// An INT8 convolution with a fused requantizing epilogue in cuDNN's backend (graph) API:
//   y_int8 = [relu]( conv_int32(x_int8, w_int8) * scale[k] + bias[k] [+ z] )
// built once into an execution plan, like zoc/cudnn/graph.h's fp16 FusedConvPlan.
//
// Why a file of its own: INT8 inference (issue 35) first needs a measured answer to whether the
// graph API runs this graph on sm_90 at all, and how fast; tests/gpu/int8_probe.cu asks it. The
// fp16 graph (graph_ops.h) has one io type and no scale; folding INT8 into FusedConvSpec would
// touch every fp16 path before the answer is known. What is shared is reused: the descriptor
// owner, tensor and pointwise builders (graph_ops.h) and the heuristics readers and config
// builder (graph_engine.h). The graph follows the documented rules of cuDNN's "Support Surface
// 90" runtime fusion: X and W int8 NHWC / KRSC with C % 16 == 0 (128-bit aligned mainloop),
// compute INT32, the conv output a virtual FLOAT (or INT32) tensor that is the FIRST operand of
// every epilogue op; scale and bias [1,K,1,1] float, the optional residual z [N,K,P,Q] int8
// (its value as is, no scale: fold the residual's scale into scale/bias upstream).
// Header-only C++17; needs cudnn.h and cuda_runtime.h.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "zoc/cudnn/graph_engine.h"
#include "zoc/cudnn/graph_ops.h"

namespace zoc {

struct Int8ConvSpec {
  int n, c, h, w;  // input, dims in NCHW order; stored NHWC
  int k, r, s;     // output channels, kernel height and width; filter stored KRSC
  int pad_h, pad_w, stride_h, stride_w;
  int out_h, out_w;
  bool residual = false;  // + z (int8, shaped like y) before the activation
  bool relu = true;
  cudnnDataType_t conv_out_type = CUDNN_DATA_FLOAT;  // the virtual accumulator tensor's type
  cudnnDataType_t y_type = CUDNN_DATA_INT8;
  // x, w and z: INT8 (INT32 compute), or CUDNN_DATA_FP8_E4M3 / _E5M2 (FLOAT compute), which
  // measures whether Hopper's FP8 engines stream the memory-bound layers better (issue 35).
  cudnnDataType_t io_type = CUDNN_DATA_INT8;
};

namespace int8_detail {

constexpr int64_t kUidX = 1, kUidW = 2, kUidB = 3, kUidZ = 4, kUidY = 5, kUidScale = 6;
constexpr int64_t kUidConv = 101, kUidScaled = 102, kUidBiased = 103, kUidAddZ = 104;

// The convolution operation x * w -> conv_out, INT32 compute (FLOAT for FP8), cross-correlation.
inline Expected<cudnnBackendDescriptor_t> make_conv(
    const Int8ConvSpec& s, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t w,
    cudnnBackendDescriptor_t y, std::vector<BackendDesc>* keep, const char* layer) {
  using graph_detail::finalize;
  using graph_detail::keep_desc;
  const char* cd_what = "int8 convolution descriptor";
  ZOC_ASSIGN_OR_RETURN(BackendDesc cd,
                       BackendDesc::create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, cd_what, layer));
  cudnnDataType_t comp = s.io_type == CUDNN_DATA_INT8 ? CUDNN_DATA_INT32 : CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t dims = 2, pad[2] = {s.pad_h, s.pad_w}, stride[2] = {s.stride_h, s.stride_w},
          dil[2] = {1, 1};
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
  const cudnnBackendDescriptor_t raw_cd = keep_desc(keep, std::move(cd));

  const char* what = "int8 convolution operation";
  ZOC_ASSIGN_OR_RETURN(
      BackendDesc conv,
      BackendDesc::create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, what, layer));
  float alpha = 1.0f, beta = 0.0f;
  ZOC_SET_DESC(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x, what, layer);
  ZOC_SET_DESC(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w, what, layer);
  ZOC_SET_DESC(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y, what, layer);
  ZOC_SET_DESC(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, raw_cd, what, layer);
  ZOC_SET_ATTR(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha,
               what, layer);
  ZOC_SET_ATTR(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta,
               what, layer);
  ZOC_TRY(finalize(conv, what, layer));
  return keep_desc(keep, std::move(conv));
}

// Builds and finalizes the operation graph of `s`; descriptors go into *keep in creation order.
inline Expected<cudnnBackendDescriptor_t> make_op_graph(cudnnHandle_t handle, const Int8ConvSpec& s,
                                                        std::vector<BackendDesc>* keep,
                                                        const char* layer) {
  using graph_detail::make_pointwise;
  using graph_detail::make_tensor;
  using T = cudnnBackendDescriptor_t;
  const int64_t xd[4] = {s.n, s.c, s.h, s.w}, wd[4] = {s.k, s.c, s.r, s.s};
  const int64_t yd[4] = {s.n, s.k, s.out_h, s.out_w}, kd[4] = {1, s.k, 1, 1};
  const cudnnDataType_t io = s.io_type, f32 = CUDNN_DATA_FLOAT;
  ZOC_ASSIGN_OR_RETURN(const T x, make_tensor(kUidX, io, xd, true, false, "x", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T w, make_tensor(kUidW, io, wd, true, false, "w", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T sc,
                       make_tensor(kUidScale, f32, kd, true, false, "scale", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T b, make_tensor(kUidB, f32, kd, true, false, "bias", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T y, make_tensor(kUidY, s.y_type, yd, true, false, "y", keep, layer));
  ZOC_ASSIGN_OR_RETURN(
      const T acc, make_tensor(kUidConv, s.conv_out_type, yd, true, true, "conv_out", keep, layer));
  ZOC_ASSIGN_OR_RETURN(const T conv, make_conv(s, x, w, acc, keep, layer));
  std::vector<T> ops = {conv};

  // Epilogue, each op's first operand the previous result: * scale, + bias, [+ z], [relu] -> y.
  ZOC_ASSIGN_OR_RETURN(const T scaled,
                       make_tensor(kUidScaled, f32, yd, true, true, "scaled", keep, layer));
  ZOC_ASSIGN_OR_RETURN(
      const T mul, make_pointwise(CUDNN_POINTWISE_MUL, acc, sc, scaled, "mul_scale", keep, layer));
  ops.push_back(mul);
  const bool last_is_bias = !s.residual && !s.relu;
  T biased = y;
  if (!last_is_bias) {
    ZOC_ASSIGN_OR_RETURN(biased,
                         make_tensor(kUidBiased, f32, yd, true, true, "biased", keep, layer));
  }
  ZOC_ASSIGN_OR_RETURN(const T add_b, make_pointwise(CUDNN_POINTWISE_ADD, scaled, b, biased,
                                                     "add_bias", keep, layer));
  ops.push_back(add_b);
  T cur = biased;
  if (s.residual) {
    ZOC_ASSIGN_OR_RETURN(const T z, make_tensor(kUidZ, io, yd, true, false, "z", keep, layer));
    T summed = y;
    if (s.relu) {
      ZOC_ASSIGN_OR_RETURN(summed,
                           make_tensor(kUidAddZ, f32, yd, true, true, "after_add_z", keep, layer));
    }
    ZOC_ASSIGN_OR_RETURN(const T add_z,
                         make_pointwise(CUDNN_POINTWISE_ADD, cur, z, summed, "add_z", keep, layer));
    ops.push_back(add_z);
    cur = summed;
  }
  if (s.relu) {
    ZOC_ASSIGN_OR_RETURN(const T relu, make_pointwise(CUDNN_POINTWISE_RELU_FWD, cur, nullptr, y,
                                                      "relu", keep, layer));
    ops.push_back(relu);
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
  ZOC_TRY(graph_detail::finalize(graph, "int8 operation graph", layer));
  return graph_detail::keep_desc(keep, std::move(graph));
}

inline Status validate(const Int8ConvSpec& s, const char* layer) {
  const std::string who = "layer '" + std::string(layer ? layer : "") + "': Int8ConvSpec: ";
  const int v[] = {s.n, s.c, s.h, s.w, s.k, s.r, s.s, s.stride_h, s.stride_w, s.out_h, s.out_w};
  for (int x : v) {
    if (x < 1) return Error{who + "sizes and strides must be >= 1"};
  }
  if (s.pad_h < 0 || s.pad_w < 0) return Error{who + "negative padding"};
  const int oh = (s.h + 2 * s.pad_h - s.r) / s.stride_h + 1;
  const int ow = (s.w + 2 * s.pad_w - s.s) / s.stride_w + 1;
  if (oh != s.out_h || ow != s.out_w) {
    return Error{who + "output " + std::to_string(s.out_h) + "x" + std::to_string(s.out_w) +
                 " does not match the convolution's " + std::to_string(oh) + "x" +
                 std::to_string(ow)};
  }
  return Status();
}

// The configs heuristics offer for `graph`, mode A then FALLBACK, each engine + knobs once, in
// that order; why any was refused goes to *notes. Shared by build() and candidates().
inline Expected<std::vector<graph_detail::OfferedConfig>> offered_once(
    cudnnBackendDescriptor_t graph, std::string* notes, const char* layer) {
  std::vector<graph_detail::OfferedConfig> offered;
  std::set<EngineChoice> seen;
  const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
  const char* names[2] = {"A", "FALLBACK"};
  for (int m = 0; m < 2; ++m) {
    ZOC_ASSIGN_OR_RETURN(
        std::vector<graph_detail::OfferedConfig> got,
        graph_detail::offered_configs(graph, modes[m], names[m], nullptr, notes, layer));
    for (graph_detail::OfferedConfig& o : got) {
      if (seen.insert(o.info.choice).second) offered.push_back(std::move(o));
    }
  }
  return Expected<std::vector<graph_detail::OfferedConfig>>(std::move(offered));
}

}  // namespace int8_detail

// The plan's JSON representation (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION): engine and
// knobs as cuDNN itself describes them. Works for any finalized execution plan.
inline Expected<std::string> plan_json(cudnnBackendDescriptor_t plan, const char* layer) {
  int64_t size = 0;
  ZOC_BACKEND(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                       CUDNN_TYPE_CHAR, 0, &size, nullptr),
              "get the size of CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION", layer);
  if (size <= 0) return std::string();
  std::string text(size_t(size), '\0');
  ZOC_BACKEND(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                       CUDNN_TYPE_CHAR, size, &size, &text[0]),
              "get CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION", layer);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

class Int8ConvPlan {
 public:
  Int8ConvPlan() = default;
  ~Int8ConvPlan() { release(); }
  Int8ConvPlan(Int8ConvPlan&& o) noexcept { take(o); }
  Int8ConvPlan& operator=(Int8ConvPlan&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  Int8ConvPlan(const Int8ConvPlan&) = delete;
  Int8ConvPlan& operator=(const Int8ConvPlan&) = delete;

  // The `skip`-th (from 0) engine config, in the order of heuristics mode A then FALLBACK (each
  // engine + knobs once), whose plan finalizes with at most `workspace_limit` bytes. No numerics
  // filter: an int8 engine is exact in its INT32 accumulation whatever its notes say. The error,
  // when none is left, lists every config tried and cuDNN's reason for each.
  static Expected<Int8ConvPlan> build(cudnnHandle_t handle, const Int8ConvSpec& s, int skip,
                                      size_t workspace_limit, const char* layer) {
    using namespace graph_detail;
    constexpr int kMaxAttempts = 24;
    ZOC_TRY(int8_detail::validate(s, layer));
    Int8ConvPlan p;
    p.spec_ = s;
    ZOC_ASSIGN_OR_RETURN(const cudnnBackendDescriptor_t graph,
                         int8_detail::make_op_graph(handle, s, &p.keep_, layer));
    std::string tried;
    ZOC_ASSIGN_OR_RETURN(std::vector<OfferedConfig> offered,
                         int8_detail::offered_once(graph, &tried, layer));
    int attempts = 0, good = 0;
    for (OfferedConfig& o : offered) {
      if (attempts++ == kMaxAttempts) break;
      ZOC_ASSIGN_OR_RETURN(
          bool ok, p.adopt(std::move(o.cfg), o.info, o.tag, workspace_limit, &tried, layer));
      if (ok && good++ == skip) return Expected<Int8ConvPlan>(std::move(p));
      if (ok) p.plan_.reset();
    }
    return Error{"layer '" + std::string(layer ? layer : "") + "': " + kNoEngineMarker + " (" +
                 std::to_string(offered.size()) + " configs offered, " + std::to_string(attempts) +
                 " plans tried, " + std::to_string(good) + " finalized, wanted #" +
                 std::to_string(skip) + tried + ")"};
  }

  // The engine configs heuristics offer for `s` (mode A, then FALLBACK, each once), at most
  // `max`, without finalizing any plan: what a tuner times, one build_choice() per config, so
  // that each runtime-compiled engine compiles once (build() with skip e compiles e + 1).
  static Expected<std::vector<EngineChoice>> candidates(cudnnHandle_t handle, const Int8ConvSpec& s,
                                                        size_t max, const char* layer) {
    using namespace graph_detail;
    ZOC_TRY(int8_detail::validate(s, layer));
    std::vector<BackendDesc> keep;
    ZOC_ASSIGN_OR_RETURN(const cudnnBackendDescriptor_t graph,
                         int8_detail::make_op_graph(handle, s, &keep, layer));
    std::string notes;
    std::vector<EngineChoice> out;
    {
      ZOC_ASSIGN_OR_RETURN(std::vector<OfferedConfig> offered,
                           int8_detail::offered_once(graph, &notes, layer));
      for (size_t i = 0; i < offered.size() && out.size() < max; ++i) {
        out.push_back(offered[i].info.choice);
      }
    }                                       // the configs go before the graph they describe
    while (!keep.empty()) keep.pop_back();  // users before what they use
    return out;
  }

  // Exactly the engine config `choice` (e.g. the one timed at another batch size) for `s`.
  static Expected<Int8ConvPlan> build_choice(cudnnHandle_t handle, const Int8ConvSpec& s,
                                             const EngineChoice& choice, size_t workspace_limit,
                                             const char* layer) {
    using namespace graph_detail;
    ZOC_TRY(int8_detail::validate(s, layer));
    Int8ConvPlan p;
    p.spec_ = s;
    ZOC_ASSIGN_OR_RETURN(const cudnnBackendDescriptor_t graph,
                         int8_detail::make_op_graph(handle, s, &p.keep_, layer));
    ZOC_ASSIGN_OR_RETURN(BackendDesc cfg, make_config(graph, choice, &p.keep_, layer));
    ZOC_ASSIGN_OR_RETURN(ConfigInfo info, describe_config(cfg, layer));
    std::string why;
    ZOC_ASSIGN_OR_RETURN(bool ok,
                         p.adopt(std::move(cfg), info, "plan", workspace_limit, &why, layer));
    if (!ok) return Error{"engine config " + info.name() + " cannot run:" + why.substr(1)};
    return Expected<Int8ConvPlan>(std::move(p));
  }

  size_t workspace_bytes() const { return workspace_; }
  const Int8ConvSpec& spec() const { return spec_; }
  const EngineChoice& choice() const { return choice_; }
  std::string engine_name() const { return name_; }
  cudnnBackendDescriptor_t plan() const { return plan_.get(); }

  // Binds device pointers; `z` exactly when the spec has a residual, `workspace` when needed.
  Status bind(const void* x, const void* w, const void* scale, const void* bias, const void* z,
              void* y, void* workspace, const char* layer) {
    const std::string who = "layer '" + std::string(layer ? layer : "") + "': ";
    if (!plan_.get()) return Error{who + "bind() on an empty Int8ConvPlan"};
    pack_.reset();
    if (spec_.residual != (z != nullptr)) return Error{who + "residual z mismatch"};
    if (workspace_ > 0 && !workspace) return Error{who + "workspace required but not given"};
    using namespace int8_detail;
    int64_t uids[6] = {kUidX, kUidW, kUidScale, kUidB, kUidY, kUidZ};
    void* ptrs[6] = {const_cast<void*>(x),
                     const_cast<void*>(w),
                     const_cast<void*>(scale),
                     const_cast<void*>(bias),
                     y,
                     const_cast<void*>(z)};
    const int64_t n = spec_.residual ? 6 : 5;
    void* ws = workspace;
    ZOC_ASSIGN_OR_RETURN(
        BackendDesc pack,
        BackendDesc::create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack", layer));
    ZOC_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids,
                 "variant pack", layer);
    ZOC_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs,
                 "variant pack", layer);
    ZOC_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws,
                 "variant pack", layer);
    ZOC_TRY(graph_detail::finalize(pack, "variant pack", layer));
    pack_ = std::move(pack);
    return Status();
  }

  Status run(cudnnHandle_t handle, const char* layer) const {
    if (!pack_.get()) return Error{"Int8ConvPlan::run before bind"};
    ZOC_CUDNN(cudnnBackendExecute(handle, plan_.get(), pack_.get()), layer);
    return Status();
  }

 private:
  // As FusedConvPlan::adopt: true when `cfg`'s plan finalizes within the workspace limit.
  Expected<bool> adopt(BackendDesc cfg, const graph_detail::ConfigInfo& info,
                       const std::string& tag, size_t workspace_limit, std::string* why,
                       const char* layer) {
    using namespace graph_detail;
    const std::string name = tag + " " + info.name();
    ZOC_ASSIGN_OR_RETURN(
        BackendDesc plan,
        BackendDesc::create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan", layer));
    ZOC_SET_DESC(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg.get(), "execution plan", layer);
    const cudnnStatus_t st = cudnnBackendFinalize(plan.get());
    if (st != CUDNN_STATUS_SUCCESS) {
      if (why->size() < 6000) *why += "; " + name + ": " + detail::cudnn_status_text(st);
      return false;
    }
    ZOC_ASSIGN_OR_RETURN(int64_t ws, get_int64(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                               "CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE", layer));
    if (ws < 0 || uint64_t(ws) > workspace_limit) {
      if (why->size() < 6000) *why += "; " + name + ": workspace " + std::to_string(ws);
      return false;
    }
    workspace_ = size_t(ws);
    name_ = name;
    choice_ = info.choice;
    keep_.push_back(std::move(cfg));
    plan_ = std::move(plan);
    return true;
  }
  void release() {
    pack_.reset();
    plan_.reset();
    while (!keep_.empty()) keep_.pop_back();
  }
  void take(Int8ConvPlan& o) {
    spec_ = o.spec_;
    workspace_ = std::exchange(o.workspace_, 0);
    name_ = std::move(o.name_);
    choice_ = std::move(o.choice_);
    keep_ = std::move(o.keep_);
    o.keep_.clear();
    plan_ = std::move(o.plan_);
    pack_ = std::move(o.pack_);
  }

  Int8ConvSpec spec_{};
  size_t workspace_ = 0;
  std::string name_;
  EngineChoice choice_;
  std::vector<BackendDesc> keep_;
  BackendDesc plan_, pack_;
};

}  // namespace zoc
