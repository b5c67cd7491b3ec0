// INT8 probe (issue 35): does cuDNN's graph API run an INT8 convolution with a fused
// requantizing epilogue on this GPU, is it exact, and how fast is it against the same
// convolution in fp16 through the graph API as zoc runs it today?
//
// Why: zoc's INT8 path should be built only on a measured answer. For each ResNet-50 (v1.5, 224)
// convolution shape this program builds
//   int8: y_i8 = relu(conv_i32(x_i8, w_i8) * scale[k] + bias[k] [+ z_i8])  (runtime/zoc/cudnn/
//         int8_conv.h; scale already folds s_x * s_w[k] / s_y), and
//   fp16: y_h = relu(conv_f32(x_h, w_h) + bias_h [+ z_h])                   (zoc's FusedConvPlan)
// with cuDNN's heuristics (mode A, then FALLBACK; the first config that finalizes), prints the
// engine each got or cuDNN's exact refusal, checks the int8 bytes against an exact CPU reference
// (runtime/zoc/math/requant.h), times both with CUDA events and prints a table. A first small
// graph without ReLU, built with power-of-two scales so that many values fall exactly on .5 and
// many overflow, finds which rounding and saturation cuDNN applies when it writes INT8.
// Every failure is printed with its shape and step and the program goes on; the exit status is
// non-zero only when nothing ran. Built and run by tests/gpu/int8_probe.sh.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "int8_probe_util.cuh"
#include "zoc/core/device.h"
#include "zoc/cudnn/graph.h"
#include "zoc/cudnn/int8_conv.h"
#include "zoc/math/requant.h"

