// The two trained networks in LibTorch's torch::nn API, under PyTorch's state_dict names, and
// their weights files.
//
// The LibTorch baseline of issue 8 must train exactly what the Python baseline trains (nets.py:
// models/export.py's LeNet, torchvision's ResNet-50 with a C-channel stem) from the same
// safetensors file. So the modules are registered with the names of models/lenet.yaml and
// models/resnet50.yaml (conv1, layer1.0.downsample.0, fc, ...), their forward passes call the
// same ATen ops as the Python modules (so that on the CPU the two agree to the last bits), and
// loading insists that every parameter and buffer is in the file with its shape and that every
// tensor of the file is used. Files are read and written with zoc's own safetensors code
// (runtime/zoc/io/safetensors.h). Errors are returned as zoc::Status naming the file and tensor.
#pragma once

#include <torch/torch.h>

#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "resnet50_module.h"
#include "zoc/core/expected.h"
#include "zoc/io/safetensors.h"

namespace train {

namespace nn = torch::nn;

// models/export.py's LeNet: conv 5x5/32 (pad 2), ReLU, 2x2 max pool, conv 5x5/64, ReLU, pool,
// fc 1024, ReLU, dropout, fc classes.
struct LeNetImpl : nn::Module {
  LeNetImpl(int64_t in_channels, int64_t num_classes, int64_t resolution, double dropout)
      : conv1(
            register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in_channels, 32, 5).padding(2)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 5).padding(2)))),
        fc1(register_module("fc1", nn::Linear(64 * (resolution / 4) * (resolution / 4), 1024))),
        drop(register_module("dropout", nn::Dropout(nn::DropoutOptions(dropout)))),
        fc2(register_module("fc2", nn::Linear(1024, num_classes))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::max_pool2d(torch::relu(conv1(x)), {2, 2});
    y = torch::max_pool2d(torch::relu(conv2(y)), {2, 2});
    y = torch::flatten(y, 1);
    return fc2(drop(torch::relu(fc1(y))));
  }

  nn::Conv2d conv1, conv2;
  nn::Linear fc1;
  nn::Dropout drop;
  nn::Linear fc2;
};
TORCH_MODULE(LeNet);

// torchvision's ResNet-50 with a C-channel stem: the benchmark harness's module
// (tools/harness/libtorch/resnet50_module.h): the harness times and this baseline trains one
// definition.
using zoc_libtorch::ResNet50;

// Every parameter and buffer of a module under its state_dict name.
inline std::vector<std::pair<std::string, torch::Tensor>> state(const nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : module.named_parameters()) out.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers()) out.emplace_back(item.key(), item.value());
  return out;
}

// Copies the file's tensors into the module's own (on the CPU, before moving it to a device).
inline zoc::Status load(const nn::Module& module, const std::string& path) {
  auto file = zoc::st::File::open(path);
  if (!file.ok()) return file.error();
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (const auto& [name, target] : state(module)) {
    const zoc::st::TensorView* view = file->find(name);
    if (!view) return zoc::Error{path + ": no tensor '" + name + "' for the model"};
    if (view->shape != target.sizes().vec()) {
      return zoc::Error{path + ": tensor '" + name + "' has shape " +
                        zoc::st::detail::shape_string(view->shape) + ", the model wants " +
                        torch::str(target.sizes())};
    }
    const size_t n = view->numel();
    if (target.scalar_type() == torch::kLong) {
      if (view->dtype != zoc::st::DType::I64) {
        return zoc::Error{path + ": tensor '" + name + "' must be I64 (it is an integer buffer)"};
      }
      std::vector<int64_t> values(n);
      if (n) std::memcpy(values.data(), view->data, n * sizeof(int64_t));
      target.copy_(torch::from_blob(values.data(), target.sizes(), torch::kLong));
    } else {
      std::vector<float> values(n);
      ZOC_TRY(zoc::st::to_float32(*view, values.data(), n));
      target.copy_(torch::from_blob(values.data(), target.sizes(), torch::kFloat));
    }
    used.insert(name);
  }
  for (const auto& view : file->tensors()) {
    if (!used.count(view.name)) {
      return zoc::Error{path + ": tensor '" + view.name + "' matches nothing in the model"};
    }
  }
  return zoc::Status::success();
}

// Writes the module's state (fp32, integer buffers I64) as safetensors, loadable by nets.py,
// PyTorch and zoc's inference code.
inline zoc::Status save(const nn::Module& module, const std::string& path,
                        const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::vector<torch::Tensor> keep;  // host copies alive until written
  std::vector<zoc::st::TensorToWrite> tensors;
  for (const auto& [name, value] : state(module)) {
    const bool integer = value.scalar_type() == torch::kLong;
    torch::Tensor host =
        value.detach().to(torch::kCPU, integer ? torch::kLong : torch::kFloat).contiguous();
    keep.push_back(host);
    tensors.push_back({name, integer ? zoc::st::DType::I64 : zoc::st::DType::F32,
                       host.sizes().vec(), host.data_ptr(),
                       static_cast<size_t>(host.numel()) * host.element_size()});
  }
  return zoc::st::write_file(path, tensors, metadata);
}

}  // namespace train
