// The views of an IR activation that the TorchScript and ONNX frontends follow without an IR
// node (the IR has no permute or 5-D reshape), in one place for both: ConvNeXt's channels-last
// permutation [N, H, W, C] (its LayerNorm and Linear layers run on it) and ShuffleNet's channel
// shuffle, a 5-D [N, g, C/g, H, W] view and its transpose [N, C/g, g, H, W]; and ECA attention's
// [N, 1, F] view of features [N, F] (x.mean((2, 3)).view(n, 1, -1)), which its 1-D convolution
// and sigmoid run on (channel_conv1d). Each frontend names a view in its own words (the ops that
// make it differ).
#pragma once

#include <cstdint>
#include <vector>

namespace zoc::frontend {

enum class ActivationView { kNone, kChannelsLast, kGrouped, kGroupedTransposed, kSequence };

// The per-sample dims (no batch) of a view, in the view's own order, of an activation whose
// per-sample dims are `d` ([C, H, W]; [F] for kSequence; anything else is not viewed);
// `groups`: g of the grouped views.
inline std::vector<int64_t> viewed_dims(ActivationView view, int64_t groups,
                                        const std::vector<int64_t>& d) {
  if (view == ActivationView::kSequence) return d.size() == 1 ? std::vector<int64_t>{1, d[0]} : d;
  if (d.size() != 3 || view == ActivationView::kNone || groups < 0) return d;
  const int64_t per = groups > 0 ? d[0] / groups : 0;
  switch (view) {
    case ActivationView::kNone:
      break;
    case ActivationView::kChannelsLast:
      return {d[1], d[2], d[0]};
    case ActivationView::kGrouped:
      return {groups, per, d[1], d[2]};
    case ActivationView::kGroupedTransposed:
      return {per, groups, d[1], d[2]};
    case ActivationView::kSequence:
      break;
  }
  return d;
}

}  // namespace zoc::frontend
