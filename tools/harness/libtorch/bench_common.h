// What the two LibTorch runners of the benchmark harness share: arguments, weights, input,
// the timed sweep over batch sizes, and the JSON they print.
//
// The study this project follows ran ResNet-50 from C++ in two ways, a TorchScript archive
// through torch::jit::load (ts_runner.cpp) and the network written against the torch::nn API
// (resnet50_nn.cpp). For their numbers to stand next to zoc's and the Python rows they must be
// fed the same weights.safetensors and the same seeded input, and be timed the same way: CUDA
// events around each forward after warm-up, at least `iters` forwards or `max_time_ms` of them,
// host CPU time spent inside each forward call, the input copy from pageable and from pinned
// memory, and the first rows of the output written as .npy for the accuracy check. Weights are
// read with zoc's own safetensors reader (runtime/zoc, header-only C++17), which validates the
// file; every parameter and buffer must be found with its shape and every tensor used.
//
// Only APIs present in both LibTorch 1.13 (Debian, where this is compile-checked and run on the
// CPU) and 2.11 (the GPU machine) are used. CUDA events come from the CUDA runtime on the legacy
// default stream, which is PyTorch's current stream unless a program changes it; built without
// HARNESS_CUDA, or run with --device cpu, the timer is the host clock around a synchronous call.
#pragma once

#include <time.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if HARNESS_CUDA
#include <cuda_runtime.h>
#endif

#include "zoc/io/npy.h"
#include "zoc/io/safetensors.h"

namespace bench {

struct Args {
  std::string model_file, weights, input, json, output_prefix;
  std::string precision = "fp32", device = "cuda";
  std::vector<int> batches = {1};
  bool channels_last = false, freeze = false, optimize = false;
  int warmup = 10, iters = 50, max_time_ms = 1000, h2d_reps = 5, num_classes = 1000;
};

[[noreturn]] inline void usage_error(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::exit(2);
}

inline int to_int(const std::string& flag, const std::string& text, int lo, int hi) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi) {
    usage_error("bad value '" + text + "' for " + flag);
  }
  return static_cast<int>(v);
}

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--channels-last") {
      a.channels_last = true;
      continue;
    }
    if (flag == "--freeze") {
      a.freeze = true;
      continue;
    }
    if (flag == "--optimize") {  // torch::jit::optimize_for_inference (freezes first)
      a.optimize = true;
      continue;
    }
    if (i + 1 >= argc) usage_error("option " + flag + " needs a value (or is unknown)");
    const std::string v = argv[++i];
    if (flag == "--model")
      a.model_file = v;
    else if (flag == "--weights")
      a.weights = v;
    else if (flag == "--input")
      a.input = v;
    else if (flag == "--json")
      a.json = v;
    else if (flag == "--output-prefix")
      a.output_prefix = v;
    else if (flag == "--precision")
      a.precision = v;
    else if (flag == "--device")
      a.device = v;
    else if (flag == "--warmup")
      a.warmup = to_int(flag, v, 0, 100000);
    else if (flag == "--iters")
      a.iters = to_int(flag, v, 1, 1000000);
    else if (flag == "--max-time-ms")
      a.max_time_ms = to_int(flag, v, 0, 3600000);
    else if (flag == "--h2d-reps")
      a.h2d_reps = to_int(flag, v, 0, 1000);
    else if (flag == "--num-classes")
      a.num_classes = to_int(flag, v, 1, 1 << 20);
    else if (flag == "--batches") {
      a.batches.clear();
      size_t start = 0;
      while (start <= v.size()) {
        size_t comma = std::min(v.find(',', start), v.size());
        a.batches.push_back(to_int(flag, v.substr(start, comma - start), 1, 1 << 16));
        start = comma + 1;
      }
    } else {
      usage_error("unknown option " + flag);
    }
  }
  if (a.weights.empty() || a.input.empty() || a.json.empty()) {
    usage_error("--weights, --input and --json are required");
  }
  if (a.precision != "fp32" && a.precision != "tf32" && a.precision != "fp16" &&
      a.precision != "bf16") {
    usage_error("--precision must be fp32, tf32, fp16 or bf16");
  }
  if (a.device != "cuda" && a.device != "cpu") usage_error("--device must be cuda or cpu");
  return a;
}

