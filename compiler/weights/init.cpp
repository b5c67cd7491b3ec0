// Seeded default initialization and saving of weights (see weights.h).
//
// The rules and the random streams are in runtime/zoc/init.h, shared with the generated
// constructors, so `zoc run` without weights and a generated model built with the same seed
// start from identical numbers.
#include "compiler/support/checked_math.h"
#include "compiler/weights/weights.h"
#include "zoc/init.h"
#include "zoc/safetensors.h"

namespace zoc {

Weights init_weights(const ir::Graph& graph, uint64_t seed) {
  Weights w;
  for (const ir::Node& node : graph.nodes) {
    int64_t fan_in = 0;
    if (!node.params.empty() && node.params.front().role == ir::ParamRole::kWeight) {
      const auto& ws = node.params.front().shape;  // [out, in/groups, kh, kw] or [out, in]
      fan_in = checked_product_of(ws).value_or(0) / ws[0];
    }
    for (const ir::ParamSpec& p : node.params) {
      if (p.dtype != ir::DType::F32) continue;
      const int64_t count = checked_product_of(p.shape).value_or(0);
      std::vector<float> values(static_cast<size_t>(count));
      InitRule rule = InitRule::kUniformFanIn;
      if (p.role == ir::ParamRole::kBnWeight || p.role == ir::ParamRole::kBnVar) {
        rule = InitRule::kOnes;
      } else if (p.role == ir::ParamRole::kBnBias || p.role == ir::ParamRole::kBnMean) {
        rule = InitRule::kZeros;
      }
      init_tensor(seed, p.name, rule, fan_in, values.data(), count);
      w.tensors.emplace(p.name, std::move(values));
    }
  }
  return w;
}

Status save_weights(const ir::Graph& graph, const Weights& weights, const std::string& path) {
  std::vector<st::TensorToWrite> out;
  static const int64_t kZero = 0;
  for (const ir::Node& node : graph.nodes) {
    for (const ir::ParamSpec& p : node.params) {
      if (p.dtype == ir::DType::I64) {
        out.push_back({p.name, st::DType::I64, p.shape, &kZero, sizeof kZero});
        continue;
      }
      const std::vector<float>* v = weights.find(p.name);
      if (!v) return Error{"save_weights: no values for tensor '" + p.name + "'"};
      out.push_back({p.name, st::DType::F32, p.shape, v->data(), v->size() * sizeof(float)});
    }
  }
  return st::write_file(path, out, {{"format", "pt"}, {"producer", "zoc"}});
}

}  // namespace zoc
