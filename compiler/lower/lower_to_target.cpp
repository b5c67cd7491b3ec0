// lower-to-target's steps in order (see lower_to_target.h): the schedule, the values' types and
// stored channels, the layers (choose_layers.cpp), the input, the arena and the weights.
#include "compiler/lower/lower_to_target.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/ir/printer.h"
#include "compiler/lower/memory_plan.h"
#include "compiler/lower/schedule.h"
#include "compiler/support/sanitize.h"
#include "zoc/weights/init.h"

namespace zoc::lower {
namespace {

using ir::LayerKind;
using ir::OpKind;

const ir::ParamSpec* param(const ir::Node& n, ir::ParamRole role) {
  for (const ir::ParamSpec& p : n.params) {
    if (p.role == role) return &p;
  }
  return nullptr;
}

bool is_float(ir::DType d) {
  return d == ir::DType::F32 || d == ir::DType::F16 || d == ir::DType::BF16;
}

// What the target's output path takes: one or several outputs, each features or an image (an
// NHWC one leaves through the emitter's output kernel, transposed back to NCHW); its activations
// stored NCHW only in fp32.
bool check_output(const ir::Graph& g, const TargetDesc& t, Diagnostics& diags) {
  if (t.layout == ir::Layout::NCHW && t.dtype != ir::DType::F32) {
    diags.error(SourceLoc{g.name, 0, 0},
                fmt::format("{} stores {} activations NHWC only (the input's conversion to {} "
                            "writes NHWC): use the NHWC layout, or fp32/tf32 for NCHW",
                            t.name, t.precision, t.precision));
    return false;
  }
  return true;
}

// A thin NHWC input (RGB: 3 channels) is padded with zero channels up to a multiple of
// pad_input_channels, so that the convolutions reading it get tensor-core kernels, when only
// ungrouped convolutions read it (their extra input channels get zero weights). 4, measured on
// an H100 (fp16 ResNet-50 conv1 at batch 256): 0.59 ms unpadded, 0.41 ms padded to 4, 1.22 ms
// padded to 8 (results/2026-11-22-h100-input-padding). Returns 0 when it is not padded.
int64_t padded_input_channels(const ir::Graph& g, const TargetDesc& t) {
  const ir::Node& input = g.nodes.front();
  const std::vector<int64_t>& dims = g.type(input.output).dims;
  const int64_t c = dims.empty() ? 0 : dims[0];
  const int pad = t.pad_input_channels;
  if (t.layout != ir::Layout::NHWC || pad <= 0 || c <= 0 || c % pad == 0) return 0;
  for (const ir::Node& n : g.nodes) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] != input.output) continue;
      if (n.op != OpKind::FusedConv2d || k != 0 || n.attrs.i("groups") != 1) return 0;
    }
  }
  return (c + pad - 1) / pad * pad;
}

// Writes its result into the caller's fp32 NCHW rows, outside the arena.
bool writes_caller_output(const ir::Node& n) {
  return n.lowered->kind == LayerKind::UpsampleOutput || n.lowered->kind == LayerKind::ArgmaxOutput;
}

// Floats take the target's dtype, images its layout; features stay NC. A result written into
// the caller's rows is what they hold: fp32 NCHW (an argmax's indices too).
void set_types(ir::Graph& g, const TargetDesc& t) {
  for (ir::Value& v : g.values) {
    ir::TensorType& type = *v.type;
    const bool caller = writes_caller_output(g.nodes[static_cast<size_t>(v.producer)]);
    if (caller) {
      type.dtype = ir::DType::F32;
    } else if (is_float(type.dtype)) {
      type.dtype = t.dtype;
    }
    if (type.dims.size() == 3) type.layout = caller ? ir::Layout::NCHW : t.layout;
  }
}

// The caller's fp32 NCHW input: converted to NHWC in the model's dtype, or, stored NCHW, read in
// place unless a graph-API plan reads the arena (plans bind fixed pointers: it is copied).
LayerKind input_kind(const ir::Graph& g, const TargetDesc& t) {
  if (t.layout == ir::Layout::NHWC) return LayerKind::InputConvert;
  const bool plans = std::any_of(g.nodes.begin(), g.nodes.end(), [](const ir::Node& n) {
    return n.lowered && n.lowered->kind == LayerKind::ConvGraph;
  });
  return plans ? LayerKind::InputCopy : LayerKind::InputInPlace;
}

