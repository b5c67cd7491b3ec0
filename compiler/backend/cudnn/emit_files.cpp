// The files a generated folder holds beside the model class (emit_model.cpp; the model's .cu is
// emit_model_kernels.cpp's): a trainer's kernels, the host-only weight loader, the runner's
// main.cpp and CMakeLists.txt, and the runtime headers those include.
#include <set>
#include <string>

#include <fmt/format.h>

#include "compiler/backend/cudnn/emit_internal.h"
#include "compiler/support/sanitize.h"

namespace zoc::cudnn {

namespace {

// A host function of zoc/kernels/trainer_kernels.h: its parameters, the launcher's arguments,
// and (for the zoo's layers and fp16's loss scaling) whether a training graph needs it.
struct KernelFn {
  const char* name;
  const char* params;
  const char* args;
  bool (*used)(const ir::Graph&) = nullptr;  // defined where this says so; null: always
  const char* header = "zoc/kernels/layer_grad_kernels.cuh";  // where `used`
};
constexpr KernelFn kTrainerKernelFns[] = {
    {"softmax_xent",
     "const float* logits, const int32_t* labels, int64_t rows, int64_t classes, float "
     "smoothing, const float* scale, float* loss_rows, float* loss, void* dlogits, cudaStream_t "
     "stream",
     "logits, labels, rows, classes, smoothing, scale, loss_rows, loss, "
     "static_cast<Act*>(dlogits), stream"},
    {"unscale_grads", "float* g, int64_t count, LossScale* s, cudaStream_t stream",
     "g, count, s, stream", loss_scaled, "zoc/kernels/train_kernels.cuh"},
    {"update_scale", "LossScale* s, cudaStream_t stream", "s, stream", loss_scaled,
     "zoc/kernels/train_kernels.cuh"},
    {"add_bias_rows", "float* y, const float* b, int64_t rows, int64_t cols, cudaStream_t stream",
     "y, b, rows, cols, stream"},
    {"sum_rows", "const void* dy, float* db, int64_t rows, int64_t cols, cudaStream_t stream",
     "static_cast<const Act*>(dy), db, rows, cols, stream"},
    {"add", "const void* a, const void* b, void* y, int64_t count, cudaStream_t stream",
     "static_cast<const Act*>(a), static_cast<const Act*>(b), static_cast<Act*>(y), count, "
     "stream"},
    {"activation",
     "act::Kind kind, act::Params p, const void* x, const void* x2, void* y, int64_t count, "
     "cudaStream_t stream",
     "kind, p, static_cast<const Act*>(x), static_cast<const Act*>(x2), static_cast<Act*>(y), "
     "count, stream"},
    {"activation_backward",
     "act::Kind kind, act::Params p, const void* s, const void* dy, const void* dy2, void* dx, "
     "int64_t count, cudaStream_t stream",
     "kind, p, static_cast<const Act*>(s), static_cast<const Act*>(dy), "
     "static_cast<const Act*>(dy2), static_cast<Act*>(dx), count, stream"},
    {"store_nhwc", "const float* x, void* y, int64_t n, int64_t c, int64_t hw, cudaStream_t stream",
     "x, static_cast<Act*>(y), n, c, hw, stream"},
    {"load_nchw", "const void* x, float* y, int64_t n, int64_t c, int64_t hw, cudaStream_t stream",
     "static_cast<const Act*>(x), y, n, c, hw, stream"},
    {"store", "const float* x, void* y, int64_t count, cudaStream_t stream",
     "x, static_cast<Act*>(y), count, stream"},
    {"sgd",
     "float* w, const float* g, float* v, int64_t count, float lr, float momentum, float "
     "weight_decay, const float* skip, cudaStream_t stream",
     "w, g, v, count, lr, momentum, weight_decay, skip, stream"},
    {"sgd_at",
     "float* w, const float* g, float* v, int64_t count, const float* hyper, cudaStream_t "
     "stream",
     "w, g, v, count, hyper, stream"},
    {"sgd_krsc",
     "float* w, const void* g, float* v, void* w16, int64_t k, int64_t c, int64_t rs, const "
     "float* hyper, cudaStream_t stream",
     "w, static_cast<const Act*>(g), v, static_cast<Act*>(w16), k, c, rs, hyper, stream"},
    {"set_sgd", "float* hyper, float lr, float momentum, float weight_decay, cudaStream_t stream",
     "hyper, lr, momentum, weight_decay, stream"},
    {"adamw",
     "float* w, const float* g, float* m, float* v, int64_t count, float decay, float "
     "one_minus_beta1, float beta2, float one_minus_beta2, float eps, float step_size, float "
     "bias2_sqrt, const float* skip, const float* corrections, cudaStream_t stream",
     "w, g, m, v, count, decay, one_minus_beta1, beta2, one_minus_beta2, eps, step_size, "
     "bias2_sqrt, skip, corrections, stream"},
    {"adamw_corrections",
     "const LossScale* s, double lr, double beta1, double beta2, uint64_t t, float* out, "
     "cudaStream_t stream",
     "s, lr, beta1, beta2, t, out, stream", loss_scaled, "zoc/kernels/train_kernels.cuh"},
    {"dropout",
     "const void* x, void* y, int64_t count, float p, uint64_t seed, const uint64_t* draw, "
     "uint64_t layer, cudaStream_t stream",
     "static_cast<const Act*>(x), static_cast<Act*>(y), count, p, seed, draw, layer, stream"},
    {"count_step", "uint64_t* draws, cudaStream_t stream", "draws, stream"},
    {"metrics",
     "const float* logits, const int32_t* labels, int64_t rows, int64_t classes, const float* "
     "loss, double* sums, unsigned long long* counts, cudaStream_t stream",
     "logits, labels, rows, classes, loss, sums, counts, stream"},
    {"mul_grad",
     "const float* a, const float* b, const float* dy, float* da, float* db, int64_t n, "
     "ChannelMulShape m, cudaStream_t stream",
     "a, b, dy, da, db, n, m, stream",
     [](const ir::Graph& t) { return any_op(t, ir::OpKind::MulGrad); }},
    {"operand_grad",
     "const float* x, const float* v, const float* dy, float* dx, float* dv, int64_t n, int64_t c, "
     "int64_t hw, ConstOpKind op, bool reverse, double* scratch, cudaStream_t stream",
     "x, v, dy, dx, dv, n, c, hw, op, reverse, scratch, stream",
     [](const ir::Graph& t) {
       return any_op(t, ir::OpKind::LayerScaleGrad) || any_op(t, ir::OpKind::OperandGrad);
     }},
    {"layernorm_grad",
     "const float* x, const float* gamma, const float* dy, float* dx, float* dgamma, float* "
     "dbeta, int64_t n, int64_t c, int64_t hw, float eps, float* scratch, cudaStream_t stream",
     "x, gamma, dy, dx, dgamma, dbeta, n, c, hw, eps, scratch, stream",
     [](const ir::Graph& t) { return any_op(t, ir::OpKind::LayerNormGrad); }},
    {"pool_grad",
     "const float* x, const float* dy, float* dx, int64_t n, PoolGeometry g, cudaStream_t stream",
     "x, dy, dx, n, g, stream", any_pool_kernel},
    {"adaptive_avgpool_grad",
     "const float* dy, float* dx, int64_t n, AdaptiveGeometry g, cudaStream_t stream",
     "dy, dx, n, g, stream",
     [](const ir::Graph& t) { return any_op(t, ir::OpKind::AdaptiveAvgPool2dGrad); }},
    {"softmax_grad",
     "const float* y, const float* dy, float* dx, int64_t n, int64_t c, int64_t hw, bool log, "
     "cudaStream_t stream",
     "y, dy, dx, n, c, hw, log, stream",
     [](const ir::Graph& t) {
       return any_op(t, ir::OpKind::SoftmaxGrad) || any_op(t, ir::OpKind::LogSoftmaxGrad);
     }},
    {"channel_conv_grad",
     "const float* x, const float* w, const float* dy, float* dx, float* dw, float* db, int64_t n, "
     "ChannelConvGeometry g, cudaStream_t stream",
     "x, w, dy, dx, dw, db, n, g, stream",
     [](const ir::Graph& t) { return any_op(t, ir::OpKind::ChannelConv1dGrad); }},
    {"upsample_grad",
     "const float* dy, float* dx, int64_t n, UpsampleGeometry g, cudaStream_t stream",
     "dy, dx, n, g, stream",
     [](const ir::Graph& t) {
       return any_op(t, ir::OpKind::UpsampleNearestGrad) ||
              any_op(t, ir::OpKind::UpsampleBilinearGrad);
     }},
    {"depthwise_forward",
     "const void* x, const void* w, void* y, int64_t n, DepthwiseGeometry g, cudaStream_t stream",
     "static_cast<const Act*>(x), static_cast<const Act*>(w), static_cast<Act*>(y), n, g, stream",
     any_own_depthwise, "zoc/kernels/depthwise_grad.cuh"},
    {"depthwise_backward",
     "const void* x, const void* w, const void* dy, void* dx, float* dw, int64_t n, "
     "DepthwiseGeometry g, bool deterministic, cudaStream_t stream",
     "static_cast<const Act*>(x), static_cast<const Act*>(w), static_cast<const Act*>(dy), "
     "static_cast<Act*>(dx), dw, n, g, deterministic, stream",
     any_own_depthwise, "zoc/kernels/depthwise_grad.cuh"},
};

}  // namespace

// <model>_train_kernels.cu: zoc/kernels/trainer_kernels.h's host functions, forwarding to the
// kernels of zoc/kernels/train_kernels.cuh (nvcc only), written out in the folder so that each
// definition is visible where the trainer is built; the zoo's layers add their gradients
// (layer_grad_kernels.cuh) and their forwards, inference's kernels for float
// (emit_model_kernels.cpp), where the training graph has them.
std::string trainer_kernels_source(const ir::Graph& g, const std::string& head,
                                   const std::string& base, ir::DType storage) {
  auto has = [&](const KernelFn& k) { return !k.used || k.used(g); };
  std::set<std::string> headers = {"zoc/kernels/train_kernels.cuh",
                                   "zoc/kernels/trainer_kernels.h"};
  for (const KernelFn& k : kTrainerKernelFns) {
    if (k.used && k.used(g)) headers.insert(k.header);
  }
  const std::string forward = trainer_forward_kernels(g, &headers);
  CodeWriter kc;
  kc.raw_line(head);
  kc.line("// The custom kernels of {}: the host functions zoc/kernels/trainer_kernels.h declares.",
          base);
  for (const std::string& h : headers) kc.line("#include \"{}\"", h);
  kc.blank();
  {
    auto ns = kc.ns("namespace zoc::trainer_kernels", "}  // namespace zoc::trainer_kernels");
    kc.line("// The storage type of activations and their gradients.");
    kc.line("using Act = {};", storage == ir::DType::BF16  ? "__nv_bfloat16"
                               : storage == ir::DType::F16 ? "__half"
                                                           : "float");
    auto items = [](const char* list) {  // "a, b, c" -> {"a", "b", "c"}
      std::vector<std::string> out;
      const std::string text = list;
      for (size_t at = 0;;) {
        const size_t end = text.find(", ", at);
        out.push_back(text.substr(at, end == std::string::npos ? end : end - at));
        if (end == std::string::npos) return out;
        at = end + 2;
      }
    };
    for (const KernelFn& k : kTrainerKernelFns) {
      if (!has(k)) continue;
      kc.wrapped(fmt::format("cudaError_t {}(", k.name), items(k.params), ") {");
      kc.wrapped(fmt::format("  return train_kernels::launch_{}(", k.name), items(k.args), ");");
      kc.raw_line("}");
    }
  }
  if (!forward.empty()) {
    kc.blank();
    kc.raw_line(forward);
  }
  return kc.str();
}

// The packed weight layout and the host-side loader, free of CUDA so that the loader can be
// tested and fuzzed on its own (tests/fuzz).
std::string weights_header(const EmitContext& ctx, const std::string& head,
                           const std::string& base) {
  const Target& t = ctx.t;
  CodeWriter wh;
  wh.raw_line(head);
  wh.line("// {}: the packed weight layout and the host-side packing of a weights file (no CUDA).",
          base);
  wh.line("#pragma once");
  wh.blank();
  wh.line("#include <cstddef>");
  wh.line("#include <cstdint>");
  wh.blank();
  wh.line("#include \"zoc/core/expected.h\"");
  wh.line("#include \"zoc/weights/pack.h\"");
  wh.line("#include \"zoc/weights/weight_source.h\"");
  wh.blank();
  {
    auto ns = wh.ns(fmt::format("namespace zoc_model::{}_weights", base),
                    fmt::format("}}  // namespace zoc_model::{}_weights", base));
    wh.line("inline constexpr zoc::DeviceDType kDType = {};  // {} {}", t.device_dtype, t.name,
            ir::layout_name(ctx.g.type(ctx.g.nodes.front().output).layout));
    wh.line("inline constexpr size_t kWeightBytes = {};", ctx.g.target->weight_bytes);
    wh.line("// Byte offsets of each layer's weight (kW_) and bias (kB_) in the packed buffer.");
    wh.append(ctx.s.weight_offsets);
    wh.blank();
    wh.line("// Validates every tensor the model needs (name, shape, dtype, finite values), folds");
    wh.line("// batch norms in double, converts and packs them into staging (kWeightBytes bytes),");
    wh.line("// then reports tensors nobody asked for. Errors name the tensor and the file.");
    auto f = wh.block("inline zoc::Status pack(zoc::WeightSource& source, uint8_t* staging)");
    wh.append(ctx.s.pack);
    wh.line("return source.finish();");
  }
  return wh.str();
}

std::string runner_main(const std::string& head, const std::string& base, const std::string& cls,
                        const std::string& runtime_header, const std::string& entry) {
  CodeWriter m;
  m.raw_line(head);
  m.line("// The command-line runner of {}: see zoc/{} for its options.", cls, runtime_header);
  m.line("#include \"{}.h\"", base);
  m.line("#include \"zoc/{}\"", runtime_header);
  m.blank();
  m.line("int main(int argc, char** argv) {{ return zoc::{}<zoc_model::{}>(argc, argv); }}", entry,
         cls);
  return m.str();
}

std::string cmake_lists(const std::string& hash_banner, const std::string& base) {
  CodeWriter cm;
  cm.raw_line(hash_banner);
  cm.line("# Builds {0} (a static library) and {0}_main with the CUDA toolkit and cuDNN only.",
          base);
  cm.line("#   cmake -S . -B build -DCUDNN_ROOT=/path/to/cudnn [-DCMAKE_CUDA_ARCHITECTURES=90]");
  cm.line("#   or -DCUDNN_INCLUDE_DIR=... -DCUDNN_LIBRARY=/path/to/libcudnn.so.9");
  cm.line("cmake_minimum_required(VERSION 3.24)");
  cm.line("if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)");
  cm.line("  set(CMAKE_CUDA_ARCHITECTURES 90)");
  cm.line("endif()");
  cm.line("project({} LANGUAGES CXX CUDA)", base);
  cm.line("set(CMAKE_CXX_STANDARD 20)  # designated initializers name every constant's fields");
  cm.line("set(CMAKE_CXX_STANDARD_REQUIRED ON)");
  cm.line("set(CMAKE_CUDA_STANDARD 17)");
  cm.line("if(NOT CMAKE_BUILD_TYPE)");
  cm.line("  set(CMAKE_BUILD_TYPE Release)");
  cm.line("endif()");
  cm.line("find_package(CUDAToolkit REQUIRED)");
  cm.line(
      "find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${{CUDNN_ROOT}}/include "
      "${{CUDAToolkit_INCLUDE_DIRS}})");
  cm.line("find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9");
  cm.line(
      "             HINTS ${{CUDNN_ROOT}}/lib ${{CUDNN_ROOT}}/lib64 ${{CUDAToolkit_LIBRARY_DIR}})");
  cm.line("if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)");
  cm.line(
      "  message(FATAL_ERROR \"cuDNN not found: set CUDNN_ROOT, or CUDNN_INCLUDE_DIR and "
      "CUDNN_LIBRARY\")");
  cm.line("endif()");
  cm.line("add_library({0} STATIC {0}.cpp {0}_kernels.cu)", base);
  cm.line(
      "target_include_directories({} PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}} ${{CUDNN_INCLUDE_DIR}})",
      base);
  // cuda_driver: the recorded launches of the plain forward (zoc/cudnn/recorded_launch.h).
  cm.line("target_link_libraries({} PUBLIC ${{CUDNN_LIBRARY}} CUDA::cublas CUDA::cudart", base);
  cm.line("                      CUDA::cuda_driver)");
  cm.line("add_executable({0}_main main.cpp)", base);
  cm.line("target_link_libraries({0}_main PRIVATE {0})", base);
  return cm.str();
}

void add_runtime_files(std::vector<GeneratedFile>& files) {
  const std::vector<GeneratedFile>& runtime = runtime_files();
  std::set<std::string> wanted;
  std::vector<const std::string*> todo;
  for (const GeneratedFile& f : files) todo.push_back(&f.text);
  while (!todo.empty()) {
    const std::string& text = *todo.back();
    todo.pop_back();
    const std::string marker = "#include \"zoc/";
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
      const size_t start = at + marker.size() - 4;  // at "zoc/"
      const size_t end = text.find('"', start);
      if (end == std::string::npos) break;
      const std::string path = text.substr(start, end - start);
      if (!wanted.insert(path).second) continue;
      for (const GeneratedFile& r : runtime) {
        if (r.path == path) todo.push_back(&r.text);
      }
    }
  }
  for (const GeneratedFile& r : runtime) {
    if (wanted.count(r.path)) files.push_back(r);
  }
}

}  // namespace zoc::cudnn
