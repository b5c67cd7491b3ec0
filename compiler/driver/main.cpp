// `zoc`: the command-line driver. The only place in zoc that prints diagnostics and chooses an
// exit code; everything below it returns errors as values.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "compiler/backend/cudnn/emitter.h"
#include "compiler/backend/reference/interpreter.h"
#include "compiler/driver/extract_weights.h"
#include "compiler/driver/grad_command.h"
#include "compiler/driver/int8_commands.h"
#include "compiler/driver/model_loader.h"
#include "compiler/driver/run_outputs.h"
#include "compiler/driver/target_options.h"
#include "compiler/driver/write_folder.h"
#include "compiler/frontend/onnx/onnx_frontend.h"
#include "compiler/frontend/torchscript/torchscript_frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/shapes.h"
#include "compiler/passes/pipeline.h"
#include "compiler/support/sanitize.h"
#include "compiler/weights/weights.h"
#include "zoc/io/npy.h"

namespace {

struct Args {
  std::string model;
  std::vector<std::string> sets;
  bool no_locations = false;
  std::string weights;
  bool strict = false;
  uint64_t seed = 0;
  std::string input;
  std::string batch_file;  // zoc grad --batch-file
  std::string output;
  int64_t batch = 1;
  int top_k = 5;
  std::string precision = "fp32";
  std::string conv_api = "auto";      // --conv-api auto|legacy|graph
  std::string linear_api = "cublas";  // --linear cublas|cudnn
  bool train = false;                 // zoc compile --train
  bool force = false;                 // zoc compile --force: replace files zoc did not write
  int pad_input_channels = 4;         // --pad-input-channels 0|4|8
  std::string streams = "auto";       // --streams auto|1|2
  std::string layout = "auto";        // --layout auto|nchw|nhwc
  std::string depthwise = "zoc";      // --depthwise zoc|cudnn
  std::string input_dims;             // --input CxHxW for compile
  std::string print_after;            // --print-ir-after=PASS|all
  bool verify_each = false;
  bool optimize = false;    // zoc ir --optimize: print after the whole pipeline
  std::string int8_scales;  // zoc run / zoc ir --int8-scales FILE
  zoc::CalibrateOptions calibrate;
  std::string command_line;
};

// Parses `--set name=value` items.
bool parse_overrides(const std::vector<std::string>& items, zoc::LoadOptions& opts,
                     zoc::Diagnostics& diags) {
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      diags.error(zoc::SourceLoc{"--set", 0, 0},
                  fmt::format("'{}' is not of the form name=value", item));
      return false;
    }
    opts.yaml.overrides.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return true;
}

