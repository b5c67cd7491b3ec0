// What the numerical tests of the TorchScript and ONNX frontends share: structural equality of
// two IR graphs (one route's against the YAML route's) and the relative L2 error.
//
// Each frontend claims to build the same IR the YAML model file describes, so that one weights
// file and one generated folder serve every route; this is the one place that says what "the
// same" means: same ops in the same order, same attributes, same parameters (names, shapes,
// dtypes, roles), same connectivity, same types. Names of parameter-free layers may differ
// (YAML's `relu1` is TorchScript's and ONNX's `layer1.0.relu`), those of layers with weights may
// not.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/printer.h"

namespace zoc::test {

// Reports the first difference of each kind with the layer it is at.
inline void expect_same_structure(const ir::Graph& yaml, const ir::Graph& other,
                                  const std::string& what) {
  ASSERT_EQ(yaml.nodes.size(), other.nodes.size()) << what;
  for (size_t i = 0; i < yaml.nodes.size(); ++i) {
    const ir::Node &a = yaml.nodes[i], &b = other.nodes[i];
    const std::string at = what + ", node " + std::to_string(i) + " '" + a.name + "'";
    ASSERT_EQ(a.op, b.op) << at << " vs '" << b.name << "'";
    if (!a.params.empty() || !b.params.empty()) {
      EXPECT_EQ(a.name, b.name) << at;
    }
    EXPECT_EQ(ir::format_attrs(a), ir::format_attrs(b)) << at;
    EXPECT_EQ(a.params, b.params) << at;
    ASSERT_EQ(a.inputs.size(), b.inputs.size()) << at;
    for (size_t k = 0; k < a.inputs.size(); ++k) {
      EXPECT_EQ(yaml.values[a.inputs[k]].producer, other.values[b.inputs[k]].producer)
          << at << " input " << k;
    }
    EXPECT_EQ(yaml.type(a.output), other.type(b.output)) << at;
    EXPECT_EQ(a.fused_from.size(), b.fused_from.size()) << at;
  }
  ASSERT_EQ(yaml.outputs.size(), other.outputs.size()) << what;
  EXPECT_EQ(yaml.values[yaml.outputs[0]].producer, other.values[other.outputs[0]].producer) << what;
}

// ||out - ref|| / ||ref||, in double.
inline double rel_l2(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

}  // namespace zoc::test
