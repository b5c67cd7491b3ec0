// The command-line driver shared by every generated model's main.cpp.
//
// Generated code is a library: it returns errors and never prints. Something still has to load
// an input, run the model, prove the output is sane, and measure it in the same way for every
// model and precision, and that is this header, the only code in a generated folder that prints
// or chooses an exit code (0 ok, 1 the model or the GPU failed, 2 bad command line). It checks
// correctness before speed: the output buffer is poisoned with NaN before each of two
// correctness runs, every value must come back finite, and the two runs must agree bit for bit
// (a difference means a race or an unwritten element; it is reported as a warning because it
// is not a wrong answer by itself). Then it times `iters` forwards after `warmup`, each with its
// own CUDA events, and prints the median and tails. Hand-written argument parsing keeps the
// folder free of dependencies. The model class is a template parameter; see run_main.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "zoc/device.h"
#include "zoc/expected.h"
#include "zoc/npy.h"
#include "zoc/timing.h"

namespace zoc {
namespace harness {

// The largest batch the harness accepts (far above any real use; sizes stay small integers).
constexpr int kMaxBatch = 1 << 16;

struct Args {
  std::string weights, input, output, json;
  uint64_t seed = 0;
  int batch = 1;
  bool batch_given = false;
  int max_batch = 0;  // 0: the batch
  int top = 5, warmup = 10, iters = 50;
  long long workspace_mb = -1;  // -1: the model's default
  bool graph = false, strict = false, help = false;
};

inline void print_usage(const char* name, const char* precision, int c, int h, int w, int outputs) {
  std::printf(
      "usage: %s [options]\n"
      "Runs the generated %s model (%s, input [N, %d, %d, %d] fp32 NCHW, output [N, %d]),\n"
      "checks that every output is finite, prints the top-k classes and times forward().\n"
      "  --weights PATH      safetensors with PyTorch state_dict names (default: seeded init)\n"
      "  --seed N            seed of the default weights and of the random input (default 0)\n"
      "  --input PATH        fp32 .npy [N, %d, %d, %d] (default: seeded N(0,1) input)\n"
      "  --batch N           samples to run (default 1; with --input its first N, default all)\n"
      "  --max-batch N       maximum batch the model is built for (default: the batch)\n"
      "  --output PATH       write the fp32 logits [N, %d] as .npy\n"
      "  --top K             classes printed per sample, first 8 samples (default 5, 0: none)\n"
      "  --warmup N          untimed forwards before timing (default 10)\n"
      "  --iters N           timed forwards, CUDA events around each (default 50, 0: none)\n"
      "  --graph             run forward as a CUDA graph (Options.cuda_graph)\n"
      "  --workspace-mb N    cap the cuDNN workspace at N MiB\n"
      "  --strict            reject weights holding NaN or Inf instead of warning\n"
      "  --json PATH         write model, batch, latency and memory figures as JSON\n"
      "  --help              this text\n"
      "Exit status: 0 ok, 1 model or GPU failure or non-finite output, 2 bad command line.\n",
      name, name, precision, c, h, w, outputs, c, h, w, outputs);
}

// A whole-string decimal integer in [lo, hi], else false.
inline bool parse_integer(const std::string& text, long long lo, long long hi, long long* out) {
  if (text.empty() || text.size() > 20) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

inline bool parse_u64(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;  // strtoull accepts "-1"
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  *out = v;
  return true;
}

// Empty on success, else the message. Accepts "--flag value" and "--flag=value".
inline std::string parse_args(int argc, char** argv, int outputs, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    bool has_inline_value = false;
    if (size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
      has_inline_value = true;
    }
    if (flag == "--graph" || flag == "--strict" || flag == "--help" || flag == "-h") {
      if (has_inline_value) return "option " + flag + " takes no value";
      if (flag == "--graph") a->graph = true;
      if (flag == "--strict") a->strict = true;
      if (flag == "--help" || flag == "-h") a->help = true;
      continue;
    }
    static const char* const kValued[] = {"--weights",   "--seed",         "--input", "--batch",
                                          "--max-batch", "--output",       "--top",   "--warmup",
                                          "--iters",     "--workspace-mb", "--json"};
    if (std::find_if(std::begin(kValued), std::end(kValued),
                     [&](const char* k) { return flag == k; }) == std::end(kValued)) {
      return "unknown option '" + flag + "'";
    }
    if (!has_inline_value) {
      if (i + 1 >= argc) return "option " + flag + " needs a value";
      value = argv[++i];
    }
    long long n = 0;
    auto integer = [&](long long lo, long long hi, int* out) {
      if (!parse_integer(value, lo, hi, &n)) return false;
      *out = static_cast<int>(n);
      return true;
    };
    auto bad_number = [&](const std::string& range) {
      return "bad value '" + value + "' for " + flag + " (expected an integer in " + range + ")";
    };
    const std::string batch_range = "1.." + std::to_string(kMaxBatch);
    if (flag == "--weights" || flag == "--input" || flag == "--output" || flag == "--json") {
      if (value.empty()) return "option " + flag + " needs a non-empty path";
      (flag == "--weights"  ? a->weights
       : flag == "--input"  ? a->input
       : flag == "--output" ? a->output
                            : a->json) = value;
    } else if (flag == "--seed") {
      if (!parse_u64(value, &a->seed)) return bad_number("0..18446744073709551615");
    } else if (flag == "--batch") {
      if (!integer(1, kMaxBatch, &a->batch)) return bad_number(batch_range);
      a->batch_given = true;
    } else if (flag == "--max-batch") {
      if (!integer(1, kMaxBatch, &a->max_batch)) return bad_number(batch_range);
    } else if (flag == "--top") {
      if (!integer(0, outputs, &a->top)) return bad_number("0.." + std::to_string(outputs));
    } else if (flag == "--warmup") {
      if (!integer(0, 1000000, &a->warmup)) return bad_number("0..1000000");
    } else if (flag == "--iters") {
      if (!integer(0, 1000000, &a->iters)) return bad_number("0..1000000");
    } else if (flag == "--workspace-mb") {
      if (!parse_integer(value, 0, 1 << 24, &a->workspace_mb)) return bad_number("0..16777216");
    }
  }
  return "";
}

// Standard-normal floats from a fixed generator: std::mt19937_64's output is specified exactly
// by the C++ standard and the Box-Muller transform below uses only <cmath>, so the same seed
// gives the same input on every platform (std::normal_distribution's does not). The generator
// is seeded with seed * 16 + 2, export.py's convention for "input" streams; the values are not
// PyTorch's (pass --input for those).
inline std::vector<float> standard_normal(uint64_t seed, size_t count) {
  std::mt19937_64 rng(seed * 16 + 2);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };  // [0, 1)
  std::vector<float> out(count);
  const double two_pi = 6.283185307179586476925286766559;
  for (size_t i = 0; i < count; i += 2) {
    const double u1 = 1.0 - uniform();  // (0, 1]: log(u1) is finite
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(two_pi * u2));
    if (i + 1 < count) out[i + 1] = static_cast<float>(r * std::sin(two_pi * u2));
  }
  return out;
}

