// GPU test of the runtime headers the generated folders carry: core/cuda_check.h, core/device.h,
// core/timing.h and runner/main_harness.h.
//
// These headers decide what a user sees when something goes wrong (the error texts are part of
// the interface, DESIGN.md) and how every latency is measured, so they are tested on their own,
// before any generated model exists: the messages of failed CUDA/cuDNN/cuBLAS statuses, the
// pointer and batch checks against real device, managed, pinned and pageable memory, the
// percentile arithmetic, and the harness driven end to end through a small fake model whose
// failures (a forward error, an output element never written) are switched on per test. No test
// framework: the last line is "N passed, M failed", the exit status non-zero on any failure.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "zoc/core/cuda_check.h"
#include "zoc/core/device.h"
#include "zoc/core/timing.h"
#include "zoc/runner/main_harness.h"

namespace {

int g_passed = 0, g_failed = 0;

void check(bool ok, const std::string& name, const std::string& detail = "") {
  (ok ? g_passed : g_failed) += 1;
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.empty() ? "" : ": ",
              detail.c_str());
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void check_message(const zoc::Status& s, const std::vector<std::string>& parts,
                   const std::string& name) {
  std::string text = s.ok() ? "<ok>" : s.error().message;
  bool ok = !s.ok();
  for (const auto& p : parts) ok = ok && contains(text, p);
  check(ok, name, text);
}

// --- cuda_check.h ----------------------------------------------------------------------------

zoc::Status cudnn_fails() {
  ZOC_CUDNN(cudnnStatus_t(CUDNN_STATUS_BAD_PARAM), "layer1.0.conv1");
  return zoc::Status();
}
zoc::Status cublas_fails() {
  ZOC_CUBLAS(cublasStatus_t(CUBLAS_STATUS_NOT_SUPPORTED), nullptr);
  return zoc::Status();
}
zoc::Status cuda_fails() {
  ZOC_CUDA(cudaSetDevice(-1), "fc");
  return zoc::Status();
}
zoc::Expected<int> expected_fails() { return zoc::Error{"inner failure"}; }
zoc::Expected<int> try_expected() {
  ZOC_TRY(zoc::Status());
  ZOC_TRY(expected_fails());
  return 1;
}
zoc::Status assign_or_return(int* out) {
  ZOC_ASSIGN_OR_RETURN(auto buffer, zoc::DeviceBuffer::allocate(64, "scratch"));
  ZOC_ASSIGN_OR_RETURN(*out, expected_fails());
  return zoc::Status();
}

void test_cuda_check() {
  check_message(cudnn_fails(),
                {"layer 'layer1.0.conv1' (runtime_test.cu:",
                 "cudnnStatus_t(...) failed: CUDNN_STATUS_BAD_PARAM"},
                "ZOC_CUDNN message");
  check_message(cublas_fails(), {"zoc (runtime_test.cu:", "CUBLAS_STATUS_NOT_SUPPORTED"},
                "ZOC_CUBLAS message without a layer");
  check_message(cuda_fails(), {"layer 'fc'", "cudaSetDevice(...) failed: cudaErrorInvalidDevice"},
                "ZOC_CUDA message");
  check(cudaGetLastError() == cudaSuccess, "ZOC_CUDA clears the last error");
  auto e = try_expected();
  check(!e.ok() && e.error().message == "inner failure", "ZOC_TRY propagates an Expected's error");
  int v = 0;
  check_message(assign_or_return(&v), {"inner failure"}, "ZOC_ASSIGN_OR_RETURN propagates");
  check(std::string(zoc::cublas_status_string(CUBLAS_STATUS_ALLOC_FAILED)) ==
            "CUBLAS_STATUS_ALLOC_FAILED",
        "cublas_status_string");
}

// --- device.h --------------------------------------------------------------------------------

void test_device() {
  auto a = zoc::DeviceBuffer::allocate(1000, "activation arena");
  check(a.ok() && a->get() && a->size() == 1000, "allocate 1000 bytes");
  zoc::DeviceBuffer moved = std::move(*a);
  check(moved.get() && !a->get() && a->size() == 0, "move leaves the source empty");
  auto zero = zoc::DeviceBuffer::allocate(0, "nothing");
  check(zero.ok() && zero->get() == nullptr, "allocate 0 bytes gives an empty buffer");
  auto huge = zoc::DeviceBuffer::allocate(size_t(1) << 52, "weights");
  check(!huge.ok() && contains(huge.error().message, "cannot allocate 4503599627370496 bytes") &&
            contains(huge.error().message, "for weights") &&
            contains(huge.error().message, "free of"),
        "allocation failure message", huge.ok() ? "" : huge.error().message);
  check(cudaGetLastError() == cudaSuccess, "a failed allocation leaves no last error behind");

  check_message(zoc::check_device_pointer(nullptr, "input"), {"input: null pointer"},
                "null pointer");
  std::vector<float> host(16);
  check_message(zoc::check_device_pointer(host.data(), "input of Fake::forward"),
                {"input of Fake::forward is a host pointer, a device pointer is required"},
                "pageable host pointer");
  void* pinned = nullptr;
  if (cudaMallocHost(&pinned, 64) == cudaSuccess) {
    check_message(zoc::check_device_pointer(pinned, "output"),
                  {"output is a host pointer (page-locked)"}, "pinned host pointer");
    cudaFreeHost(pinned);
  }
  check(zoc::check_device_pointer(moved.get(), "x").ok(), "device pointer accepted");
  void* managed = nullptr;
  if (cudaMallocManaged(&managed, 64) == cudaSuccess) {
    check(zoc::check_device_pointer(managed, "x").ok(), "managed pointer accepted");
    cudaFree(managed);
  }
  auto b = zoc::check_batch(0, 256);
  check(!b.ok() && b.error().message.rfind("batch 0 is out of range 1..256", 0) == 0,
        "check_batch(0, 256)", b.ok() ? "" : b.error().message);
  check(!zoc::check_batch(257, 256).ok() && zoc::check_batch(256, 256).ok() &&
            zoc::check_batch(1, 256).ok(),
        "check_batch bounds");
}

// --- timing.h --------------------------------------------------------------------------------

void test_timing() {
  zoc::LatencyStats s = zoc::summarize({5, 1, 4, 2, 3});
  check(s.count == 5 && s.median == 3.0f && std::fabs(s.p90 - 4.6f) < 1e-6f && s.min == 1.0f &&
            s.max == 5.0f && s.mean == 3.0f,
        "summarize matches numpy.percentile");
  zoc::LatencyStats even = zoc::summarize({1, 2, 3, 4});
  check(even.median == 2.5f && zoc::summarize({}).count == 0, "median of an even count; empty");
  zoc::EventTimer timer;
  auto early = timer.stop_ms(nullptr);
  check(!early.ok(), "stop_ms without start is an error");
  bool ok = timer.start(nullptr).ok();
  auto ms = timer.stop_ms(nullptr);
  check(ok && ms.ok() && *ms >= 0.0f && *ms < 1000.0f, "EventTimer measures an empty stream");
}

// --- main_harness.h through a fake model --------------------------------------------------------

struct FakeOptions {
  bool cuda_graph = false;
  size_t workspace_limit = size_t(1) << 30;
  uint64_t seed = 0;
  bool strict = false;
  std::string plan_file;
};

enum class FakeMode { kNormal, kSkipLastSample, kForwardFails };
FakeMode g_mode = FakeMode::kNormal;

// y[b, k] = (k + 1) * mean(x[b]) + k / 100: depends on every input value of its sample.
__global__ void fake_kernel(const float* x, float* y, int samples, int chw, int outputs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= samples * outputs) return;
  int b = i / outputs, k = i % outputs;
  float sum = 0;
  for (int j = 0; j < chw; ++j) sum += x[b * chw + j];
  y[i] = (k + 1) * (sum / chw) + k * 0.01f;
}

