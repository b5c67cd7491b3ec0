// The options of generated trainers' runner (issue 8), kept free of CUDA so that the CPU tests
// check them: the two modes' arguments and their parser (zoc/train/main.h documents the command
// line), the learning-rate schedule shared with tools/train/train_pytorch.py, and where a
// checkpoint's optimizer state lives. Dependency-free C++17.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "zoc/core/expected.h"

namespace zoc {

struct FitArgs {
  std::string data, dataset = "fashion-mnist", weights, checkpoint, resume, csv, json;
  int epochs = 5, batch = 128, max_steps = 0;
  uint64_t seed = 0;
  // sgd: --lr 0.1, --momentum 0.9, --weight-decay 5e-4 by default; adamw: PyTorch's AdamW
  // defaults, --lr 1e-3, --weight-decay 1e-2, --betas 0.9,0.999, --eps 1e-8.
  std::string optimizer = "sgd";
  double lr = 0.1, momentum = 0.9, weight_decay = 5e-4;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double label_smoothing = 0.0;  // the target (1 - e) onehot + e / classes, as PyTorch's
  double loss_scale = 0.0;       // fp16 trainers: the first loss scale (0: GradScaler's 65536)
  std::string schedule = "cosine";
  bool dropout = true;
  bool graph = true;           // each step's forward, loss and backward as one CUDA graph launch
  bool fused_sgd = true;       // one process, SGD: each layer updated inside the backward pass
  bool benchmark = true;       // time cuDNN's exact candidates per convolution (cudnn.benchmark)
  bool deterministic = false;  // only convolution algorithms cuDNN marks deterministic
  std::vector<float> mean, stddev;  // empty: the data set's stated constants
  int resize = 0;    // images resized to resize x resize (bilinear) when loaded; 0: as stored
  int channels = 0;  // a one-channel set replicated to this many channels; 0: as stored
};

// The rate of step `step` of epoch `epoch` (0-based), as tools/train/train_pytorch.py computes it.
inline double scheduled_lr(const std::string& schedule, double base, int epoch, int epochs,
                           int step, int steps_per_epoch) {
  if (schedule == "constant") return base;
  if (schedule == "step") {
    const int m1 = (epochs + 1) / 2, m2 = (3 * epochs + 3) / 4;
    return base * std::pow(0.1, (epoch >= m1 ? 1 : 0) + (epoch >= m2 ? 1 : 0));
  }
  const double t = double(epoch) * steps_per_epoch + step;
  const double pi = 3.14159265358979323846;  // Python's math.pi
  return base * 0.5 * (1.0 + std::cos(pi * t / (double(epochs) * steps_per_epoch)));
}

// A checkpoint's optimizer state (momenta, steps, seed, batch): beside it, `.optim.safetensors`
// in place of `.safetensors`.
inline std::string optim_path_for(const std::string& checkpoint) {
  const std::string ext = ".safetensors";
  if (checkpoint.size() > ext.size() &&
      checkpoint.compare(checkpoint.size() - ext.size(), ext.size(), ext) == 0) {
    return checkpoint.substr(0, checkpoint.size() - ext.size()) + ".optim" + ext;
  }
  return checkpoint + ".optim.safetensors";
}

// Both modes: fit_args holds the options they share (weights, seed, SGD's settings, the
// algorithm choice); the rest are the one-batch mode's.
struct TrainArgs {
  std::string batch_file, out, weights_out;
  int steps = 0;
  bool fit = false;  // --data given: the epoch loop
  FitArgs fit_args;
};

namespace detail {
inline std::vector<float> float_list(const std::string& v) {
  std::vector<float> out;
  size_t start = 0;
  while (start <= v.size()) {
    const size_t end = std::min(v.find(',', start), v.size());
    size_t used = 0;
    const std::string item = v.substr(start, end - start);
    out.push_back(std::stof(item, &used));
    if (used != item.size()) throw std::invalid_argument(item);
    start = end + 1;
  }
  return out;
}
}  // namespace detail

inline Expected<TrainArgs> parse_train_args(int argc, char** argv) {
  TrainArgs a;
  FitArgs& f = a.fit_args;
  bool lr_given = false, momentum_given = false, wd_given = false, adamw_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--no-dropout" || k == "--no-graph" || k == "--no-benchmark") {
      (k == "--no-dropout" ? f.dropout : k == "--no-graph" ? f.graph : f.benchmark) = false;
      continue;
    }
    if (k == "--deterministic") {
      f.deterministic = true;
      continue;
    }
    if (k == "--no-fused-sgd") {
      f.fused_sgd = false;
      continue;
    }
    if (i + 1 >= argc) return Error{"option " + k + " needs a value"};
    const std::string v = argv[++i];
    auto whole = [&](auto parse) {  // the whole value must be the number
      size_t used = 0;
      auto x = parse(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
      return x;
    };
    auto to_int = [](const std::string& s, size_t* u) { return std::stoi(s, u); };
    auto to_u64 = [](const std::string& s, size_t* u) { return std::stoull(s, u); };
    auto to_double = [](const std::string& s, size_t* u) { return std::stod(s, u); };
    try {
      if (k == "--weights")
        f.weights = v;
      else if (k == "--batch-file")
        a.batch_file = v;
      else if (k == "--out")
        a.out = v;
      else if (k == "--weights-out")
        a.weights_out = v;
      else if (k == "--seed")
        f.seed = whole(to_u64);
      else if (k == "--steps")
        a.steps = whole(to_int);
      else if (k == "--lr")
        f.lr = whole(to_double), lr_given = true;
      else if (k == "--momentum")
        f.momentum = whole(to_double), momentum_given = true;
      else if (k == "--weight-decay")
        f.weight_decay = whole(to_double), wd_given = true;
      else if (k == "--optimizer")
        f.optimizer = v;
      else if (k == "--betas") {
        const size_t comma = v.find(',');
        if (comma == std::string::npos) return Error{"--betas takes two numbers: B1,B2"};
        size_t u1 = 0, u2 = 0;
        adamw_given = true;
        f.beta1 = std::stod(v.substr(0, comma), &u1);
        f.beta2 = std::stod(v.substr(comma + 1), &u2);
        if (u1 != comma || u2 != v.size() - comma - 1) throw std::invalid_argument(v);
      } else if (k == "--eps")
        f.eps = whole(to_double), adamw_given = true;
      else if (k == "--label-smoothing")
        f.label_smoothing = whole(to_double);
      else if (k == "--loss-scale") {
        f.loss_scale = whole(to_double);
        if (!(f.loss_scale >= 1 && f.loss_scale <= 16777216)) {
          return Error{"--loss-scale must be in 1..16777216 (2^24)"};
        }
      } else if (k == "--data") {
        f.data = v;
        a.fit = true;
      } else if (k == "--dataset")
        f.dataset = v;
      else if (k == "--epochs")
        f.epochs = whole(to_int);
      else if (k == "--batch")
        f.batch = whole(to_int);
      else if (k == "--max-steps")
        f.max_steps = whole(to_int);
      else if (k == "--schedule")
        f.schedule = v;
      else if (k == "--csv")
        f.csv = v;
      else if (k == "--json")
        f.json = v;
      else if (k == "--checkpoint")
        f.checkpoint = v;
      else if (k == "--resume")
        f.resume = v;
      else if (k == "--mean")
        f.mean = detail::float_list(v);
      else if (k == "--std")
        f.stddev = detail::float_list(v);
      else if (k == "--resize") {
        f.resize = whole(to_int);
        if (f.resize < 1 || f.resize > 4096) return Error{"--resize must be in 1..4096"};
      } else if (k == "--channels") {
        f.channels = whole(to_int);
        if (f.channels < 1 || f.channels > 16) return Error{"--channels must be in 1..16"};
      } else
        return Error{"unknown option " + k};
    } catch (const std::exception&) {
      return Error{"option " + k + ": '" + v + "' is not a valid number"};
    }
  }
  if (!(f.label_smoothing >= 0 && f.label_smoothing < 1)) {
    return Error{"--label-smoothing must be in [0, 1)"};
  }
  if (f.optimizer != "sgd" && f.optimizer != "adamw") {
    return Error{"--optimizer " + f.optimizer + ": expected sgd or adamw"};
  }
  if (f.optimizer == "sgd" && adamw_given)
    return Error{"--betas and --eps are AdamW's: add --optimizer adamw"};
  if (f.optimizer == "adamw") {
    if (momentum_given) return Error{"--momentum is SGD's: AdamW takes --betas B1,B2"};
    if (!lr_given) f.lr = 1e-3;  // torch.optim.AdamW's defaults
    if (!wd_given) f.weight_decay = 1e-2;
    if (!(f.beta1 >= 0 && f.beta1 < 1 && f.beta2 >= 0 && f.beta2 < 1) || !(f.eps > 0)) {
      return Error{"--betas must be in [0, 1) and --eps positive"};
    }
  }
  if (a.fit) {
    if (!a.batch_file.empty() || !a.out.empty()) {
      return Error{"--data (train) and --batch-file/--out (one batch) are different modes"};
    }
    if (f.epochs < 1 || f.epochs > 100000) return Error{"--epochs must be in 1..100000"};
    if (f.batch < 2 || f.batch > 65536) {
      return Error{"--batch must be in 2..65536 (training-mode batch norm needs two samples)"};
    }
    if (f.max_steps < 0) return Error{"--max-steps must be >= 0"};
    if (f.schedule != "cosine" && f.schedule != "step" && f.schedule != "constant") {
      return Error{"--schedule " + f.schedule + ": expected cosine, step or constant"};
    }
    if (!(f.lr > 0) || !(f.momentum >= 0) || !(f.weight_decay >= 0)) {
      return Error{"--lr must be positive, --momentum and --weight-decay non-negative"};
    }
    if (!f.resume.empty() && !f.weights.empty()) {
      return Error{"--resume already gives the weights: drop --weights"};
    }
    return a;
  }
  if (a.batch_file.empty() || a.out.empty()) {
    return Error{"either --data DIR (train) or --batch-file B --out G (one batch) is required"};
  }
  if (a.steps < 0 || a.steps > 100000) return Error{"--steps must be in 0..100000"};
  return a;
}

}  // namespace zoc
