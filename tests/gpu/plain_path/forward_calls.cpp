// What a generated model's forward() asks of cuDNN and of the host, checked on a real GPU (issue
// 33: the plain path must execute only what create()/prepare() built).
//
// With --count (run with CUDNN_LOGLEVEL_DBG=3, which makes cuDNN report every API call to the
// callback set here): the cuDNN functions called by plain forwards at a batch size already
// prepared, per forward. Any plan build, finalize, descriptor creation, heuristics or algorithm
// query there fails the check (cuDNN 9's legacy fused convolution does all of these inside each
// call); so does counting nothing at all (then the logging is not on and the check proves
// nothing). Switching between two batch sizes already prepared is counted too, and must finalize
// nothing either.
//
// With --time (no logging): host CPU time per plain forward at batch 1 (median), the same with
// CUDA-graph replay, and behaviour checks of the default options: graph replay is on by default;
// a plain forward, a replayed one and one on the legacy default stream give the same output;
// forwards with new buffers on every call fall back to the plain path and stay right; a forward
// inside the caller's own stream capture takes the plain path and its graph computes the same.
//
// Built by tests/gpu/plain_path_check.sh against a generated folder (-DZOC_MODEL_HEADER,
// -DZOC_MODEL_CLASS). Prints "PASS|FAIL name: detail" lines and a summary; exits 1 on a failure.
#include <cuda_runtime.h>
#include <cudnn.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include ZOC_MODEL_HEADER

namespace {

using Model = zoc_model::ZOC_MODEL_CLASS;
int failures = 0, passes = 0;

void report(bool ok, const std::string& name, const std::string& detail) {
  ++(ok ? passes : failures);
  std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
}

bool ok(const zoc::Status& s, const std::string& what) {
  if (!s.ok()) report(false, what, s.error().message);
  return s.ok();
}

// cuDNN's API log, by function name, while counting is on.
struct CallLog {
  std::mutex mu;
  bool on = false;
  std::map<std::string, int> calls;
  int messages = 0;
} g_log;

void on_cudnn_message(cudnnSeverity_t, void*, const cudnnDebug_t*, const char* msg) {
  std::lock_guard<std::mutex> lock(g_log.mu);
  if (!g_log.on || !msg) return;
  ++g_log.messages;
  // "... function cudnnBackendExecute() called:" (the first line of each API call's entry)
  for (const char* p = std::strstr(msg, "cudnn"); p; p = std::strstr(p + 1, "cudnn")) {
    const char* open = std::strstr(p, "()");
    if (!open || open - p > 64) continue;
    std::string name(p, open);
    if (name.find_first_of(" :,\n") != std::string::npos) continue;
    ++g_log.calls[name];
    break;
  }
}

std::map<std::string, int> take_calls() {
  std::lock_guard<std::mutex> lock(g_log.mu);
  auto out = g_log.calls;
  g_log.calls.clear();
  return out;
}

// Work that must never happen on the forward path once a batch size is prepared.
bool forbidden(const std::string& fn) {
  static const char* const kWords[] = {"Finalize",
                                       "CreateDescriptor",
                                       "Heur",
                                       "GetConvolutionForwardAlgorithm",
                                       "FindConvolution",
                                       "WorkspaceSize",
                                       "cudnnCreate",
                                       "Destroy",
                                       "ConvolutionBiasActivationForward"};
  for (const char* w : kWords) {
    if (fn.find(w) != std::string::npos) return true;
  }
  return false;
}

std::string describe(const std::map<std::string, int>& calls, int forwards) {
  std::string text;
  for (const auto& [fn, n] : calls) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s %.1f", text.empty() ? "" : ", ", fn.c_str(),
                  double(n) / forwards);
    text += buf;
  }
  return text.empty() ? "(none)" : text + " per forward";
}

struct Buffers {
  float* in = nullptr;
  float* out = nullptr;
  size_t in_count = 0, out_count = 0;
  Buffers(int batch) {
    in_count = size_t(batch) * Model::kInputC * Model::kInputH * Model::kInputW;
    out_count = size_t(batch) * Model::kOutputs;
    cudaMalloc(&in, in_count * sizeof(float));
    cudaMalloc(&out, out_count * sizeof(float));
    std::vector<float> host(in_count);
    for (size_t i = 0; i < in_count; ++i) host[i] = float(std::sin(0.37 * double(i)));
    cudaMemcpy(in, host.data(), in_count * sizeof(float), cudaMemcpyHostToDevice);
  }
  ~Buffers() {
    cudaFree(in);
    cudaFree(out);
  }
  std::vector<float> output() const {
    std::vector<float> host(out_count);
    cudaMemcpy(host.data(), out, out_count * sizeof(float), cudaMemcpyDeviceToHost);
    return host;
  }
};

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
}