inline torch::ScalarType dtype_of(const Args& a) {
  if (a.precision == "fp16") return torch::kHalf;
  if (a.precision == "bf16") return torch::kBFloat16;
  return torch::kFloat;
}

// cuDNN autotuning on (the frameworks' best case, as the Python rows); TF32 only for "tf32".
inline void set_backend_flags(const Args& a) {
  at::globalContext().setBenchmarkCuDNN(true);
  at::globalContext().setAllowTF32CuDNN(a.precision == "tf32");
  at::globalContext().setAllowTF32CuBLAS(a.precision == "tf32");
}

// Copies the file's tensors into `targets` (name -> the module's own tensor, updated in place).
inline void load_weights(const std::vector<std::pair<std::string, torch::Tensor>>& targets,
                         const std::string& path) {
  auto file = zoc::st::File::open(path);
  if (!file.ok()) throw std::runtime_error(file.error().message);
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (const auto& [name, target] : targets) {
    if (!target.defined()) continue;
    const zoc::st::TensorView* view = file->find(name);
    if (!view) throw std::runtime_error(path + ": no tensor '" + name + "' for the model");
    if (view->shape != target.sizes().vec()) {
      throw std::runtime_error(path + ": tensor '" + name + "' has shape " +
                               zoc::st::detail::shape_string(view->shape) + ", the model wants " +
                               torch::str(target.sizes()));
    }
    const size_t n = view->numel();
    if (target.scalar_type() == torch::kLong) {
      if (view->dtype != zoc::st::DType::I64) {
        throw std::runtime_error(path + ": tensor '" + name + "' must be I64");
      }
      std::vector<int64_t> values(n);
      if (n) std::memcpy(values.data(), view->data, n * sizeof(int64_t));
      target.copy_(torch::from_blob(values.data(), target.sizes(), torch::kLong));
    } else {
      std::vector<float> values(n);
      if (zoc::Status s = zoc::st::to_float32(*view, values.data(), n); !s.ok()) {
        throw std::runtime_error(s.error().message);
      }
      target.copy_(torch::from_blob(values.data(), target.sizes(), torch::kFloat));
    }
    used.insert(name);
  }
  for (const auto& view : file->tensors()) {
    if (!used.count(view.name)) {
      throw std::runtime_error(path + ": tensor '" + view.name + "' matches nothing in the model");
    }
  }
}

// The distinct samples of the seeded input, [S, C, H, W] fp32 on the host.
inline torch::Tensor load_samples(const std::string& path) {
  std::vector<int64_t> shape;
  auto data = zoc::npy::read_float32(path, &shape);
  if (!data.ok()) throw std::runtime_error(data.error().message);
  if (shape.size() != 4 || shape[0] < 1) throw std::runtime_error(path + ": not [N, C, H, W]");
  return torch::from_blob(data->data(), shape, torch::kFloat).clone();
}

// The first `batch` samples, repeating them in order when the batch is larger.
inline torch::Tensor tile(const torch::Tensor& samples, int batch) {
  auto index = torch::arange(batch, torch::kLong).remainder(samples.size(0));
  return samples.index_select(0, index).contiguous();
}

inline double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline double thread_cpu_us() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0.0;
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

