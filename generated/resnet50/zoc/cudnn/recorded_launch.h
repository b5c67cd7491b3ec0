// The kernels one cudnnBackendExecute (or one legacy pooling, softmax or batch-norm call)
// launches, recorded once per batch size and launched again directly on the plain (no CUDA
// graph) forward path.
//
// Why: a graph-API plan is built once, but cudnnBackendExecute still costs about 10 us of host
// time per call in cuDNN 9.19 (measured on an H200, 2026-11-26: 53 calls of ResNet-50 made a
// plain fp16 forward 530 us of host CPU, the GPU needing 320 us), so the plain path was
// host-bound at small batch. What an execute does on the GPU is fixed once its plan and
// pointers are: the same kernels with the same arguments. So when a plan is bound to its
// pointers (prepare(), not forward()), its execute is captured once into a CUDA graph on a
// side stream, which runs nothing; the graph's nodes (kernels with their launch configuration,
// arguments and launch attributes such as thread-block clusters; memsets; copies) are read back
// and kept, the graph destroyed. The plain forward then launches those kernels itself with
// cuLaunchKernelEx, about 2 us each, in the graph's topological order on the caller's stream.
// This is exactly what replaying the graph would run, kernel by kernel, without a graph.
//
// When anything in the captured graph is not a kernel, memset or copy node (a host callback, an
// event, a child graph), or a kernel's arguments cannot be read back, record() leaves the list
// empty and the layer keeps calling cudnnBackendExecute: slower, never different. The kernels
// belong to the plan's engine and stay loaded while the plan lives; a list is recorded again
// whenever its plan is rebound (new pointers) or replaced (tuning).
// Needs cuda.h (the driver API: link CUDA::cuda_driver), cuda_runtime.h and cudnn.h.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/expected.h"

namespace zoc {

class RecordedLaunches {
 public:
  // Captures `call` (one cuDNN call on `handle`, returning its status) on `capture_stream`
  // (which must be idle and not the legacy default stream) and keeps the captured nodes; false
  // when they cannot be launched node by node (the reason in *why), the list then empty. The
  // handle's stream is restored afterwards.
  template <class Call>
  Expected<bool> record(cudnnHandle_t handle, cudaStream_t capture_stream, Call call,
                        std::string* why, const char* layer) {
    steps_.clear();
    seal();
    cudaStream_t was = nullptr;
    ZOC_CUDNN(cudnnGetStream(handle, &was), layer);
    ZOC_CUDNN(cudnnSetStream(handle, capture_stream), layer);
    cudaGraph_t graph = nullptr;
    ZOC_CUDA(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal), layer);
    const cudnnStatus_t ran = call();
    const cudaError_t ended = cudaStreamEndCapture(capture_stream, &graph);
    ZOC_CUDNN(cudnnSetStream(handle, was), layer);
    if (ran != CUDNN_STATUS_SUCCESS || ended != cudaSuccess || !graph) {
      if (graph) cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      *why = "the call could not be captured";
      return false;
    }
    const bool ok = read_nodes(graph, why);
    cudaGraphDestroy(graph);
    // A node the runtime cannot describe (cudaErrorLossyQuery for some captured copies) leaves
    // that non-sticky error behind: cleared, or the next kernel's launch check reports it
    // (RexNet-100 fp16 at batch 1, H100, 2026-11-26: "input_to_nhwc failed: cudaErrorLossyQuery").
    (void)cudaGetLastError();
    if (!ok) steps_.clear();
    seal();
    return ok;
  }

  // One graph-API execute: cudnnBackendExecute(handle, plan, pack).
  Expected<bool> record(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                        cudnnBackendDescriptor_t pack, cudaStream_t capture_stream,
                        std::string* why, const char* layer) {
    return record(
        handle, capture_stream, [&] { return cudnnBackendExecute(handle, plan, pack); }, why,
        layer);
  }

  bool empty() const { return count_ == 0; }
  size_t kernels() const {
    size_t n = 0;
    for (const Step& s : steps_) n += s.kind == Step::kKernel ? 1 : 0;
    return n;
  }

