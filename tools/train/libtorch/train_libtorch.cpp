// The LibTorch (C++) baseline of issue 8: the training train_pytorch.py does, written against
// LibTorch's C++ API, as the study zoc follows ran its "LibTorch" row.
//
// Same data (runtime/zoc/train/datasets.h: reader, epoch order, normalization), same initial
// weights (a safetensors file from train_pytorch.py --init-out, required here), same SGD, schedule,
// loss, precision flags, timing and CSV as the Python baseline (tools/train/README.md states
// each). On the CPU the two produce the same weights after the same steps, dropout included
// (both draw from LibTorch's default generator seeded with --seed); tests/train checks it.
//
//   train_libtorch --model lenet --data DIR --init-weights W.safetensors --epochs 5 --seed 0
//                  [--batch 128] [--lr R] [--momentum 0.9] [--weight-decay 5e-4]
//                  [--schedule cosine|step|constant] [--device cuda|cpu] [--threads N]
//                  [--csv out.csv] [--save-weights W] [--max-steps N] [--eval-batch 1000]
//                  [--dataset fashion-mnist]
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "train_data.h"
#include "train_nets.h"
#include "train_timing.h"
#include "zoc/core/expected.h"
#include "zoc/train/datasets.h"

namespace {

constexpr const char* kImpl = "libtorch";
constexpr int kClasses = 10, kChannels = 1, kResolution = 28;
constexpr double kLeNetDropout = 0.5;           // models/lenet.yaml, export.py's LeNet
constexpr double kPi = 3.14159265358979323846;  // Python's math.pi, the same double

struct Args {
  std::string model, data, init_weights, csv, save_weights, dataset = "fashion-mnist";
  std::string schedule = "cosine", device = "cuda";
  int epochs = 5, batch = 128, threads = 0, max_steps = 0, eval_batch = 1000;
  int64_t seed = 0;
  double lr = -1, momentum = 0.9, weight_decay = 5e-4;
};

zoc::Expected<double> to_number(const std::string& flag, const std::string& text, double lo,
                                double hi) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= lo && v <= hi)) {
    char range[64];
    std::snprintf(range, sizeof range, "%g .. %g", lo, hi);
    return zoc::Error{"bad value '" + text + "' for " + flag + " (expected " + range + ")"};
  }
  return v;
}

zoc::Expected<Args> parse_args(int argc, char** argv) {
  Args a;
  const std::vector<std::pair<const char*, std::string*>> texts = {
      {"--model", &a.model},
      {"--data", &a.data},
      {"--init-weights", &a.init_weights},
      {"--csv", &a.csv},
      {"--save-weights", &a.save_weights},
      {"--dataset", &a.dataset},
      {"--schedule", &a.schedule},
      {"--device", &a.device}};
  struct Number {
    const char* flag;
    double lo, hi;
    int* as_int;
    double* as_double;
  };
  double seed = 0;
  const std::vector<Number> numbers = {{"--epochs", 1, 1e6, &a.epochs, nullptr},
                                       {"--batch", 1, 1 << 20, &a.batch, nullptr},
                                       {"--threads", 0, 1024, &a.threads, nullptr},
                                       {"--max-steps", 0, 1e9, &a.max_steps, nullptr},
                                       {"--eval-batch", 1, 1 << 20, &a.eval_batch, nullptr},
                                       {"--seed", 0, 1e15, nullptr, &seed},
                                       {"--lr", 0, 1e3, nullptr, &a.lr},
                                       {"--momentum", 0, 1, nullptr, &a.momentum},
                                       {"--weight-decay", 0, 1, nullptr, &a.weight_decay}};
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return zoc::Error{"option " + flag + " needs a value (or is unknown)"};
    const std::string v = argv[++i];
    bool known = false;
    for (const auto& [name, dst] : texts) {
      if (flag == name) *dst = v, known = true;
    }
    for (const Number& n : numbers) {
      if (flag != n.flag) continue;
      auto x = to_number(flag, v, n.lo, n.hi);
      if (!x.ok()) return x.error();
      if (n.as_int) {
        if (*x != std::floor(*x))
          return zoc::Error{"bad value '" + v + "' for " + flag + " (an integer)"};
        *n.as_int = static_cast<int>(*x);
      } else {
        *n.as_double = *x;
      }
      known = true;
    }
    if (!known) return zoc::Error{"unknown option " + flag};
  }
  if (seed != std::floor(seed)) return zoc::Error{"--seed must be an integer"};
  a.seed = static_cast<int64_t>(seed);
  if (a.model != "lenet" && a.model != "resnet50") {
    return zoc::Error{"--model must be lenet or resnet50"};
  }
  if (a.data.empty() || a.init_weights.empty()) {
    return zoc::Error{
        "--data and --init-weights are required (make the weights with "
        "train_pytorch.py --init-out)"};
  }
  if (a.schedule != "cosine" && a.schedule != "step" && a.schedule != "constant") {
    return zoc::Error{"--schedule must be cosine, step or constant"};
  }
  if (a.device != "cuda" && a.device != "cpu") return zoc::Error{"--device must be cuda or cpu"};
  if (a.lr < 0) a.lr = a.model == "lenet" ? 0.05 : 0.1;
  return a;
}

