// `zoc calibrate` and `--int8-scales`: int8_commands.h says what they do.
#include "compiler/driver/int8_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "compiler/backend/reference/interpreter.h"
#include "compiler/ir/verify.h"
#include "compiler/passes/quantize_int8.h"
#include "compiler/quant/calibration.h"
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
      : g_(g), w_(w), o_(o), want_(calibrated_values(g)), hist_(g.values.size()) {}

  // One pass over every sample image; `second` fills the histograms, else the maxima.
  Status pass(const std::vector<std::string>& files, bool second) {
    images_ = 0;
    const auto& dims = g_.type(g_.nodes.front().output).dims;
    for (const std::string& file : files) {
      std::vector<int64_t> shape;
      Expected<std::vector<float>> data = npy::read_float32(file, &shape);
      if (!data.ok()) return data.error();  // the reader's message names the file
      if (shape.size() != dims.size() + 1 ||
          !std::equal(dims.begin(), dims.end(), shape.begin() + 1)) {
        return Error{fmt::format("{}: the array has shape ({}), but model '{}' takes (N, {})", file,
                                 fmt::join(shape, ", "), g_.name, fmt::join(dims, ", "))};
      }
      if (Status s = run_file(*data, shape, second); !s.ok())
        return Error{file + ": " + s.error().message};
      if (o_.max_images > 0 && images_ >= o_.max_images) break;
    }
    return Status::success();
  }

  quant::Int8Scales scales(quant::Method m) const {
    quant::Int8Scales s;
    for (size_t v = 0; v < want_.size(); ++v) {
      if (!want_[v]) continue;
      s.scales.emplace(g_.value_name(static_cast<ir::ValueId>(v)),
                       quant::scale_of(quant::threshold(hist_[v], m, o_.percentile)));
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
        if (!want_[static_cast<size_t>(v)]) return;
        quant::AbsHistogram& h = hist_[static_cast<size_t>(v)];
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
  std::vector<bool> want_;
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

namespace {

// Quantizes with `scales` (by the optimized graph's value names) and prints the plan.
bool quantize_and_print(ir::Graph& g, const std::map<std::string, float>& scales,
                        std::ostream& plan_out, Diagnostics& diags, bool qdq = false) {
  passes::Int8Plan plan;
  if (!passes::quantize_int8(g, scales, plan, diags, qdq)) return false;
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
  return quantize_and_print(optimized, scales->scales, plan_out, diags);
}

bool apply_model_int8_scales(ir::Graph& optimized, const std::map<std::string, float>& scales,
                             std::ostream& plan_out, Diagnostics& diags) {
  std::map<std::string, float> renamed;
  for (const ir::Node& n : optimized.nodes) {
    const std::string& before = n.fused_from.empty() ? n.name : n.fused_from.back();
    const auto it = scales.find(before);
    if (it != scales.end()) renamed[n.name] = it->second;
  }
  plan_out << fmt::format("int8 scales: the model's QuantizeLinear/DequantizeLinear pairs, on {} "
                          "tensors\n",
                          scales.size());
  return quantize_and_print(optimized, renamed, plan_out, diags, /*qdq=*/true);
}

}  // namespace zoc
