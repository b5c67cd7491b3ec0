// zoc calibrate --max-error: int8_sensitivity.h says what it measures and how it chooses.
#include "compiler/driver/int8_sensitivity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "compiler/passes/quantize_int8.h"
#include "compiler/support/diagnostics.h"
#include "compiler/support/sanitize.h"

namespace zoc {
namespace {

// Each output of a graph over all the images, flat.
using Outputs = std::vector<std::vector<float>>;

// The relative L2 distance of y from want, the largest over the outputs (the absolute distance
// where want is all zeros).
double distance(const Outputs& y, const Outputs& want) {
  double worst = 0;
  for (size_t o = 0; o < want.size(); ++o) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want[o].size(); ++i) {
      const double d = double(y[o][i]) - double(want[o][i]);
      num += d * d;
      den += double(want[o][i]) * double(want[o][i]);
    }
    worst = std::max(worst, den > 0 ? std::sqrt(num / den) : std::sqrt(num));
  }
  return worst;
}

bool all_finite(const Outputs& y) {
  for (const std::vector<float>& o : y) {
    for (float v : o) {
      if (!std::isfinite(v)) return false;
    }
  }
  return true;
}

class SensitivityRun {
 public:
  SensitivityRun(const ir::Graph& g, const Weights& w, const std::map<std::string, float>& scales,
                 const ref::Tensor& images, int64_t batch)
      : g_(g), w_(w), scales_(scales), images_(images), batch_(std::max<int64_t>(batch, 1)) {}

  // Every output of `g` on the images.
  Expected<Outputs> outputs(const ir::Graph& g) const {
    Outputs all;
    const int64_t n = images_.shape[0];
    const size_t per = images_.data.size() / static_cast<size_t>(n);
    for (int64_t at = 0; at < n; at += batch_) {
      const int64_t count = std::min(batch_, n - at);
      ref::Tensor t;
      t.shape = images_.shape;
      t.shape[0] = count;
      const auto first = images_.data.begin() + static_cast<std::ptrdiff_t>(per * at);
      t.data.assign(first, first + static_cast<std::ptrdiff_t>(per * count));
      Expected<std::vector<ref::Tensor>> outs = ref::run(g, w_, t);
      if (!outs.ok()) return outs.error();
      all.resize(outs->size());
      for (size_t o = 0; o < outs->size(); ++o) {
        all[o].insert(all[o].end(), (*outs)[o].data.begin(), (*outs)[o].data.end());
      }
    }
    return all;
  }

  // The int8 plan keeping `floats` float: its outputs' distance from fp32's. `what` names the
  // plan in an error.
  Expected<double> error(const std::set<std::string>& floats, const std::string& what) {
    ir::Graph q = g_;
    passes::Int8Choices choices;
    for (const std::string& name : floats) choices.keep_float.emplace(name, kKeptFloatReason);
    passes::Int8Plan plan;
    Diagnostics diags;
    if (!passes::quantize_int8(q, scales_, plan, diags, choices)) return diags.to_error();
    Expected<Outputs> y = outputs(q);
    if (!y.ok()) return y.error();
    if (!all_finite(*y)) {
      return Error{fmt::format("the int8 outputs with {} are not finite", what)};
    }
    return distance(*y, reference_);
  }

  // The fp32 outputs and the convolutions the plan makes int8 when nothing is kept float.
  Status start(std::vector<std::string>* eligible) {
    Expected<Outputs> y = outputs(g_);
    if (!y.ok()) return y.error();
    if (!all_finite(*y)) {
      return Error{"the fp32 outputs on the sensitivity images are not finite"};
    }
    reference_ = std::move(*y);
    ir::Graph q = g_;
    passes::Int8Plan plan;
    Diagnostics diags;
    if (!passes::quantize_int8(q, scales_, plan, diags)) return diags.to_error();
    for (const ir::Node& n : q.nodes) {
      if (n.op == ir::OpKind::FusedConv2d && n.attrs.has("int8_in")) eligible->push_back(n.name);
    }
    return Status::success();
  }

 private:
  const ir::Graph& g_;
  const Weights& w_;
  const std::map<std::string, float>& scales_;
  const ref::Tensor& images_;
  int64_t batch_;
  Outputs reference_;
};

}  // namespace

Expected<MixedPlanChoice> choose_float_layers(const ir::Graph& optimized, const Weights& weights,
                                              const std::map<std::string, float>& scales,
                                              const ref::Tensor& images, double max_error,
                                              int64_t batch) {
  if (!(max_error > 0)) return Error{fmt::format("--max-error {} is not > 0", max_error)};
  if (images.shape.empty() || images.shape[0] < 1 || images.data.empty()) {
    return Error{"no image to measure the sensitivity on"};
  }
  SensitivityRun run(optimized, weights, scales, images, batch);
  std::vector<std::string> eligible;
  if (Status s = run.start(&eligible); !s.ok()) return s.error();
  MixedPlanChoice c;
  c.images = images.shape[0];
  const std::set<std::string> all(eligible.begin(), eligible.end());
  for (const std::string& name : eligible) {
    std::set<std::string> others = all;
    others.erase(name);
    Expected<double> e = run.error(others, fmt::format("'{}' alone int8", shown_text(name)));
    if (!e.ok()) return e.error();
    c.layers.push_back({name, *e});
  }
  std::stable_sort(c.layers.begin(), c.layers.end(),
                   [](const LayerError& a, const LayerError& b) { return a.error > b.error; });
  std::map<size_t, double> measured;  // the plan keeping the m most sensitive float -> error
  auto error_of = [&](size_t m) -> Expected<double> {
    if (auto it = measured.find(m); it != measured.end()) return it->second;
    std::set<std::string> floats;
    for (size_t i = 0; i < m; ++i) floats.insert(c.layers[i].layer);
    Expected<double> e = run.error(floats, fmt::format("the {} most sensitive layers float", m));
    if (e.ok()) measured[m] = *e;
    return e;
  };
  Expected<double> none = error_of(0);
  if (!none.ok()) return none.error();
  c.all_int8_error = *none;
  // The fewest m whose error is at most max_error; m = every layer is fp32 itself (error 0).
  size_t lo = 0, hi = c.layers.size();
  if (*none <= max_error) hi = 0;
  while (lo + 1 < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    Expected<double> e = error_of(mid);
    if (!e.ok()) return e.error();
    (*e <= max_error ? hi : lo) = mid;
  }
  Expected<double> chosen = error_of(hi);
  if (!chosen.ok()) return chosen.error();
  c.chosen_error = *chosen;
  for (size_t i = 0; i < hi; ++i) c.float_layers.push_back(c.layers[i].layer);
  return c;
}

}  // namespace zoc