// Every value's storage: its stored channels, its arena slot (the one memory planner), the
// stream that writes it. A side branch's input stays live until its join: the side stream may
// read it at any time until then.
void place_values(ir::Graph& g, const TargetDesc& t, int64_t padded,
                  const std::vector<SideBranch>& branches, ir::TargetInfo& info) {
  MemoryPlanOptions o;
  o.element_bytes = ir::dtype_size(t.dtype);
  o.external_input = g.nodes.front().lowered->kind == LayerKind::InputInPlace;
  o.input_channels_stored = padded;
  for (const SideBranch& b : branches) o.live_until.push_back({g.nodes[b.node].inputs[0], b.join});
  for (const ir::Node& n : g.nodes) {
    if (writes_caller_output(n)) o.pinned[n.output] = 0;  // not in the arena
  }
  const MemoryPlan plan = plan_memory(g, o);
  for (size_t v = 0; v < g.values.size(); ++v) {
    const MemoryPlan::Slot& slot = plan.slots[v];
    const ir::Node& producer = g.nodes[static_cast<size_t>(g.values[v].producer)];
    const std::vector<int64_t>& dims = g.values[v].type->dims;
    ir::Storage s;
    s.stored_channels = producer.op == OpKind::Input && padded > 0 ? padded
                        : dims.empty()                             ? 0
                                                                   : dims[0];
    s.offset = writes_caller_output(producer) ? -1 : slot.offset;
    s.bytes = writes_caller_output(producer) ? 0 : slot.bytes;
    s.alias_of = slot.alias_of;
    s.stream = producer.lowered->side_branch >= 0 ? ir::Stream::kSide : ir::Stream::kMain;
    g.values[v].storage = s;
  }
  info.arena_bytes_per_sample = plan.arena_bytes_per_sample;
  info.unshared_bytes_per_sample = plan.unplanned_bytes_per_sample;
}

// How each node's weights are packed: filters channels-last for NHWC convolutions (tap-major
// for zoc's NHWC depthwise kernel); a linear layer reading features flattened from an NHWC
// image gets its columns permuted to the (h, w, c) order at load time instead of a transpose of
// the activations at run time.
ir::WeightLayout weight_layout(const ir::Graph& g, const ir::Node& n, const TargetDesc& t) {
  const bool nhwc = t.layout == ir::Layout::NHWC;
  switch (n.op) {
    case OpKind::FusedConv2d:
      if (!nhwc) return ir::WeightLayout::kKCRS;
      return n.lowered->kind == LayerKind::ConvDepthwise ? ir::WeightLayout::kTapsMajor
                                                         : ir::WeightLayout::kKRSC;
    case OpKind::ConvTranspose2d:  // [c_in, c_out / groups, kh, kw] as cuDNN's backward filter
      return nhwc ? ir::WeightLayout::kKRSC : ir::WeightLayout::kKCRS;
    case OpKind::Linear: {
      const ir::Node& src = g.producer(n.inputs[0]);
      if (nhwc && src.op == OpKind::Flatten && src.lowered->kind == LayerKind::View) {
        const std::vector<int64_t>& d = g.type(src.inputs[0]).dims;
        if (d.size() == 3 && d[1] * d[2] > 1) return ir::WeightLayout::kRowsHWC;
      }
      return ir::WeightLayout::kRows;
    }
    case OpKind::BatchNorm2d:
    case OpKind::LayerNorm:
    case OpKind::LayerScale:
    case OpKind::ChannelConv1d:
      return ir::WeightLayout::kVector;
    default:  // a binary op's constant tensor operand: fp32, as it is
      return n.operand_tensor.empty() ? ir::WeightLayout::kNone : ir::WeightLayout::kVector;
  }
}