class Fake {
 public:
  static constexpr const char* kName = "fake";
  static constexpr const char* kPrecision = "fp32";
  static constexpr int kInputC = 3, kInputH = 5, kInputW = 7, kOutputs = 10;
  static constexpr int kOutputCount = 1;  // what a generated class declares of its outputs
  static constexpr int kOutputOffsets[kOutputCount] = {0};
  static constexpr int kOutputShapes[kOutputCount][3] = {{10, 1, 1}};
  static constexpr const char* kIrHash = "00000000000000aa";
  static constexpr int kLayers = 2;
  static const char* layer_name(int k) { return k == 0 ? "fake.fc" : "fake.output"; }

  static zoc::Expected<std::unique_ptr<Fake>> create(const std::string& weights_path, int max_batch,
                                                     const FakeOptions& options) {
    if (!weights_path.empty()) return zoc::Error{weights_path + ": cannot open"};
    (void)options;
    std::unique_ptr<Fake> m(new Fake);
    m->max_batch_ = max_batch;
    return zoc::Expected<std::unique_ptr<Fake>>(std::move(m));  // nvcc: no implicit move here
  }
  zoc::Status forward(const float* input, float* output, int batch, cudaStream_t stream) {
    ZOC_TRY(zoc::check_batch(batch, max_batch_));
    ZOC_TRY(zoc::check_device_pointer(input, "input of Fake::forward"));
    ZOC_TRY(zoc::check_device_pointer(output, "output of Fake::forward"));
    if (g_mode == FakeMode::kForwardFails)
      ZOC_CUDNN(cudnnStatus_t(CUDNN_STATUS_EXECUTION_FAILED), "fc");
    const int samples = g_mode == FakeMode::kSkipLastSample ? batch - 1 : batch;
    if (samples > 0) {
      fake_kernel<<<(samples * kOutputs + 127) / 128, 128, 0, stream>>>(
          input, output, samples, kInputC * kInputH * kInputW, kOutputs);
      ZOC_CUDA(cudaGetLastError(), "fc");
    }
    return zoc::Status();
  }
  // Two "layers": the forward, then nothing; their times come from real events.
  zoc::Status profile(const float* input, float* output, int batch, cudaStream_t stream,
                      float* layer_ms, float* total_ms) {
    cudaEvent_t e[3];
    for (cudaEvent_t& x : e) ZOC_CUDA(cudaEventCreate(&x), "profile");
    ZOC_CUDA(cudaEventRecord(e[0], stream), "profile");
    zoc::Status s = forward(input, output, batch, stream);
    ZOC_CUDA(cudaEventRecord(e[1], stream), "profile");
    ZOC_CUDA(cudaEventRecord(e[2], stream), "profile");
    ZOC_CUDA(cudaEventSynchronize(e[2]), "profile");
    ZOC_CUDA(cudaEventElapsedTime(&layer_ms[0], e[0], e[1]), "profile");
    ZOC_CUDA(cudaEventElapsedTime(&layer_ms[1], e[1], e[2]), "profile");
    ZOC_CUDA(cudaEventElapsedTime(total_ms, e[0], e[2]), "profile");
    for (cudaEvent_t& x : e) cudaEventDestroy(x);
    return s;
  }
  zoc::Status tune(const float* input, float* output, int batch, cudaStream_t stream,
                   zoc::PlanFile* plan) {
    ZOC_TRY(forward(input, output, batch, stream));
    ZOC_TRY(zoc::gpu_name(&plan->gpu));
    plan->cudnn = cudnnGetVersion();
    plan->model = kName;
    plan->precision = kPrecision;
    plan->ir_hash = kIrHash;
    plan->set({"fc", batch, 1, 0, 0, 0.01});
    return zoc::Status();
  }
  int max_batch() const { return max_batch_; }
  size_t arena_bytes() const { return 1 << 20; }
  size_t workspace_bytes() const { return 0; }
  size_t weight_bytes() const { return 4096; }

