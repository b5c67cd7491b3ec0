// The cuDNN backend: a graph lowered for it to a standalone C++/CUDA folder.
//
// The backend describes itself to lower-to-target (lowering_target: its precision's dtype and
// layout, and the compile's choices of convolution API, linear and depthwise layers, input
// padding and streams); the lowered graph then holds every decision (compiler/ir/lowering.h)
// and the emitter prints it.
//
// The folder holds a concrete model class (header + host .cpp) whose constructor creates every
// descriptor, packs the weights and allocates one activation arena, and whose forward() is a
// straight line of cuDNN/cuBLAS calls and a few custom kernels; a .cu file with those kernels;
// main.cpp; CMakeLists.txt; and a copy of the runtime headers it includes. Output is
// deterministic: the same graph and options give the same bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/backend/cudnn/target.h"
#include "compiler/ir/graph.h"
#include "compiler/lower/target_desc.h"
#include "compiler/support/diagnostics.h"

namespace zoc::cudnn {

// How fused convolutions are called: cuDNN's legacy cudnnConvolutionBiasActivationForward, or a
// graph-API execution plan per layer built ahead and run with cudnnBackendExecute (far less host
// time per call; see runtime/zoc/cudnn/graph_layer.h).
enum class ConvApi { kLegacy, kGraph };

// How linear layers are called: cuBLAS's GEMM after a kernel that writes the bias into the
// output, or a cuDNN fused convolution whose filter covers the whole input (a [C] vector, or the
// C x H x W image a Flatten made it from), bias in the epilogue, algorithm tuned like any other
// convolution's. The latter also keeps the model off cuBLAS entirely.
enum class LinearApi { kCublas, kCudnn };

// How depthwise convolutions (groups = channels) run: zoc's kernel (zoc/kernels/depthwise.cuh,
// fused epilogue, NHWC vectorised) or cuDNN's grouped convolution. Measured on an H100, fp16
// MobileNetV2 at batch 256: see DepthwiseApi's default in the driver.
enum class DepthwiseApi { kZoc, kCudnn };

// How activations are stored: the precision's own layout (fp32 NCHW; tf32, fp16, bf16 NHWC), or
// either one forced, to measure which is faster for a model and precision (issue 16).
enum class Layout { kAuto, kNCHW, kNHWC };

struct EmitOptions {
  Precision precision = Precision::kFP32;
  ConvApi conv_api = ConvApi::kLegacy;
  LinearApi linear_api = LinearApi::kCublas;
  Layout layout = Layout::kAuto;
  DepthwiseApi depthwise = DepthwiseApi::kZoc;
  // NHWC precisions: pad a graph input whose channel count is not a multiple of this (3 for RGB)
  // up to one, with zero weights in the convolutions that read it, so that they get tensor-core
  // kernels; 0 turns padding off. NCHW storage (fp32 by default) never pads.
  // 4, measured (H100, fp16 ResNet-50 conv1 at batch 256): 0.59 ms unpadded, 0.41 ms padded
  // to 4, 1.22 ms padded to 8 (results/2026-11-22-h100-input-padding).
  int pad_input_channels = 4;
  // Run each side branch (ResNet's downsample convolution) on a second stream,
  // beside the main branch, joined by events (schedule.h). Off: one stream, graph order.
  // Measured on an H100 (results/2026-11-22-h100-side-stream): fp32 batch 1 1.895 -> 1.842 ms;
  // fp16 no change. `zoc compile --streams auto` turns it on for fp32/tf32 only.
  bool side_stream = true;
  std::string command;      // the zoc command line, stamped into every file
  std::string zoc_version;  // e.g. "0.1.0"
};

struct GeneratedFile {
  std::string path;  // relative to the output folder
  std::string text;
};

struct Generated {
  std::vector<GeneratedFile> files;
  std::string class_name;
  int64_t arena_bytes_per_sample = 0;
  int64_t unshared_bytes_per_sample = 0;
  int64_t weight_bytes = 0;
};

// What lower-to-target needs to know of this backend for a compile with these options.
lower::TargetDesc lowering_target(const EmitOptions& options);

// The graph must have gone through the inference pass pipeline with lowering_target(options) as
// its target (the same options: their command and version are stamped, their precision must be
// the graph's). nullopt, with an error, otherwise.
std::optional<Generated> emit(const ir::Graph& graph, const EmitOptions& options,
                              Diagnostics& diags);

// A trainer for the graph as the frontend wrote it (no inference passes: BatchNorm must stay):
// forward in training mode, softmax cross-entropy, backward and SGD, fp32 with TF32 off
// (emit_trainer.cpp). Unsupported layers are reported against their location.
std::optional<Generated> emit_trainer(const ir::Graph& graph, const EmitOptions& options,
                                      Diagnostics& diags);

// Every runtime header (runtime/zoc/*, embedded in zoc at build time).
const std::vector<GeneratedFile>& runtime_files();

// Appends to `files` the runtime headers they include (`#include "zoc/..."`), and the ones
// those include, in runtime_files() order: a generated folder carries what it uses.
void add_runtime_files(std::vector<GeneratedFile>& files);

}  // namespace zoc::cudnn
