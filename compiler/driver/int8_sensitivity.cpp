// zoc calibrate --max-error: int8_sensitivity.h says what it measures and how it chooses.
#include "compiler/driver/int8_sensitivity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "compiler/passes/quantize_int8.h"
#include "compiler/support/diagnostics.h"

namespace zoc {
namespace {

class SensitivityRun {
 public:
  SensitivityRun(const ir::Graph& g, const Weights& w, const std::map<std::string, float>& scales,
                 const ref::Tensor& images, int64_t batch)
      : g_(g), w_(w), scales_(scales), images_(images), batch_(std::max<int64_t>(batch, 1)) {}

  // Every output of `g` on the images, one flat vector.
  Expected<std::vector<float>> outputs(const ir::Graph& g) const {
    std::vector<float> all;
    const int64_t n = images_.shape[0];
    const size_t per = n > 0 ? images_.data.size() / static_cast<size_t>(n) : 0;
    for (int64_t at = 0; at < n; at += batch_) {
      const int64_t count = std::min(batch_, n - at);
      ref::Tensor t;
      t.shape = images_.shape;
      t.shape[0] = count;
      const auto first = images_.data.begin() + static_cast<std::ptrdiff_t>(per * at);
      t.data.assign(first, first + static_cast<std::ptrdiff_t>(per * count));
      Expected<std::vector<ref::Tensor>> outs = ref::run(g, w_, t);
      if (!outs.ok()) return outs.error();
      for (const ref::Tensor& o : *outs) all.insert(all.end(), o.data.begin(), o.data.end());
    }
    return all;
  }

  // The int8 plan keeping `floats` float: its outputs' relative L2 distance from fp32's.
  Expected<double> error(const std::set<std::string>& floats) {
    ir::Graph q = g_;
    passes::Int8Choices choices;
    for (const std::string& name : floats) choices.keep_float.emplace(name, kKeptFloatReason);
    passes::Int8Plan plan;
    Diagnostics diags;
    if (!passes::quantize_int8(q, scales_, plan, diags, choices)) {
      return Error{diags.render()};
    }
    Expected<std::vector<float>> y = outputs(q);
    if (!y.ok()) return y.error();
    double num = 0, den = 0;
    for (size_t i = 0; i < y->size(); ++i) {
      const double d = double((*y)[i]) - double(reference_[i]);
      num += d * d;
      den += double(reference_[i]) * double(reference_[i]);
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }

  // The fp32 outputs and the convolutions the plan makes int8 when nothing is kept float.
  Status start(std::vector<std::string>* eligible) {
    Expected<std::vector<float>> y = outputs(g_);
    if (!y.ok()) return y.error();
    reference_ = std::move(*y);
    ir::Graph q = g_;
    passes::Int8Plan plan;
    Diagnostics diags;
    if (!passes::quantize_int8(q, scales_, plan, diags)) return Error{diags.render()};
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
  std::vector<float> reference_;
};

}  // namespace

Expected<MixedPlanChoice> choose_float_layers(const ir::Graph& optimized, const Weights& weights,
                                              const std::map<std::string, float>& scales,
                                              const ref::Tensor& images, double max_error,
                                              int64_t batch) {
  if (!(max_error > 0)) return Error{fmt::format("--max-error {} is not > 0", max_error)};
  SensitivityRun run(optimized, weights, scales, images, batch);
  std::vector<std::string> eligible;
  if (Status s = run.start(&eligible); !s.ok()) return s.error();
  MixedPlanChoice c;
  c.images = images.shape.empty() ? 0 : images.shape[0];
  const std::set<std::string> all(eligible.begin(), eligible.end());
  for (const std::string& name : eligible) {
    std::set<std::string> others = all;
    others.erase(name);
    Expected<double> e = run.error(others);
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
    Expected<double> e = run.error(floats);
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