// train_pytorch.py's learning_rate(), term for term.
double learning_rate(const Args& a, int epoch, int step, int steps_per_epoch) {
  if (a.schedule == "constant") return a.lr;
  if (a.schedule == "step") {
    const int m1 = (a.epochs + 1) / 2, m2 = (3 * a.epochs + 3) / 4;
    return a.lr * std::pow(0.1, (epoch >= m1 ? 1 : 0) + (epoch >= m2 ? 1 : 0));
  }
  const double t = static_cast<double>(epoch) * steps_per_epoch + step;
  return a.lr * 0.5 * (1.0 + std::cos(kPi * t / (static_cast<double>(a.epochs) * steps_per_epoch)));
}

void set_backend_flags() {
  at::globalContext().setBenchmarkCuDNN(true);
  at::globalContext().setDeterministicCuDNN(false);
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
}

torch::Tensor images_tensor(const train::NormalizedSplit& s, const torch::Device& device) {
  return torch::from_blob(const_cast<float*>(s.images.data()),
                          {s.count, s.channels, s.height, s.width}, torch::kFloat)
      .to(device, /*non_blocking=*/false, /*copy=*/true);
}

torch::Tensor labels_tensor(const train::NormalizedSplit& s, const torch::Device& device) {
  return torch::from_blob(const_cast<int32_t*>(s.labels.data()), {s.count}, torch::kInt)
      .to(device, torch::kLong);
}

template <class Net>
double evaluate(Net& net, const torch::Tensor& x, const torch::Tensor& y, int batch) {
  net->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor correct = torch::zeros({}, y.options());
  for (int64_t first = 0; first < x.size(0); first += batch) {
    const int64_t last = std::min<int64_t>(first + batch, x.size(0));
    torch::Tensor logits = net->forward(x.slice(0, first, last));
    correct += logits.argmax(1).eq(y.slice(0, first, last)).sum();
  }
  net->train();
  return static_cast<double>(correct.item<int64_t>()) / static_cast<double>(x.size(0));
}

