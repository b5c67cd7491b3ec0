// ResNet-50 in LibTorch's C++ torch::nn API, shared by the benchmark harness's LibTorch row
// (resnet50_nn.cpp) and the LibTorch training baseline (tools/train/libtorch/train_nets.h), so
// that both run one definition.
//
// The modules carry torchvision's names (conv1, bn1, layer1.0.conv1, layer1.0.downsample.0, ...,
// fc) so that named_parameters() and named_buffers() match a state_dict file one for one, and
// the forward is torchvision's: the 7x7/2 stem with `in_channels` inputs, 3x3/2 max pooling, the
// v1.5 Bottleneck (stride on the 3x3 convolution, projection shortcut of 1x1 conv + BN on the
// first block of each stage, ReLU after the residual add), global average pooling and the
// classifier. BatchNorm keeps LibTorch's defaults, which are PyTorch's (eps 1e-5, momentum 0.1).
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace zoc_libtorch {

namespace nn = torch::nn;

inline nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}

// torchvision's v1.5 Bottleneck: stride on the 3x3 convolution, projection shortcut (1x1 conv +
// BN) on the first block of a stage, ReLU after the residual add.
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
      downsample = register_module("downsample",
                                   nn::Sequential(conv(inplanes, planes * kExpansion, 1, stride, 0),
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

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv3;
  nn::BatchNorm2d bn3;
  nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

// torchvision.models.resnet50 with `in_channels` input channels (the 7x7/2 stem kept). BatchNorm
// uses LibTorch's defaults, which are PyTorch's: eps 1e-5, momentum 0.1.
struct ResNet50Impl : nn::Module {
  ResNet50Impl(int64_t in_channels, int64_t num_classes)
      : conv1(register_module("conv1", conv(in_channels, 64, 7, 2, 3))),
        bn1(register_module("bn1", nn::BatchNorm2d(64))),
        layer1(register_module("layer1", stage(64, 3, 1))),
        layer2(register_module("layer2", stage(128, 4, 2))),
        layer3(register_module("layer3", stage(256, 6, 2))),
        layer4(register_module("layer4", stage(512, 3, 2))),
        fc(register_module("fc", nn::Linear(512 * BottleneckImpl::kExpansion, num_classes))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1(conv1(x)));
    y = torch::max_pool2d(y, {3, 3}, {2, 2}, {1, 1});
    y = layer4->forward(layer3->forward(layer2->forward(layer1->forward(y))));
    y = torch::adaptive_avg_pool2d(y, {1, 1});
    return fc(torch::flatten(y, 1));
  }

  nn::Sequential stage(int64_t planes, int blocks, int64_t stride) {
    nn::Sequential seq;
    for (int i = 0; i < blocks; ++i) {
      seq->push_back(Bottleneck(inplanes_, planes, i == 0 ? stride : 1, i == 0));
      inplanes_ = planes * BottleneckImpl::kExpansion;
    }
    return seq;
  }

  int64_t inplanes_ = 64;  // declared before the members whose construction reads it
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Sequential layer1, layer2, layer3, layer4;
  nn::Linear fc;
};
TORCH_MODULE(ResNet50);

}  // namespace zoc_libtorch
