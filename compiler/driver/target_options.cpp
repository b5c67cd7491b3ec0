// zoc's target options (compile's, and ir's for lower-to-target) as the cuDNN backend's
// EmitOptions: the defaults that depend on the precision are decided here, once.
#include "compiler/driver/target_options.h"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "compiler/support/sanitize.h"

namespace zoc {

std::optional<cudnn::EmitOptions> emit_options(const TargetArgs& args, Diagnostics& diags) {
  auto precision = cudnn::parse_precision(args.precision);
  if (!precision) {
    diags.error(
        SourceLoc{"--precision", 0, 0},
        fmt::format("unknown precision '{}': expected fp32, tf32, fp16 or bf16", args.precision));
    return std::nullopt;
  }
  cudnn::EmitOptions eopts;
  eopts.precision = *precision;
  // auto: the graph API in every precision. Its plans are built once per batch size, so a plain
  // forward() pays one cudnnBackendExecute per convolution; cuDNN 9's legacy fused call builds
  // and finalizes engine configs on every call (about 140 us of host time per fp16 convolution
  // on an H100: 7.5 ms per ResNet-50 forward without a CUDA graph, issue 33). `legacy` stays
  // for comparison. The trainer's convolutions are legacy calls whatever this says.
  const bool graph = args.conv_api == "graph" || (args.conv_api == "auto" && !args.train);
  eopts.conv_api = graph ? cudnn::ConvApi::kGraph : cudnn::ConvApi::kLegacy;
  eopts.linear_api =
      args.linear_api == "cudnn" ? cudnn::LinearApi::kCudnn : cudnn::LinearApi::kCublas;
  eopts.pad_input_channels = args.pad_input_channels;
  eopts.depthwise =
      args.depthwise == "cudnn" ? cudnn::DepthwiseApi::kCudnn : cudnn::DepthwiseApi::kZoc;
  eopts.layout = args.layout == "nchw"   ? cudnn::Layout::kNCHW
                 : args.layout == "nhwc" ? cudnn::Layout::kNHWC
                                         : cudnn::Layout::kAuto;
  // auto: the side stream where it was measured to pay (results/2026-11-22-h100-side-stream):
  // fp32/tf32 at small batch; fp16/bf16 gained nothing and would pay 0.4 MiB/sample of arena.
  const bool fp32_or_tf32 =
      *precision == cudnn::Precision::kFP32 || *precision == cudnn::Precision::kTF32;
  eopts.side_stream = args.streams == "2" || (args.streams == "auto" && fp32_or_tf32);
  eopts.command = args.command_line;
  return eopts;
}

// --input CxHxW. Each number must fit int64 (sscanf saturated 99999999999999999999 and the
// range check then quoted a number the user never wrote); the loader checks the ranges.
bool parse_input_dims(const std::string& text, LoadOptions& opts, Diagnostics& diags) {
  if (text.empty()) return true;
  std::array<int64_t, 3> d{};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  bool ok = true;
  for (size_t i = 0; i < 3 && ok; ++i) {
    if (i > 0) ok = p < end && *p++ == 'x';
    const auto [next, ec] = std::from_chars(p, end, d[i]);
    ok = ok && ec == std::errc();
    p = next;
  }
  if (!ok || p != end) {
    diags.error(SourceLoc{"--input", 0, 0},
                fmt::format("'{}' is not of the form CxHxW with whole numbers (e.g. 3x224x224)",
                            shown_text(text)));
    return false;
  }
  opts.input_dims = d;
  return true;
}

}  // namespace zoc