namespace {

using zoc::DeviceBuffer;
using zoc::Error;
using zoc::Expected;
using zoc::Status;
using zoc::requant::Rounding;

constexpr size_t kWorkspaceLimit = size_t(1) << 30;
constexpr uint64_t kSeedX = 11, kSeedW = 12, kSeedScale = 13, kSeedBias = 14, kSeedZ = 15;

struct Options {
  int batch = 256;
  int check_batch = 2;  // 0: no correctness check
  int warmup = 10, iters = 50;
  int engines = 1;  // int8 engine configs timed per shape (the first E that finalize)
  std::string only, json_dir;
  bool residual = true;
};

// One convolution shape; input channels as the model has them (c) and as stored per precision.
struct Shape {
  const char* name;
  int c, c_int8, c_fp16;  // c_fp16 0: no fp16 run (an int8-only variant)
  int k, hw, r, stride;
  bool residual;  // also run the variant with a residual input
  int out() const { return (hw + 2 * (r / 2) - r) / stride + 1; }
};

// ResNet-50 v1.5 at 224: the stem (RGB padded: 16 channels for int8's 128-bit rule, 4 for fp16
// as zoc stores it), and the bottleneck convolutions, stride 2 in conv2 (the 3x3).
const Shape kShapes[] = {
    {"conv1_7x7s2_3-64", 3, 16, 4, 64, 224, 7, 2, false},
    {"conv1_7x7s2_3-64_i8c4", 3, 4, 0, 64, 224, 7, 2, false},
    {"l1_1x1_64-64", 64, 64, 64, 64, 56, 1, 1, false},
    {"l1_3x3_64-64", 64, 64, 64, 64, 56, 3, 1, false},
    {"l1_1x1_64-256", 64, 64, 64, 256, 56, 1, 1, true},
    {"l2_3x3s2_128-128", 128, 128, 128, 128, 56, 3, 2, false},
    {"l2_3x3_128-128", 128, 128, 128, 128, 28, 3, 1, false},
    {"l3_3x3_256-256", 256, 256, 256, 256, 14, 3, 1, false},
    {"l3_1x1_256-1024", 256, 256, 256, 1024, 14, 1, 1, false},
    {"l4_3x3_512-512", 512, 512, 512, 512, 7, 3, 1, false},
    {"l4_1x1_2048-512", 2048, 2048, 2048, 512, 7, 1, 1, false},
};

struct Row {
  std::string name;
  int n = 0;
  double ops8 = 0, ops16 = 0, bytes8 = 0, bytes16 = 0;  // executed MACs x2; least traffic
  float ms8 = -1, ms8_best = -1, ms16 = -1;
  std::string check = "-";
};

struct Ctx {
  cudnnHandle_t handle = nullptr;
  Options opt;
  Rounding rounding = Rounding::kNearestEven;
  std::vector<Row> rows;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void write_json(const Ctx& ctx, cudnnBackendDescriptor_t plan, const std::string& file) {
  if (ctx.opt.json_dir.empty()) return;
  Expected<std::string> j = zoc::plan_json(plan, file.c_str());
  if (!j.ok()) {
    std::printf("    (plan JSON unavailable: %s)\n", j.error().message.c_str());
    return;
  }
  std::ofstream(ctx.opt.json_dir + "/" + file + ".json") << *j << "\n";
}

zoc::Int8ConvSpec int8_spec(const Shape& s, int n, bool residual, bool relu) {
  zoc::Int8ConvSpec p{};
  p.n = n, p.c = s.c_int8, p.h = p.w = s.hw, p.k = s.k, p.r = p.s = s.r;
  p.pad_h = p.pad_w = s.r / 2, p.stride_h = p.stride_w = s.stride;
  p.out_h = p.out_w = s.out(), p.residual = residual, p.relu = relu;
  return p;
}

// The data of one int8 graph: device tensors at the timed batch, host copies of the small ones.
// The host regenerates x (and z) for any batch prefix from the same seeds.
struct Int8Data {
  zoc::Int8ConvSpec spec{};
  int c_real = 0, x_lo = -128, x_hi = 127, w_lo = -127, w_hi = 127;
  DeviceBuffer x, w, scale, bias, z, y, ws;
  std::vector<int8_t> w_host;
  std::vector<float> scale_host, bias_host;
};

uint64_t x_count(const zoc::Int8ConvSpec& s, int n) { return uint64_t(n) * s.h * s.w * s.c; }
uint64_t y_count(const zoc::Int8ConvSpec& s, int n) {
  return uint64_t(n) * s.out_h * s.out_w * s.k;
}

// Random per-channel scales that put y's standard deviation near 40 (some saturation at 127),
// biases in [-20, 20]; or, with `ties`, exact powers of two and quarter biases (rounding probe).
Status make_int8_data(Int8Data* d, bool ties) {
  const zoc::Int8ConvSpec& s = d->spec;
  const uint64_t nx = x_count(s, s.n), ny = y_count(s, s.n);
  const uint64_t nw = uint64_t(s.k) * s.r * s.s * s.c;
  ZOC_ASSIGN_OR_RETURN(d->x, DeviceBuffer::allocate(nx, "int8 x"));
  ZOC_ASSIGN_OR_RETURN(d->w, DeviceBuffer::allocate(nw, "int8 w"));
  ZOC_ASSIGN_OR_RETURN(d->y, DeviceBuffer::allocate(ny, "int8 y"));
  ZOC_ASSIGN_OR_RETURN(d->scale, DeviceBuffer::allocate(sizeof(float) * s.k, "scale"));
  ZOC_ASSIGN_OR_RETURN(d->bias, DeviceBuffer::allocate(sizeof(float) * s.k, "bias"));
  ZOC_TRY(probe::fill_int8(d->x.get(), nx, kSeedX, d->x_lo, d->x_hi, s.c, d->c_real));
  if (s.residual) {
    ZOC_ASSIGN_OR_RETURN(d->z, DeviceBuffer::allocate(ny, "int8 z"));
    ZOC_TRY(probe::fill_int8(d->z.get(), ny, kSeedZ, -128, 127, s.k, s.k));
  }
  d->w_host = probe::host_int8(nw, kSeedW, d->w_lo, d->w_hi, s.c, d->c_real);
  const float sd_x = float(d->x_hi - d->x_lo) / std::sqrt(12.0f);
  const float sd_w = float(d->w_hi - d->w_lo) / std::sqrt(12.0f);
  const float base = 40.0f / (std::sqrt(float(d->c_real * s.r * s.s)) * sd_x * sd_w);
  d->scale_host.resize(size_t(s.k));
  d->bias_host.resize(size_t(s.k));
  for (int k = 0; k < s.k; ++k) {
    const float u = float(probe::mix(kSeedScale, uint64_t(k)) % 1000) / 1000.0f;
    const float v = float(probe::mix(kSeedBias, uint64_t(k)) % 1000) / 1000.0f;
    d->scale_host[size_t(k)] = ties ? (k % 2 ? 0.25f : 0.5f) : base * (0.5f + u);
    const float quarter[4] = {0.0f, 0.25f, -0.25f, 0.5f};
    d->bias_host[size_t(k)] = ties ? quarter[k % 4] : -20.0f + 40.0f * v;
  }
  ZOC_CUDA(cudaMemcpy(d->w.get(), d->w_host.data(), nw, cudaMemcpyHostToDevice), "copy w");
  ZOC_CUDA(
      cudaMemcpy(d->scale.get(), d->scale_host.data(), sizeof(float) * s.k, cudaMemcpyHostToDevice),
      "copy scale");
  ZOC_CUDA(
      cudaMemcpy(d->bias.get(), d->bias_host.data(), sizeof(float) * s.k, cudaMemcpyHostToDevice),
      "copy bias");
  ZOC_CUDA(cudaDeviceSynchronize(), "fill int8 data");
  return Status();
}

Status bind_int8(zoc::Int8ConvPlan* p, Int8Data* d, const char* layer) {
  if (p->workspace_bytes() > d->ws.size()) {
    ZOC_ASSIGN_OR_RETURN(d->ws, DeviceBuffer::allocate(p->workspace_bytes(), "workspace"));
  }
  return p->bind(d->x.get(), d->w.get(), d->scale.get(), d->bias.get(),
                 p->spec().residual ? d->z.get() : nullptr, d->y.get(), d->ws.get(), layer);
}

// Prints what `p` is (when built) and writes its JSON; passes `p` on.
Expected<zoc::Int8ConvPlan> report_built(Ctx& ctx, Expected<zoc::Int8ConvPlan> p,
                                         const zoc::Int8ConvSpec& spec, int skip,
                                         const std::string& tag, double build_s) {
  if (!p.ok()) return p;
  std::printf("  %s: engine #%d %s, acc %s, workspace %zu B, plan built in %.2f s\n", tag.c_str(),
              skip, p->engine_name().c_str(),
              spec.conv_out_type == CUDNN_DATA_FLOAT ? "FLOAT" : "INT32", p->workspace_bytes(),
              build_s);
  write_json(ctx, p->plan(), tag + (skip ? "_e" + std::to_string(skip) : std::string()));
  return p;
}

// The `skip`-th finalizing int8 engine for *spec; a FLOAT accumulator refused, INT32 next.
Expected<zoc::Int8ConvPlan> build_int8(Ctx& ctx, zoc::Int8ConvSpec* spec, int skip,
                                       const std::string& tag) {
  const auto t0 = std::chrono::steady_clock::now();
  Expected<zoc::Int8ConvPlan> p =
      zoc::Int8ConvPlan::build(ctx.handle, *spec, skip, kWorkspaceLimit, tag.c_str());
  if (p.ok() || skip != 0 || spec->conv_out_type != CUDNN_DATA_FLOAT) {
    return report_built(ctx, std::move(p), *spec, skip, tag, seconds_since(t0));
  }
  std::printf("  %s: FLOAT accumulator refused: %s\n  %s: trying an INT32 accumulator\n",
              tag.c_str(), p.error().message.c_str(), tag.c_str());
  spec->conv_out_type = CUDNN_DATA_INT32;
  return report_built(
      ctx, zoc::Int8ConvPlan::build(ctx.handle, *spec, skip, kWorkspaceLimit, tag.c_str()), *spec,
      skip, tag, seconds_since(t0));
}

struct CheckResult {
  uint64_t total = 0, differ = 0, ties = 0;
  uint64_t saturated = 0, clamped = 0;  // values beyond int8; of them, written as 127 / -128
  int max_diff = 0;
  std::string examples;  // the first few bytes that differ by more than 1
  uint64_t matches[zoc::requant::kRoundingCount] = {};
};

// Runs `plan` (bound to d's buffers, batch n <= d's) once and compares y's first n images with
// the CPU reference under every rounding rule; `differ`/`max_diff` under ctx.rounding.
Expected<CheckResult> check_int8(Ctx& ctx, const zoc::Int8ConvPlan& plan, Int8Data& d,
                                 const char* layer) {
  const zoc::Int8ConvSpec& s = plan.spec();
  const uint64_t ny = y_count(s, s.n);
  ZOC_CUDA(cudaMemset(d.y.get(), 0x55, ny), layer);
  ZOC_TRY(plan.run(ctx.handle, layer));
  ZOC_CUDA(cudaDeviceSynchronize(), layer);
  std::vector<int8_t> got(ny);
  ZOC_CUDA(cudaMemcpy(got.data(), d.y.get(), ny, cudaMemcpyDeviceToHost), layer);
  const std::vector<int8_t> x =
      probe::host_int8(x_count(s, s.n), kSeedX, d.x_lo, d.x_hi, s.c, d.c_real);
  std::vector<int8_t> z;
  if (s.residual) z = probe::host_int8(ny, kSeedZ, -128, 127, s.k, s.k);
  std::vector<int32_t> acc(ny);
  const zoc::requant::ConvDims dims{s.n,     s.c,     s.h,        s.w,        s.k,     s.r,    s.s,
                                    s.pad_h, s.pad_w, s.stride_h, s.stride_w, s.out_h, s.out_w};
  zoc::requant::conv_nhwc_int32(dims, x.data(), d.w_host.data(), acc.data());
  CheckResult r;
  r.total = ny;
  for (uint64_t i = 0; i < ny; ++i) {
    const size_t k = size_t(i % uint64_t(s.k));
    const float v = zoc::requant::epilogue(acc[i], d.scale_host[k], d.bias_host[k],
                                           s.residual ? float(z[i]) : 0.0f, s.relu);
    if (v - std::floor(v) == 0.5f) ++r.ties;
    if (v > 127.5f || v < -128.5f) {
      ++r.saturated;
      if (got[i] == (v > 0 ? 127 : -128)) ++r.clamped;
    }
    for (int m = 0; m < zoc::requant::kRoundingCount; ++m) {
      if (zoc::requant::to_int8(v, Rounding(m)) == got[i]) ++r.matches[m];
    }
    const int diff = std::abs(int(zoc::requant::to_int8(v, ctx.rounding)) - int(got[i]));
    if (diff) ++r.differ;
    if (diff > 1 && r.examples.size() < 300) {
      char b[128];
      std::snprintf(b, sizeof(b), " [y[%llu] k=%zu acc=%d v=%.3f got=%d]", (unsigned long long)i, k,
                    acc[i], double(v), int(got[i]));
      r.examples += b;
    }
    r.max_diff = std::max(r.max_diff, diff);
  }
  return r;
}

std::string matches_text(const CheckResult& r) {
  std::string t;
  for (int m = 0; m < zoc::requant::kRoundingCount; ++m) {
    char b[96];
    std::snprintf(b, sizeof(b), "%s%s %llu/%llu", m ? ", " : "",
                  zoc::requant::rounding_name(Rounding(m)), (unsigned long long)r.matches[m],
                  (unsigned long long)r.total);
    t += b;
  }
  return t;
}

Expected<CheckResult> rounding_run(Ctx& ctx, Int8Data* d, const std::string& tag) {
  ZOC_TRY(make_int8_data(d, true));
  ZOC_ASSIGN_OR_RETURN(zoc::Int8ConvPlan p, build_int8(ctx, &d->spec, 0, tag));
  ZOC_TRY(bind_int8(&p, d, tag.c_str()));
  return check_int8(ctx, p, *d, tag.c_str());
}

// A small graph without ReLU whose values hit .5 exactly and overflow int8 in both directions:
// which rounding rule do cuDNN's INT8 writes follow? Sets ctx.rounding to the best match.
void rounding_probe(Ctx& ctx) {
  const Shape s = {"rounding_probe", 16, 16, 0, 32, 8, 3, 1, false};
  for (int relu = 0; relu < 2; ++relu) {
    Int8Data d;
    d.spec = int8_spec(s, 2, false, relu != 0);
    d.c_real = 16, d.x_lo = d.w_lo = -8, d.x_hi = d.w_hi = 8;
    const std::string tag = relu ? "rounding_probe_relu" : "rounding_probe";
    std::printf("[%s] 3x3 16->32 8x8 batch 2, scales 0.5/0.25, biases 0/+-0.25/0.5%s\n",
                tag.c_str(), relu ? ", ReLU" : ", no ReLU");
    Expected<CheckResult> r = rounding_run(ctx, &d, tag);
    if (!r.ok()) {
      std::printf("  %s FAILED: %s\n", tag.c_str(), r.error().message.c_str());
      continue;
    }
    int best = 0;
    for (int m = 1; m < zoc::requant::kRoundingCount; ++m) {
      if (r->matches[m] > r->matches[best]) best = m;
    }
    std::printf(
        "  %s: %llu values, %llu exact ties, %llu beyond [-128.5, 127.5]; matching "
        "bytes per rule: %s\n",
        tag.c_str(), (unsigned long long)r->total, (unsigned long long)r->ties,
        (unsigned long long)r->saturated, matches_text(*r).c_str());
    std::printf(
        "  => cuDNN writes INT8 as: %s%s; %llu of %llu out-of-range values clamped to "
        "127/-128\n",
        zoc::requant::rounding_name(Rounding(best)),
        r->matches[best] == r->total ? " (every byte)" : " (best match, NOT every byte)",
        (unsigned long long)r->clamped, (unsigned long long)r->saturated);
    ctx.rounding = Rounding(best);
    return;
  }
  std::printf("  rounding unknown; the checks below assume nearest-even\n");
}

// Checks the engine of `p` (bound to d, at the timed batch) on the first check_batch images: the
// same engine config built for that batch, or cuDNN's choice there when it cannot be.
Expected<CheckResult> check_engine(Ctx& ctx, Int8Data* d, const zoc::Int8ConvPlan& p,
                                   const std::string& tag) {
  const int check_n = std::min(ctx.opt.check_batch, ctx.opt.batch);
  if (check_n == ctx.opt.batch) return check_int8(ctx, p, *d, tag.c_str());
  zoc::Int8ConvSpec cs = d->spec;
  cs.n = check_n;
  auto build = [&]() -> Expected<zoc::Int8ConvPlan> {
    Expected<zoc::Int8ConvPlan> c =
        zoc::Int8ConvPlan::build_choice(ctx.handle, cs, p.choice(), kWorkspaceLimit, tag.c_str());
    if (c.ok()) return c;
    std::printf("  %s: engine at batch %d: %s; heuristics' choice instead\n", tag.c_str(), check_n,
                c.error().message.c_str());
    return build_int8(ctx, &cs, 0, tag + "_check");
  };
  ZOC_ASSIGN_OR_RETURN(zoc::Int8ConvPlan cp, build());
  ZOC_TRY(bind_int8(&cp, d, tag.c_str()));
  return check_int8(ctx, cp, *d, tag.c_str());
}

// The int8 graph of shape `s` at the timed batch: engines, check, timings, into *row.
Status run_int8(Ctx& ctx, const Shape& s, bool residual, Row* row) {
  const Options& o = ctx.opt;
  Int8Data d;
  d.spec = int8_spec(s, o.batch, residual, true);
  d.c_real = s.c;
  ZOC_TRY(make_int8_data(&d, false));
  const std::string tag = row->name + "_int8";
  for (int e = 0; e < o.engines; ++e) {
    Expected<zoc::Int8ConvPlan> p = build_int8(ctx, &d.spec, e, tag);
    if (!p.ok() && e == 0) return p.error();
    if (!p.ok()) {
      std::printf("  %s: no engine #%d: %.300s\n", tag.c_str(), e, p.error().message.c_str());
      break;
    }
    ZOC_TRY(bind_int8(&*p, &d, tag.c_str()));
    if (e == 0 && o.check_batch > 0) {
      Expected<CheckResult> r = check_engine(ctx, &d, *p, tag);
      if (!r.ok()) {
        row->check = "error";
        std::printf("  %s: check FAILED: %s\n", tag.c_str(), r.error().message.c_str());
      } else {
        row->check = "max " + std::to_string(r->max_diff) +
                     (r->differ ? " (" + std::to_string(r->differ) + " differ)" : std::string());
        std::printf(
            "  %s: check at batch %d vs CPU (%s): max |diff| %d, %llu of %llu bytes "
            "differ; %llu saturated; per rule: %s\n",
            tag.c_str(), std::min(o.check_batch, o.batch),
            zoc::requant::rounding_name(ctx.rounding), r->max_diff, (unsigned long long)r->differ,
            (unsigned long long)r->total, (unsigned long long)r->saturated,
            matches_text(*r).c_str());
        if (!r->examples.empty()) std::printf("  %s: e.g.%s\n", tag.c_str(), r->examples.c_str());
      }
      ZOC_TRY(bind_int8(&*p, &d, tag.c_str()));
    }
    auto t = probe::time_runs([&] { return p->run(ctx.handle, tag.c_str()); }, o.warmup, o.iters);
    if (!t.ok()) return t.error();
    std::printf("  %s: engine #%d median %.4f ms, mean %.4f ms%s\n", tag.c_str(), e, t->first,
                t->second, e ? " (output not checked)" : "");
    if (e == 0) row->ms8 = t->first;
    row->ms8_best = row->ms8_best < 0 ? t->first : std::min(row->ms8_best, t->first);
  }
  return Status();
}

// The fp16 graph of shape `s` exactly as zoc builds it (FusedConvPlan): engine, timing.
Status run_fp16(Ctx& ctx, const Shape& s, bool residual, Row* row) {
  const Options& o = ctx.opt;
  zoc::FusedConvSpec f{};
  f.n = o.batch, f.c = s.c_fp16, f.h = f.w = s.hw, f.k = s.k, f.r = f.s = s.r;
  f.pad_h = f.pad_w = s.r / 2, f.stride_h = f.stride_w = s.stride, f.dil_h = f.dil_w = 1;
  f.out_h = f.out_w = s.out(), f.residual = residual, f.relu = true;
  f.io_type = CUDNN_DATA_HALF, f.nhwc = true;
  const std::string tag = row->name + "_fp16";
  const uint64_t nx = uint64_t(f.n) * f.h * f.w * f.c, ny = uint64_t(f.n) * f.out_h * f.out_w * f.k;
  const uint64_t nw = uint64_t(f.k) * f.r * f.s * f.c;
  ZOC_ASSIGN_OR_RETURN(DeviceBuffer x, DeviceBuffer::allocate(2 * nx, "fp16 x"));
  ZOC_ASSIGN_OR_RETURN(DeviceBuffer w, DeviceBuffer::allocate(2 * nw, "fp16 w"));
  ZOC_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(2 * uint64_t(f.k), "fp16 bias"));
  ZOC_ASSIGN_OR_RETURN(DeviceBuffer y, DeviceBuffer::allocate(2 * ny, "fp16 y"));
  DeviceBuffer z, ws;
  const float w_unit = 1.0f / (64.0f * std::sqrt(float(s.c * f.r * f.s)));
  ZOC_TRY(probe::fill_half(x.get(), nx, kSeedX, -128, 127, f.c, s.c, 1.0f / 64));
  ZOC_TRY(probe::fill_half(w.get(), nw, kSeedW, -127, 127, f.c, s.c, w_unit));
  ZOC_TRY(probe::fill_half(b.get(), uint64_t(f.k), kSeedBias, -20, 20, f.k, f.k, 1.0f / 64));
  if (residual) {
    ZOC_ASSIGN_OR_RETURN(z, DeviceBuffer::allocate(2 * ny, "fp16 z"));
    ZOC_TRY(probe::fill_half(z.get(), ny, kSeedZ, -128, 127, f.k, f.k, 1.0f / 64));
  }
  const auto t0 = std::chrono::steady_clock::now();
  ZOC_ASSIGN_OR_RETURN(zoc::FusedConvPlan p,
                       zoc::FusedConvPlan::build(ctx.handle, f, kWorkspaceLimit, tag.c_str()));
  std::printf("  %s: engine %s, workspace %zu B, plan built in %.2f s\n", tag.c_str(),
              p.engine_name().c_str(), p.workspace_bytes(), seconds_since(t0));
  write_json(ctx, p.plan(), tag);
  if (p.workspace_bytes() > 0) {
    ZOC_ASSIGN_OR_RETURN(ws, DeviceBuffer::allocate(p.workspace_bytes(), "workspace"));
  }
  ZOC_TRY(p.bind(x.get(), w.get(), b.get(), residual ? z.get() : nullptr, y.get(), ws.get(),
                 tag.c_str()));
  ZOC_ASSIGN_OR_RETURN(
      auto t, probe::time_runs([&] { return p.run(ctx.handle, tag.c_str()); }, o.warmup, o.iters));
  std::printf("  %s: median %.4f ms, mean %.4f ms\n", tag.c_str(), t.first, t.second);
  row->ms16 = t.first;
  return Status();
}

void run_shape(Ctx& ctx, const Shape& s, bool residual) {
  Row row;
  row.name = std::string(s.name) + (residual ? "+res" : "");
  row.n = ctx.opt.batch;
  const double outs = double(row.n) * s.out() * s.out() * s.k;
  const double ins = double(row.n) * s.hw * s.hw;
  row.ops8 = 2.0 * outs * s.c_int8 * s.r * s.r;
  row.ops16 = 2.0 * outs * s.c_fp16 * s.r * s.r;
  row.bytes8 = ins * s.c_int8 + double(s.k) * s.r * s.r * s.c_int8 + outs * (residual ? 2 : 1);
  row.bytes16 =
      2 * (ins * s.c_fp16 + double(s.k) * s.r * s.r * s.c_fp16 + outs * (residual ? 2 : 1));
  std::printf("[%s] %dx%d %d->%d (int8 C %d, fp16 C %d) %dx%d stride %d -> %dx%d, batch %d\n",
              row.name.c_str(), s.r, s.r, s.c, s.k, s.c_int8, s.c_fp16, s.hw, s.hw, s.stride,
              s.out(), s.out(), row.n);
  std::fflush(stdout);
  const Status st8 = run_int8(ctx, s, residual, &row);
  if (!st8.ok()) {
    std::printf("  %s_int8 FAILED: %s\n", row.name.c_str(), st8.error().message.c_str());
  }
  std::fflush(stdout);
  if (s.c_fp16 > 0) {
    const Status st16 = run_fp16(ctx, s, residual, &row);
    if (!st16.ok()) {
      std::printf("  %s_fp16 FAILED: %s\n", row.name.c_str(), st16.error().message.c_str());
    }
  }
  std::fflush(stdout);
  ctx.rows.push_back(row);
}

void print_table(const Ctx& ctx) {
  std::printf("\n%-26s %5s %9s %9s %7s %9s %8s %8s %8s  %s\n", "shape", "N", "int8 ms", "fp16 ms",
              "speedup", "i8 best", "i8 TOPS", "i8 GB/s", "f16 GB/s", "int8 check");
  double t8 = 0, t16 = 0;
  for (const Row& r : ctx.rows) {
    auto ms = [](float v) { return v < 0 ? std::string("-") : std::to_string(v).substr(0, 7); };
    auto rate = [](double amount, float v) {
      return v <= 0 ? std::string("-") : std::to_string(int(amount / (v * 1e-3) / 1e9 + 0.5));
    };
    char speed[16] = "-";
    if (r.ms8 > 0 && r.ms16 > 0) {
      std::snprintf(speed, sizeof(speed), "%.2fx", r.ms16 / r.ms8);
      t8 += r.ms8, t16 += r.ms16;
    }
    const std::string tops = r.ms8 > 0 ? std::to_string(r.ops8 / (r.ms8 * 1e-3) / 1e12) : "-";
    std::printf("%-26s %5d %9s %9s %7s %9s %8s %8s %8s  %s\n", r.name.c_str(), r.n,
                ms(r.ms8).c_str(), ms(r.ms16).c_str(), speed, ms(r.ms8_best).c_str(),
                tops.substr(0, 6).c_str(), rate(r.bytes8, r.ms8).c_str(),
                rate(r.bytes16, r.ms16).c_str(), r.check.c_str());
  }
  if (t8 > 0) {
    std::printf("%-26s %5s %9.4f %9.4f %6.2fx  (shapes where both ran)\n", "TOTAL", "", t8, t16,
                t16 / t8);
  }
  std::printf(
      "int8 ms / fp16 ms: median of %d runs after %d warm-up, first engine that "
      "finalized; i8 best: best of the first %d int8 engines. TOPS count executed "
      "(padded) channels. GB/s: least traffic x + w + y (+ z).\n",
      ctx.opt.iters, ctx.opt.warmup, ctx.opt.engines);
}

bool parse_args(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--batch" && has)
      o->batch = std::atoi(argv[++i]);
    else if (a == "--check-batch" && has)
      o->check_batch = std::atoi(argv[++i]);
    else if (a == "--warmup" && has)
      o->warmup = std::atoi(argv[++i]);
    else if (a == "--iters" && has)
      o->iters = std::atoi(argv[++i]);
    else if (a == "--engines" && has)
      o->engines = std::atoi(argv[++i]);
    else if (a == "--only" && has)
      o->only = argv[++i];
    else if (a == "--json-dir" && has)
      o->json_dir = argv[++i];
    else if (a == "--no-residual")
      o->residual = false;
    else
      return false;
  }
  return o->batch >= 1 && o->check_batch >= 0 && o->warmup >= 0 && o->iters >= 1 && o->engines >= 1;
}

