// Calls a generated model the wrong way on a real GPU and checks that each call returns the
// documented error (DESIGN.md, "Generated code at run time") and leaves the model usable:
// a batch above the maximum, batch 0, a host pointer, a null pointer, and creation from each
// corrupted weights file given on the command line. tests/gpu/gpu_reliability.sh builds it against
// a generated folder (-DZOC_MODEL_HEADER, -DZOC_MODEL_CLASS) and runs it under compute-sanitizer.
//
// Usage: bad_calls WEIGHTS [CORRUPT_FILE EXPECTED_SUBSTRING]...
// Prints one line per case, "PASS|FAIL case: message", then "N passed, M failed"; exit status 1
// if any case failed.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include ZOC_MODEL_HEADER

namespace {

using Model = zoc_model::ZOC_MODEL_CLASS;
int failures = 0, passes = 0;

void expect(const char* name, const zoc::Status& s, const char* want) {
  const std::string got = s.ok() ? "(no error)" : s.error().message;
  const bool pass = want ? (!s.ok() && got.find(want) != std::string::npos) : s.ok();
  ++(pass ? passes : failures);
  std::printf("%s %s: %s\n", pass ? "PASS" : "FAIL", name, got.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc % 2 != 0) {
    std::fprintf(stderr, "usage: %s WEIGHTS [CORRUPT_FILE EXPECTED_SUBSTRING]...\n", argv[0]);
    return 2;
  }
  const int max_batch = 2;
  const size_t in_count = size_t(max_batch + 1) * Model::kInputC * Model::kInputH * Model::kInputW;
  const size_t out_count = size_t(max_batch + 1) * Model::kOutputs;
  float *in = nullptr, *out = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&in, in_count * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&out, out_count * sizeof(float)) != cudaSuccess ||
      cudaMemset(in, 0, in_count * sizeof(float)) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::fprintf(stderr, "CUDA set-up failed\n");
    return 1;
  }
  {
    auto created = Model::create(argv[1], max_batch, {});
    expect("create with the good weights", created.ok() ? zoc::Status() : created.error(), nullptr);
    if (!created.ok()) return 1;
    Model& m = **created;
    std::vector<float> host(in_count);
    expect("forward, batch above the maximum", m.forward(in, out, max_batch + 1, stream),
           "batch 3 is out of range 1..2 (the maximum batch given at construction)");
    expect("forward, batch 0", m.forward(in, out, 0, stream), "batch 0 is out of range 1..2");
    expect("forward, host input pointer", m.forward(host.data(), out, 1, stream),
           "forward: input is a host pointer");
    expect("forward, null output pointer", m.forward(in, nullptr, 1, stream), "forward: output");
    expect("forward afterwards, batch 1 (the model is still usable)", m.forward(in, out, 1, stream),
           nullptr);
    expect("forward afterwards, batch 2", m.forward(in, out, 2, stream), nullptr);
    const cudaError_t synced = cudaStreamSynchronize(stream);
    expect("stream synchronize",
           synced == cudaSuccess ? zoc::Status() : zoc::Error{cudaGetErrorString(synced)}, nullptr);
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    zoc_model::Options options;
    options.strict = true;
    auto created = Model::create(argv[i], max_batch, options);
    const std::string name = std::string("create from ") + argv[i];
    expect(name.c_str(), created.ok() ? zoc::Status() : created.error(), argv[i + 1]);
  }
  {
    zoc_model::Options options;
    options.plan_file = std::string(argv[1]);  // a weights file is not a plan file
    auto created = Model::create(argv[1], max_batch, options);
    expect("create with a weights file as the plan file",
           created.ok() ? zoc::Status() : created.error(), "not a zoc plan file");
  }
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(stream);
  std::printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