 private:
  int max_batch_ = 0;
};

int run(std::vector<std::string> args) {
  args.insert(args.begin(), "fake");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::printf("---- fake %s\n",
              [&] {
                std::string s;
                for (size_t i = 1; i < args.size(); ++i) s += args[i] + " ";
                return s;
              }()
                  .c_str());
  std::fflush(stdout);
  int rc = zoc::run_main<Fake>(static_cast<int>(argv.size()), argv.data());
  std::fflush(stdout);
  std::fflush(stderr);
  return rc;
}

std::string read_text(const std::string& path) {
  std::vector<uint8_t> bytes;
  if (!zoc::st::detail::read_file(path, &bytes).ok()) return "";
  return std::string(bytes.begin(), bytes.end());
}

void test_harness(const std::string& dir) {
  check(run({"--help"}) == 0, "--help exits 0");
  check(run({"--bogus"}) == 2, "unknown flag exits 2");
  check(run({"--batch", "0"}) == 2, "--batch 0 exits 2");
  check(run({"--batch", "3x"}) == 2, "--batch 3x exits 2");
  check(run({"--iters"}) == 2, "missing value exits 2");
  check(run({"--graph=1"}) == 2, "a switch with a value exits 2");
  check(run({"--batch", "8", "--max-batch", "4"}) == 2, "--max-batch below --batch exits 2");
  check(run({"--weights", "/nonexistent.safetensors"}) == 1, "create failure exits 1");

  const std::string out = dir + "/fake_out.npy", json = dir + "/fake.json";
  std::remove(out.c_str());
  int rc = run({"--batch", "9", "--output", out, "--json", json, "--iters", "20", "--warmup", "2",
                "--graph", "--seed", "7"});
  std::vector<int64_t> shape;
  auto y = zoc::npy::read_float32(out, &shape);
  check(rc == 0 && y.ok() && shape == std::vector<int64_t>{9, 10},
        "normal run writes [9, 10] logits");
  std::string j = read_text(json);
  check(contains(j, "\"model\": \"fake\"") && contains(j, "\"batch\": 9") &&
            contains(j, "\"median\": ") && contains(j, "\"deterministic\": true") &&
            contains(j, "\"arena_bytes\": 1048576"),
        "JSON fields", j);

  // The same seeded input twice gives the same bytes; the input written back is read back.
  std::vector<float> input = zoc::harness::standard_normal(7, 2 * 105);
  const std::string in_path = dir + "/fake_in.npy";
  check(zoc::npy::write_float32(in_path, input.data(), {2, 3, 5, 7}).ok(), "write input");
  const std::string out2 = dir + "/fake_out2.npy";
  rc = run({"--input", in_path, "--output", out2, "--iters", "0"});
  auto y2 = zoc::npy::read_float32(out2, &shape);
  check(rc == 0 && y2.ok() && y.ok() && shape == std::vector<int64_t>{2, 10} &&
            std::equal(y2->begin(), y2->end(), y->begin()),
        "--input of the same seeded values reproduces the first rows");
  check(run({"--input", in_path, "--batch", "3"}) == 1, "--batch above the file's samples exits 1");
  const std::string bad_in = dir + "/fake_bad_in.npy";
  (void)zoc::npy::write_float32(bad_in, input.data(), {2, 3, 7, 5});
  check(run({"--input", bad_in}) == 1, "input of the wrong shape exits 1");

  // --profile: per-layer medians in the JSON; --tune: a plan file written, then used.
  const std::string pjson = dir + "/fake_profile.json", plan = dir + "/fake.plan";
  std::remove(plan.c_str());
  check(run({"--batch", "4", "--profile", "5", "--json", pjson, "--iters", "10"}) == 0,
        "--profile 5 runs");
  j = read_text(pjson);
  check(contains(j, "\"profile\": {\"runs\": 5") && contains(j, "\"layer\": \"fake.fc\"") &&
            contains(j, "\"sum_ms\": "),
        "--profile JSON", j);
  check(run({"--batches", "2,4", "--tune", plan, "--iters", "5"}) == 0, "--tune over a sweep");
  const std::string p = read_text(plan);
  check(contains(p, "zoc-plan 1\ngpu ") && contains(p, "model fake fp32 00000000000000aa") &&
            contains(p, "conv 2 1 0 0 0.01000 fc") && contains(p, "conv 4 1 0 0 0.01000 fc"),
        "--tune merges every batch into one plan file", p);
  check(run({"--tune", plan, "--plan", plan}) == 2, "--tune with --plan exits 2");
  check(run({"--profile", "-1"}) == 2, "--profile -1 exits 2");

  g_mode = FakeMode::kSkipLastSample;
  check(run({"--batch", "3", "--iters", "0"}) == 1, "an unwritten (poisoned) output exits 1");
  g_mode = FakeMode::kForwardFails;
  check(run({"--batch", "2"}) == 1, "a failing forward exits 1");
  g_mode = FakeMode::kNormal;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n0 passed, 1 failed\n");
    return 1;
  }
  const char* tmp = std::getenv("TMPDIR");
  test_cuda_check();
  test_device();
  test_timing();
  test_harness(tmp && *tmp ? tmp : "/tmp");
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
