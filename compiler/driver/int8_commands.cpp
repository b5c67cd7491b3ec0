// `zoc calibrate` and `--int8-scales`: int8_commands.h says what they do.
#include "compiler/driver/int8_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/driver/run_outputs.h"
#include "compiler/ir/verify.h"
#include "compiler/passes/quantize_int8.h"
#include "compiler/quant/calibration.h"
#include "compiler/support/sanitize.h"
#include "zoc/io/npy.h"

namespace zoc {
namespace {

// The .npy files named, a folder standing for its *.npy files in name order.
Expected<std::vector<std::string>> sample_files(const std::vector<std::string>& given) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& path : given) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> in_dir;
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      if (e.path().extension() == ".npy") in_dir.push_back(e.path().string());
    }
    if (ec) return Error{fmt::format("{}: cannot list: {}", path, ec.message())};
    if (in_dir.empty()) return Error{fmt::format("{}: holds no .npy file", path)};
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  if (files.empty()) return Error{"no samples given (--samples FILE_OR_FOLDER)"};
  return files;
}

// One sample file's images, a batch of g's input; errors name the file.
Expected<std::vector<float>> read_sample(const ir::Graph& g, const std::string& file,
                                         std::vector<int64_t>* shape) {
  Expected<std::vector<float>> data = npy::read_float32(file, shape);
  if (!data.ok()) return data.error();  // the reader's message names the file
  if (Status s = check_input_shape(g, *shape); !s.ok()) {
    return Error{file + ": " + s.error().message};
  }
  return data;
}

// The first `count` (>= 1) images of the samples, one batch.
Expected<ref::Tensor> first_images(const ir::Graph& g, const std::vector<std::string>& files,
                                   int64_t count) {
  if (count < 1) return Error{fmt::format("--sensitivity-images {} is not >= 1", count)};
  ref::Tensor t;
  for (const std::string& file : files) {
    std::vector<int64_t> shape;
    Expected<std::vector<float>> data = read_sample(g, file, &shape);
    if (!data.ok()) return data.error();
    const size_t per = data->size() / static_cast<size_t>(shape[0]);
    const int64_t have = t.shape.empty() ? 0 : t.shape[0];
    const int64_t take = std::min(shape[0], count - have);
    t.data.insert(t.data.end(), data->begin(),
                  data->begin() + static_cast<std::ptrdiff_t>(per * static_cast<size_t>(take)));
    if (t.shape.empty()) t.shape = shape, t.shape[0] = 0;
    t.shape[0] += take;
    if (t.shape[0] >= count) break;
  }
  return t;
}

// The values to calibrate: those a convolution reads (input, residual), by id.
std::vector<bool> calibrated_values(const ir::Graph& g) {
  std::vector<bool> want(g.values.size(), false);
  for (const ir::Node& n : g.nodes) {
    if (n.op != ir::OpKind::FusedConv2d) continue;
    for (ir::ValueId v : n.inputs) want[static_cast<size_t>(v)] = true;
  }
  return want;
}

class Calibrator {
 public:
  Calibrator(const ir::Graph& g, const Weights& w, const CalibrateOptions& o)
      : g_(g), w_(w), o_(o), slot_(g.values.size(), -1) {
    // A histogram (16 KiB) per calibrated value only, not per value of the graph.
    const std::vector<bool> want = calibrated_values(g);
    for (size_t v = 0; v < want.size(); ++v) {
      if (want[v]) slot_[v] = static_cast<int>(hist_.size()), hist_.emplace_back();
    }
  }

  // One pass over every sample image; `second` fills the histograms, else the maxima.
  Status pass(const std::vector<std::string>& files, bool second) {
    images_ = 0;
    for (const std::string& file : files) {
      std::vector<int64_t> shape;
      Expected<std::vector<float>> data = read_sample(g_, file, &shape);
      if (!data.ok()) return data.error();
      if (Status s = run_file(*data, shape, second); !s.ok())
        return Error{file + ": " + s.error().message};
      if (o_.max_images > 0 && images_ >= o_.max_images) break;
    }
    return Status::success();
  }

  quant::Int8Scales scales(quant::Method m) const {
    quant::Int8Scales s;
    for (size_t v = 0; v < slot_.size(); ++v) {
      if (slot_[v] < 0) continue;
      s.scales.emplace(g_.value_name(static_cast<ir::ValueId>(v)),
                       quant::scale_of(quant::threshold(hist_[static_cast<size_t>(slot_[v])], m,
                                                        o_.percentile)));
    }
    return s;
  }
  int64_t images() const { return images_; }

