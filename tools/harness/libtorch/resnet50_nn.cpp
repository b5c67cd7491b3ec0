// ResNet-50 written against LibTorch's C++ torch::nn API, as the study wrote its "LibTorch" row,
// loading the same weights.safetensors as every other implementation and timed by the same
// sweep (bench_common.h).
//
// The modules carry torchvision's names (conv1, bn1, layer1.0.conv1, layer1.0.downsample.0, ...,
// fc) so that named_parameters() and named_buffers() match the file's state_dict names one for
// one, and the forward is torchvision's v1.5 Bottleneck: the stride on the 3x3 convolution, the
// projection shortcut (1x1 conv + BN) on the first block of each stage, ReLU after the residual
// add. The model runs in eval mode (BatchNorm with running statistics), converted to the
// precision and, with --channels-last, to channels-last weights and input.
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

namespace nn = torch::nn;

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}

struct BottleneckImpl : nn::Module {
  static constexpr int64_t kExpansion = 4;

  BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride, bool project)
      : conv1(register_module("conv1", conv(inplanes, planes, 1, 1, 0))),
        bn1(register_module("bn1", nn::BatchNorm2d(planes))),
        conv2(register_module("conv2", conv(planes, planes, 3, stride, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(planes))),
        conv3(register_module("conv3", conv(planes, planes * kExpansion, 1, 1, 0))),
        bn3(register_module("bn3", nn::BatchNorm2d(planes * kExpansion))) {
    if (project) {
      downsample = register_module(
          "downsample", nn::Sequential(conv(inplanes, planes * kExpansion, 1, stride, 0),
                                       nn::BatchNorm2d(planes * kExpansion)));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = torch::relu(bn1(conv1(x)));
    out = torch::relu(bn2(conv2(out)));
    out = bn3(conv3(out));
    out += downsample ? downsample->forward(x) : x;
    return torch::relu(out);
  }

  nn::Conv2d conv1;  // in registration order, which is also initialization order
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv3;
  nn::BatchNorm2d bn3;
  nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

struct ResNet50Impl : nn::Module {
  explicit ResNet50Impl(int64_t num_classes)
      : conv1(register_module("conv1", conv(3, 64, 7, 2, 3))),
        bn1(register_module("bn1", nn::BatchNorm2d(64))),
        layer1(register_module("layer1", stage(64, 3, 1))),
        layer2(register_module("layer2", stage(128, 4, 2))),
        layer3(register_module("layer3", stage(256, 6, 2))),
        layer4(register_module("layer4", stage(512, 3, 2))),
        fc(register_module("fc", nn::Linear(512 * BottleneckImpl::kExpansion, num_classes))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1(conv1(x)));
    y = torch::max_pool2d(y, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
    y = layer4->forward(layer3->forward(layer2->forward(layer1->forward(y))));
    y = torch::adaptive_avg_pool2d(y, {1, 1});
    return fc(torch::flatten(y, 1));
  }

  // A stage of `blocks` bottlenecks; the first strides and projects the shortcut.
  nn::Sequential stage(int64_t planes, int blocks, int64_t stride) {
    nn::Sequential seq;
    for (int i = 0; i < blocks; ++i) {
      seq->push_back(Bottleneck(inplanes_, planes, i == 0 ? stride : 1, i == 0));
      inplanes_ = planes * BottleneckImpl::kExpansion;
    }
    return seq;
  }

  int64_t inplanes_ = 64;  // declared before the members it initializes
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Sequential layer1, layer2, layer3, layer4;
  nn::Linear fc;
};
TORCH_MODULE(ResNet50);

}  // namespace

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(argc, argv);
  try {
    const auto t0 = std::chrono::steady_clock::now();
    bench::set_backend_flags(a);
    ResNet50 model(a.num_classes);
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