inline Error cuda_error(const char* what, cudaError_t e) {
  (void)cudaGetLastError();
  return Error{std::string(what) + " failed: " + cudaGetErrorName(e) + " (" +
               cudaGetErrorString(e) + ")"};
}

inline int fail(const char* name, const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", name, message.c_str());
  return 1;
}

// A non-blocking stream (CUDA graph capture is not allowed on the legacy default stream).
class Stream {
 public:
  Stream() = default;
  ~Stream() {
    if (stream_) (void)cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Status create() {
    cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      stream_ = nullptr;
      return cuda_error("cudaStreamCreateWithFlags", e);
    }
    return Status();
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// "NVIDIA H200 (sm_90, device 0)", or why there is no usable GPU.
inline Status describe_gpu(std::string* out) {
  int count = 0, device = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    return cuda_error("looking for a CUDA device: cudaGetDeviceCount", e);
  }
  if (count == 0) return Error{"no CUDA device found"};
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess)
    return cuda_error("cudaGetDevice", e);
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess) {
    return cuda_error("cudaGetDeviceProperties", e);
  }
  *out = std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", device " + std::to_string(device) + ")";
  return Status();
}

// Empty when all values are finite; else how many are NaN/Inf and where the first one is.
inline std::string non_finite_report(const std::vector<float>& y, int outputs) {
  size_t nan = 0, inf = 0, first = y.size();
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::isfinite(y[i])) continue;
    (std::isnan(y[i]) ? nan : inf) += 1;
    first = std::min(first, i);
  }
  if (nan + inf == 0) return "";
  return std::to_string(nan + inf) + " of " + std::to_string(y.size()) +
         " outputs are not finite (" + std::to_string(nan) + " NaN, " + std::to_string(inf) +
         " Inf; first at sample " + std::to_string(first / outputs) + ", class " +
         std::to_string(first % outputs) +
         "); NaN everywhere usually means the output was never written (it is poisoned before "
         "the run)";
}

