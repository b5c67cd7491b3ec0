// What a backend tells lower-to-target about itself: a small struct of its choices.
//
// The lowering's rules (lower_to_target.cpp) are written once, over these settings; the cuDNN
// backend fills them from its precision table and the compile's options
// (compiler/backend/cudnn/target.h: lowering_target). The lowering knows no backend, and a
// backend makes no layout, precision or placement decision of its own: it prints what the
// lowered IR says.
#pragma once

#include <string_view>

#include "compiler/ir/graph.h"
#include "zoc/math/activations.h"

namespace zoc::lower {

struct TargetDesc {
  std::string_view name = "the target";  // in errors: "the cuDNN backend does not support ..."
  std::string_view precision = "fp32";   // recorded on the graph (TargetInfo::precision)
  ir::DType dtype = ir::DType::F32;      // of activations and weights
  ir::Layout layout = ir::Layout::NCHW;  // of images: NCHW or NHWC
  // Convolutions through graph-API plans (ConvGraph); otherwise the legacy call (ConvLegacy),
  // except for an ungrouped convolution whose epilogue activation only the graph API applies.
  bool graph_api = false;
  // The activations a graph-API convolution applies in its epilogue; others (and every one but
  // ReLU after a legacy call) run as an activation kernel after the convolution.
  bool (*graph_epilogue)(act::Kind) = nullptr;
  bool linear_as_conv = false;   // linear layers as convolutions (LinearConv), else LinearGemm
  bool depthwise_kernel = true;  // depthwise convolutions through zoc's kernel (ConvDepthwise)
  // Global average pooling of NHWC images through zoc's adaptive pooling kernel instead of the
  // library's pooling.
  bool nhwc_global_pool_kernel = false;
  // NHWC: pad a graph input whose channels are not a multiple of this up to one, when only
  // ungrouped convolutions read it (their extra input channels get zero weights); 0: never.
  int pad_input_channels = 0;
  bool side_stream = false;  // side branches (lower/schedule.h) on a second stream
};

}  // namespace zoc::lower
