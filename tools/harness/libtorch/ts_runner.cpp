// TorchScript from C++: torch::jit::load of the archive models/export.py wrote, timed over a
// sweep of batch sizes. This is how the study ran its "TorchScript" rows, so it is kept plain:
// load, overwrite every parameter and buffer with weights.safetensors (so that all
// implementations run the very same weights, whatever the archive holds), eval, convert to the
// precision and layout, optionally torch::jit::freeze, or torch::jit::optimize_for_inference (the
// C++ form of PyTorch's documented deployment step: it freezes, folds BatchNorm and, on CUDA,
// fuses conv + add + ReLU into cuDNN's fused kernels), then bench::sweep (bench_common.h) times
// forward() under NoGradGuard. Prints progress; writes the JSON that tools/harness/bench.py reads.
//
// Usage: ts_runner --model model.pt --weights weights.safetensors --input input.npy
//          --batches 1,2,4 --precision fp32|tf32|fp16|bf16 [--channels-last] [--freeze|--optimize]
//          [--device cuda|cpu] [--warmup N] [--iters N] [--max-time-ms T] [--h2d-reps N]
//          --json out.json [--output-prefix P]   (writes P_b<N>.npy: the first output rows)
#include <torch/script.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.h"

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(argc, argv);
  if (a.model_file.empty()) bench::usage_error("--model is required");
  try {
    const auto t0 = std::chrono::steady_clock::now();
    bench::set_backend_flags(a);
    torch::jit::Module module = torch::jit::load(a.model_file, torch::Device(torch::kCPU));
    std::vector<std::pair<std::string, torch::Tensor>> targets;
    for (const auto& p : module.named_parameters(/*recurse=*/true)) {
      targets.emplace_back(p.name, p.value);
    }
    for (const auto& b : module.named_buffers(/*recurse=*/true)) {
      targets.emplace_back(b.name, b.value);
    }
    bench::load_weights(targets, a.weights);
    module.eval();
    const torch::Device device(a.device == "cuda" ? torch::kCUDA : torch::kCPU);
    module.to(device, bench::dtype_of(a));
    if (a.channels_last) {
      torch::NoGradGuard no_grad;
      for (const auto& p : module.named_parameters(true)) {
        torch::Tensor t = p.value;
        if (t.dim() == 4) t.set_data(t.contiguous(torch::MemoryFormat::ChannelsLast));
      }
    }
    if (a.optimize) {
      module = torch::jit::optimize_for_inference(module);
    } else if (a.freeze) {
      module = torch::jit::freeze(module);
    }
    const double setup_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("ts_runner: %s (%s%s%s) on %s, set up in %.0f ms\n", a.model_file.c_str(),
                a.precision.c_str(), a.channels_last ? ", channels-last" : "",
                a.optimize ? ", optimize_for_inference"
                : a.freeze ? ", frozen"
                           : "",
                a.device.c_str(), setup_ms);
    std::fflush(stdout);
    bench::Forward forward = [&module](const torch::Tensor& x) {
      return module.forward({x}).toTensor();
    };
    return bench::sweep(a, forward, bench::head_json(a, "ts_runner", setup_ms));
  } catch (const std::exception& e) {
    bench::Json failed = bench::head_json(a, "ts_runner", 0);
    failed.str("error", bench::error_text(e));
    failed.write(a.json);
    std::fprintf(stderr, "ts_runner: error: %s\n", bench::error_text(e).c_str());
    return 1;
  }
}