  // Launches the recorded work on `stream`, in order. Reads plain pointers that record() fixed
  // (seal()), so the forward path calls nothing of std::vector.
  cudaError_t launch(cudaStream_t stream) const {
    for (size_t i = 0; i < count_; ++i) {
      const Step& s = first_[i];
      cudaError_t e = cudaSuccess;
      if (s.kind == Step::kKernel) {
        CUlaunchConfig config = s.config;
        config.hStream = reinterpret_cast<CUstream>(stream);
        config.attrs = s.attr_ptr;
        const CUresult r = cuLaunchKernelEx(&config, s.func, s.args_ptr, nullptr);
        e = r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
      } else if (s.kind == Step::kMemset) {
        const cudaMemsetParams& m = s.memset;
        e = m.elementSize == 1
                ? cudaMemset2DAsync(m.dst, m.pitch, int(m.value), m.width, m.height, stream)
                : cudaErrorNotSupported;  // read_nodes keeps byte memsets only
      } else {
        cudaMemcpy3DParms p = s.copy;
        e = cudaMemcpy3DAsync(&p, stream);
      }
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }

 private:
  // Move-only: args points into arg_bytes, whose buffer a move keeps and a copy would not.
  struct Step {
    Step() = default;
    Step(Step&&) noexcept = default;
    Step& operator=(Step&&) noexcept = default;
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;
    enum Kind { kKernel, kMemset, kCopy } kind = kKernel;
    CUfunction func = nullptr;
    CUlaunchConfig config{};
    std::vector<CUlaunchAttribute> attrs;
    std::vector<uint8_t> arg_bytes;         // every argument's bytes, at its offset
    std::vector<void*> args;                // pointers into arg_bytes, one per argument
    CUlaunchAttribute* attr_ptr = nullptr;  // attrs.data() and args.data(), fixed by seal()
    void** args_ptr = nullptr;
    cudaMemsetParams memset{};
    cudaMemcpy3DParms copy{};
  };

  // The graph's nodes in a topological order (Kahn's), each turned into a Step.
  bool read_nodes(cudaGraph_t graph, std::string* why) {
    size_t count = 0, edges = 0;
    if (cudaGraphGetNodes(graph, nullptr, &count) != cudaSuccess ||
        cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges) != cudaSuccess) {
      *why = "the captured graph cannot be read";
      return false;
    }
    std::vector<cudaGraphNode_t> nodes(count), from(edges), to(edges);
    if (cudaGraphGetNodes(graph, nodes.data(), &count) != cudaSuccess ||
        (edges > 0 &&
         cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &edges) != cudaSuccess)) {
      *why = "the captured graph cannot be read";
      return false;
    }
    std::vector<int> indegree(count, 0);
    auto index = [&](cudaGraphNode_t n) {
      for (size_t i = 0; i < count; ++i) {
        if (nodes[i] == n) return int(i);
      }
      return -1;
    };
    for (size_t e = 0; e < edges; ++e) {
      const int t = index(to[e]);
      if (t >= 0) ++indegree[size_t(t)];
    }
    std::vector<bool> done(count, false);
    for (size_t placed = 0; placed < count; ++placed) {
      size_t next = count;
      for (size_t i = 0; i < count && next == count; ++i) {
        if (!done[i] && indegree[i] == 0) next = i;
      }
      if (next == count) {
        *why = "the captured graph has a cycle";
        return false;
      }
      done[next] = true;
      for (size_t e = 0; e < edges; ++e) {
        if (from[e] == nodes[next]) {
          const int t = index(to[e]);
          if (t >= 0) --indegree[size_t(t)];
        }
      }
      if (!read_node(nodes[next], why)) return false;
    }
    return true;
  }

  bool read_node(cudaGraphNode_t node, std::string* why) {
    cudaGraphNodeType type{};
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess) {
      *why = "a captured node has no type";
      return false;
    }
    Step s;
    if (type == cudaGraphNodeTypeMemset) {
      s.kind = Step::kMemset;
      if (cudaGraphMemsetNodeGetParams(node, &s.memset) != cudaSuccess ||
          s.memset.elementSize != 1) {
        *why = "a captured memset is not a byte memset";
        return false;
      }
    } else if (type == cudaGraphNodeTypeMemcpy) {
      s.kind = Step::kCopy;
      if (cudaGraphMemcpyNodeGetParams(node, &s.copy) != cudaSuccess) {
        *why = "a captured copy cannot be read";
        return false;
      }
    } else if (type == cudaGraphNodeTypeKernel) {
      if (!read_kernel(reinterpret_cast<CUgraphNode>(node), &s, why)) return false;
    } else if (type != cudaGraphNodeTypeEmpty) {
      *why = "the execute captured a node that is not a kernel, memset or copy";
      return false;
    }
    if (type != cudaGraphNodeTypeEmpty) steps_.push_back(std::move(s));
    return true;
  }

  static bool read_kernel(CUgraphNode node, Step* s, std::string* why) {
    CUDA_KERNEL_NODE_PARAMS p{};
    if (cuGraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS) {
      *why = "a captured kernel's parameters cannot be read";
      return false;
    }
    // A kernel of a context-independent library (CUDA 12's lazy loading) comes as `kern`.
    if (!p.func && p.kern && cuKernelGetFunction(&p.func, p.kern) != CUDA_SUCCESS) p.func = nullptr;
    if (!p.func) {
      *why = "a captured kernel has no function handle";
      return false;
    }
    s->kind = Step::kKernel;
    s->func = p.func;
    s->config.gridDimX = p.gridDimX;
    s->config.gridDimY = p.gridDimY;
    s->config.gridDimZ = p.gridDimZ;
    s->config.blockDimX = p.blockDimX;
    s->config.blockDimY = p.blockDimY;
    s->config.blockDimZ = p.blockDimZ;
    s->config.sharedMemBytes = p.sharedMemBytes;
    if (!copy_arguments(p, s, why)) return false;
    // The launch attributes a kernel node carries and a launch must repeat.
    const CUlaunchAttributeID ids[] = {CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                       CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                                       CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
                                       CU_LAUNCH_ATTRIBUTE_PRIORITY};
    for (CUlaunchAttributeID id : ids) {
      CUlaunchAttributeValue v{};
      if (cuGraphKernelNodeGetAttribute(node, id, &v) != CUDA_SUCCESS) continue;
      const bool set =
          id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
              ? v.clusterDim.x * v.clusterDim.y * v.clusterDim.z > 1
          : id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE ? v.cooperative != 0
          : id == CU_LAUNCH_ATTRIBUTE_PRIORITY
              ? v.priority != 0
              : v.clusterSchedulingPolicyPreference != CU_CLUSTER_SCHEDULING_POLICY_DEFAULT;
      if (!set) continue;
      CUlaunchAttribute a{};
      a.id = id;
      a.value = v;
      s->attrs.push_back(a);
    }
    s->config.numAttrs = unsigned(s->attrs.size());
    return true;
  }

  // The node's arguments, copied: through kernelParams (sizes from cuFuncGetParamInfo), or the
  // single buffer of CU_LAUNCH_PARAM_BUFFER_POINTER in `extra`, which is turned into arguments.
  static bool copy_arguments(const CUDA_KERNEL_NODE_PARAMS& p, Step* s, std::string* why) {
    std::vector<size_t> offsets, sizes;
    size_t total = 0;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      if (cuFuncGetParamInfo(p.func, i, &offset, &size) != CUDA_SUCCESS) break;
      offsets.push_back(offset);
      sizes.push_back(size);
      total = std::max(total, offset + size);
    }
    s->arg_bytes.assign(total, 0);
    if (p.kernelParams) {
      for (size_t i = 0; i < offsets.size(); ++i) {
        if (!p.kernelParams[i]) {
          *why = "a captured kernel argument is missing";
          return false;
        }
        std::memcpy(s->arg_bytes.data() + offsets[i], p.kernelParams[i], sizes[i]);
      }
    } else if (p.extra) {
      const void* buffer = nullptr;
      size_t buffer_size = 0;
      for (void** e = p.extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = e[1];
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) buffer_size = *static_cast<size_t*>(e[1]);
      }
      if (!buffer || buffer_size < total) {
        *why = "a captured kernel's argument buffer cannot be read";
        return false;
      }
      std::memcpy(s->arg_bytes.data(), buffer, total);
    } else if (!offsets.empty()) {
      *why = "a captured kernel has arguments but neither kernelParams nor extra";
      return false;
    }
    for (size_t offset : offsets) s->args.push_back(s->arg_bytes.data() + offset);
    return true;
  }

  // Fixes the plain pointers launch() reads; a vector's buffer stays put when it is moved.
  void seal() {
    for (Step& s : steps_) {
      s.attr_ptr = s.attrs.empty() ? nullptr : s.attrs.data();
      s.args_ptr = s.args.empty() ? nullptr : s.args.data();
    }
    first_ = steps_.empty() ? nullptr : steps_.data();
    count_ = steps_.size();
  }

  std::vector<Step> steps_;
  const Step* first_ = nullptr;  // steps_.data() and size(), fixed by seal()
  size_t count_ = 0;
};

