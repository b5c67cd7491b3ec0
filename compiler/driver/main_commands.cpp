// The definitions of `zoc`'s subcommands and options (main_commands.h).
#include "compiler/driver/main_commands.h"

#include <charconv>

#include <fmt/format.h>

#include "compiler/ir/shapes.h"
#include "compiler/support/sanitize.h"

namespace zoc::cli {
namespace {

// A check of an integer option's text: a whole number within [lo, hi]. CLI11 itself wraps "-1"
// into an unsigned option, saturates 99999999999999999999 and let `--top -1000000` through,
// which then crashed zoc run (issue 31).
CLI::Validator whole_number(int64_t lo, uint64_t hi) {
  const std::string range = fmt::format("{} to {}", lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        const char* end = text.data() + text.size();
        bool ok = !text.empty() && text[0] != '+';
        if (ok && text[0] == '-') {
          int64_t v = 0;
          const auto [p, ec] = std::from_chars(text.data(), end, v);
          ok = ec == std::errc() && p == end && v >= lo;
        } else if (ok) {
          uint64_t v = 0;
          const auto [p, ec] = std::from_chars(text.data(), end, v);
          ok = ec == std::errc() && p == end && v <= hi && (lo <= 0 || v >= uint64_t(lo));
        }
        if (ok) return "";
        return fmt::format("'{}' is not a whole number from {}", zoc::shown_text(text), range);
      },
      "INT in " + range);
}

// --weights of the commands that run a model: the default is the file's own (model_loader.h).
constexpr const char* kWeightsHelp =
    "safetensors weights (default: the .pt or .onnx file's own, else seeded init)";

// `zoc calibrate` and its options, bound to `args` (its model options: define_commands').
CLI::App* define_calibrate(CLI::App& app, Args& args) {
  CLI::App* cal = app.add_subcommand(
      "calibrate", "choose int8 activation scales from samples run on the reference interpreter");
  cal->add_option("--weights", args.weights, kWeightsHelp);
  cal->add_option("--seed", args.seed, "seed of the default weights")
      ->check(whole_number(0, UINT64_MAX));
  cal->add_option("--samples", args.calibrate.samples,
                  ".npy file [N, C, H, W] or folder of them (repeatable)")
      ->required()
      ->allow_extra_args(false);  // `--samples d model.yaml`: the model is not a sample
  cal->add_option("--method", args.calibrate.method, "max, percentile or entropy (KL divergence)")
      ->check(CLI::IsMember({"max", "percentile", "entropy"}))
      ->capture_default_str();
  cal->add_option("--percentile", args.calibrate.percentile, "of |x|, with --method percentile")
      ->capture_default_str();
  cal->add_option("--max-images", args.calibrate.max_images, "use at most this many images")
      ->check(whole_number(1, INT32_MAX));
  CLI::Option* max_error =
      cal->add_option("--max-error", args.calibrate.max_error,
                      "keep the most sensitive convolutions float until int8's relative error "
                      "is at most this (measured; 0: every eligible one int8)")
          ->check(CLI::Range(0.0, 1e30));
  cal->add_option("--sensitivity-images", args.calibrate.sensitivity_images,
                  "images --max-error measures on (the samples' first)")
      ->check(whole_number(1, INT32_MAX))
      ->needs(max_error)
      ->capture_default_str();
  cal->add_option("-o,--output", args.output, "the scales file to write (safetensors)")->required();
  return cal;
}

// The cuDNN backend's choices, which lower-to-target decides with (compile and ir).
std::vector<CLI::Option*> add_target_options(CLI::App* cmd, Args& args) {
  std::vector<CLI::Option*> opts;
  opts.push_back(
      cmd->add_option("--precision", args.precision, "fp32 (TF32 off), tf32, fp16 or bf16")
          ->capture_default_str());
  opts.push_back(cmd->add_option("--conv-api", args.conv_api,
                                 "fused convolutions via cuDNN's 'legacy' call or 'graph' API "
                                 "plans; auto: graph (plans built once; the legacy call plans "
                                 "on every call)")
                     ->check(CLI::IsMember({"auto", "legacy", "graph"}))
                     ->capture_default_str());
  opts.push_back(cmd->add_option("--linear", args.linear_api,
                                 "linear layers via 'cublas' (GEMM after a bias kernel) or "
                                 "'cudnn' (a fused convolution whose filter covers the input; "
                                 "no cuBLAS in the model)")
                     ->check(CLI::IsMember({"cublas", "cudnn"}))
                     ->capture_default_str());
  opts.push_back(cmd->add_option("--pad-input-channels", args.pad_input_channels,
                                 "NHWC storage: pad the input's channels (RGB: 3) with zeros "
                                 "up to a multiple of this, for tensor-core kernels in the "
                                 "first convolution (0: off)")
                     ->check(CLI::IsMember({0, 4, 8}))
                     ->capture_default_str());
  opts.push_back(cmd->add_option("--streams", args.streams,
                                 "2 runs each side branch (ResNet's downsample) on a second "
                                 "stream beside the main branch; 1: one stream; auto: 2 for "
                                 "fp32/tf32")
                     ->check(CLI::IsMember({"auto", "1", "2"}))
                     ->capture_default_str());
  opts.push_back(cmd->add_option("--layout", args.layout,
                                 "activation storage: auto (fp32 NCHW; tf32, fp16, bf16 NHWC), "
                                 "nchw or nhwc")
                     ->check(CLI::IsMember({"auto", "nchw", "nhwc"}))
                     ->capture_default_str());
  opts.push_back(cmd->add_option("--depthwise", args.depthwise,
                                 "depthwise convolutions (groups = channels) via zoc's own "
                                 "kernel (fused epilogue) or cuDNN's grouped convolution")
                     ->check(CLI::IsMember({"zoc", "cudnn"}))
                     ->capture_default_str());
  return opts;
}

}  // namespace