int finish(const zoc::Diagnostics& diags) {
  std::cerr << diags.render();
  if (diags.has_errors()) {
    std::cerr << fmt::format("{} error{} generated.\n", diags.error_count(),
                             diags.error_count() == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

// model_loader.h's weights_for with the command line's choices.
std::optional<zoc::Weights> get_weights(const zoc::LoadedModel& m, const Args& args,
                                        zoc::Diagnostics& diags) {
  return zoc::weights_for(m, {args.model, args.weights, args.strict, args.seed}, diags);
}

// Runs the model on the interpreter; writes its outputs (run_outputs.h says where) and prints
// the top-k of each float one (a class map, argmax's i64, is written as float32 indices).
int cmd_run(const zoc::LoadedModel& m, const Args& args, zoc::Diagnostics& diags) {
  const zoc::ir::Graph& g = m.graph;
  auto weights = get_weights(m, args, diags);
  if (!weights) return finish(diags);
  auto input = zoc::run_input(g, args.input, args.batch, args.seed, diags);
  if (!input) return finish(diags);
  auto outs = zoc::ref::run(g, *weights, *input);
  if (!outs) {
    diags.error(zoc::SourceLoc{args.model, 0, 0}, outs.error().message);
    return finish(diags);
  }
  if (!args.output.empty()) {
    auto files = zoc::output_files(g, args.output);
    if (!files) {
      diags.file_error(args.output, files.error().message);
      return finish(diags);
    }
    for (size_t k = 0; k < files->size(); ++k) {
      const zoc::ref::Tensor& out = (*outs)[k];
      if (zoc::Status s = zoc::npy::write_float32((*files)[k], out.data.data(), out.shape); !s) {
        diags.file_error((*files)[k], s.error().message);
        return finish(diags);
      }
    }
  }
  for (size_t k = 0; k < outs->size(); ++k) {
    const zoc::ir::TensorType& t = g.type(g.outputs[k]);
    if (outs->size() > 1) {
      std::cout << fmt::format("output '{}': {}\n", g.value_name(g.outputs[k]), t.str());
    }
    if (t.dtype == zoc::ir::DType::F32) zoc::print_top_k((*outs)[k], args.top_k);
  }
  return finish(diags);
}

// The cuDNN backend's options from the command line (compile and ir), or nullopt after an error.
std::optional<zoc::cudnn::EmitOptions> emit_options(const Args& args, zoc::Diagnostics& diags) {
  const zoc::TargetArgs t{args.precision,   args.conv_api,  args.linear_api,         args.layout,
                          args.streams,     args.depthwise, args.pad_input_channels, args.train,
                          args.command_line};
  auto eopts = zoc::emit_options(t, diags);
  if (eopts) eopts->zoc_version = ZOC_VERSION;
  return eopts;
}

// Runs the inference pipeline (`zoc ir --train`: the training pipeline) with the
// --print-ir-after / --verify-each options, lowering for `target` where one is given.
bool optimize(zoc::ir::Graph& g, const Args& args, zoc::Diagnostics& diags,
              const zoc::lower::TargetDesc* target = nullptr) {
  zoc::passes::PassOptions popts;
  popts.verify_each = args.verify_each;
  popts.print_after = args.print_after;
  popts.print_to = &std::cout;
  popts.target = target;
  return zoc::passes::run_pipeline(
      g, diags, popts,
      args.train ? zoc::passes::training_pipeline() : zoc::passes::inference_pipeline());
}

// `zoc calibrate`: the optimized graph's int8 scales from the samples, written to --output.
int cmd_calibrate(zoc::LoadedModel& m, const Args& args, zoc::Diagnostics& diags) {
  if (!optimize(m.graph, args, diags)) return finish(diags);
  auto weights = get_weights(m, args, diags);
  if (weights) zoc::calibrate_command(m.graph, *weights, args.calibrate, args.output, diags);
  return finish(diags);
}

// Quantizes the optimized graph with --int8-scales, else with a QDQ model's own scales, printing
// the plan to stderr; true when there is nothing to do.
bool apply_int8(zoc::LoadedModel& m, const Args& args, zoc::Diagnostics& diags) {
  if (!args.int8_scales.empty()) {
    return zoc::apply_int8_scales(m.graph, args.int8_scales, std::cerr, diags);
  }
  if (m.int8_scales.empty()) return true;
  return zoc::apply_model_int8_scales(m.graph, m.int8_scales, std::cerr, diags);
}

int cmd_compile(zoc::ir::Graph& g, const Args& args, zoc::Diagnostics& diags) {
  const std::optional<zoc::cudnn::EmitOptions> eopts = emit_options(args, diags);
  if (!eopts) return finish(diags);
  const zoc::lower::TargetDesc target = zoc::cudnn::lowering_target(*eopts);
  if (!args.train && !optimize(g, args, diags, &target)) return finish(diags);
  auto gen =
      args.train ? zoc::cudnn::emit_trainer(g, *eopts, diags) : zoc::cudnn::emit(g, *eopts, diags);
  if (!gen) return finish(diags);
  zoc::WriteFolderOptions wopts;
  wopts.force = args.force;
  auto written = zoc::write_folder_atomically(args.output, gen->files, wopts);
  if (!written) {
    diags.file_error(args.output, written.error().message);
    return finish(diags);
  }
  for (const std::string& note : written->notes) {
    diags.warning(zoc::SourceLoc{args.output, 0, 0}, note);
  }
  auto mib = [](int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
  std::cout << fmt::format(
      "wrote {}: class zoc_model::{} ({}, {} files)\n"
      "  weights {:.1f} MiB; activation arena {:.3f} MiB per sample (unshared {:.3f}), "
      "{:.1f} MiB at batch 256\n",
      args.output, gen->class_name, args.precision, gen->files.size(), mib(gen->weight_bytes),
      mib(gen->arena_bytes_per_sample), mib(gen->unshared_bytes_per_sample),
      mib(gen->arena_bytes_per_sample * 256));
  return finish(diags);
}

int run(int argc, char** argv);

// `zoc --version`: zoc's own version, and what the generated code was checked against where zoc
// was built (the generated code needs CUDA and cuDNN 9; zoc itself links neither).
std::string version_text() {
  return fmt::format(
      "zoc {}\n"
      "generated code: CUDA {} and cuDNN {} (headers under {} when zoc was configured); "
      "needs cuDNN 9\n"
      "TorchScript input: LibTorch {}\n"
      "ONNX input: {}",
      ZOC_VERSION, ZOC_CUDA_VERSION, ZOC_CUDNN_VERSION, ZOC_CUDA_ROOT, ZOC_LIBTORCH_VERSION,
      zoc::onnx::versions_read());
}

bool is_subcommand(CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == name) return true;
  }
  return false;
}

std::string subcommand_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
}

}  // namespace

