// Helpers of the tests of the ops of issues 36 and 37 (dense_ops_test.cpp,
// hand_written_ops_test.cpp, ...): a model file of a few layers, a seeded input, and the check
// that the inference passes keep a graph's function.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "compiler/backend/cudnn/emitter.h"
#include "compiler/backend/reference/interpreter.h"
#include "compiler/passes/pipeline.h"
#include "tests/unit/test_util.h"

namespace zoc::test {

// A model file of `layers` (YAML list items, indented two spaces) on `input` (C, H, W), loaded
// and verified; its name in diagnostics is m.yaml, the first layer at line 4.
inline std::optional<ir::Graph> load_layers(const TempDir& dir, const std::string& layers,
                                            Diagnostics& d,
                                            const std::string& input = "2, height: 5, width: 7") {
  return load(dir.write("m.yaml", "zoc: 1\ninput: {channels: " + input + "}\nlayers:\n" + layers),
              d);
}

// A deterministic, non-constant batch for g's input.
inline ref::Tensor wave_input(const ir::Graph& g, int64_t batch) {
  const std::vector<int64_t>& d = g.type(g.nodes.front().output).dims;
  ref::Tensor x{{batch, d[0], d[1], d[2]}, std::vector<float>(batch * d[0] * d[1] * d[2])};
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.37f * float(i) + 0.2f);
  return x;
}

// g after the inference passes (verified after each); fails the test unless every output is
// within `tolerance` (absolute) of the unoptimized graph's on x with weights w.
inline ir::Graph optimize_keeping_function(const ir::Graph& g, const Weights& w,
                                           const ref::Tensor& x, double tolerance) {
  ir::Graph after = g;
  Diagnostics d;
  passes::PassOptions opts;
  opts.verify_each = true;
  EXPECT_TRUE(passes::run_pipeline(after, d, opts)) << d.render();
  auto before = ref::run(g, w, x);
  auto out = ref::run(after, w, x);
  EXPECT_TRUE(before.ok() && out.ok());
  if (!before.ok() || !out.ok()) return after;
  EXPECT_EQ(out->size(), before->size());
  for (size_t k = 0; k < std::min(out->size(), before->size()); ++k) {
    const std::vector<float>&a = (*out)[k].data, &b = (*before)[k].data;
    EXPECT_EQ(a.size(), b.size());
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      EXPECT_NEAR(a[i], b[i], tolerance) << "output " << k << " [" << i << "]";
    }
  }
  return after;
}

// Whether g goes through the inference passes and the lowering for the cuDNN backend (fp32), as
// `zoc compile` takes it; the refusals in d.
inline bool lowers_for_cudnn(const ir::Graph& g, Diagnostics& d) {
  ir::Graph copy = g;
  const lower::TargetDesc target = cudnn::lowering_target(cudnn::EmitOptions{});
  passes::PassOptions popts;
  popts.target = &target;
  return passes::run_pipeline(copy, d, popts);
}

// Fails the test unless building g's training graph fails with exactly `wants.size()` errors,
// each containing one of `wants`, or (cudnn) lowering it for the cuDNN backend does. Returns the
// diagnostics.
inline std::string expect_refusals(const ir::Graph& g, const std::vector<std::string>& wants,
                                   bool cudnn) {
  Diagnostics d;
  const bool ok =
      cudnn ? lowers_for_cudnn(g, d) : passes::build_training_graph(g, {}, d).has_value();
  EXPECT_FALSE(ok);
  const std::string text = d.render();
  for (const std::string& want : wants) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_EQ(d.error_count(), wants.size()) << text;
  return text;
}

}  // namespace zoc::test