Commands define_commands(CLI::App& app, Args& args) {
  // Fine-tuning a model whose file cannot say requires_grad=False (YAML, ONNX), or freezing more.
  auto add_freeze = [&](CLI::App* cmd, CLI::Option* train) {
    CLI::Option* o = cmd->add_option("--freeze", args.freeze,
                                     "training: keep the parameters whose names match this glob "
                                     "fixed, as requires_grad=False does (repeatable)");
    if (train) o->needs(train);
  };
  auto add_model = [&](CLI::App* cmd) {
    cmd->add_option("model", args.model, "model file (.yaml, TorchScript .pt, or .onnx)")
        ->required();
    cmd->add_option("--set", args.sets, "override a model param: name=value (repeatable)");
  };
  CLI::App* ir_cmd = app.add_subcommand("ir", "print the verified IR of a model");
  add_model(ir_cmd);
  ir_cmd->add_flag("--no-locations", args.no_locations, "omit source locations");
  ir_cmd->add_option("--weights", args.weights, "also validate this safetensors file");
  ir_cmd->add_flag("--strict", args.strict, "reject weights holding NaN or Inf");
  ir_cmd->add_flag("--optimize", args.optimize, "print the IR after the inference passes");
  add_freeze(ir_cmd, ir_cmd->add_flag("--train", args.train,
                                      "print the training graph: forward in training mode, loss, "
                                      "backward, SGD"));
  ir_cmd->add_option("--input", args.input_dims,
                     "input size CxHxW (required for .pt models, and for .onnx models that leave "
                     "it dynamic)");
  auto add_pass_options = [&](CLI::App* cmd) {
    cmd->add_option("--print-ir-after", args.print_after, "print the IR after PASS (or 'all')");
    cmd->add_flag("--verify-each", args.verify_each, "run the IR verifier after every pass");
  };
  add_pass_options(ir_cmd);
  // Any of these (or --print-ir-after=lower-to-target) lowers the optimized graph for the cuDNN
  // backend: the IR then shows every value's storage and every node's runtime layer.
  const std::vector<CLI::Option*> ir_target = add_target_options(ir_cmd, args);

  CLI::App* compile_cmd =
      app.add_subcommand("compile", "generate standalone C++/cuDNN code for a model");
  add_model(compile_cmd);
  compile_cmd
      ->add_option("-o,--output", args.output,
                   "output folder (written atomically; in an existing folder zoc replaces or "
                   "deletes only the files it wrote, and only while they hold what it wrote)")
      ->required();
  compile_cmd->add_flag("--force", args.force,
                        "write into a folder zoc did not write, and replace files (not folders) at "
                        "the names zoc writes even if zoc did not write them; nothing else is "
                        "deleted");
  compile_cmd->add_option("--input", args.input_dims,
                          "input size CxHxW (default: the model's; required for .pt models)");
  add_freeze(compile_cmd,
             compile_cmd->add_flag("--train", args.train,
                                   "generate a trainer (training-mode forward, cross-entropy, "
                                   "backward, SGD; fp32) instead of inference code"));
  add_target_options(compile_cmd, args);
  add_pass_options(compile_cmd);

  CLI::App* run_cmd = app.add_subcommand("run", "run a model with the reference CPU interpreter");
  add_model(run_cmd);
  run_cmd->add_option("--weights", args.weights, kWeightsHelp);
  run_cmd->add_flag("--strict", args.strict, "reject weights holding NaN or Inf");
  run_cmd->add_option("--seed", args.seed, "seed of the default weights and random input")
      ->check(whole_number(0, UINT64_MAX));
  run_cmd->add_option("--input", args.input,
                      "input .npy [N, C, H, W] (default: seeded random; required for .pt models)");
  run_cmd->add_option("--batch", args.batch, "batch of the random input (not with --input)")
      ->check(whole_number(1, zoc::ir::kMaxBatch))
      ->capture_default_str();
  run_cmd->add_option("--output", args.output,
                      "write the output to this .npy file (several outputs: FILE_<name>.npy each)");
  run_cmd->add_option("--top", args.top_k, "classes to print per sample")
      ->check(whole_number(1, INT32_MAX))
      ->capture_default_str();
  run_cmd->add_flag("--optimize", args.optimize, "run the graph after the inference passes");

  CLI::App* grad_cmd = app.add_subcommand(
      "grad", "one training step's loss and parameter gradients with the reference interpreter");
  add_model(grad_cmd);
  grad_cmd->add_option("--weights", args.weights, kWeightsHelp);
  grad_cmd->add_option("--seed", args.seed, "seed of the default weights")
      ->check(whole_number(0, UINT64_MAX));
  grad_cmd->add_option("--input", args.input_dims,
                       "input size CxHxW (default: the model's; required for .pt models)");
  grad_cmd
      ->add_option("--batch-file", args.batch_file,
                   "safetensors with 'input' [N, C, H, W] and 'labels' [N] "
                   "(tools/train/grad_reference.py writes one)")
      ->required();
  grad_cmd->add_option("-o,--output", args.output, "output .safetensors file")->required();
  add_freeze(grad_cmd, nullptr);

  CLI::App* init_cmd = app.add_subcommand(
      "init-weights", "write seeded weights: PyTorch defaults or the layers' `init` (safetensors)");
  add_model(init_cmd);
  init_cmd->add_option("--seed", args.seed, "random seed")
      ->check(whole_number(0, UINT64_MAX))
      ->capture_default_str();
  init_cmd->add_option("-o,--output", args.output, "output .safetensors file")->required();

  CLI::App* extract_cmd = app.add_subcommand(
      "extract-weights",
      "write a TorchScript model's state_dict, or an ONNX model's initializers, as safetensors "
      "(for --weights)");
  extract_cmd->add_option("model", args.model, "TorchScript (.pt) or ONNX (.onnx) file")
      ->required();
  extract_cmd->add_option("-o,--output", args.output, "output .safetensors file")->required();
  extract_cmd->add_option("--input", args.input_dims,
                          "input size CxHxW, for .onnx models that leave it dynamic");

  CLI::App* cal = define_calibrate(app, args);
  add_model(cal);
  for (CLI::App* c : {ir_cmd, run_cmd}) {
    c->add_option("--int8-scales", args.int8_scales,
                  "quantize the optimized graph's convolutions to int8 with these scales (zoc "
                  "calibrate); implies --optimize");
  }
  return {ir_cmd, compile_cmd, run_cmd, grad_cmd, init_cmd, extract_cmd, cal, ir_target};
}

}  // namespace zoc::cli