// CUDA events on the legacy default stream, or the host clock for the CPU.
class Timer {
 public:
  explicit Timer(bool cuda) : cuda_(cuda) {
#if HARNESS_CUDA
    if (cuda_) {
      check(cudaEventCreate(&start_), "cudaEventCreate");
      check(cudaEventCreate(&stop_), "cudaEventCreate");
    }
#else
    if (cuda_) throw std::runtime_error("built without HARNESS_CUDA: --device cuda unavailable");
#endif
  }
  ~Timer() {
#if HARNESS_CUDA
    if (start_) (void)cudaEventDestroy(start_);
    if (stop_) (void)cudaEventDestroy(stop_);
#endif
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start() {
#if HARNESS_CUDA
    if (cuda_) return check(cudaEventRecord(start_, nullptr), "cudaEventRecord");
#endif
    t0_ = std::chrono::steady_clock::now();
  }
  double stop_ms() {
#if HARNESS_CUDA
    if (cuda_) {
      check(cudaEventRecord(stop_, nullptr), "cudaEventRecord");
      check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      return ms;
    }
#endif
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_)
        .count();
  }

 private:
#if HARNESS_CUDA
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
      throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
#endif
  bool cuda_;
  std::chrono::steady_clock::time_point t0_;
};

// A JSON object built field by field, on one line.
class Json {
 public:
  Json& str(const char* key, const std::string& v) { return raw(key, quote(v)); }
  Json& num(const char* key, double v) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.9g", v);
    return raw(key, std::isfinite(v) ? buf : "null");
  }
  Json& seconds(const char* key, double v) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.6f", v);
    return raw(key, buf);
  }
  Json& boolean(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  Json& list(const char* key, const std::vector<double>& v) {
    std::string s = "[";
    char buf[40];
    for (size_t i = 0; i < v.size(); ++i) {
      std::snprintf(buf, sizeof(buf), "%.7g", v[i]);
      s += (i ? ", " : "") + std::string(buf);
    }
    return raw(key, s + "]");
  }
  Json& object(const char* key, const Json& v) { return raw(key, v.text()); }
  Json& objects(const char* key, const std::vector<Json>& items) {
    std::string s = "[";
    for (size_t i = 0; i < items.size(); ++i) s += (i ? ",\n  " : "\n  ") + items[i].text();
    return raw(key, s + "]");
  }
  std::string text() const { return "{" + body_ + "}"; }
  void write(const std::string& path) const {  // atomically: a killed run leaves the last one
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp) << text() << "\n";
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      throw std::runtime_error("cannot write " + path);
    }
  }

 private:
  Json& raw(const char* key, const std::string& v) {
    body_ += (body_.empty() ? "" : ", ") + quote(key) + ": " + v;
    return *this;
  }
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
    return out + "\"";
  }
  std::string body_;
};

using Forward = std::function<torch::Tensor(const torch::Tensor&)>;

// The message without LibTorch's C++ backtrace, at most 2000 characters.
inline std::string error_text(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  return text.substr(0, 2000);
}

