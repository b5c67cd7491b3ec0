// ResNet-50 written against LibTorch's C++ torch::nn API, as the study wrote its "LibTorch" row,
// loading the same weights.safetensors as every other implementation and timed by the same
// sweep (bench_common.h).
//
// The module (resnet50_module.h, shared with the LibTorch training baseline) carries
// torchvision's names, so that named_parameters() and named_buffers() match the file's
// state_dict names one for one. The model runs in eval mode (BatchNorm with running statistics),
// converted to the precision and, with --channels-last, to channels-last weights and input.
//
// Usage: resnet50_nn --weights weights.safetensors --input input.npy --batches 1,2,4
//          --precision fp32|tf32|fp16|bf16 [--channels-last] [--num-classes 1000]
//          [--device cuda|cpu] [--warmup N] [--iters N] [--max-time-ms T] [--h2d-reps N]
//          --json out.json [--output-prefix P]
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.h"
#include "resnet50_module.h"

using zoc_libtorch::ResNet50;

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(argc, argv);
  try {
    const auto t0 = std::chrono::steady_clock::now();
    bench::set_backend_flags(a);
    ResNet50 model(3, a.num_classes);
    std::vector<std::pair<std::string, torch::Tensor>> targets;
    for (const auto& item : model->named_parameters()) {
      targets.emplace_back(item.key(), item.value());
    }
    for (const auto& item : model->named_buffers()) targets.emplace_back(item.key(), item.value());
    bench::load_weights(targets, a.weights);
    model->eval();
    const torch::Device device(a.device == "cuda" ? torch::kCUDA : torch::kCPU);
    model->to(device, bench::dtype_of(a));
    if (a.channels_last) {
      torch::NoGradGuard no_grad;
      for (auto& p : model->parameters()) {
        if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
      }
    }
    const double setup_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("resnet50_nn: %zu parameters and buffers loaded (%s%s) on %s in %.0f ms\n",
                targets.size(), a.precision.c_str(), a.channels_last ? ", channels-last" : "",
                a.device.c_str(), setup_ms);
    std::fflush(stdout);
    bench::Forward forward = [&model](const torch::Tensor& x) { return model->forward(x); };
    return bench::sweep(a, forward, bench::head_json(a, "resnet50_nn", setup_ms));
  } catch (const std::exception& e) {
    bench::Json failed = bench::head_json(a, "resnet50_nn", 0);
    failed.str("error", bench::error_text(e));
    failed.write(a.json);
    std::fprintf(stderr, "resnet50_nn: error: %s\n", bench::error_text(e).c_str());
    return 1;
  }
}
