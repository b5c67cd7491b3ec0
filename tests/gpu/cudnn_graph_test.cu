// GPU test that decides whether zoc's fused convolutions move to cuDNN's backend (graph) API:
// runtime/zoc/cudnn/graph.h's FusedConvPlan against the legacy
// cudnnConvolutionBiasActivationForward (through zoc::ConvLayer, exactly as generated code calls
// it) on representative ResNet-50 layers.
//
// The legacy call costs ~100 us of host time per fp16 NHWC layer in cuDNN 9, which makes a
// generated ResNet-50 without a CUDA graph 20x slower than with one (README, "Latest results").
// A prebuilt plan should need one cudnnBackendExecute per layer. For each layer, batch (1, 32) and
// precision (fp16/bf16 NHWC, fp32 NCHW with TF32 off) this builds the plan, checks its output
// against the legacy call and an fp64-accumulated naive reference on the same seeded random data
// (outputs poisoned with NaN first), then times both: host time of one call (std::chrono, median
// of 200 calls, no synchronization in the loop) and GPU time (CUDA events around each call, the
// stream held behind a gate kernel so that calls run back to back, median of 200). One case fails
// when the plan cannot be built (fp16/bf16; fp32 without an engine is reported as unsupported), has
// unwritten elements, or disagrees with legacy beyond 1e-3 (fp16/bf16) / 1e-5 (fp32) relative L2
// while also being less accurate than legacy against the reference. Last line: "N passed, M
// failed"; non-zero exit on any failure. ZOC_GRAPH_TEST_BUDGET_S (default 85) stops new cases.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/device.h"
#include "zoc/core/timing.h"
#include "zoc/cudnn/graph.h"
#include "zoc/cudnn/layers.h"

namespace {

int g_passed = 0, g_failed = 0;
constexpr int kIters = 200, kChunk = 25, kWarmup = 10;
constexpr size_t kWorkspaceLimit = size_t(1) << 30;  // the generated models' default

void check(bool ok, const std::string& name, const std::string& detail = "") {
  (ok ? g_passed : g_failed) += 1;
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.empty() ? "" : ": ",
              detail.c_str());
  std::fflush(stdout);
}

// --- device helpers --------------------------------------------------------------------------

