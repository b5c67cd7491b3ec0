// The command line of `zoc`: every subcommand's options (CLI11), bound to one Args. Apart from
// main.cpp, which runs the commands, so that each file stays readable; main.cpp alone includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/driver/int8_commands.h"

namespace zoc::cli {

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
  std::vector<std::string> freeze;    // --freeze GLOB (training: parameters kept fixed)
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

// The subcommands and their options, bound to `args`.
struct Commands {
  CLI::App *ir, *compile, *run, *grad, *init, *extract, *calibrate;
  std::vector<CLI::Option*> ir_target;  // `zoc ir`'s target options
};

// Defines every subcommand on `app`, its options writing into `args`.
Commands define_commands(CLI::App& app, Args& args);

}  // namespace zoc::cli