// One batch size: correctness output, warm-up, timed loop, input copies. Throws on failure.
inline void measure(const Args& a, const Forward& forward, const torch::Tensor& samples, int batch,
                    Json* point) {
  const bool cuda = a.device == "cuda";
  const torch::Device device(cuda ? torch::kCUDA : torch::kCPU);
  auto sync = [&] {
    if (cuda) torch::cuda::synchronize();
  };
  torch::NoGradGuard no_grad;
  const torch::Tensor host = tile(samples, batch);
  torch::Tensor x = host.to(device).to(dtype_of(a));
  if (a.channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);

  torch::Tensor y = forward(x).to(torch::kFloat);  // the accuracy rows, before any timing
  sync();
  if (!torch::isfinite(y).all().item<bool>()) throw std::runtime_error("non-finite output");
  if (!a.output_prefix.empty()) {
    const int64_t rows = std::min<int64_t>(batch, samples.size(0));
    torch::Tensor first = y.narrow(0, 0, rows).cpu().contiguous();
    const std::string path = a.output_prefix + "_b" + std::to_string(batch) + ".npy";
    zoc::Status s = zoc::npy::write_float32(path, first.data_ptr<float>(), first.sizes().vec());
    if (!s.ok()) throw std::runtime_error(s.error().message);
    point->str("output_npy", path);
  }

  const auto warm0 = std::chrono::steady_clock::now();
  for (int i = 0; i < a.warmup; ++i) {  // the profiling executor settles in the first runs
    forward(x);
    sync();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warm0).count();
    if (a.max_time_ms > 0 && i >= 2 && ms >= 0.5 * a.max_time_ms) break;
  }
  Timer timer(cuda);
  std::vector<double> ms, cpu_us;
  double total = 0;
  const double t_start = epoch_seconds();
  for (int i = 0; i < a.iters; ++i) {
    if (a.max_time_ms > 0 && i >= std::min(a.iters, 5) && total >= a.max_time_ms) break;
    timer.start();
    const double c0 = thread_cpu_us();
    torch::Tensor out = forward(x);
    cpu_us.push_back(thread_cpu_us() - c0);
    ms.push_back(timer.stop_ms());
    total += ms.back();
  }
  point->seconds("t_start", t_start).seconds("t_end", epoch_seconds());
  point->list("iter_ms", ms).list("iter_host_cpu_us", cpu_us);

  if (cuda && a.h2d_reps > 0) {  // the fp32 input batch, as the caller would hold it
    torch::Tensor pinned = host.pin_memory();
    std::vector<double> pageable_ms, pinned_ms;
    for (int i = 0; i <= a.h2d_reps; ++i) {
      timer.start();
      torch::Tensor d1 = host.to(device);
      const double t1 = timer.stop_ms();
      timer.start();
      torch::Tensor d2 = pinned.to(torch::TensorOptions().device(device), /*non_blocking=*/true);
      const double t2 = timer.stop_ms();
      if (i > 0) {
        pageable_ms.push_back(t1);
        pinned_ms.push_back(t2);
      }
    }
    std::sort(pageable_ms.begin(), pageable_ms.end());
    std::sort(pinned_ms.begin(), pinned_ms.end());
    Json h;
    h.num("bytes", static_cast<double>(host.numel() * 4)).num("reps", a.h2d_reps);
    h.num("pageable_ms", pageable_ms[pageable_ms.size() / 2]);
    h.num("pinned_ms", pinned_ms[pinned_ms.size() / 2]);
    point->object("h2d", h);
  }
}

// The sweep: one point per batch size, the JSON rewritten after each; an out-of-memory error
// ends the sweep with an "oom" point, any other error with an "error" point (exit 1).
inline int sweep(const Args& a, const Forward& forward, Json head) {
  const torch::Tensor samples = load_samples(a.input);
  std::vector<Json> points;
  int rc = 0;
  for (int batch : a.batches) {
    Json point;
    point.num("batch", batch).seconds("t_point_start", epoch_seconds());
    try {
      measure(a, forward, samples, batch, &point);
      point.str("status", "ok");
      std::printf("batch %d: done\n", batch);
    } catch (const std::exception& e) {
      const std::string what = error_text(e);
      const bool oom = what.find("out of memory") != std::string::npos;
      point.str("status", oom ? "oom" : "error").str("error", what);
      std::printf("batch %d: %s\n", batch, oom ? "out of memory" : what.substr(0, 300).c_str());
      rc = oom ? 0 : 1;
      points.push_back(point);
      break;
    }
    std::fflush(stdout);
    points.push_back(point);
    Json doc = head;
    doc.objects("points", points).write(a.json);
  }
  Json doc = head;
  doc.objects("points", points).write(a.json);
  return rc;
}

// The fields every runner's JSON starts with.
inline Json head_json(const Args& a, const char* runner, double setup_ms) {
  Json j;
  j.str("runner", runner).str("precision", a.precision).str("device", a.device);
  j.boolean("channels_last", a.channels_last).boolean("freeze", a.freeze);
  j.str("torch_version", TORCH_VERSION).num("setup_ms", setup_ms);
  return j;
}

}  // namespace bench