__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(__half v) { return __half2float(v); }
__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline void store(float* p, float v) { *p = v; }
__device__ inline void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ inline void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// Seeded uniform values in [-scale, scale): a hash of (seed, index), the same on every run.
template <class T>
__global__ void fill_uniform(T* p, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 0x9E3779B1u ^ uint32_t(i >> 32) * 0x85EBCA77u ^ seed * 0xC2B2AE3Du;
    h = (h ^ (h >> 15)) * 0x2C1B3C6Du;
    h = (h ^ (h >> 12)) * 0x297A2D39u;
    h ^= h >> 15;
    store(p + i, (float(h >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * scale);
  }
}

template <class T>
__global__ void to_float(const T* in, float* out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = to_f(in[i]);
}

struct Dims {
  int n, c, h, w, k, r, s, pad, stride, oh, ow;
  bool nhwc, residual, relu;
};

// One thread per output element, fp64 accumulation; y in the same layout as the tested outputs.
template <class T>
__global__ void conv_reference(const T* x, const T* w, const T* b, const T* z, float* y, Dims d) {
  const size_t total = size_t(d.n) * d.k * d.oh * d.ow;
  const size_t idx = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (idx >= total) return;
  const int ox = int(idx % d.ow), oy = int(idx / d.ow % d.oh),
            ko = int(idx / (size_t(d.ow) * d.oh) % d.k);
  const int ni = int(idx / (size_t(d.ow) * d.oh * d.k));
  double acc = 0;
  for (int r = 0; r < d.r; ++r) {
    const int iy = oy * d.stride - d.pad + r;
    if (iy < 0 || iy >= d.h) continue;
    for (int s = 0; s < d.s; ++s) {
      const int ix = ox * d.stride - d.pad + s;
      if (ix < 0 || ix >= d.w) continue;
      for (int ci = 0; ci < d.c; ++ci) {
        const size_t xo = d.nhwc ? ((size_t(ni) * d.h + iy) * d.w + ix) * d.c + ci
                                 : ((size_t(ni) * d.c + ci) * d.h + iy) * d.w + ix;
        const size_t wo = d.nhwc ? ((size_t(ko) * d.r + r) * d.s + s) * d.c + ci
                                 : ((size_t(ko) * d.c + ci) * d.r + r) * d.s + s;
        acc += double(to_f(x[xo])) * double(to_f(w[wo]));
      }
    }
  }
  const size_t yo = d.nhwc ? ((size_t(ni) * d.oh + oy) * d.ow + ox) * d.k + ko
                           : ((size_t(ni) * d.k + ko) * d.oh + oy) * d.ow + ox;
  acc += to_f(b[ko]);
  if (d.residual) acc += to_f(z[yo]);
  if (d.relu && acc < 0) acc = 0;
  y[yo] = float(acc);
}

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Holds the stream until the host opens the gate (or timeout_ns passes, then flags it), so that
// the calls enqueued behind it run back to back and their events measure GPU time only.
__global__ void gate_kernel(const volatile int* open, volatile int* timed_out,
                            unsigned long long timeout_ns) {
  const unsigned long long start = global_ns();
  while (*open == 0) {
    if (global_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

// --- test configuration ------------------------------------------------------------------------

struct DType {
  const char* name;
  cudnnDataType_t type;
  bool nhwc;
  cudnnMathType_t math;
  cudaDataType_t blas;
  size_t bytes;
  double tol_legacy;  // graph vs legacy, relative L2
  double band_ref;    // graph vs the fp64 reference, relative L2
};
const DType kDTypes[] = {
    {"fp16", CUDNN_DATA_HALF, true, CUDNN_TENSOR_OP_MATH, CUDA_R_16F, 2, 1e-3, 2e-3},
    {"bf16", CUDNN_DATA_BFLOAT16, true, CUDNN_TENSOR_OP_MATH, CUDA_R_16BF, 2, 1e-3, 1e-2},
    {"fp32", CUDNN_DATA_FLOAT, false, CUDNN_FMA_MATH, CUDA_R_32F, 4, 1e-5, 1e-5},  // TF32 off
};

struct LayerCase {
  const char* name;
  const char* what;
  int c, hw, k, rs, pad, stride;
  bool residual, relu;
};
const LayerCase kLayers[] = {
    {"conv1", "conv 7x7/2 3->64 @224, relu", 3, 224, 64, 7, 3, 2, false, true},
    {"l1.1x1", "conv 1x1 64->64 @56, relu", 64, 56, 64, 1, 0, 1, false, true},
    {"l1.3x3", "conv 3x3 64->64 @56, relu", 64, 56, 64, 3, 1, 1, false, true},
    {"l1.c3+z", "conv 1x1 64->256 @56, +residual, relu", 64, 56, 256, 1, 0, 1, true, true},
    {"l2.down", "conv 1x1/2 256->512 @56, no relu", 256, 56, 512, 1, 0, 2, false, false},
    {"l4.3x3", "conv 3x3 512->512 @7, relu", 512, 7, 512, 3, 1, 1, false, true},
};

struct Row {
  std::string layer, dtype, engine, note;
  int batch = 0, c = 0;
  bool ok = false, ran = false, skipped = false;
  double build_ms = 0, rel_gl = NAN, rel_gr = NAN, rel_lr = NAN;
  double host_g = NAN, host_l = NAN, host_g2 = NAN, gpu_g = NAN, gpu_l = NAN, bind_us = NAN;
  size_t ws = 0;
};

// Owns the legacy descriptors for the test's lifetime of one case.
struct LegacyLayer {
  zoc::ConvLayer layer;
  ~LegacyLayer() { layer.destroy(); }
};

template <class F>
void launch_typed(cudnnDataType_t t, F&& f) {
  if (t == CUDNN_DATA_HALF)
    f(__half{});
  else if (t == CUDNN_DATA_BFLOAT16)
    f(__nv_bfloat16{});
  else
    f(float{});
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

size_t count_nan(const std::vector<float>& a) {
  size_t n = 0;
  for (float v : a) n += std::isnan(v) ? 1 : 0;
  return n;
}

struct Env {
  cudnnHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  volatile int* gate_open = nullptr;  // mapped host memory
  volatile int* gate_timeout = nullptr;
  volatile int* dev_gate_open = nullptr;  // the same memory as the kernel sees it
  volatile int* dev_gate_timeout = nullptr;
  std::vector<cudaEvent_t> events;
};

double median_us(std::vector<float> us) {
  return us.empty() ? NAN : double(zoc::summarize(std::move(us)).median);
}

// Host time of each call, no synchronization inside the loop.
zoc::Status host_time(Env& env, const std::function<zoc::Status()>& call, double* median) {
  std::vector<float> us;
  for (int i = 0; i < kIters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    zoc::Status s = call();
    const auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) return s;
    us.push_back(std::chrono::duration<float, std::micro>(t1 - t0).count());
  }
  ZOC_CUDA(cudaStreamSynchronize(env.stream), "host timing");
  *median = median_us(std::move(us));
  return zoc::Status();
}

// GPU time of each call, in chunks of kChunk enqueued behind a closed gate. *gated is false when
// a gate timed out (the call blocked the host), which makes those samples include host gaps.
zoc::Status gpu_time(Env& env, const std::function<zoc::Status()>& call, double* median,
                     bool* gated) {
  std::vector<float> us;
  *gated = true;
  for (int chunk = 0; chunk < kIters / kChunk; ++chunk) {
    *env.gate_open = 0;
    *env.gate_timeout = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    gate_kernel<<<1, 1, 0, env.stream>>>(env.dev_gate_open, env.dev_gate_timeout, 200000000ull);
    ZOC_CUDA(cudaGetLastError(), "gate kernel");
    std::string failed;  // a failed call still lets the gate open before returning
    for (int j = 0; j < kChunk && failed.empty(); ++j) {
      ZOC_CUDA(cudaEventRecord(env.events[size_t(2 * j)], env.stream), "gpu timing");
      const zoc::Status s = call();
      if (!s.ok()) failed = s.error().message;
      ZOC_CUDA(cudaEventRecord(env.events[size_t(2 * j + 1)], env.stream), "gpu timing");
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *env.gate_open = 1;
    ZOC_CUDA(cudaStreamSynchronize(env.stream), "gpu timing");
    if (!failed.empty()) return zoc::Error{failed};
    if (*env.gate_timeout) *gated = false;
    for (int j = 0; j < kChunk; ++j) {
      float ms = 0;
      ZOC_CUDA(cudaEventElapsedTime(&ms, env.events[size_t(2 * j)], env.events[size_t(2 * j + 1)]),
               "gpu timing");
      us.push_back(ms * 1000.0f);
    }
  }
  *median = median_us(std::move(us));
  return zoc::Status();
}

zoc::Status copy_as_float(cudnnDataType_t t, const void* src, size_t n, std::vector<float>* out,
                          float* scratch) {
  launch_typed(t, [&](auto tag) {
    using T = decltype(tag);
    to_float<T><<<1024, 256>>>(static_cast<const T*>(src), scratch, n);
  });
  ZOC_CUDA(cudaGetLastError(), "to_float");
  out->resize(n);
  ZOC_CUDA(cudaMemcpy(out->data(), scratch, n * sizeof(float), cudaMemcpyDeviceToHost),
           "copy back");
  return zoc::Status();
}

// Runs one case; a returned error is a failure of the test machinery or of a library call.
zoc::Status run_case(Env& env, const LayerCase& L, const DType& dt, int batch, Row* row) {
  const int oh = (L.hw + 2 * L.pad - L.rs) / L.stride + 1;
  std::vector<int> channel_options = {L.c};
  if (L.c == 3 && dt.nhwc) channel_options = {3, 4, 8};  // 3 may lack an engine in NHWC: pad
  zoc::FusedConvPlan plan;
  zoc::FusedConvSpec spec{};
  bool built = false;
  for (int c : channel_options) {
    spec = zoc::FusedConvSpec{batch, c,          L.hw,     L.hw,     L.k,    L.rs, L.rs,
                              L.pad, L.pad,      L.stride, L.stride, 1,      1,    oh,
                              oh,    L.residual, L.relu,   dt.type,  dt.nhwc};
    const auto t0 = std::chrono::steady_clock::now();
    auto p = zoc::FusedConvPlan::build(env.handle, spec, kWorkspaceLimit, L.name);
    row->build_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    row->c = c;
    if (p.ok()) {
      plan = std::move(*p);  // exercises the move assignment
      built = true;
      break;
    }
    row->note = p.error().message;
    if (c != channel_options.back()) {
      std::printf("info %s %s b%d c=%d: no plan (%.0f ms), trying more channels: %s\n", dt.name,
                  L.name, batch, c, row->build_ms, p.error().message.c_str());
    }
  }
  if (!built) {
    if (!dt.nhwc && zoc::is_no_engine_error(zoc::Error{row->note})) {
      row->ok = true;  // fp32 NCHW is optional: reported, not failed
      row->engine = "unsupported";
    }
    return zoc::Status();
  }
  row->engine = plan.engine_name();
  row->ws = plan.workspace_bytes();
  row->note.clear();

  const size_t nx = size_t(batch) * spec.c * L.hw * L.hw, nw = size_t(L.k) * spec.c * L.rs * L.rs;
  const size_t ny = size_t(batch) * L.k * oh * oh;
  LegacyLayer legacy;
  const zoc::Precision prec{dt.type, dt.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, dt.math,
                            dt.blas, CUBLAS_COMPUTE_32F};
  const zoc::ConvShape shape{spec.c,   L.hw,     L.hw, L.k, L.rs, L.rs, L.pad, L.pad,
                             L.stride, L.stride, 1,    1,   1,    oh,   oh,    L.relu};
  ZOC_TRY(legacy.layer.create(shape, prec, L.name));
  ZOC_TRY(legacy.layer.describe(env.handle, batch, kWorkspaceLimit, L.name));
  const size_t ws_bytes = std::max(plan.workspace_bytes(), legacy.layer.workspace);

  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer x, zoc::DeviceBuffer::allocate(nx * dt.bytes, "x"));
  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer w, zoc::DeviceBuffer::allocate(nw * dt.bytes, "w"));
  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer b,
                       zoc::DeviceBuffer::allocate(size_t(L.k) * dt.bytes, "bias"));
  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer z, zoc::DeviceBuffer::allocate(ny * dt.bytes, "z"));
  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer yg, zoc::DeviceBuffer::allocate(ny * dt.bytes, "y graph"));
  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer yl,
                       zoc::DeviceBuffer::allocate(ny * dt.bytes, "y legacy"));
  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer yr,
                       zoc::DeviceBuffer::allocate(ny * sizeof(float), "y reference"));
  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer scratch,
                       zoc::DeviceBuffer::allocate(ny * sizeof(float), "scratch"));
  ZOC_ASSIGN_OR_RETURN(zoc::DeviceBuffer ws, zoc::DeviceBuffer::allocate(ws_bytes, "workspace"));

  const float w_scale = 1.0f / std::sqrt(float(spec.c * L.rs * L.rs));
  const uint32_t seed = uint32_t(batch * 131 + L.k * 7 + spec.c);
  launch_typed(dt.type, [&](auto tag) {
    using T = decltype(tag);
    fill_uniform<T><<<1024, 256>>>(static_cast<T*>(x.get()), nx, seed + 1, 1.0f);
    fill_uniform<T><<<1024, 256>>>(static_cast<T*>(w.get()), nw, seed + 2, w_scale);
    fill_uniform<T><<<64, 256>>>(static_cast<T*>(b.get()), size_t(L.k), seed + 3, 0.5f);
    fill_uniform<T><<<1024, 256>>>(static_cast<T*>(z.get()), ny, seed + 4, 1.0f);
  });
  ZOC_CUDA(cudaGetLastError(), "fill");
  if (!L.residual)
    ZOC_CUDA(cudaMemset(z.get(), 0, ny * dt.bytes), "zero z");    // legacy's alpha2 = 0
  ZOC_CUDA(cudaMemset(yg.get(), 0xFF, ny * dt.bytes), "poison");  // NaN in fp16, bf16 and fp32
  ZOC_CUDA(cudaMemset(yl.get(), 0xFF, ny * dt.bytes), "poison");
  ZOC_CUDA(cudaDeviceSynchronize(), "fill");

  ZOC_TRY(plan.bind(x.get(), w.get(), b.get(), L.residual ? z.get() : nullptr, yg.get(), ws.get(),
                    L.name));
  const float one = 1.0f, zero = 0.0f;
  const zoc::ConvLayer& cl = legacy.layer;
  auto graph_call = [&]() -> zoc::Status { return plan.run(env.handle, L.name); };
  auto legacy_call = [&]() -> zoc::Status {
    ZOC_CUDNN(cudnnConvolutionBiasActivationForward(env.handle, &one, cl.x, x.get(), cl.w, w.get(),
                                                    cl.conv, cl.algo, ws.get(), cl.workspace,
                                                    L.residual ? &one : &zero, cl.y, z.get(),
                                                    cl.bias, b.get(), cl.act, cl.y, yl.get()),
              L.name);
    return zoc::Status();
  };
  ZOC_TRY(graph_call());
  ZOC_CUDA(cudaStreamSynchronize(env.stream), "graph run");
  ZOC_TRY(legacy_call());
  ZOC_CUDA(cudaStreamSynchronize(env.stream), "legacy run");
  const Dims d{batch, spec.c,   L.hw, L.hw, L.k,     L.rs,       L.rs,
               L.pad, L.stride, oh,   oh,   dt.nhwc, L.residual, L.relu};
  launch_typed(dt.type, [&](auto tag) {
    using T = decltype(tag);
    conv_reference<T><<<unsigned((ny + 255) / 256), 256>>>(
        static_cast<const T*>(x.get()), static_cast<const T*>(w.get()),
        static_cast<const T*>(b.get()), static_cast<const T*>(z.get()),
        static_cast<float*>(yr.get()), d);
  });
  ZOC_CUDA(cudaGetLastError(), "reference");
  std::vector<float> g, l, r(ny), g_after;
  ZOC_CUDA(cudaMemcpy(r.data(), yr.get(), ny * sizeof(float), cudaMemcpyDeviceToHost), "copy back");
  ZOC_TRY(copy_as_float(dt.type, yg.get(), ny, &g, static_cast<float*>(scratch.get())));
  ZOC_TRY(copy_as_float(dt.type, yl.get(), ny, &l, static_cast<float*>(scratch.get())));
  const size_t nan_g = count_nan(g), nan_l = count_nan(l), nan_r = count_nan(r);
  row->rel_gl = rel_l2(g, l);
  row->rel_gr = rel_l2(g, r);
  row->rel_lr = rel_l2(l, r);

  for (int i = 0; i < kWarmup; ++i) {
    ZOC_TRY(graph_call());
    ZOC_TRY(legacy_call());
  }
  ZOC_TRY(host_time(env, graph_call, &row->host_g));
  ZOC_TRY(host_time(env, legacy_call, &row->host_l));
  bool gated_g = true, gated_l = true;
  ZOC_TRY(gpu_time(env, graph_call, &row->gpu_g, &gated_g));
  ZOC_TRY(gpu_time(env, legacy_call, &row->gpu_l, &gated_l));
  ZOC_TRY(host_time(env, graph_call, &row->host_g2));  // the same again: today's noise
  std::vector<float> bind_us;  // what rebinding (e.g. a new input pointer per forward) would cost
  for (int i = 0; i < 50; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ZOC_TRY(plan.bind(x.get(), w.get(), b.get(), L.residual ? z.get() : nullptr, yg.get(), ws.get(),
                      L.name));
    bind_us.push_back(
        std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  row->bind_us = median_us(std::move(bind_us));
  ZOC_TRY(copy_as_float(dt.type, yg.get(), ny, &g_after, static_cast<float*>(scratch.get())));
  const bool deterministic = std::memcmp(g.data(), g_after.data(), ny * sizeof(float)) == 0;
  row->ran = true;

  // Verdict.
  std::string why;
  if (nan_g)
    why +=
        std::to_string(nan_g) + " of " + std::to_string(ny) + " graph outputs NaN (unwritten?); ";
  if (nan_l) why += std::to_string(nan_l) + " legacy outputs NaN; ";
  if (nan_r) why += "reference has NaN; ";
  const bool close_to_legacy = row->rel_gl <= dt.tol_legacy;
  const bool as_accurate = row->rel_gr <= dt.band_ref && row->rel_gr <= 1.25 * row->rel_lr + 1e-7;
  if (!close_to_legacy && !as_accurate) {
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "rel err vs legacy %.3g > %.0e and vs reference %.3g (legacy %.3g, band %.0e); ",
                  row->rel_gl, dt.tol_legacy, row->rel_gr, row->rel_lr, dt.band_ref);
    why += buf;
  }
  row->ok = why.empty();
  row->note = why;
  if (!close_to_legacy && as_accurate)
    row->note += "differs from legacy but as close to the fp64 reference; ";
  if (!deterministic) row->note += "graph output changed between runs (nondeterministic); ";
  if (!gated_g || !gated_l)
    row->note += std::string("gate timed out (") + (!gated_g ? "graph" : "legacy") +
                 " call blocks the host): its gpu_us includes host gaps; ";
  row->note += "legacy algo " + std::to_string(int(cl.algo)) + ", ws " +
               std::to_string(cl.workspace) + " B; ";
  return zoc::Status();
}