// The recorded launches of a legacy cuDNN call (pooling, softmax, inference batch norm) per batch
// size: its descriptors are re-described for each batch, so each batch has its own kernels.
class RecordedByBatch {
 public:
  // Reads plain pointers (see RecordedLaunches::launch).
  const RecordedLaunches* find(int n) const {
    for (size_t i = 0; i < count_; ++i) {
      if (first_[i].first == n) return first_[i].second.empty() ? nullptr : &first_[i].second;
    }
    return nullptr;
  }
  bool has(int n) const {
    for (const auto& e : entries_) {
      if (e.first == n) return true;
    }
    return false;
  }
  // Records `call` for batch n once (a failure to record leaves the call itself in use).
  template <class Call>
  Status record(int n, cudnnHandle_t handle, cudaStream_t capture_stream, Call call,
                const char* layer) {
    if (has(n) || !capture_stream) return Status::success();
    entries_.emplace_back(n, RecordedLaunches());
    first_ = entries_.data();
    count_ = entries_.size();
    std::string why;
    ZOC_ASSIGN_OR_RETURN(const bool ok,
                         entries_.back().second.record(handle, capture_stream, call, &why, layer));
    (void)ok;
    return Status::success();
  }
  void clear() {
    entries_.clear();
    first_ = nullptr;
    count_ = 0;
  }

 private:
  std::vector<std::pair<int, RecordedLaunches>> entries_;
  const std::pair<int, RecordedLaunches>* first_ = nullptr;  // entries_.data(), size()
  size_t count_ = 0;
};

}  // namespace zoc