 private:
  Status run_file(const std::vector<float>& data, const std::vector<int64_t>& shape, bool second) {
    const int64_t per = shape[0] > 0 ? static_cast<int64_t>(data.size()) / shape[0] : 0;
    for (int64_t at = 0; at < shape[0]; at += o_.batch) {
      int64_t n = std::min(o_.batch, shape[0] - at);
      if (o_.max_images > 0) n = std::min(n, o_.max_images - images_);
      if (n <= 0) break;
      ref::Tensor t;
      t.shape = shape;
      t.shape[0] = n;
      t.data.assign(data.begin() + at * per, data.begin() + (at + n) * per);
      auto observe = [&](ir::ValueId v, const ref::Tensor& x) {
        const int slot = slot_[static_cast<size_t>(v)];
        if (slot < 0) return;
        quant::AbsHistogram& h = hist_[static_cast<size_t>(slot)];
        const auto count = static_cast<int64_t>(x.data.size());
        second ? h.add(x.data.data(), count) : h.add_max(x.data.data(), count);
      };
      Expected<std::vector<ref::Tensor>> outs = ref::run(g_, w_, t, observe);
      if (!outs.ok()) return outs.error();
      images_ += n;
    }
    return Status::success();
  }

  const ir::Graph& g_;
  const Weights& w_;
  const CalibrateOptions& o_;
  std::vector<int> slot_;  // value -> its histogram in hist_, or -1: not calibrated
  std::vector<quant::AbsHistogram> hist_;
  int64_t images_ = 0;
};

}  // namespace

Expected<quant::Int8Scales> calibrate(const ir::Graph& optimized, const Weights& weights,
                                      const CalibrateOptions& options) {
  const std::optional<quant::Method> method = quant::parse_method(options.method);
  if (!method) {
    return Error{
        fmt::format("unknown calibration method '{}': expected max, percentile or "
                    "entropy",
                    options.method)};
  }
  if (*method == quant::Method::kPercentile &&
      !(options.percentile > 0.0 && options.percentile <= 100.0)) {
    return Error{fmt::format("--percentile {} is not in (0, 100]", options.percentile)};
  }
  Expected<std::vector<std::string>> files = sample_files(options.samples);
  if (!files.ok()) return files.error();
  Calibrator c(optimized, weights, options);
  if (Status s = c.pass(*files, false); !s.ok()) return s.error();
  if (c.images() == 0) return Error{"the samples hold no image"};
  if (Status s = c.pass(*files, true); !s.ok()) return s.error();
  quant::Int8Scales scales = c.scales(*method);
  scales.model = optimized.name;
  scales.method = *method == quant::Method::kPercentile
                      ? fmt::format("percentile {}", options.percentile)
                      : quant::method_name(*method);
  scales.method += fmt::format(", {} images", c.images());
  return scales;
}

Expected<MixedPlanChoice> choose_mixed_plan(const ir::Graph& optimized, const Weights& weights,
                                            const CalibrateOptions& options,
                                            quant::Int8Scales& scales) {
  Expected<std::vector<std::string>> files = sample_files(options.samples);
  if (!files.ok()) return files.error();
  const int64_t count = options.max_images > 0
                            ? std::min(options.sensitivity_images, options.max_images)
                            : options.sensitivity_images;
  Expected<ref::Tensor> images = first_images(optimized, *files, count);
  if (!images.ok()) return images.error();
  Expected<MixedPlanChoice> c = choose_float_layers(optimized, weights, scales.scales, *images,
                                                    options.max_error, options.batch);
  if (!c.ok()) return c.error();
  scales.float_layers = c->float_layers;
  scales.method += fmt::format(", {} convolutions float for a relative error of at most {:g}",
                               c->float_layers.size(), options.max_error);
  return c;
}

