// Pass quantize-int8: quantize_int8.h says which layers it makes int8 and why.
#include "compiler/passes/quantize_int8.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "compiler/ir/activation_params.h"
#include "compiler/ir/rewrite.h"
#include "compiler/quant/scales.h"
#include "compiler/support/float_decimal.h"
#include "compiler/support/sanitize.h"

namespace zoc::passes {
namespace {

// A float32 scale as the shortest decimal that reads back as it (`zoc ir` prints 0.0123, not
// 0.012299999594688416); the int8 arithmetic converts it back to the same float.
ir::AttrValue float_attr(float v) {
  return ir::AttrValue{ir::AttrKind::Float, 0, {}, decimal_of_float(v)};
}

// Why a fused convolution stays float, or "" if it can be int8.
std::string float_reason(const ir::Graph& g, const ir::Node& n) {
  if (g.producer(n.inputs[0]).op == ir::OpKind::Input) return "reads the model input";
  if (n.attrs.i("groups") != 1) return "grouped";
  const ir::FusedActivation* a = ir::fused_activation(static_cast<int>(n.attrs.i("activation")));
  if (a && a->op != ir::OpKind::Relu) return fmt::format("activation {}", ir::op_info(a->op).name);
  return "";
}

class Quantizer {
 public:
  Quantizer(ir::Graph& g, const std::map<std::string, float>& scales, Int8Plan& plan,
            Diagnostics& diags, const Int8Choices& choices)
      : g_(g), scales_(scales), plan_(plan), diags_(diags), choices_(choices) {}

  bool run() {
    choose_convs();
    if (!ok_) return false;
    choose_outputs();
    insert_quantize_nodes();
    if (!ok_) return false;
    if (!ir::compact_and_sort(g_, std::vector<bool>(g_.nodes.size(), false))) {
      diags_.error(SourceLoc{g_.name, 0, 0}, "internal error: quantize-int8 broke the graph");
      return false;
    }
    return true;
  }

 private:
  // The scale of value v, or 0, noting v as missing, if the scales file has none.
  float scale_of(ir::ValueId v, const ir::Node& n) {
    const std::string& name = g_.value_name(v);
    const auto it = scales_.find(name);
    if (it != scales_.end()) return it->second;
    if (missing_.empty()) first_reader_ = &n;
    missing_.insert(name);
    return 0.0f;
  }

  bool all_scaled(const ir::Node& n) const {
    for (ir::ValueId v : n.inputs) {
      if (!scales_.count(g_.value_name(v))) return false;
    }
    return true;
  }

  // One error for every value without a scale: the first, where it is read, and how many more.
  void report_missing() {
    if (missing_.empty()) return;
    const std::string& first = g_.value_name(first_reader_->inputs[0]);
    const std::string& value =
        missing_.count(first) ? first : g_.value_name(first_reader_->inputs[1]);
    const size_t others = missing_.size() - 1;
    diags_.error(first_reader_->loc,
                 fmt::format("no int8 scale for %{}, which int8 layer '{}' reads{} (the scales "
                             "come from another model or optimization: run zoc calibrate on "
                             "this model)",
                             value, first_reader_->name,
                             others ? fmt::format(", nor for {} other values", others) : ""));
    ok_ = false;
  }

  void choose_convs() {
    int8_.assign(g_.nodes.size(), false);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      ir::Node& n = g_.nodes[i];
      if (n.op != ir::OpKind::FusedConv2d) continue;
      std::string why = float_reason(g_, n);
      if (why.empty() && choices_.unscaled_stay_float && !all_scaled(n)) {
        why = "the QDQ model leaves an input of it float";
      }
      const auto kept = choices_.keep_float.find(n.name);
      if (why.empty() && kept != choices_.keep_float.end()) why = kept->second;
      if (!why.empty()) {
        plan_.float_convs.emplace_back(n.name, why);
        continue;
      }
      n.attrs.set("int8_in", float_attr(scale_of(n.inputs[0], n)));
      if (n.inputs.size() == 2) n.attrs.set("int8_res", float_attr(scale_of(n.inputs[1], n)));
      int8_[i] = true;
      ++plan_.int8_convs;
    }
    report_missing();
  }