// --only a,b: shapes whose name contains any of the comma-separated parts.
bool selected(const Options& o, const char* name) {
  if (o.only.empty()) return true;
  size_t start = 0;
  while (start <= o.only.size()) {
    const size_t end = std::min(o.only.find(',', start), o.only.size());
    const std::string part = o.only.substr(start, end - start);
    if (!part.empty() && std::strstr(name, part.c_str())) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Ctx ctx;
  if (!parse_args(argc, argv, &ctx.opt)) {
    std::fprintf(stderr,
                 "usage: int8_probe [--batch N=256] [--check-batch N=2 (0: none)] [--warmup 10] "
                 "[--iters 50] [--engines E=1] [--only name,part] [--json-dir DIR] "
                 "[--no-residual]\n");
    return 2;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "int8_probe: no CUDA device\n");
    return 1;
  }
  int rt = 0;
  (void)cudaRuntimeGetVersion(&rt);
  std::printf("device: %s (sm_%d%d, %d SMs); CUDA runtime %d; cuDNN %zu (built against %d)\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, rt, cudnnGetVersion(),
              CUDNN_VERSION);
  if (cudnnCreate(&ctx.handle) != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "int8_probe: cudnnCreate failed\n");
    return 1;
  }
  if (selected(ctx.opt, "rounding_probe")) rounding_probe(ctx);
  for (const Shape& s : kShapes) {
    if (!selected(ctx.opt, s.name)) continue;
    run_shape(ctx, s, false);
    if (s.residual && ctx.opt.residual) run_shape(ctx, s, true);
  }
  print_table(ctx);
  int ran = 0;
  for (const Row& r : ctx.rows) ran += (r.ms8 > 0) + (r.ms16 > 0);
  (void)cudnnDestroy(ctx.handle);
  std::printf("int8_probe: %d timings from %zu shapes\n", ran, ctx.rows.size());
  return ran > 0 ? 0 : 1;
}
