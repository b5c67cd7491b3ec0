// The plain parts of the generated models' command-line runner (zoc/runner/main_harness.h):
// argument parsing and usage, the seeded input, error and GPU descriptions, output checks and
// printing, and the small JSON writer. Split from main_harness.h, like the parts that depend on the
// model class (measure_point.h, timed_runs.h, report.h), so each file stays readable on its own.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <time.h>

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

#include "zoc/core/device.h"
#include "zoc/core/expected.h"
#include "zoc/core/timing.h"
#include "zoc/io/npy.h"

namespace zoc {
namespace harness {

// The largest batch the harness accepts (far above any real use; sizes stay small integers).
constexpr int kMaxBatch = 1 << 16;

struct Args {
  std::string weights, input, output, json;
  std::string plan;  // --plan: measured algorithm choices to use
  std::string tune;  // --tune: measure them first, merge into this plan file, then use it
  uint64_t seed = 0;
  int batch = 1;
  bool batch_given = false;
  int max_batch = 0;  // 0: the batch
  int top = 5, warmup = 10, iters = 50;
  long long workspace_mb = -1;                      // -1: the model's default
  bool graph = true, strict = false, help = false;  // graph: the library's default
  std::vector<int> batches;  // --batches: sweep mode, one created model per batch size
  bool tile = false;         // --tile: repeat the --input samples up to the batch
  int max_time_ms = 0;       // --max-time-ms: stop timing (and warm-up) early; 0: off
  int h2d_reps = 0;          // --h2d-reps: timed input copies, pageable and pinned; 0: none
  int profile = 0;           // --profile: profiled forwards (per-layer times); 0: none
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
      "  --graph             replay forward from a CUDA graph (Options.cuda_graph, the default)\n"
      "  --no-graph          the plain path: forward's calls one by one, no CUDA graph\n"
      "  --workspace-mb N    cap the cuDNN workspace at N MiB\n"
      "  --strict            reject weights holding NaN or Inf instead of warning\n"
      "  --json PATH         write model, batch, latency and memory figures as JSON\n"
      "  --batches N,N,...   sweep: one model created per batch size (max batch = batch),\n"
      "                      JSON with one entry per batch under \"points\", rewritten after\n"
      "                      each; --output P writes P_b<N>.npy (first input-file rows)\n"
      "  --tile              repeat the --input samples when the batch is larger\n"
      "  --max-time-ms T     stop timing once T ms are measured (at least 5 forwards), and\n"
      "                      warm-up once it took T/2 ms (default 0: --iters/--warmup only)\n"
      "  --h2d-reps N        time N copies of the input batch to the device, from pageable\n"
      "                      and from pinned host memory (default 0: none)\n"
      "  --tune PLAN         time every convolution algorithm at each batch first, write the\n"
      "                      fastest per layer to the plan file PLAN (merged with the choices\n"
      "                      it already holds for this GPU and model), then measure with it\n"
      "  --plan PLAN         use the measured choices in PLAN (another GPU's: a warning)\n"
      "  --profile N         after timing, N forwards with a CUDA event between layers (in\n"
      "                      the CUDA graph unless --no-graph): per-layer median times, printed "
      "and\n"
      "                      in the JSON under \"profile\" (default 0: none)\n"
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
    if (flag == "--graph" || flag == "--no-graph" || flag == "--strict" || flag == "--help" ||
        flag == "-h" || flag == "--tile") {
      if (has_inline_value) return "option " + flag + " takes no value";
      if (flag == "--graph") a->graph = true;
      if (flag == "--no-graph") a->graph = false;
      if (flag == "--strict") a->strict = true;
      if (flag == "--tile") a->tile = true;
      if (flag == "--help" || flag == "-h") a->help = true;
      continue;
    }
    static const char* const kValued[] = {
        "--weights",     "--seed",     "--input",   "--batch",        "--max-batch", "--output",
        "--top",         "--warmup",   "--iters",   "--workspace-mb", "--json",      "--batches",
        "--max-time-ms", "--h2d-reps", "--profile", "--tune",         "--plan"};
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
    if (flag == "--weights" || flag == "--input" || flag == "--output" || flag == "--json" ||
        flag == "--tune" || flag == "--plan") {
      if (value.empty()) return "option " + flag + " needs a non-empty path";
      (flag == "--weights"  ? a->weights
       : flag == "--input"  ? a->input
       : flag == "--output" ? a->output
       : flag == "--tune"   ? a->tune
       : flag == "--plan"   ? a->plan
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
    } else if (flag == "--max-time-ms") {
      if (!integer(0, 3600000, &a->max_time_ms)) return bad_number("0..3600000");
    } else if (flag == "--h2d-reps") {
      if (!integer(0, 1000, &a->h2d_reps)) return bad_number("0..1000");
    } else if (flag == "--profile") {
      if (!integer(0, 100000, &a->profile)) return bad_number("0..100000");
    } else if (flag == "--batches") {
      a->batches.clear();
      size_t start = 0;
      while (start <= value.size()) {
        size_t comma = value.find(',', start);
        if (comma == std::string::npos) comma = value.size();
        const std::string item = value.substr(start, comma - start);
        if (!parse_integer(item, 1, kMaxBatch, &n) || a->batches.size() >= 64) {
          return "bad value '" + value + "' for --batches (expected up to 64 comma-separated " +
                 "integers in " + batch_range + ")";
        }
        a->batches.push_back(static_cast<int>(n));
        start = comma + 1;
      }
    }
  }
  if (!a->tune.empty() && !a->plan.empty()) {
    return "--tune writes the plan it then uses; give --tune or --plan, not both";
  }
  if (!a->batches.empty() && (a->batch_given || a->max_batch > 0)) {
    return "--batches replaces --batch and --max-batch; give one or the other";
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
  // Epoch seconds with microseconds ("%.7g" would round them to 100 s).
  JsonWriter& seconds(const char* key, double v) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.6f", v);
    return raw(key, std::isfinite(v) ? buf : "null");
  }
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
  JsonWriter& floats(const char* key, const std::vector<float>& values) {
    std::string list = "[";
    for (size_t i = 0; i < values.size(); ++i) list += (i ? ", " : "") + number(values[i]);
    return raw(key, list + "]");
  }
  JsonWriter& object(const char* key, const JsonWriter& inner) { return raw(key, inner.text()); }
  JsonWriter& objects(const char* key, const std::vector<JsonWriter>& items) {
    std::string list = "[";
    for (size_t i = 0; i < items.size(); ++i) list += (i ? ",\n    " : "\n    ") + items[i].text();
    return raw(key, list + (items.empty() ? "]" : "\n  ]"));
  }
  // The object on one line: {"a": 1, "b": 2}.
  std::string text() const { return "{" + flat_ + "}"; }
  Status write(const std::string& path) const {
    const std::string text = "{\n" + body_ + "\n}\n";
    return st::detail::write_file_atomic(path, {{text.data(), text.size()}});
  }

 private:
  JsonWriter& raw(const char* key, const std::string& value) {
    body_ += (body_.empty() ? "  " : ",\n  ") + quote(key) + ": " + value;
    flat_ += (flat_.empty() ? "" : ", ") + quote(key) + ": " + value;
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
  std::string flat_;  // the same fields on one line, for nesting
};

// The Options type is whatever Model::create takes third, so this header names no namespace of
// the generated code.
template <class F>
struct CreateTraits;
template <class R, class A, class B, class O>
struct CreateTraits<R (*)(A, B, O)> {
  using Options = std::decay_t<O>;
};

// The first `batch` samples of `samples` (`count` samples of `chw` floats), repeated in order
// when the batch is larger than `count`.
inline std::vector<float> tile_samples(const std::vector<float>& samples, size_t count, int batch,
                                       size_t chw) {
  std::vector<float> out(static_cast<size_t>(batch) * chw);
  for (size_t s = 0; s < static_cast<size_t>(batch) && count > 0; ++s) {
    std::memcpy(out.data() + s * chw, samples.data() + (s % count) * chw, chw * sizeof(float));
  }
  return out;
}

}  // namespace harness
}  // namespace zoc
