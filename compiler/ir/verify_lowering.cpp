// The verifier's checks of a lowered graph (lowering.h): what lower-to-target promises the
// emitter, checked where --verify-each and the pipeline's last verification see it.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/ir/verify.h"

namespace zoc::ir {
namespace {

bool is_float(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

// The node index after which each value's bytes are free: its last reader (a graph output: the
// end; a side branch's input: its join, since the side stream may read it until then).
std::vector<size_t> last_uses(const Graph& g) {
  std::vector<size_t> last(g.values.size(), 0);
  std::vector<size_t> join_of;  // per side branch
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int k : g.nodes[i].lowered ? g.nodes[i].lowered->joins : std::vector<int>{}) {
      if (static_cast<size_t>(k) >= join_of.size()) join_of.resize(k + 1, 0);
      join_of[k] = i;
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (ValueId v : Graph::results(n)) last[v] = std::max(last[v], i);
    const int side = n.lowered ? n.lowered->side_branch : -1;
    const size_t until =
        side >= 0 && static_cast<size_t>(side) < join_of.size() ? join_of[side] : i;
    for (ValueId v : n.inputs) last[v] = std::max(last[v], std::max(i, until));
  }
  for (ValueId v : g.outputs) last[v] = g.nodes.size();
  return last;
}

// The value whose bytes v uses: itself, or the root of the views it is.
ValueId root_of(const Graph& g, ValueId v) {
  for (int hops = 0; hops < 64 && g.values[v].storage && g.values[v].storage->alias_of >= 0;
       ++hops) {
    v = g.values[v].storage->alias_of;
  }
  return v;
}

}  // namespace

bool verify_lowering(const Graph& g, Diagnostics& diags) {
  const size_t before = diags.error_count();
  auto fail = [&](const Node& n, const std::string& msg) {
    diags.error(n.loc, fmt::format("IR verifier: layer '{}' ({}), lowered: {}", n.name,
                                   op_info(n.op).name, msg));
  };
  const TargetInfo& t = *g.target;
  std::vector<int> branch_nodes(static_cast<size_t>(std::max(t.side_branches, 0)), 0);
  std::vector<int> branch_joins = branch_nodes;
  for (const Node& n : g.nodes) {
    if (!n.lowered || n.lowered->kind == LayerKind::None) {
      fail(n, "no runtime layer");
      continue;
    }
    const Lowered& l = *n.lowered;
    const LayerKindInfo& kind = layer_kind_info(l.kind);
    for (ValueId v : n.inputs) {
      const TensorType& type = g.type(v);
      const bool image = type.dims.size() == 3;
      if (image && type.layout == Layout::NHWC && !kind.nhwc) {
        fail(n, fmt::format("{} does not read NHWC images (%{})", kind.name, g.value_name(v)));
      }
      if (image && type.layout == Layout::NCHW && !kind.nchw) {
        fail(n, fmt::format("{} does not read NCHW images (%{})", kind.name, g.value_name(v)));
      }
      const Node& from = g.producer(v);
      if (from.lowered && (from.lowered->kind == LayerKind::UpsampleOutput ||
                           from.lowered->kind == LayerKind::ArgmaxOutput)) {
        fail(n, fmt::format("reads %{}, which only the caller's rows hold", g.value_name(v)));
      }
    }
    for (ValueId v : Graph::results(n)) {
      const TensorType& type = g.type(v);
      if (!is_float(type.dtype)) fail(n, fmt::format("%{} is not a float", g.value_name(v)));
      if (kind.f32_only && type.dtype != DType::F32) {
        fail(n, fmt::format("{} moves f32 only, not {}", kind.name, dtype_name(type.dtype)));
      }
      const bool image = type.dims.size() == 3;
      if (image && ((type.layout == Layout::NHWC && !kind.nhwc) ||
                    (type.layout == Layout::NCHW && !kind.nchw) || type.layout == Layout::NC)) {
        fail(n, fmt::format("{} does not write {} images", kind.name, layout_name(type.layout)));
      }
      if (!g.values[v].storage) {
        fail(n, fmt::format("%{} has no storage", g.value_name(v)));
        continue;
      }
      const Storage& s = *g.values[v].storage;
      const int64_t channels = type.dims.empty() ? 0 : type.dims[0];
      if (s.stored_channels < channels ||
          (s.stored_channels != channels && n.op != OpKind::Input)) {
        fail(n, fmt::format("stores {} channels of {}", s.stored_channels, channels));
      }
      if ((s.stream == Stream::kSide) != (l.side_branch >= 0)) {
        fail(n, "its result's stream is not the one it runs on");
      }
      const int64_t need = type.sample_numel() / std::max<int64_t>(channels, 1) *
                           std::max<int64_t>(s.stored_channels, 1) * dtype_size(type.dtype);
      if (s.alias_of < 0 && s.offset >= 0 &&
          (s.bytes < need || s.offset + s.bytes > t.arena_bytes_per_sample)) {
        fail(n, fmt::format("arena slot [{}, {}) does not hold {} bytes inside the arena of {}",
                            s.offset, s.offset + s.bytes, need, t.arena_bytes_per_sample));
      }
      const bool caller = l.kind == LayerKind::UpsampleOutput || l.kind == LayerKind::ArgmaxOutput;
      if (s.offset < 0 && s.alias_of < 0 && l.kind != LayerKind::InputInPlace && !caller) {
        fail(n, "its result has no arena slot");
      }
      if (caller &&
          (s.offset >= 0 || type.dtype != DType::F32 || (image && type.layout != Layout::NCHW) ||
           std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end())) {
        fail(n,
             "writes the caller's rows but its result is not a model output stored there, "
             "fp32 NCHW");
      }
      if ((l.kind == LayerKind::View) != (s.alias_of >= 0)) {
        fail(n, "only a view shares its input's storage");
      }
    }
    const auto in_range = [&](int k) { return k >= 0 && k < t.side_branches; };
    if (l.side_branch >= 0) {
      if (!in_range(l.side_branch))
        fail(n, "side branch out of range");
      else
        ++branch_nodes[l.side_branch];
    }
    for (int k : l.joins) {
      if (!in_range(k))
        fail(n, "joins a side branch out of range");
      else
        ++branch_joins[k];
    }
    if (l.kind == LayerKind::ConstOp &&
        ((l.weight_offset >= 0) != !n.operand_tensor.empty() || l.bias_offset >= 0)) {
      fail(n, "a const_op layer has packed weights exactly when its operand is a tensor");
    }
    for (int64_t offset : {l.weight_offset, l.bias_offset}) {
      if (offset >= 0 && (offset >= t.weight_bytes || offset % 256 != 0)) {
        fail(n, fmt::format("weights at byte {} outside the aligned buffer of {}", offset,
                            t.weight_bytes));
      }
    }
  }
  for (int k = 0; k < t.side_branches; ++k) {
    if (branch_nodes[k] != 1 || branch_joins[k] != 1) {
      diags.error(SourceLoc{g.name, 0, 0},
                  fmt::format("IR verifier: side branch {} runs {} nodes and is joined {} times", k,
                              branch_nodes[k], branch_joins[k]));
    }
  }
  // Values alive at the same time never share bytes.
  const std::vector<size_t> last = last_uses(g);
  std::vector<ValueId> placed;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const auto& s = g.values[v].storage;
    if (s && s->alias_of < 0 && s->offset >= 0) placed.push_back(static_cast<ValueId>(v));
  }
  std::vector<size_t> end(g.values.size(), 0);  // a root's last use, views included
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueId r = root_of(g, static_cast<ValueId>(v));
    end[r] = std::max(end[r], last[v]);
  }
  for (size_t a = 0; a < placed.size(); ++a) {
    for (size_t b = a + 1; b < placed.size(); ++b) {
      const ValueId x = placed[a], y = placed[b];
      const size_t fx = g.values[x].producer, fy = g.values[y].producer;
      const Storage &sx = *g.values[x].storage, &sy = *g.values[y].storage;
      const bool live_together = fx <= end[y] && fy <= end[x];
      const bool share = sx.offset < sy.offset + sy.bytes && sy.offset < sx.offset + sx.bytes;
      if (live_together && share) {
        diags.error(SourceLoc{g.name, 0, 0},
                    fmt::format("IR verifier: %{} and %{} are live together but share arena "
                                "bytes",
                                g.value_name(x), g.value_name(y)));
      }
    }
  }
  return diags.error_count() == before;
}

}  // namespace zoc::ir