// Library code reports errors as values; the one thing it cannot turn into a value is running
// out of memory (a model whose weights alone exceed the machine), so main catches that.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "zoc: error: out of memory (the model's tensors do not fit on this machine)\n";
    return 1;
  }
}

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

// The subcommands and their options, bound to `args`.
struct Commands {
  CLI::App *ir, *compile, *run, *grad, *init, *extract, *calibrate;
  std::vector<CLI::Option*> ir_target;  // `zoc ir`'s target options
};

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

Commands define_commands(CLI::App& app, Args& args) {
  auto add_model = [&](CLI::App* cmd) {
    cmd->add_option("model", args.model, "model file (.yaml, TorchScript .pt, or .onnx)")
        ->required();
    cmd->add_option("--set", args.sets, "override a model param: name=value (repeatable)");
  };
  // The cuDNN backend's choices, which lower-to-target decides with (compile and ir).
  auto add_target_options = [&](CLI::App* cmd) {
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
  };
  CLI::App* ir_cmd = app.add_subcommand("ir", "print the verified IR of a model");
  add_model(ir_cmd);
  ir_cmd->add_flag("--no-locations", args.no_locations, "omit source locations");
  ir_cmd->add_option("--weights", args.weights, "also validate this safetensors file");
  ir_cmd->add_flag("--strict", args.strict, "reject weights holding NaN or Inf");
  ir_cmd->add_flag("--optimize", args.optimize, "print the IR after the inference passes");
  ir_cmd->add_flag("--train", args.train,
                   "print the training graph: forward in training mode, loss, backward, SGD");
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
  const std::vector<CLI::Option*> ir_target = add_target_options(ir_cmd);

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
  compile_cmd->add_flag("--train", args.train,
                        "generate a trainer (training-mode forward, cross-entropy, backward, "
                        "SGD; fp32) instead of inference code");
  add_target_options(compile_cmd);
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

// `zoc ir`: the IR as the frontend wrote it, optimized (--optimize), lowered for the cuDNN
// backend (any target option, or --print-ir-after=lower-to-target), or as a training graph.
int cmd_ir(zoc::LoadedModel& model, const Args& args, const Commands& cmd,
           zoc::Diagnostics& diags) {
  zoc::ir::Graph& graph = model.graph;
  if (!args.weights.empty() && !get_weights(model, args, diags)) return finish(diags);
  const bool lower = std::any_of(cmd.ir_target.begin(), cmd.ir_target.end(),
                                 [](const CLI::Option* o) { return o->count() > 0; }) ||
                     args.print_after == "lower-to-target";
  if (args.train && (args.optimize || lower)) {
    diags.error(zoc::SourceLoc{"--train", 0, 0},
                "--train excludes --optimize and the target options: training takes the model "
                "as written, in fp32 NCHW");
    return finish(diags);
  }
  const bool int8 = !args.int8_scales.empty();
  if (int8 && (args.train || lower)) {
    diags.error(zoc::SourceLoc{"--int8-scales", 0, 0},
                "an int8 graph runs on the reference interpreter only, yet: not with --train or "
                "the target options");
    return finish(diags);
  }
  if (args.train || args.optimize || lower || int8 || !args.print_after.empty() ||
      args.verify_each) {
    std::optional<zoc::lower::TargetDesc> target;
    if (lower) {
      const std::optional<zoc::cudnn::EmitOptions> eopts = emit_options(args, diags);
      if (!eopts) return finish(diags);
      target = zoc::cudnn::lowering_target(*eopts);
    }
    if (!optimize(graph, args, diags, target ? &*target : nullptr)) return finish(diags);
    if (!args.print_after.empty()) return finish(diags);
    // A QDQ model's own scales apply to the optimized graph, not to a lowered or training one.
    if (!lower && !args.train && !apply_int8(model, args, diags)) return finish(diags);
  }
  zoc::ir::PrintOptions popts;
  popts.locations = !args.no_locations;
  std::cout << zoc::ir::print_graph(graph, popts);
  return finish(diags);
}

int run(int argc, char** argv) {
  CLI::App app{"zoc: the zero-overhead compiler for convolutional networks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  Args args;

  const Commands cmd = define_commands(app, args);

  if (argc > 1 && argv[1][0] != '-' && !is_subcommand(app, argv[1])) {
    std::cerr << fmt::format("zoc: error: unknown command '{}'; the commands are {} (zoc --help)\n",
                             zoc::shown_text(argv[1]), subcommand_names(app));
    return 1;
  }
  // CLI11's messages quote the arguments: escaped like every other message.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("zoc: error: {}\nRun with --help for more information.\n",
                       zoc::terminal_safe(e.what(), /*continuation_lines=*/false));
  });
  CLI11_PARSE(app, argc, argv);
  if (cmd.run->count("--batch") > 0 && !args.input.empty()) {
    std::cerr << "zoc: error: --batch sizes the random input; with --input the batch is the "
                 ".npy file's first dimension\n";
    return 1;
  }
  args.command_line = "zoc";
  for (int i = 1; i < argc; ++i) args.command_line += std::string(" ") + argv[i];

  zoc::Diagnostics diags;
  zoc::LoadOptions opts;
  if (!parse_overrides(args.sets, opts, diags)) return finish(diags);
  if (!zoc::parse_input_dims(args.input_dims, opts, diags)) return finish(diags);
  if (cmd.extract->parsed()) {
    if (zoc::is_onnx_file(args.model)) {
      zoc::extract_onnx_weights(args.model, args.output, opts, diags);
    } else {
      zoc::extract_state_dict(args.model, args.output, diags);
    }
    return finish(diags);
  }
  if (cmd.run->parsed() && !args.input.empty() &&
      (zoc::is_torchscript_file(args.model) || zoc::is_onnx_file(args.model))) {
    // A TorchScript model has no static input shape, nor an ONNX model with dynamic dimensions:
    // `zoc run` takes it from the .npy (an ONNX model checks it against the sizes it fixes, and
    // an unusable .npy against them when it runs; a TorchScript model has no sizes to name).
    zoc::Diagnostics later;
    const bool ts = zoc::is_torchscript_file(args.model);
    if (!zoc::input_dims_from_npy(args.input, opts, ts ? diags : later) && ts) return finish(diags);
  }
  auto model = zoc::load_model_and_weights(args.model, diags, opts);
  if (!model) return finish(diags);
  zoc::ir::Graph* graph = &model->graph;

  if (cmd.compile->parsed()) {
    if (!model->int8_scales.empty()) {
      diags.warning(zoc::SourceLoc{args.model, 0, 0},
                    "the model's QuantizeLinear/DequantizeLinear scales are not used: int8 GPU "
                    "code is not built yet, so it is compiled at --precision with its "
                    "dequantized weights");
    }
    return cmd_compile(*graph, args, diags);
  }
  if (cmd.ir->parsed()) {
    return cmd_ir(*model, args, cmd, diags);
  } else if (cmd.run->parsed()) {
    const bool int8 = !args.int8_scales.empty() || !model->int8_scales.empty();
    if ((args.optimize || int8) && !optimize(*graph, args, diags)) return finish(diags);
    if (!apply_int8(*model, args, diags)) return finish(diags);
    return cmd_run(*model, args, diags);
  } else if (cmd.calibrate->parsed()) {
    return cmd_calibrate(*model, args, diags);
  } else if (cmd.grad->parsed()) {
    auto weights = get_weights(*model, args, diags);
    if (!weights) return finish(diags);
    auto training = zoc::passes::build_training_graph(*graph, {.optimizer = false}, diags);
    if (!training) return finish(diags);
    auto done = zoc::run_grad_command(*training, *weights, args.batch_file, args.output);
    if (!done) {
      diags.file_error(args.batch_file, done.error().message);
    } else {
      std::cout << *done << "\n";
    }
  } else if (cmd.init->parsed()) {
    const zoc::Weights w = zoc::init_weights(*graph, args.seed);
    if (zoc::Status s = zoc::save_weights(*graph, w, args.output); !s) {
      diags.file_error(args.output, s.error().message);
    } else {
      std::cout << fmt::format("wrote {} ({} tensors, seed {})\n", args.output, w.tensors.size(),
                               args.seed);
    }
  }
  return finish(diags);
}

}  // namespace