float max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return float(std::sqrt(num / std::max(den, 1e-30)));
}

int count_mode(const std::string& weights, int big) {
  if (cudnnSetCallback(CUDNN_SEV_INFO_EN | CUDNN_SEV_WARNING_EN | CUDNN_SEV_ERROR_EN, nullptr,
                       on_cudnn_message) != CUDNN_STATUS_SUCCESS) {
    report(false, "set cuDNN's logging callback", "cudnnSetCallback failed");
    return 1;
  }
  zoc_model::Options options;
  options.cuda_graph = false;
  auto created = Model::create(weights, big, options);
  if (!created.ok()) return report(false, "create", created.error().message), 1;
  Model& m = **created;
  Buffers buf(big);
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  for (int batch : {1, big}) {  // prepare both sizes, outside the count
    for (int i = 0; i < 2; ++i) ok(m.forward(buf.in, buf.out, batch, stream), "warm-up");
  }
  cudaStreamSynchronize(stream);
  constexpr int kForwards = 5;
  for (int batch : {1, big}) {
    ok(m.forward(buf.in, buf.out, batch, stream), "prepare");
    cudaStreamSynchronize(stream);
    take_calls();
    g_log.on = true;
    for (int i = 0; i < kForwards; ++i) ok(m.forward(buf.in, buf.out, batch, stream), "forward");
    g_log.on = false;
    cudaStreamSynchronize(stream);
    auto calls = take_calls();
    int bad = 0, all = 0;
    std::map<std::string, int> bad_calls;
    for (const auto& [fn, n] : calls) {
      all += n;
      if (forbidden(fn)) bad += n, bad_calls[fn] = n;
    }
    const std::string name = "plain forward at batch " + std::to_string(batch);
    if (all == 0) {
      report(false, name, "no cuDNN call was reported: is CUDNN_LOGLEVEL_DBG=3 set?");
    } else {
      report(bad == 0, name + ": no plan build, finalize or heuristics query",
             bad ? "forbidden: " + describe(bad_calls, kForwards) : describe(calls, kForwards));
    }
  }
  // Switching between prepared batch sizes: re-describes, must build and finalize nothing.
  take_calls();
  g_log.on = true;
  for (int i = 0; i < 4; ++i) ok(m.forward(buf.in, buf.out, i % 2 ? big : 1, stream), "switch");
  g_log.on = false;
  cudaStreamSynchronize(stream);
  auto calls = take_calls();
  std::map<std::string, int> bad_calls;
  for (const auto& [fn, n] : calls) {
    if (fn.find("Finalize") != std::string::npos || fn.find("Heur") != std::string::npos ||
        fn.find("Algorithm") != std::string::npos) {
      bad_calls[fn] = n;
    }
  }
  report(bad_calls.empty(), "switching between prepared batch sizes builds no plan",
         bad_calls.empty() ? describe(calls, 4) : "forbidden: " + describe(bad_calls, 4));
  cudaStreamDestroy(stream);
  return 0;
}