  // Every read of each value by an int8 convolution (input or residual) or by anything else.
  void choose_outputs() {
    std::vector<int> reads(g_.values.size(), 0), int8_reads(g_.values.size(), 0);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (ir::ValueId v : g_.nodes[i].inputs) {
        ++reads[static_cast<size_t>(v)];
        if (int8_[i]) ++int8_reads[static_cast<size_t>(v)];
      }
    }
    for (ir::ValueId v : g_.outputs) ++reads[static_cast<size_t>(v)];
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      ir::Node& n = g_.nodes[i];
      const auto v = static_cast<size_t>(n.output);
      if (!int8_[i] || reads[v] == 0 || reads[v] != int8_reads[v]) continue;
      const auto it = scales_.find(g_.value_name(n.output));
      if (it == scales_.end()) continue;  // read only by int8 layers, each of which asks
      n.attrs.set("int8_out", float_attr(it->second));
      ++plan_.int8_outputs;
    }
  }

  // One quantize node per float value that int8 convolutions read; they then read it.
  void insert_quantize_nodes() {
    std::map<ir::ValueId, ir::ValueId> quantized;
    const size_t count = g_.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      if (!int8_[i]) continue;
      for (size_t k = 0; k < g_.nodes[i].inputs.size(); ++k) {
        const ir::ValueId v = g_.nodes[i].inputs[k];
        const ir::Node& src = g_.producer(v);
        if (src.op == ir::OpKind::FusedConv2d && src.attrs.has("int8_out")) continue;
        auto [it, fresh] = quantized.try_emplace(v, ir::kNoValue);
        if (fresh) it->second = add_quantize(v, k == 0 ? "int8_in" : "int8_res", i);
        g_.nodes[i].inputs[k] = it->second;
      }
    }
  }

  ir::ValueId add_quantize(ir::ValueId v, const char* attr, size_t reader) {
    ir::Attrs a;
    a.set("scale", float_attr(static_cast<float>(g_.nodes[reader].attrs.f(attr))));
    const ir::Node& src = g_.producer(v);
    const std::string name = g_.value_name(v) + ".quantize";
    const SourceLoc loc = src.loc;
    const int32_t node = g_.add_node(ir::OpKind::Quantize, name, {v}, a, loc);
    g_.values[static_cast<size_t>(g_.nodes[node].output)].type = g_.type(v);
    int8_.push_back(false);
    ++plan_.quantize_nodes;
    return g_.nodes[static_cast<size_t>(node)].output;
  }

  ir::Graph& g_;
  const std::map<std::string, float>& scales_;
  Int8Plan& plan_;
  Diagnostics& diags_;
  const Int8Choices& choices_;
  std::vector<bool> int8_;
  std::set<std::string> missing_;
  const ir::Node* first_reader_ = nullptr;
  bool ok_ = true;
};

}  // namespace

bool quantize_int8(ir::Graph& g, const std::map<std::string, float>& scales, Int8Plan& plan,
                   Diagnostics& diags, const Int8Choices& choices) {
  for (const auto& [name, s] : scales) {
    if (!quant::usable_scale(s)) {
      diags.error(SourceLoc{g.name, 0, 0},
                  fmt::format("int8 scale of %{} is {}: {}", name, s, quant::kScaleRange));
      return false;
    }
  }
  std::set<std::string> convs;
  for (const ir::Node& n : g.nodes) {
    if (n.op == ir::OpKind::FusedConv2d) convs.insert(n.name);
  }
  for (const auto& [name, why] : choices.keep_float) {
    if (!convs.count(name)) {
      diags.error(SourceLoc{g.name, 0, 0},
                  fmt::format("convolution '{}' is to stay float ({}), but model '{}' has no "
                              "convolution of that name after optimization",
                              shown_text(name), why, shown_text(g.name)));
      return false;
    }
  }
  return Quantizer(g, scales, plan, diags, choices).run();
}

}  // namespace zoc::passes
