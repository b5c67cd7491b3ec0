// `zoc`: the command-line driver. The only place in zoc that prints diagnostics and chooses an
// exit code; everything below it returns errors as values.
#include <algorithm>
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
#include "compiler/driver/main_commands.h"
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

using zoc::cli::Args;
using zoc::cli::Commands;

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

  const Commands cmd = zoc::cli::define_commands(app, args);

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
  opts.freeze = args.freeze;
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