// Median host CPU microseconds of `n` forwards (each waited for, as the harness times them).
template <class F>
float median_cpu_us(int n, cudaStream_t stream, F forward) {
  std::vector<float> us;
  for (int i = 0; i < n; ++i) {
    const double t0 = thread_cpu_us();
    forward();
    us.push_back(float(thread_cpu_us() - t0));
    cudaStreamSynchronize(stream);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

int time_mode(const std::string& weights, float host_limit_us) {
  zoc_model::Options defaults;
  report(defaults.cuda_graph, "CUDA-graph replay is on by default", "Options{}.cuda_graph");
  zoc_model::Options plain_options;
  plain_options.cuda_graph = false;
  auto plain = Model::create(weights, 8, plain_options);
  auto replay = Model::create(weights, 8, defaults);
  if (!plain.ok() || !replay.ok()) {
    report(false, "create", plain.ok() ? replay.error().message : plain.error().message);
    return 1;
  }
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  Buffers a(8), b(8);
  // Output equality: plain, replayed, replayed on the legacy default stream.
  ok((*plain)->forward(a.in, a.out, 8, stream), "plain forward");
  cudaStreamSynchronize(stream);
  const std::vector<float> want = a.output();
  ok((*replay)->forward(a.in, a.out, 8, stream), "replayed forward");
  cudaStreamSynchronize(stream);
  report(max_rel_diff(a.output(), want) == 0.0f, "replayed output equals the plain one",
         "relative L2 " + std::to_string(max_rel_diff(a.output(), want)));
  report((*replay)->graph_replay(), "the default-created model replays graphs", "graph_replay()");
  ok((*replay)->forward(a.in, b.out, 8, nullptr), "replayed forward on stream 0");
  cudaDeviceSynchronize();
  report(max_rel_diff(b.output(), want) == 0.0f, "replay on the legacy default stream",
         "relative L2 " + std::to_string(max_rel_diff(b.output(), want)));
  // Host time per forward at batch 1.
  Buffers one(1);
  for (int i = 0; i < 20; ++i) {
    ok((*plain)->forward(one.in, one.out, 1, stream), "warm-up");
    ok((*replay)->forward(one.in, one.out, 1, stream), "warm-up");
  }
  cudaStreamSynchronize(stream);
  const float plain_us =
      median_cpu_us(200, stream, [&] { (void)(*plain)->forward(one.in, one.out, 1, stream); });
  const float replay_us =
      median_cpu_us(200, stream, [&] { (void)(*replay)->forward(one.in, one.out, 1, stream); });
  char text[200];
  std::snprintf(text, sizeof text, "%.0f us plain (limit %.0f), %.0f us replaying its graph",
                plain_us, host_limit_us, replay_us);
  report(plain_us <= host_limit_us, "host CPU per plain forward at batch 1", text);
  // Inside the caller's own capture: the plain path is recorded into the caller's graph.
  auto inner = Model::create(weights, 8, defaults);
  if (inner.ok()) {
    ok((*inner)->forward(a.in, a.out, 8, stream), "prepare before the caller's capture");
    cudaStreamSynchronize(stream);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaMemset(b.out, 0, b.out_count * sizeof(float));
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    const zoc::Status s = (*inner)->forward(a.in, b.out, 8, stream);
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    bool ran = s.ok() && ended == cudaSuccess &&
               cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess &&
               cudaGraphLaunch(exec, stream) == cudaSuccess &&
               cudaStreamSynchronize(stream) == cudaSuccess;
    report(ran && max_rel_diff(b.output(), want) == 0.0f,
           "forward inside the caller's stream capture",
           s.ok() ? std::string(cudaGetErrorString(ended)) : s.error().message);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
  // New output buffers on every call: after a few captures the model takes the plain path.
  bool right = true;
  std::vector<std::unique_ptr<Buffers>> fresh;  // all alive: each call's buffers are new
  for (int i = 0; i < 6; ++i) {
    fresh.push_back(std::make_unique<Buffers>(8));
    Buffers& f = *fresh.back();
    cudaMemcpy(f.in, a.in, a.in_count * sizeof(float), cudaMemcpyDeviceToDevice);
    ok((*replay)->forward(f.in, f.out, 8, stream), "forward with new buffers");
    cudaStreamSynchronize(stream);
    right = right && max_rel_diff(f.output(), want) == 0.0f;
  }
  report(right && !(*replay)->graph_replay(),
         "buffers new on every call: right outputs, then the plain path",
         std::string("graph_replay() ") + ((*replay)->graph_replay() ? "true" : "false"));
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[1], "--count") != 0 && std::strcmp(argv[1], "--time") != 0)) {
    std::fprintf(stderr, "usage: %s --count WEIGHTS [BATCH] | --time WEIGHTS [HOST_LIMIT_US]\n",
                 argv[0]);
    return 2;
  }
  const bool count = std::strcmp(argv[1], "--count") == 0;
  const int rc = count ? count_mode(argv[2], argc > 3 ? std::atoi(argv[3]) : 32)
                       : time_mode(argv[2], argc > 3 ? float(std::atof(argv[3])) : 300.0f);
  std::printf("%s: %d passed, %d failed\n", Model::kName, passes, failures);
  return rc != 0 || failures ? 1 : 0;
}
