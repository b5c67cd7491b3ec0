// The layer-kind table and the names of the lowering's enums (see lowering.h).
#include "compiler/ir/lowering.h"

namespace zoc::ir {
namespace {

constexpr LayerKindInfo kLayerKinds[] = {
    {LayerKind::None, "none", true, true, false, "not lowered"},
#define ZOC_LAYER_KIND(id, name, nchw, nhwc, f32_only, summary) \
  {LayerKind::id, name, nchw, nhwc, f32_only, summary},
    ZOC_LAYER_KINDS(ZOC_LAYER_KIND)
#undef ZOC_LAYER_KIND
};

}  // namespace

const LayerKindInfo& layer_kind_info(LayerKind kind) {
  return kLayerKinds[static_cast<size_t>(kind)];
}

std::string_view weight_layout_name(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::kNone:
      return "none";
    case WeightLayout::kKCRS:
      return "KCRS";
    case WeightLayout::kKRSC:
      return "KRSC";
    case WeightLayout::kTapsMajor:
      return "RSK";
    case WeightLayout::kRows:
      return "rows";
    case WeightLayout::kRowsHWC:
      return "rows(hwc)";
    case WeightLayout::kVector:
      return "vector";
  }
  return "?";
}

}  // namespace zoc::ir