// --- API behavior that needs no timing -------------------------------------------------------

void test_api(Env& env) {
  zoc::FusedConvSpec bad{
      1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 55, 56, false, true, CUDNN_DATA_HALF, true};
  auto p = zoc::FusedConvPlan::build(env.handle, bad, kWorkspaceLimit, "bad.conv");
  check(!p.ok() && p.error().message.find("does not match") != std::string::npos,
        "build rejects a wrong output size", p.ok() ? "<ok>" : p.error().message);
  zoc::FusedConvSpec s{
      1, 64, 56, 56, 256, 1, 1, 0, 0, 1, 1, 1, 1, 56, 56, true, true, CUDNN_DATA_HALF, true};
  auto q = zoc::FusedConvPlan::build(env.handle, s, kWorkspaceLimit, "api.conv3");
  check(q.ok(), "build fp16 1x1 64->256 +z relu", q.ok() ? q->engine_name() : q.error().message);
  if (!q.ok()) return;
  zoc::FusedConvPlan plan(std::move(*q));  // move construction
  zoc::Status before = plan.run(env.handle, "api.conv3");
  check(!before.ok() && before.error().message.find("before bind") != std::string::npos,
        "run before bind is an error", before.ok() ? "<ok>" : before.error().message);
  auto buf = zoc::DeviceBuffer::allocate(size_t(1) << 22, "api buffers");
  if (!buf.ok()) return check(false, "allocate api buffers", buf.error().message);
  char* base = static_cast<char*>(buf->get());
  char* ws = plan.workspace_bytes() ? base : nullptr;
  auto no_z = plan.bind(base, base, base, nullptr, base, ws, "api.conv3");
  check(!no_z.ok() && no_z.error().message.find("residual z is required") != std::string::npos,
        "bind without the residual is an error", no_z.ok() ? "<ok>" : no_z.error().message);
  auto misaligned = plan.bind(base + 2, base, base, base, base, ws, "api.conv3");
  check(!misaligned.ok() && misaligned.error().message.find("16-byte aligned") != std::string::npos,
        "bind rejects a misaligned pointer", misaligned.ok() ? "<ok>" : misaligned.error().message);
  std::vector<char> host(64);
  auto hosted = plan.bind(host.data(), base, base, base, base, ws, "api.conv3");
  check(!hosted.ok() && hosted.error().message.find("host pointer") != std::string::npos,
        "bind rejects a host pointer", hosted.ok() ? "<ok>" : hosted.error().message);
  check(cudaGetLastError() == cudaSuccess, "no CUDA error left behind by the API checks");
}

