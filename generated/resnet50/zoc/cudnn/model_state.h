// What every generated inference model holds at run time, and the terms its layer sequence is
// written in.
//
// A generated model class lists its layers once, as a sequence of calls on a "step" object
// (`template <class V> Status layers(V& v)`: `v.conv(conv1_, kConv_conv1, kA_input, ...)`).
// The runtime (zoc/cudnn/model.h) walks that sequence with one step per job: create the
// descriptors, describe them for a batch size, bind graph-API plans, run the forward pass,
// time the convolutions' candidates, destroy. This header holds what those steps share: the
// options, the handles and buffers (ModelState), and how the sequence names tensors (per-sample
// arena offsets, packed-weight offsets; the per-layer constants are zoc/cudnn/model_calls.h).
// Needs cudnn.h, cublas_v2.h and cuda_runtime.h only.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zoc/cudnn/layers.h"
#include "zoc/cudnn/model_calls.h"
#include "zoc/cudnn/plan_file.h"

namespace zoc {

struct ModelOptions {
  // Replay forward() from a CUDA graph, captured on the first call of each batch size and
  // buffer pair (Model::forward says when it falls back to the plain path). The default, as
  // it is what a caller wants: one launch per forward. Turn it off where a graph cannot be
  // captured or replayed (a stream that is itself being captured, host callbacks around the
  // call); the plain path then issues the same calls one by one.
  bool cuda_graph = true;
  size_t workspace_limit = size_t(1) << 30;  // cap on the cuDNN workspace, bytes
  uint64_t seed = 0;                         // seed of the default weights when no file is given
  bool strict = false;  // NaN/Inf in the weights file is an error, not a warning
  // Measured per-layer algorithm choices (zoc/cudnn/plan_file.h, written by tune()); empty:
  // cuDNN's heuristics. A plan for another GPU, cuDNN or model is ignored with a warning.
  std::string plan_file;
};

// Handles, buffers and events of a model. Owned by zoc::Model, read by the steps in
// zoc/cudnn/model_steps.h. The event arrays are sized at creation (side branches: ResNet's
// downsample convolutions on a second stream; marks: one per timed layer and one before) and
// reached through plain pointers, so the forward pass calls nothing of std::vector.
struct ModelState {
  ModelOptions options;
  Precision types{};
  PlanFile plan;  // from options.plan_file, if it matches this GPU and model
  int max_batch = 0;
  int batch = 0;  // the batch size the descriptors currently describe
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;  // only when a layer calls cuBLAS
  void* blas_workspace = nullptr;   // cuBLAS workspace (so graph capture never allocates)
  void* weights = nullptr;          // kWeightBytes, packed at construction
  void* arena = nullptr;            // activations: kArenaBytesPerSample * max_batch
  void* workspace = nullptr;        // cuDNN workspace
  size_t workspace_bytes = 0;
  // The side stream: side branches run beside the main one, joined by events.
  cudaStream_t side = nullptr;
  cudnnHandle_t cudnn_side = nullptr;  // bound to side
  std::vector<cudaEvent_t> fork_events, join_events, mark_events;
  cudaEvent_t* fork = nullptr;  // fork_events.data(), one per side branch
  cudaEvent_t* join = nullptr;
  std::vector<char> inline_branches;  // per side branch: ran inline in this plain forward
  char* inline_branch = nullptr;      // inline_branches.data()
  void* side_workspace = nullptr;     // the side layers' own cuDNN workspace
  size_t side_need = 0;               // what their algorithm choices need (set_batch)
  size_t side_limit = 0;              // their cap: options.workspace_limit, then what was allocated
  // The last pointers forward() validated.
  const float* checked_input = nullptr;
  float* checked_output = nullptr;
  // forward()'s captured graphs, one per batch size and buffer pair (least recently used
  // replaced), and how many captures in a row were for new buffers at a batch already captured:
  // a caller whose buffers change on every call gets the plain path instead (graphs_off).
  struct Captured {
    cudaGraphExec_t exec = nullptr;
    int batch = 0;
    const float* input = nullptr;
    float* output = nullptr;
    uint64_t used = 0;
  };
  static constexpr int kGraphCache = 8;
  static constexpr int kMaxBufferRecaptures = 3;
  Captured graphs[kGraphCache];
  // Graphs and recorded launches are captured here (capturing runs nothing), then replayed or
  // launched on any stream.
  cudaStream_t capture_stream = nullptr;
  uint64_t graph_clock = 0;
  int buffer_recaptures = 0;
  bool graphs_off = false;
  cudaEvent_t* marks = nullptr;  // mark_events.data(): profile(), before, then after each layer
  cudaGraphExec_t profile_graph = nullptr;
  int profile_batch = 0;
  const float* profile_input = nullptr;
  float* profile_output = nullptr;
  // cudaEventRecordExternal while capturing (the marks become graph nodes), else default.
  unsigned record_flags = cudaEventRecordDefault;

  // Device address of tensor `offset` (a per-sample arena offset, or kCallerInput).
  char* act(size_t offset, const float* input) const {
    if (offset == kCallerInput) return const_cast<char*>(reinterpret_cast<const char*>(input));
    return static_cast<char*>(arena) + offset * size_t(max_batch);
  }
  // Device address of packed weight bytes at `offset` (null for kNoTensor).
  const char* weight(size_t offset) const {
    return offset == kNoTensor ? nullptr : static_cast<const char*>(weights) + offset;
  }
};

}  // namespace zoc
