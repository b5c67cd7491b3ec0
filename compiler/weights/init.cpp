// Seeded initialization and saving of weights (see weights.h).
//
// The rules and the random streams are in runtime/zoc/weights/init.h, shared with the generated
// code; init_choice() here is the one mapping from a parameter's declared scheme and role to a
// rule, so `zoc run` without weights and a generated trainer built with the same seed start from
// identical numbers.
#include <set>

#include "compiler/support/checked_math.h"
#include "compiler/weights/weights.h"
#include "zoc/io/safetensors.h"
#include "zoc/weights/init.h"

namespace zoc {

InitChoice init_choice(const ir::Node& node, const ir::ParamSpec& param) {
  // The fans of the node's own weight ([out, in/groups, kh, kw] or [out, in]); a folded BN's
  // tensors sit beside a conv weight but only ever take the constants.
  int64_t fan_in = 0, fan_out = 0;
  for (const ir::ParamSpec& w : node.params) {
    if (w.role != ir::ParamRole::kWeight || w.shape.size() < 2) continue;
    const int64_t numel = checked_product_of(w.shape).value_or(0);
    fan_in = w.shape[0] > 0 ? numel / w.shape[0] : 0;
    fan_out = w.shape[1] > 0 ? numel / w.shape[1] : 0;
    break;
  }
  switch (param.init) {
    case ir::InitScheme::kKaimingNormalFanOut:
      return {InitRule::kNormalFanOut, fan_out};
    case ir::InitScheme::kOnes:
      return {InitRule::kOnes, 0};
    case ir::InitScheme::kZeros:
      return {InitRule::kZeros, 0};
    case ir::InitScheme::kPytorchDefault:
      break;
  }
  switch (param.role) {
    case ir::ParamRole::kWeight:
    case ir::ParamRole::kBias:
      return {InitRule::kUniformFanIn, fan_in};
    case ir::ParamRole::kBnWeight:
    case ir::ParamRole::kBnVar:
    case ir::ParamRole::kNormWeight:  // nn.LayerNorm's reset_parameters()
    case ir::ParamRole::kScale:
    case ir::ParamRole::kOperand:  // a buffer has no PyTorch default: 1 leaves x * c, x / c alone
      return {InitRule::kOnes, 0};
    case ir::ParamRole::kBnBias:
    case ir::ParamRole::kBnMean:
    case ir::ParamRole::kBnCount:
    case ir::ParamRole::kNormBias:
      return {InitRule::kZeros, 0};
  }
  return {InitRule::kZeros, 0};
}

const char* init_rule_cpp(InitRule rule) {
  switch (rule) {
    case InitRule::kUniformFanIn:
      return "zoc::InitRule::kUniformFanIn";
    case InitRule::kOnes:
      return "zoc::InitRule::kOnes";
    case InitRule::kZeros:
      return "zoc::InitRule::kZeros";
    case InitRule::kNormalFanOut:
      return "zoc::InitRule::kNormalFanOut";
  }
  return "zoc::InitRule::kZeros";
}

Weights init_weights(const ir::Graph& graph, uint64_t seed) {
  Weights w;
  for (const ir::Node& node : graph.nodes) {
    for (const ir::ParamSpec& p : node.params) {
      if (p.dtype != ir::DType::F32) continue;
      const int64_t count = checked_product_of(p.shape).value_or(0);
      std::vector<float> values(static_cast<size_t>(count));
      const InitChoice c = init_choice(node, p);
      init_tensor(seed, p.name, c.rule, c.fan, values.data(), count);
      w.tensors.emplace(p.name, std::move(values));
    }
  }
  return w;
}

Status save_weights(const ir::Graph& graph, const Weights& weights, const std::string& path) {
  std::vector<st::TensorToWrite> out;
  static const int64_t kZero = 0;
  std::set<std::string, std::less<>> written;  // a tensor several layers read, written once
  for (const ir::Node& node : graph.nodes) {
    for (const ir::ParamSpec& p : node.params) {
      if (!written.insert(p.name).second) continue;
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