void calibrate_command(const ir::Graph& optimized, const Weights& weights,
                       const CalibrateOptions& options, const std::string& output,
                       Diagnostics& diags) {
  Expected<quant::Int8Scales> scales = calibrate(optimized, weights, options);
  if (!scales.ok()) {
    diags.error(SourceLoc{"--samples", 0, 0}, scales.error().message);
    return;
  }
  std::string mixed;
  if (options.max_error != 0) {  // NaN too: choose_mixed_plan refuses it by name
    Expected<MixedPlanChoice> c = choose_mixed_plan(optimized, weights, options, *scales);
    if (!c.ok()) {
      diags.error(SourceLoc{"--max-error", 0, 0}, c.error().message);
      return;
    }
    mixed = fmt::format(
        "sensitivity on {} images (relative L2 error of the outputs, that "
        "convolution alone int8):\n",
        c->images);
    for (const LayerError& l : c->layers) mixed += fmt::format("  {:.6f}  {}\n", l.error, l.layer);
    mixed += fmt::format("every eligible convolution int8: error {:.6f}\n", c->all_int8_error);
    mixed += fmt::format(
        "kept float: {} of {} ({}), error {:.6f} (at most {:g})\n", c->float_layers.size(),
        c->layers.size(),
        c->float_layers.empty() ? "none" : fmt::format("{}", fmt::join(c->float_layers, ", ")),
        c->chosen_error, options.max_error);
  }
  if (Status s = quant::write_scales(*scales, output); !s.ok()) {
    diags.file_error(output, s.error().message);
    return;
  }
  std::cout << mixed
            << fmt::format("wrote {}: {} scales ({})\n", output, scales->scales.size(),
                           scales->method);
}

namespace {

// Quantizes with `scales` (by the optimized graph's value names) and prints the plan.
bool quantize_and_print(ir::Graph& g, const std::map<std::string, float>& scales,
                        std::ostream& plan_out, Diagnostics& diags,
                        const passes::Int8Choices& choices = {}) {
  passes::Int8Plan plan;
  if (!passes::quantize_int8(g, scales, plan, diags, choices)) return false;
  if (!ir::verify(g, diags)) return false;
  const auto convs = static_cast<size_t>(plan.int8_convs) + plan.float_convs.size();
  plan_out << fmt::format(
      "int8 plan: {} of {} convolutions int8 ({} with an int8 output), {} "
      "quantize layer{}\n",
      plan.int8_convs, convs, plan.int8_outputs, plan.quantize_nodes,
      plan.quantize_nodes == 1 ? "" : "s");
  for (const auto& [name, why] : plan.float_convs) {
    plan_out << fmt::format("  float: {} ({})\n", name, why);
  }
  return true;
}

}  // namespace

bool apply_int8_scales(ir::Graph& optimized, const std::string& path, std::ostream& plan_out,
                       Diagnostics& diags) {
  Expected<quant::Int8Scales> scales = quant::read_scales(path);
  if (!scales.ok()) {
    diags.file_error(path, scales.error().message);
    return false;
  }
  if (!scales->model.empty() && scales->model != optimized.name) {
    diags.warning(SourceLoc{path, 0, 0}, fmt::format("the scales were calibrated on model '{}', "
                                                     "not '{}'",
                                                     scales->model, optimized.name));
  }
  passes::Int8Choices choices;
  for (const std::string& name : scales->float_layers) {
    const bool conv = std::any_of(optimized.nodes.begin(), optimized.nodes.end(), [&](auto& n) {
      return n.op == ir::OpKind::FusedConv2d && n.name == name;
    });
    if (!conv) {
      diags.file_error(path, fmt::format("keeps layer '{}' float, but model '{}' has no "
                                         "convolution of that name after optimization (the scales "
                                         "come from another model: run zoc calibrate on this one)",
                                         shown_text(name), shown_text(optimized.name)));
      return false;
    }
    choices.keep_float.emplace(name, kKeptFloatReason);
  }
  return quantize_and_print(optimized, scales->scales, plan_out, diags, choices);
}

bool apply_model_int8_scales(ir::Graph& optimized, const std::map<std::string, float>& scales,
                             std::ostream& plan_out, Diagnostics& diags) {
  std::map<std::string, float> renamed;
  for (const ir::Node& n : optimized.nodes) {
    const std::string& before = n.fused_from.empty() ? n.name : n.fused_from.back();
    const auto it = scales.find(before);
    if (it != scales.end()) renamed[n.name] = it->second;
  }
  plan_out << fmt::format(
      "int8 scales: the model's QuantizeLinear/DequantizeLinear pairs, on {} "
      "tensors\n",
      scales.size());
  passes::Int8Choices qdq;
  qdq.unscaled_stay_float = true;
  return quantize_and_print(optimized, renamed, plan_out, diags, qdq);
}

}  // namespace zoc