// Each node's packed weights in one device buffer, 256-byte aligned, in node order: a
// convolution's filter (over its input's stored channels) and its bias (always: the folded
// batch norm's, or zeros); a linear layer's matrix and its bias (always as a convolution);
// batch norm's four fp32 vectors, layer norm's two, layer scale's gamma in the model's dtype, a
// constant operand's fp32 values (one per channel, or one), a channel_conv1d's fp32 taps and bias.
void place_weights(ir::Graph& g, const TargetDesc& t, ir::TargetInfo& info) {
  const int64_t e = ir::dtype_size(t.dtype);
  auto take = [&](int64_t bytes) {
    const int64_t at = info.weight_bytes;
    info.weight_bytes += (bytes + 255) / 256 * 256;
    return at;
  };
  for (ir::Node& n : g.nodes) {
    ir::Lowered& l = *n.lowered;
    l.weights = weight_layout(g, n, t);
    const std::vector<int64_t>& dims = g.type(n.output).dims;  // an argmax per sample: none
    const int64_t c = dims.empty() ? 0 : dims[0];
    if (n.op == OpKind::FusedConv2d) {
      const ir::ParamSpec* w = param(n, ir::ParamRole::kWeight);
      int64_t numel = 1;
      for (int64_t d : w->shape) numel *= d;
      const int64_t stored = g.values[n.inputs[0]].storage->stored_channels;
      numel = numel / w->shape[1] * (stored / n.attrs.i("groups"));
      l.weight_offset = take(numel * e);
      l.bias_offset = take(w->shape[0] * e);
    } else if (n.op == OpKind::ConvTranspose2d) {
      const ir::ParamSpec* w = param(n, ir::ParamRole::kWeight);
      int64_t numel = 1;
      for (int64_t d : w->shape) numel *= d;
      l.weight_offset = take(numel * e);
      if (param(n, ir::ParamRole::kBias)) l.bias_offset = take(c * e);
    } else if (n.op == OpKind::Linear) {
      const ir::ParamSpec* w = param(n, ir::ParamRole::kWeight);
      l.weight_offset = take(w->shape[0] * w->shape[1] * e);
      if (param(n, ir::ParamRole::kBias) || l.kind == LayerKind::LinearConv) {
        l.bias_offset = take(w->shape[0] * e);
      }
    } else if (n.op == OpKind::BatchNorm2d) {
      l.weight_offset = take(16 * c);  // gamma, beta, mean, variance: fp32
    } else if (n.op == OpKind::LayerNorm) {
      l.weight_offset = take(8 * c);  // gamma, then beta: fp32
    } else if (n.op == OpKind::LayerScale) {
      l.weight_offset = take(e * c);
    } else if (n.op == OpKind::ChannelConv1d) {
      l.weight_offset = take(4 * n.attrs.i("kernel"));  // the taps, fp32
      if (n.attrs.b("bias")) l.bias_offset = take(4);
    } else if (!n.operand_tensor.empty()) {
      l.weight_offset = take(4 * (ir::one_value_operand(n) ? 1 : c));
    }
  }
}

}  // namespace

bool lower_to_target(ir::Graph& g, const TargetDesc& t, Diagnostics& diags) {
  if (g.target) {
    diags.error(SourceLoc{g.name, 0, 0}, "lower-to-target: the graph is already lowered");
    return false;
  }
  ir::PrintOptions popts;
  popts.locations = false;
  ir::TargetInfo info;
  info.model_hash = fnv1a64(ir::print_graph(g, popts));  // the graph as optimized, unscheduled
  info.precision = std::string(t.precision);
  info.graph_api = t.graph_api;
  if (!check_output(g, t, diags)) return false;
  // Side branches are hoisted to run beside the main branch (schedule.h).
  std::vector<SideBranch> branches;
  if (t.side_stream) g = schedule_side_branches(g, &branches);
  std::vector<int> side_of(g.nodes.size(), -1);
  for (size_t k = 0; k < branches.size(); ++k) side_of[branches[k].node] = static_cast<int>(k);
  const int64_t padded = padded_input_channels(g, t);
  if (!choose_layers(g, t, side_of, padded, diags)) return false;
  for (size_t k = 0; k < branches.size(); ++k) {
    g.nodes[branches[k].join].lowered->joins.push_back(static_cast<int>(k));
  }
  info.side_branches = static_cast<int>(branches.size());
  g.nodes.front().lowered->kind = input_kind(g, t);
  set_types(g, t);
  place_values(g, t, padded, branches, info);
  place_weights(g, t, info);
  const ir::TensorType& out = g.type(g.outputs[0]);
  info.output_convert = out.dtype != ir::DType::F32 || t.layout == ir::Layout::NHWC;
  g.target = std::move(info);
  return true;
}

}  // namespace zoc::lower