std::string fmt(double v, const char* f) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

void print_table(const std::vector<Row>& rows) {
  std::printf("\n%-10s %5s %-4s %-22s %8s %8s %8s %8s | %8s %8s %8s | %8s %8s | %s\n", "layer",
              "batch", "type", "engine", "build_ms", "rel_g-l", "rel_g-ref", "rel_l-ref", "host_g",
              "host_l", "host_g2", "gpu_g", "gpu_l", "verdict");
  for (const Row& r : rows) {
    std::string eng = r.engine.substr(0, r.engine.find(" {"));
    std::string layer =
        r.layer + (r.c && r.c != 3 && r.layer == "conv1" ? "(c" + std::to_string(r.c) + ")" : "");
    std::printf(
        "%-10s %5d %-4s %-22s %8s %8s %8s %8s | %8s %8s %8s | %8s %8s | %s\n", layer.c_str(),
        r.batch, r.dtype.c_str(), eng.substr(0, 22).c_str(), fmt(r.build_ms, "%.0f").c_str(),
        fmt(r.rel_gl, "%.1e").c_str(), fmt(r.rel_gr, "%.1e").c_str(), fmt(r.rel_lr, "%.1e").c_str(),
        fmt(r.host_g, "%.1f").c_str(), fmt(r.host_l, "%.1f").c_str(),
        fmt(r.host_g2, "%.1f").c_str(), fmt(r.gpu_g, "%.1f").c_str(), fmt(r.gpu_l, "%.1f").c_str(),
        !r.ok       ? "FAIL"
        : r.ran     ? "ok"
        : r.skipped ? "not run"
                    : "unsupported");
  }
  std::printf(
      "(host_* / gpu_*: median us per call over %d calls; host_g2: graph host time measured "
      "again)\n",
      kIters);
  for (const DType& dt : kDTypes) {  // the decision: sums over the layers that ran
    for (int batch : {1, 32}) {
      double hg = 0, hl = 0, gg = 0, gl = 0;
      int n = 0;
      for (const Row& r : rows) {
        if (r.dtype != dt.name || r.batch != batch || !r.ran) continue;
        hg += r.host_g, hl += r.host_l, gg += r.gpu_g, gl += r.gpu_l, ++n;
      }
      if (n == 0) continue;
      std::printf(
          "summary %s b%d: %d layers; host us per call summed: graph %.1f, legacy %.1f (%.1fx "
          "less); "
          "gpu us summed: graph %.1f, legacy %.1f (graph/legacy %.2f)\n",
          dt.name, batch, n, hg, hl, hl / hg, gg, gl, gg / gl);
    }
  }
}

