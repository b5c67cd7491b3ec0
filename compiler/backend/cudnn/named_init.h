// Generated constants by field name: for each struct of the runtime that generated code
// initializes, a mirror whose members are that struct's fields, declared from the runtime's own
// field list (zoc/core/fields.h), so that a snippet sets `call.x = ...` by name (a field the
// runtime renames no longer compiles here) and the constant prints as a C++20 designated
// initializer in the list's order: `{.shape = {.c = 4, .h = 224, ...}, .x = kA_input, ...}`.
// A field left unset, or set to its default's text, is left out: the runtime's default gives
// the same value.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "zoc/cudnn/call_fields.h"
#include "zoc/kernels/kernel_shapes.h"
#include "zoc/train_layers/call_fields.h"
#include "zoc/weights/pack.h"

namespace zoc::cudnn::named {

// A field's value as generated code spells it: one expression, or a nested struct's fields.
class Value {
 public:
  Value() = default;
  Value(std::string text) : items_{std::move(text)} {}  // NOLINT: values convert implicitly
  Value(const char* text) : items_{text} {}             // NOLINT
  Value(bool b) : items_{b ? "true" : "false"} {}       // NOLINT
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Value(T v) : items_{std::to_string(v)} {}  // NOLINT
  template <class S, class = decltype(items_of(std::declval<const S&>()))>
  Value(const S& nested) : items_(items_of(nested)), nested_(true) {}  // NOLINT

  bool set() const { return nested_ || !items_.empty(); }
  bool nested() const { return nested_; }
  const std::vector<std::string>& items() const { return items_; }

 private:
  std::vector<std::string> items_;
  bool nested_ = false;
};

// Appends `.name = value` to `out` (a nested struct's fields braced, as several items so that
// lines break between fields), unless the value is unset or its text is the default's.
inline void append_field(std::vector<std::string>& out, std::string_view name, const Value& v,
                         std::string_view dflt) {
  if (!v.set()) return;
  const std::vector<std::string>& items = v.items();
  if (!v.nested() && items.front() == dflt) return;
  const std::string lead = ".";
  if (items.empty()) {
    out.push_back(lead + std::string(name) + " = {}");
    return;
  }
  const std::string open = v.nested() ? " = {" : " = ";
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = i == 0 ? lead + std::string(name) + open + items[i] : items[i];
    if (v.nested() && i + 1 == items.size()) item += "}";
    out.push_back(std::move(item));
  }
}

#define ZOC_NAMED_MEMBER(type, name, dflt) Value name;
#define ZOC_NAMED_ITEM(type, name, dflt) append_field(items, #name, v_.name, #dflt);
// The mirror of runtime struct S and the items of its designated initializer.
#define ZOC_NAMED_STRUCT(S)                               \
  struct S {                                              \
    ZOC_FIELDS_##S(ZOC_NAMED_MEMBER)                      \
  };                                                      \
  inline std::vector<std::string> items_of(const S& v_) { \
    std::vector<std::string> items;                       \
    ZOC_FIELDS_##S(ZOC_NAMED_ITEM) return items;          \
  }

// A model's types (zoc/cudnn/layers.h).
ZOC_NAMED_STRUCT(Precision)
// Nested shapes first: a call's Value converts from them.
ZOC_NAMED_STRUCT(ConvShape)
ZOC_NAMED_STRUCT(PoolShape)
ZOC_NAMED_STRUCT(ChannelMulShape)
ZOC_NAMED_STRUCT(ConstOpShape)
ZOC_NAMED_STRUCT(PadGeometry)
ZOC_NAMED_STRUCT(ChannelConvGeometry)
ZOC_NAMED_STRUCT(RelayoutGeometry)
ZOC_NAMED_STRUCT(PoolGeometry)
ZOC_NAMED_STRUCT(AdaptiveGeometry)
ZOC_NAMED_STRUCT(UpsampleGeometry)
ZOC_NAMED_STRUCT(OutputGeometry)
ZOC_NAMED_STRUCT(DepthwiseGeometry)
ZOC_NAMED_STRUCT(ConvGeometry)
// A model's calls (zoc/cudnn/model_calls.h).
ZOC_NAMED_STRUCT(ConvCall)
ZOC_NAMED_STRUCT(DepthwiseCall)
ZOC_NAMED_STRUCT(PoolCall)
ZOC_NAMED_STRUCT(ActivationCall)
ZOC_NAMED_STRUCT(SoftmaxCall)
ZOC_NAMED_STRUCT(BatchNormCall)
ZOC_NAMED_STRUCT(AddCall)
ZOC_NAMED_STRUCT(LinearCall)
ZOC_NAMED_STRUCT(CopyCall)
ZOC_NAMED_STRUCT(MulCall)
ZOC_NAMED_STRUCT(ConstOpCall)
ZOC_NAMED_STRUCT(PadCall)
ZOC_NAMED_STRUCT(BinaryCall)
ZOC_NAMED_STRUCT(ChannelConvCall)
ZOC_NAMED_STRUCT(RelayoutCall)
ZOC_NAMED_STRUCT(LayerNormCall)
ZOC_NAMED_STRUCT(ShuffleCall)
ZOC_NAMED_STRUCT(PoolKernelCall)
ZOC_NAMED_STRUCT(AdaptivePoolCall)
ZOC_NAMED_STRUCT(UpsampleCall)
ZOC_NAMED_STRUCT(ArgmaxCall)
ZOC_NAMED_STRUCT(ChannelSoftmaxCall)
ZOC_NAMED_STRUCT(InputCall)
ZOC_NAMED_STRUCT(OutputCall)
// A trainer's calls (zoc/train_layers/calls.h).
ZOC_NAMED_STRUCT(ConvTrainCall)
ZOC_NAMED_STRUCT(ConvGradCall)
ZOC_NAMED_STRUCT(BatchNormTrainCall)
ZOC_NAMED_STRUCT(BatchNormGradCall)
ZOC_NAMED_STRUCT(ActivationTrainCall)
ZOC_NAMED_STRUCT(ActivationGradCall)
ZOC_NAMED_STRUCT(PoolGradCall)
ZOC_NAMED_STRUCT(LinearTrainCall)
ZOC_NAMED_STRUCT(LinearGradCall)
ZOC_NAMED_STRUCT(DropoutCall)
ZOC_NAMED_STRUCT(LossCall)
ZOC_NAMED_STRUCT(LayerNormTrainCall)
ZOC_NAMED_STRUCT(MulGradCall)
ZOC_NAMED_STRUCT(OperandGradCall)
ZOC_NAMED_STRUCT(LayerNormGradCall)
ZOC_NAMED_STRUCT(ChannelConvGradCall)
ZOC_NAMED_STRUCT(UpsampleGradCall)
ZOC_NAMED_STRUCT(SoftmaxGradCall)
ZOC_NAMED_STRUCT(PoolKernelGradCall)
ZOC_NAMED_STRUCT(AdaptivePoolGradCall)
ZOC_NAMED_STRUCT(PadChannelsCall)
// Weight packing (zoc/weights/pack.h).
ZOC_NAMED_STRUCT(ConvPackSpec)
ZOC_NAMED_STRUCT(LinearPackSpec)

#undef ZOC_NAMED_STRUCT
#undef ZOC_NAMED_ITEM
#undef ZOC_NAMED_MEMBER

// The items of a struct's designated initializer, for CodeWriter::wrapped.
template <class S>
std::vector<std::string> items(const S& s) {
  return items_of(s);
}

}  // namespace zoc::cudnn::named
