// QuantizeLinear and DequantizeLinear (issue 35), as quantization tools write them in QDQ models
// (onnxruntime's quantize_static with QuantFormat.QDQ, PyTorch's export of a quantized model):
// - a DequantizeLinear of an int8 or int32 initializer is a float constant, (q - zero point) *
//   scale, per tensor or per channel: a convolution's weight or bias as the tool rounded it;
// - a QuantizeLinear -> DequantizeLinear pair on an activation is the identity in the float
//   graph, and its scale is that activation's int8 scale (the model's scales: `zoc run` and
//   `zoc ir` quantize the optimized graph with them, as with a `zoc calibrate` file).
// zoc's int8 is symmetric: a zero point other than 0, a uint8 activation, a per-channel
// activation scale, and a QuantizeLinear read by anything but DequantizeLinear are refused.
#include <fmt/format.h>

#include <cmath>

#include "compiler/frontend/onnx/internal.h"
#include "compiler/quant/scales.h"

namespace zoc::onnx::detail {
namespace {

using Kind = Val::Kind;
constexpr int32_t kInt8 = pb::TensorProto::INT8;
constexpr int32_t kInt32 = pb::TensorProto::INT32;

// Input 2, the zero point: all zeros of `type` (the quantized type's). Absent, it is 0 of the
// input's type for DequantizeLinear, and uint8 for QuantizeLinear (ONNX's default output type).
bool zero_point_is_zero(NodeContext& c, int32_t type, bool quantize) {
  if (!c.has_input(2)) {
    if (!quantize) return true;
    return c.fail("no zero point: QuantizeLinear's default output is uint8, zoc's int8 is signed");
  }
  const Val* zp = c.constant(2, "the zero point");
  if (!zp) return false;
  if (zp->constant->elem_type != type) {
    return c.fail(fmt::format("a zero point of type {}: zoc reads {} quantization only",
                              elem_type_name(zp->constant->elem_type), elem_type_name(type)));
  }
  for (int64_t v : zp->constant->i) {
    if (v != 0) {
      return c.fail(fmt::format("zero point {}: zoc's int8 is symmetric (zero point 0)", v));
    }
  }
  return true;
}

// The scale, input 1: usable floats (scales.h), a scalar or (per channel) a 1-D tensor.
const Constant* scales(NodeContext& c) {
  const Val* s = c.constant(1, "the scale");
  if (!s) return nullptr;
  const Constant& k = *s->constant;
  if (!k.floating || k.f.empty() || k.dims.size() > 1) {
    c.fail(k.f.empty() || k.dims.size() > 1
               ? fmt::format("a scale of shape [{}]: ONNX's is a scalar or 1-D",
                             fmt::join(k.dims, ", "))
               : std::string("a scale that is not floating point"));
    return nullptr;
  }
  for (float v : k.f) {
    if (!quant::usable_scale(v)) {
      c.fail(fmt::format("scale {}: {}", v, quant::kScaleRange));
      return nullptr;
    }
  }
  return &k;
}

// DequantizeLinear of an integer constant: its float value, per tensor or along `axis`.
bool dequantize_constant(NodeContext& c, const Constant& q) {
  if (q.floating || (q.elem_type != kInt8 && q.elem_type != kInt32)) {
    return c.fail(fmt::format("a constant of type {}: zoc dequantizes int8 and int32",
                              elem_type_name(q.elem_type)));
  }
  const Constant* s = scales(c);
  if (!s || !zero_point_is_zero(c, q.elem_type, false)) return false;
  int64_t axis = 1;
  if (!c.attr("axis", axis)) return false;
  const auto rank = static_cast<int64_t>(q.dims.size());
  if (axis < 0) axis += rank;
  int64_t inner = 1, channels = 1;
  if (s->f.size() > 1) {
    if (axis < 0 || axis >= rank ||
        q.dims[static_cast<size_t>(axis)] != static_cast<int64_t>(s->f.size())) {
      return c.fail(fmt::format("{} scales along axis {} of a [{}] tensor", s->f.size(), axis,
                                fmt::join(q.dims, ", ")));
    }
    channels = static_cast<int64_t>(s->f.size());
    for (int64_t d = axis + 1; d < rank; ++d) inner *= q.dims[static_cast<size_t>(d)];
  }
  const int64_t lo = q.elem_type == kInt8 ? -128 : INT32_MIN;
  const int64_t hi = q.elem_type == kInt8 ? 127 : INT32_MAX;
  for (int64_t v : q.i) {
    if (v < lo || v > hi) {
      return c.fail(fmt::format("value {} of an {} tensor", v, elem_type_name(q.elem_type)));
    }
  }
  Constant out;
  out.name = q.name;
  out.dims = q.dims;
  out.f.resize(q.i.size());
  for (size_t k = 0; k < q.i.size(); ++k) {
    const auto ch = static_cast<size_t>((static_cast<int64_t>(k) / inner) % channels);
    out.f[k] = static_cast<float>(q.i[k]) * s->f[ch];
  }
  return c.result_constant(std::move(out));
}

// DequantizeLinear of a QuantizeLinear's output: the activation, whose scale must agree. Of any
// other integer tensor it would be a multiplication the identity does not compute: refused.
bool dequantize_activation(NodeContext& c) {
  auto x = c.activation(0);
  const Constant* s = scales(c);
  if (!x || !s || !zero_point_is_zero(c, kInt8, false)) return false;
  if (s->f.size() != 1) return c.fail("per-channel scales of an activation");
  if (!c.noted_int8_scale(*x)) {
    return c.fail(
        "a DequantizeLinear of a tensor no QuantizeLinear made: zoc reads it only as "
        "the second half of a QDQ pair");
  }
  if (!c.int8_scale(*x, s->f[0])) return false;
  return c.result_activation(*x);
}

bool dequantize_linear(NodeContext& c) {
  const Val& x = c.in(0);
  if (x.is(Kind::kConstant)) return dequantize_constant(c, *x.constant);
  return dequantize_activation(c);
}

// QuantizeLinear of an activation, read only by DequantizeLinear: the activation, noting its
// scale (an int8 result read as such would not be the float the IR holds).
bool quantize_linear(NodeContext& c) {
  auto x = c.activation(0);
  const Constant* s = scales(c);
  if (!x || !s || !zero_point_is_zero(c, kInt8, true)) return false;
  if (s->f.size() != 1) return c.fail("per-channel scales of an activation");
  for (const pb::NodeProto* reader : c.readers_of_output()) {
    if (reader == nullptr || reader->op_type() != "DequantizeLinear") {
      return c.fail(
          fmt::format("its int8 result is read by {}: zoc reads QuantizeLinear only in "
                      "front of DequantizeLinear (a QDQ pair)",
                      reader ? shown_text(reader->op_type()) : "the graph's output"));
    }
  }
  if (!c.int8_scale(*x, s->f[0])) return false;
  return c.result_activation(*x);
}

const OpEntry kQdqOps[] = {
    {"QuantizeLinear", quantize_linear},
    {"DequantizeLinear", dequantize_linear},
};

}  // namespace

std::span<const OpEntry> qdq_ops() { return kQdqOps; }

}  // namespace zoc::onnx::detail