int run_all() {
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    std::printf("FAIL no CUDA device\n0 passed, 1 failed\n");
    return 1;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("device %s (sm_%d%d), driver %d, runtime %d, cuDNN %zu (headers %d)\n", prop.name,
              prop.major, prop.minor, driver, runtime, cudnnGetVersion(), CUDNN_VERSION);
  Env env;
  void* mapped = nullptr;
  bool setup = cudnnCreate(&env.handle) == CUDNN_STATUS_SUCCESS &&
               cudaStreamCreateWithFlags(&env.stream, cudaStreamNonBlocking) == cudaSuccess &&
               cudnnSetStream(env.handle, env.stream) == CUDNN_STATUS_SUCCESS &&
               cudaHostAlloc(&mapped, 64, cudaHostAllocMapped) == cudaSuccess;
  env.events.resize(2 * kChunk);
  for (cudaEvent_t& e : env.events) setup = setup && cudaEventCreate(&e) == cudaSuccess;
  check(setup, "set up cuDNN handle, stream, events and mapped gate memory");
  if (!setup) {
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return 1;
  }
  env.gate_open = static_cast<volatile int*>(mapped);
  env.gate_timeout = static_cast<volatile int*>(mapped) + 1;
  void* dev_mapped = nullptr;
  if (cudaHostGetDevicePointer(&dev_mapped, mapped, 0) != cudaSuccess) {
    check(false, "cudaHostGetDevicePointer for the gate");
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return 1;
  }
  env.dev_gate_open = static_cast<volatile int*>(dev_mapped);
  env.dev_gate_timeout = static_cast<volatile int*>(dev_mapped) + 1;

  test_api(env);

  const char* budget_env = std::getenv("ZOC_GRAPH_TEST_BUDGET_S");
  const double budget_s = budget_env ? std::atof(budget_env) : 85.0;
  const auto start = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  for (const DType& dt : kDTypes) {
    for (int batch : {1, 32}) {
      for (const LayerCase& L : kLayers) {
        Row row;
        row.layer = L.name, row.dtype = dt.name, row.batch = batch;
        const std::string name = std::string(dt.name) + " b" + std::to_string(batch) + " " +
                                 L.name + " (" + L.what + ")";
        const double spent =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (spent > budget_s) {  // fp16/bf16 are the point: not running them is a failure
          row.skipped = true;
          row.ok = dt.type == CUDNN_DATA_FLOAT;
          row.note = "not run: time budget of " + fmt(budget_s, "%.0f") + " s spent";
          if (row.ok)
            std::printf("skip %s: %s\n", name.c_str(), row.note.c_str());
          else
            check(false, name, row.note);
          rows.push_back(row);
          continue;
        }
        zoc::Status s = run_case(env, L, dt, batch, &row);
        if (!s.ok()) {
          row.ok = false;
          row.note = s.error().message + "; " + row.note;
          (void)cudaGetLastError();
        }
        char detail[1024];
        std::snprintf(detail, sizeof(detail),
                      "engine %s, c=%d, build %.0f ms, ws %zu B | rel g-l %s g-ref %s l-ref %s | "
                      "host us %s vs %s (again %s), bind %s | gpu us %s vs %s",
                      row.engine.c_str(), row.c, row.build_ms, row.ws,
                      fmt(row.rel_gl, "%.2e").c_str(), fmt(row.rel_gr, "%.2e").c_str(),
                      fmt(row.rel_lr, "%.2e").c_str(), fmt(row.host_g, "%.1f").c_str(),
                      fmt(row.host_l, "%.1f").c_str(), fmt(row.host_g2, "%.1f").c_str(),
                      fmt(row.bind_us, "%.1f").c_str(), fmt(row.gpu_g, "%.1f").c_str(),
                      fmt(row.gpu_l, "%.1f").c_str());
        if (row.ok && !row.ran) {  // fp32 NCHW without an engine: reported, not counted
          std::printf("skip %s: graph unsupported: %s\n", name.c_str(), row.note.c_str());
        } else {
          check(row.ok, name, std::string(detail) + (row.note.empty() ? "" : " | " + row.note));
        }
        rows.push_back(row);
      }
    }
  }
  print_table(rows);
  for (cudaEvent_t e : env.events) cudaEventDestroy(e);
  cudaFreeHost(mapped);
  cudnnDestroy(env.handle);
  cudaStreamDestroy(env.stream);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

}  // namespace

int main() { return run_all(); }