// True if equal bit for bit; otherwise prints a warning and returns false.
inline bool warn_if_different(const std::vector<float>& a, const std::vector<float>& b,
                              const char* which) {
  if (a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) {
    return true;
  }
  size_t differ = 0;
  double max_diff = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) == 0) continue;
    ++differ;
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  std::printf(
      "warning: %s differs from the first in %zu of %zu outputs (max abs diff %.3g): "
      "nondeterministic algorithms, a race, or an element not rewritten every run\n",
      which, differ, a.size(), max_diff);
  return false;
}

// "sample 0: top-5  713:1.0754  952:1.0223 ..." for the first 8 samples; ties by lower index.
inline void print_top_k(const std::vector<float>& y, int batch, int outputs, int k) {
  if (k <= 0) return;
  k = std::min(k, outputs);
  std::vector<int> index(static_cast<size_t>(outputs));
  for (int s = 0; s < std::min(batch, 8); ++s) {
    const float* row = y.data() + static_cast<size_t>(s) * outputs;
    for (int i = 0; i < outputs; ++i) index[i] = i;
    std::partial_sort(index.begin(), index.begin() + k, index.end(),
                      [&](int a, int b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    std::printf("sample %d: top-%d ", s, k);
    for (int i = 0; i < k; ++i) std::printf(" %d:%.4f", index[i], row[index[i]]);
    std::printf("\n");
  }
  if (batch > 8) std::printf("(%d more samples not shown)\n", batch - 8);
}

// A flat JSON object written atomically; strings escaped, non-finite numbers as null.
class JsonWriter {
 public:
  JsonWriter& field(const char* key, const std::string& v) { return raw(key, quote(v)); }
  JsonWriter& field(const char* key, const char* v) { return raw(key, quote(v)); }
  JsonWriter& field(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonWriter& field(const char* key, int v) { return raw(key, std::to_string(v)); }
  JsonWriter& field(const char* key, uint64_t v) { return raw(key, std::to_string(v)); }
  JsonWriter& field(const char* key, double v) { return raw(key, number(v)); }
  JsonWriter& latency(const char* key, const LatencyStats& s) {
    if (s.count == 0) return raw(key, "null");
    return raw(key, "{\"median\": " + number(s.median) + ", \"p90\": " + number(s.p90) +
                        ", \"p99\": " + number(s.p99) + ", \"min\": " + number(s.min) +
                        ", \"max\": " + number(s.max) + ", \"mean\": " + number(s.mean) +
                        ", \"count\": " + std::to_string(s.count) + "}");
  }
  JsonWriter& argmax(const char* key, const std::vector<float>& y, int batch, int outputs) {
    std::string list = "[";
    for (int s = 0; s < batch; ++s) {
      const float* row = y.data() + static_cast<size_t>(s) * outputs;
      list += (s ? ", " : "") + std::to_string(std::max_element(row, row + outputs) - row);
    }
    return raw(key, list + "]");
  }
  Status write(const std::string& path) const {
    const std::string text = "{\n" + body_ + "\n}\n";
    return st::detail::write_file_atomic(path, {{text.data(), text.size()}});
  }

 private:
  JsonWriter& raw(const char* key, const std::string& value) {
    body_ += (body_.empty() ? "  " : ",\n  ") + quote(key) + ": " + value;
    return *this;
  }
  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.7g", v);
    return buf;
  }
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
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

// The Options type is whatever Model::create takes third, so this header names no namespace of
// the generated code.
template <class F>
struct CreateTraits;
template <class R, class A, class B, class O>
struct CreateTraits<R (*)(A, B, O)> {
  using Options = std::decay_t<O>;
};

// The input batch on the host: read from --input, or seeded random.
template <class Model>
Status load_input(const Args& args, int* batch, std::vector<float>* input, std::string* source) {
  const int64_t chw = int64_t{Model::kInputC} * Model::kInputH * Model::kInputW;
  if (args.batch_given && args.batch * chw > (int64_t{1} << 32)) {  // 16 GiB of fp32
    return Error{"--batch " + std::to_string(args.batch) + " would need " +
                 detail::bytes_text(static_cast<size_t>(args.batch * chw) * 4) + " of input"};
  }
  if (args.input.empty()) {
    *batch = args.batch;
    *input = standard_normal(args.seed, static_cast<size_t>(*batch) * static_cast<size_t>(chw));
    *source = "seeded N(0,1), seed " + std::to_string(args.seed);
    return Status();
  }
  std::vector<int64_t> shape;
  auto data = npy::read_float32(args.input, &shape);
  if (!data.ok()) return data.error();
  const std::vector<int64_t> want = {Model::kInputC, Model::kInputH, Model::kInputW};
  if (shape.size() != 4 || !std::equal(want.begin(), want.end(), shape.begin() + 1) ||
      shape[0] < 1) {
    return Error{args.input + ": shape " + st::detail::shape_string(shape) +
                 " does not match the model's input [N, " + std::to_string(Model::kInputC) + ", " +
                 std::to_string(Model::kInputH) + ", " + std::to_string(Model::kInputW) +
                 "] with N >= 1"};
  }
  if (args.batch_given && args.batch > shape[0]) {
    return Error{"--batch " + std::to_string(args.batch) + " but " + args.input + " holds only " +
                 std::to_string(shape[0]) + " samples"};
  }
  *batch = args.batch_given ? args.batch : static_cast<int>(std::min<int64_t>(shape[0], kMaxBatch));
  *input = std::move(*data);
  input->resize(static_cast<size_t>(*batch) * static_cast<size_t>(chw));  // first `batch` samples
  *source = args.input;
  return Status();
}

// A copy ordered on the model's stream, complete on return. Plain cudaMemcpy would be ordered on
// the legacy default stream, which a non-blocking stream does not wait for.
inline Status copy(void* dst, const void* src, size_t bytes, cudaStream_t stream,
                   const char* what) {
  if (cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
      e != cudaSuccess) {
    return cuda_error(what, e);
  }
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) return cuda_error(what, e);
  return Status();
}

// Runs forward into a poisoned output buffer and copies the result back.
template <class Model>
Status checked_forward(Model& model, const float* input, DeviceBuffer& output, int batch,
                       cudaStream_t stream, std::vector<float>* host) {
  if (cudaError_t e = cudaMemsetAsync(output.get(), 0xFF, output.size(), stream);
      e != cudaSuccess) {
    return cuda_error("cudaMemsetAsync(output poison)", e);
  }
  Status s = model.forward(input, output.as<float>(), batch, stream);
  if (!s.ok()) return Error{"forward: " + s.error().message};
  host->resize(output.size() / sizeof(float));
  return copy(host->data(), output.get(), output.size(), stream, "copying the output back");
}

// Times `iters` forwards after `warmup`, one event pair each.
template <class Model>
Expected<std::vector<float>> time_forward(Model& model, const float* input, float* output,
                                          int batch, int warmup, int iters, cudaStream_t stream) {
  for (int i = 0; i < warmup; ++i) {
    Status s = model.forward(input, output, batch, stream);
    if (!s.ok()) return Error{"forward (warm-up " + std::to_string(i) + "): " + s.error().message};
  }
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return cuda_error("cudaStreamSynchronize after warm-up", e);
  }
  std::vector<float> ms;
  ms.reserve(static_cast<size_t>(iters));
  EventTimer timer;
  for (int i = 0; i < iters; ++i) {
    if (Status s = timer.start(stream); !s.ok()) return s.error();
    Status s = model.forward(input, output, batch, stream);
    if (!s.ok()) return Error{"forward (timed " + std::to_string(i) + "): " + s.error().message};
    auto t = timer.stop_ms(stream);
    if (!t.ok()) return t.error();
    ms.push_back(*t);
  }
  return ms;
}

template <class Model>
int run(const Args& args) {
  using Options = typename CreateTraits<decltype(&Model::create)>::Options;
  const char* name = Model::kName;

  std::string gpu;
  if (Status s = describe_gpu(&gpu); !s.ok()) return fail(name, s.error().message);

  int batch = 0;
  std::vector<float> input;
  std::string input_source;
  if (Status s = load_input<Model>(args, &batch, &input, &input_source); !s.ok()) {
    return fail(name, s.error().message);
  }
  const int max_batch = args.max_batch > 0 ? args.max_batch : batch;
  if (max_batch < batch) {
    std::fprintf(stderr, "%s: --max-batch %d is smaller than the batch %d\n", name, max_batch,
                 batch);
    return 2;
  }

  std::printf("%s (%s) on %s: batch %d, max batch %d, cuda graph %s, weights %s, input %s\n", name,
              Model::kPrecision, gpu.c_str(), batch, max_batch, args.graph ? "on" : "off",
              args.weights.empty() ? ("seeded init, seed " + std::to_string(args.seed)).c_str()
                                   : args.weights.c_str(),
              input_source.c_str());
  std::fflush(stdout);

  Stream stream;
  if (Status s = stream.create(); !s.ok()) return fail(name, s.error().message);

  Options options;
  options.cuda_graph = args.graph;
  if (args.workspace_mb >= 0)
    options.workspace_limit = static_cast<size_t>(args.workspace_mb) << 20;
  options.seed = args.seed;
  options.strict = args.strict;
  const auto t0 = std::chrono::steady_clock::now();
  auto created = Model::create(args.weights, max_batch, options);
  if (!created.ok()) return fail(name, created.error().message);
  std::unique_ptr<Model> model = std::move(created).value();
  if (!model || model->max_batch() != max_batch) {
    return fail(name, "create returned no model, or one for another maximum batch");
  }
  const double create_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  const size_t input_bytes = input.size() * sizeof(float);
  const size_t output_count = static_cast<size_t>(batch) * static_cast<size_t>(Model::kOutputs);
  auto d_input = DeviceBuffer::allocate(input_bytes, "the harness's input");
  if (!d_input.ok()) return fail(name, d_input.error().message);
  auto d_output = DeviceBuffer::allocate(output_count * sizeof(float), "the harness's output");
  if (!d_output.ok()) return fail(name, d_output.error().message);
  if (Status s = copy(d_input->get(), input.data(), input_bytes, stream.get(), "copying the input");
      !s.ok()) {
    return fail(name, s.error().message);
  }
  const float* in = d_input->as<float>();

  // Correctness: two poisoned runs, all finite, identical.
  std::vector<float> first, again;
  if (Status s = checked_forward(*model, in, *d_output, batch, stream.get(), &first); !s.ok()) {
    return fail(name, s.error().message);
  }
  if (std::string bad = non_finite_report(first, Model::kOutputs); !bad.empty()) {
    return fail(name, bad);
  }
  if (Status s = checked_forward(*model, in, *d_output, batch, stream.get(), &again); !s.ok()) {
    return fail(name, s.error().message);
  }
  bool deterministic = warn_if_different(first, again, "the second forward");
  std::printf("output [%d, %d] all finite (created in %.0f ms)\n", batch, Model::kOutputs,
              create_ms);

  if (!args.output.empty()) {
    Status s = npy::write_float32(args.output, first.data(), {batch, Model::kOutputs});
    if (!s.ok()) return fail(name, s.error().message);
    std::printf("wrote %s\n", args.output.c_str());
  }
  print_top_k(first, batch, Model::kOutputs, args.top);

  LatencyStats stats;
  if (args.iters > 0) {
    auto ms = time_forward(*model, in, d_output->as<float>(), batch, args.warmup, args.iters,
                           stream.get());
    if (!ms.ok()) return fail(name, ms.error().message);
    stats = summarize(*ms);
    // The timed runs wrote the same output buffer: it must still hold the first run's values.
    std::vector<float> last(output_count);
    if (Status s = copy(last.data(), d_output->get(), output_count * sizeof(float), stream.get(),
                        "copying the output after timing");
        !s.ok()) {
      return fail(name, s.error().message);
    }
    deterministic = warn_if_different(first, last, "the last timed forward") && deterministic;
    std::printf(
        "latency batch=%d: median %.4f ms, p90 %.4f ms, p99 %.4f ms, min %.4f ms, max %.4f ms, "
        "mean %.4f ms (%zu iters after %d warm-up)\n",
        batch, stats.median, stats.p90, stats.p99, stats.min, stats.max, stats.mean, stats.count,
        args.warmup);
    std::printf("throughput batch=%d: %.1f img/s (batch / median)\n", batch,
                stats.median > 0 ? 1000.0 * batch / stats.median : 0.0);
  }
  std::printf("memory: arena %s, workspace %s, weights %s\n",
              detail::bytes_text(model->arena_bytes()).c_str(),
              detail::bytes_text(model->workspace_bytes()).c_str(),
              detail::bytes_text(model->weight_bytes()).c_str());

  if (!args.json.empty()) {
    JsonWriter j;
    j.field("model", name).field("precision", Model::kPrecision).field("gpu", gpu);
    j.field("batch", batch).field("max_batch", max_batch).field("cuda_graph", args.graph);
    j.field("weights", args.weights.empty() ? "seeded init" : args.weights);
    j.field("input", input_source).field("seed", args.seed);
    j.field("warmup", args.warmup).field("iters", args.iters);
    j.latency("latency_ms", stats);
    j.field("throughput_img_s", stats.median > 0 ? 1000.0 * batch / stats.median : 0.0);
    j.field("create_ms", create_ms).field("deterministic", deterministic);
    j.field("arena_bytes", model->arena_bytes()).field("workspace_bytes", model->workspace_bytes());
    j.field("weight_bytes", model->weight_bytes());
    j.field("cudnn_version", static_cast<uint64_t>(cudnnGetVersion()));
    int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
    (void)cublasGetProperty(MAJOR_VERSION, &cublas_major);
    (void)cublasGetProperty(MINOR_VERSION, &cublas_minor);
    (void)cublasGetProperty(PATCH_LEVEL, &cublas_patch);
    j.field("cublas_version", std::to_string(cublas_major) + "." + std::to_string(cublas_minor) +
                                  "." + std::to_string(cublas_patch));
    j.argmax("top1", first, batch, Model::kOutputs);
    if (Status s = j.write(args.json); !s.ok()) return fail(name, s.error().message);
    std::printf("wrote %s\n", args.json.c_str());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace harness

// The whole of a generated main(): `return zoc::run_main<zoc_model::Resnet50>(argc, argv);`.
// Model must provide kName, kPrecision, kInputC/H/W, kOutputs, a non-overloaded static
// create(const std::string&, int, const Options&) returning Expected<std::unique_ptr<Model>>,
// forward(const float*, float*, int, cudaStream_t) returning Status, and the *_bytes()
// accessors.
template <class Model>
int run_main(int argc, char** argv) {
  harness::Args args;
  std::string error = harness::parse_args(argc, argv, Model::kOutputs, &args);
  if (!error.empty()) {
    std::fprintf(stderr, "%s: %s\n(run with --help for the options)\n", Model::kName,
                 error.c_str());
    return 2;
  }
  if (args.help) {
    harness::print_usage(Model::kName, Model::kPrecision, Model::kInputC, Model::kInputH,
                         Model::kInputW, Model::kOutputs);
    return 0;
  }
  return harness::run<Model>(args);
}

}  // namespace zoc