template <class Net>
zoc::Status train_net(const Args& a, Net net) {
  const bool cuda = a.device == "cuda";
  ZOC_TRY(train::load(*net, a.init_weights));
  ZOC_ASSIGN_OR_RETURN(train::NormalizedSplit train_set,
                       train::read_split(a.data, "train", kClasses));
  ZOC_ASSIGN_OR_RETURN(train::NormalizedSplit test_set,
                       train::read_split(a.data, "t10k", kClasses));
  for (const auto* s : {&train_set, &test_set}) {
    if (s->channels != kChannels || s->height != kResolution || s->width != kResolution) {
      return zoc::Error{a.data + ": images must be 1x28x28, got " + std::to_string(s->height) +
                        "x" + std::to_string(s->width)};
    }
  }
  const torch::Device device(cuda ? torch::kCUDA : torch::kCPU);
  const torch::Tensor xs = images_tensor(train_set, device), ys = labels_tensor(train_set, device);
  const torch::Tensor xt = images_tensor(test_set, device), yt = labels_tensor(test_set, device);
  const int64_t count = train_set.count;
  int steps = static_cast<int>(count / a.batch);  // the last partial batch is dropped
  if (a.max_steps > 0) steps = std::min(steps, a.max_steps);
  if (steps < 1) {
    return zoc::Error{a.data + ": " + std::to_string(count) + " training images make no batch of " +
                      std::to_string(a.batch)};
  }

  net->to(device);
  net->train();
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(a.lr)
                                               .momentum(a.momentum)
                                               .dampening(0.0)
                                               .weight_decay(a.weight_decay)
                                               .nesterov(false));
  torch::manual_seed(static_cast<uint64_t>(a.seed));  // dropout: as train_pytorch.py
  train::StepTimer timer(cuda);
  std::FILE* csv = a.csv.empty() ? nullptr : std::fopen(a.csv.c_str(), "w");
  if (!a.csv.empty() && !csv) return zoc::Error{a.csv + ": cannot open for writing"};
  if (csv) {
    std::fprintf(csv,
                 "impl,model,dataset,seed,epoch,train_loss,train_acc,test_acc,step_ms,"
                 "epoch_s,peak_mem_mb,world_size,img_per_s\n");
  }
  double lr = a.lr;
  for (int epoch = 0; epoch < a.epochs; ++epoch) {
    std::vector<int64_t> order_host = zoc::data::shuffled_order(
        count, static_cast<uint64_t>(a.seed), static_cast<uint64_t>(epoch));
    const torch::Tensor order = torch::from_blob(order_host.data(), {count}, torch::kLong)
                                    .to(device, /*non_blocking=*/false, /*copy=*/true);
    torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions(device).dtype(torch::kFloat));
    torch::Tensor correct = torch::zeros({}, torch::TensorOptions(device).dtype(torch::kLong));
    if (cuda) torch::cuda::synchronize();
    train::reset_peak_memory(cuda);
    const auto t0 = std::chrono::steady_clock::now();
    for (int step = 0; step < steps; ++step) {
      lr = learning_rate(a, epoch, step, steps);
      for (auto& group : opt.param_groups()) {
        static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
      }
      timer.start();
      const torch::Tensor idx =
          order.slice(0, int64_t{step} * a.batch, int64_t{step + 1} * a.batch);
      const torch::Tensor x = xs.index_select(0, idx), y = ys.index_select(0, idx);
      torch::Tensor logits = net->forward(x);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);  // batch mean
      for (auto& p : net->parameters()) p.mutable_grad().reset();            // set_to_none=True
      loss.backward();
      opt.step();
      loss_sum += loss.detach();
      correct += logits.detach().argmax(1).eq(y).sum();
      timer.stop();
    }
    if (cuda) torch::cuda::synchronize();
    const double epoch_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double step_ms = timer.median_ms();
    const double train_loss = static_cast<double>(loss_sum.item<float>()) / steps;
    const double train_acc =
        static_cast<double>(correct.item<int64_t>()) / (static_cast<double>(steps) * a.batch);
    const double peak_mb = train::peak_memory_mb(cuda);
    const double test_acc = evaluate(net, xt, yt, a.eval_batch);
    const char* fmt = "%s,%s,%s,%lld,%d,%.6f,%.6f,%.6f,%.4f,%.3f,%.1f,1,%.1f\n";
    const auto seed = static_cast<long long>(a.seed);
    if (csv) {
      std::fprintf(csv, fmt, kImpl, a.model.c_str(), a.dataset.c_str(), seed, epoch + 1, train_loss,
                   train_acc, test_acc, step_ms, epoch_s, peak_mb, 1000.0 * a.batch / step_ms);
      std::fflush(csv);
    }
    std::printf(
        "{\"impl\": \"%s\", \"model\": \"%s\", \"dataset\": \"%s\", \"seed\": %lld, "
        "\"epoch\": %d, \"train_loss\": %.9g, \"train_acc\": %.9g, \"test_acc\": %.9g, "
        "\"step_ms\": %.9g, \"epoch_s\": %.9g, \"peak_mem_mb\": %.9g, \"steps\": %d, "
        "\"world_size\": 1, \"img_per_s\": %.9g, \"lr_last\": %.9g, \"device\": \"%s\"}\n",
        kImpl, a.model.c_str(), a.dataset.c_str(), seed, epoch + 1, train_loss, train_acc, test_acc,
        step_ms, epoch_s, peak_mb, steps, 1000.0 * a.batch / step_ms, lr, a.device.c_str());
    std::fflush(stdout);
  }
  if (csv && std::fclose(csv) != 0) return zoc::Error{a.csv + ": write error"};
  if (!a.save_weights.empty()) {
    ZOC_TRY(train::save(*net, a.save_weights,
                        {{"impl", kImpl},
                         {"model", a.model},
                         {"seed", std::to_string(a.seed)},
                         {"epochs", std::to_string(a.epochs)}}));
  }
  return zoc::Status::success();
}

}  // namespace

int main(int argc, char** argv) {
  auto args = parse_args(argc, argv);
  if (!args.ok()) {
    std::fprintf(stderr, "train_libtorch: error: %s\n", args.error().message.c_str());
    return 2;
  }
  const Args& a = *args;
  try {
#if !TRAIN_CUDA
    if (a.device == "cuda") {
      std::fprintf(stderr, "train_libtorch: error: built without TRAIN_CUDA; use --device cpu\n");
      return 2;
    }
#endif
    if (a.device == "cuda" && !torch::cuda::is_available()) {
      std::fprintf(stderr,
                   "train_libtorch: error: --device cuda but no CUDA device is available\n");
      return 1;
    }
    set_backend_flags();
    if (a.threads > 0) torch::set_num_threads(a.threads);
    zoc::Status s =
        a.model == "lenet"
            ? train_net(a, train::LeNet(kChannels, kClasses, kResolution, kLeNetDropout))
            : train_net(a, train::ResNet50(kChannels, kClasses));
    if (!s.ok()) {
      std::fprintf(stderr, "train_libtorch: error: %s\n", s.error().message.c_str());
      return 1;
    }
  } catch (const std::exception& e) {  // LibTorch reports its errors as c10::Error
    std::fprintf(stderr, "train_libtorch: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
