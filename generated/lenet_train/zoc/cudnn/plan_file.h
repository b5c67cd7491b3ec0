// Plan files: per-layer algorithm choices measured on one GPU, with one cuDNN, for one generated
// model (issue 6: plan selection by measurement).
//
// cuDNN's heuristics pick a convolution algorithm from a model of the GPU; timing every
// candidate on the real GPU sometimes finds a faster one. `<model>_main --tune PLAN` times them
// (ConvLayer::tune for the legacy API, GraphConvLayer::tune for graph-API engine configs) and
// writes this file; a model created with Options::plan_file uses the
// measured choice of every layer and batch size it holds, and cuDNN's heuristics for the rest.
// A plan made on another GPU, another cuDNN or another model (IR hash) is not used at all: the
// caller gets a warning and the heuristics. A malformed file is an error naming file and line.
// Text, one line per choice, so that a person can read and diff it:
//
//   zoc-plan 1
//   gpu NVIDIA H200
//   cudnn 91900
//   model resnet50 fp16 7c0d2a0fe3f1b9aa
//   conv <batch> <algo> <math type> <workspace bytes> <median ms> <layer name>
//   graph <batch> <engine> <knobs> <workspace bytes> <median ms> <layer name>
//   graph-split <batch> <engine> <knobs> <workspace bytes> <median ms> <layer name>
//
// A `graph` line is a graph-API engine config: cuDNN's global engine index and its knob choices
// ("k<knob type>=<value>,..." or "-" for none), from which the execution plan is rebuilt exactly.
// A `graph-split` line is the engine config of the convolution without its epilogue's
// activation, which then runs as a kernel of its own: tuning measured that pair faster than
// every config with the activation fused (the time is the pair's).
//
// Dependency-free C++17 (no CUDA): unit-tested on machines without a GPU.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/expected.h"

namespace zoc {

// Parses a knob list "k<type>=<value>,..." ("-": none) into (type, value) pairs; false when
// malformed. Types are cudnnBackendKnobType_t values (0..255), values any int64.
inline bool parse_knob_list(const std::string& text, std::vector<std::pair<int, int64_t>>* out) {
  out->clear();
  if (text == "-") return true;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int type = -1;
    long long value = 0;
    char k = 0, eq = 0;
    std::istringstream one(item);
    if (!(one >> k >> type >> eq >> value) || k != 'k' || eq != '=' || !(one >> std::ws).eof() ||
        type < 0 || type > 255 || out->size() >= 64 || item.find(' ') != std::string::npos) {
      return false;
    }
    out->push_back({type, int64_t(value)});
  }
  return !out->empty() && text.back() != ',';
}

inline std::string knob_list_text(const std::vector<std::pair<int, int64_t>>& knobs) {
  if (knobs.empty()) return "-";
  std::string text;
  for (const auto& [type, value] : knobs) {
    text += (text.empty() ? "k" : ",k") + std::to_string(type) + "=" + std::to_string(value);
  }
  return text;
}

struct PlanChoice {
  std::string layer;
  int batch = 0;
  int algo = 0;  // cudnnConvolutionFwdAlgo_t (legacy API)
  int math = 0;  // cudnnMathType_t (legacy API)
  uint64_t workspace = 0;
  double ms = 0;        // the measured median, for the reader
  int64_t engine = -1;  // graph API: cuDNN's global engine index; -1: a legacy choice
  std::string knobs{};  // graph API: knob_list_text() of the engine config's knob choices
  bool split = false;   // graph API: the config lacks the epilogue's activation (graph-split)
};

struct PlanFile {
  std::string gpu;
  uint64_t cudnn = 0;
  std::string model, precision, ir_hash;
  std::vector<PlanChoice> choices;

  const PlanChoice* find(const char* layer, int batch) const {
    for (const PlanChoice& c : choices) {
      if (c.batch == batch && c.layer == layer) return &c;
    }
    return nullptr;
  }

  // The largest workspace a choice for a batch up to max_batch needs, within `limit` (a
  // model sizes its workspace to hold them all).
  uint64_t largest_workspace(int max_batch, uint64_t limit) const {
    uint64_t largest = 0;
    for (const PlanChoice& c : choices) {
      if (c.batch <= max_batch && c.workspace <= limit && c.workspace > largest)
        largest = c.workspace;
    }
    return largest;
  }

  // Adds or replaces the choice for (layer, batch).
  void set(const PlanChoice& choice) {
    for (PlanChoice& c : choices) {
      if (c.batch == choice.batch && c.layer == choice.layer) {
        c = choice;
        return;
      }
    }
    choices.push_back(choice);
  }

  // Empty when this plan was made for the given GPU, cuDNN and model; else why not.
  std::string mismatch(const std::string& gpu_name, uint64_t cudnn_version,
                       const std::string& model_name, const std::string& model_precision,
                       const std::string& model_hash) const {
    if (gpu != gpu_name) return "it was measured on '" + gpu + "', this is '" + gpu_name + "'";
    if (cudnn != cudnn_version) {
      return "it was measured with cuDNN " + std::to_string(cudnn) + ", this is " +
             std::to_string(cudnn_version);
    }
    if (model != model_name || precision != model_precision || ir_hash != model_hash) {
      return "it is for " + model + " " + precision + " (IR " + ir_hash + "), this is " +
             model_name + " " + model_precision + " (IR " + model_hash + ")";
    }
    return "";
  }

  std::string text() const {
    std::ostringstream out;
    out << "zoc-plan 1\n";
    out << "gpu " << gpu << "\n";
    out << "cudnn " << cudnn << "\n";
    out << "model " << model << " " << precision << " " << ir_hash << "\n";
    for (const PlanChoice& c : choices) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.5f", c.ms);
      if (c.engine >= 0) {
        out << (c.split ? "graph-split " : "graph ") << c.batch << " " << c.engine << " "
            << (c.knobs.empty() ? "-" : c.knobs) << " " << c.workspace << " " << ms << " "
            << c.layer << "\n";
      } else {
        out << "conv " << c.batch << " " << c.algo << " " << c.math << " " << c.workspace << " "
            << ms << " " << c.layer << "\n";
      }
    }
    return out.str();
  }

  // Writes to `path`.tmp, then renames it over `path` (a reader never sees half a file).
  Status save(const std::string& path) const {
    const std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      if (!f) return Error{path + ": cannot write the plan file"};
      f << text();
      f.flush();
      if (!f) return Error{path + ": writing the plan file failed"};
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      return Error{path + ": cannot rename " + tmp + " into place"};
    }
    return Status::success();
  }

  static Expected<PlanFile> parse(const std::string& text, const std::string& path) {
    constexpr size_t kMaxLines = 100000;
    PlanFile plan;
    std::istringstream in(text);
    std::string line;
    size_t number = 0;
    bool have_gpu = false, have_cudnn = false, have_model = false;
    std::set<std::pair<std::string, int>> seen;  // (layer, batch): one choice each
    auto at = [&](const std::string& why) {
      return Error{path + ":" + std::to_string(number) + ": " + why};
    };
    while (std::getline(in, line)) {
      if (++number > kMaxLines) return at("more than 100000 lines; not a plan file");
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (number == 1) {
        if (line != "zoc-plan 1") return at("expected 'zoc-plan 1' (not a zoc plan file)");
        continue;
      }
      if (line.empty() || line[0] == '#') continue;
      const size_t space = line.find(' ');
      const std::string key = line.substr(0, space);
      const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
      std::istringstream fields(rest);
      if ((key == "gpu" && have_gpu) || (key == "cudnn" && have_cudnn) ||
          (key == "model" && have_model)) {
        return at("a second '" + key + "' line");
      }
      if (key == "gpu") {
        if (rest.empty()) return at("'gpu' needs the GPU's name");
        plan.gpu = rest;
        have_gpu = true;
      } else if (key == "cudnn") {
        if (!(fields >> plan.cudnn) || !(fields >> std::ws).eof()) {
          return at("'cudnn' needs one version number, e.g. 91900");
        }
        have_cudnn = true;
      } else if (key == "model") {
        std::string extra;
        if (!(fields >> plan.model >> plan.precision >> plan.ir_hash) || (fields >> extra)) {
          return at("'model' needs a name, a precision and an IR hash");
        }
        have_model = true;
      } else if (key == "conv" || key == "graph" || key == "graph-split") {
        PlanChoice c;
        std::string extra;
        long long workspace = -1;  // signed: ">>" into an unsigned would wrap "-5"
        const bool graph = key != "conv";
        c.split = key == "graph-split";
        bool read = graph ? bool(fields >> c.batch >> c.engine >> c.knobs)
                          : bool(fields >> c.batch >> c.algo >> c.math);
        read = read && (fields >> workspace >> c.ms >> c.layer) && !(fields >> extra);
        if (!read) {
          return at(graph ? "expected '" + key + " BATCH ENGINE KNOBS WORKSPACE MS LAYER'"
                          : "expected 'conv BATCH ALGO MATH WORKSPACE MS LAYER'");
        }
        if (workspace < 0) return at("workspace out of range");
        c.workspace = static_cast<uint64_t>(workspace);
        if (c.batch < 1 || c.batch > 65536) return at("batch out of range 1..65536");
        if (!graph && (c.algo < 0 || c.algo > 16 || c.math < 0 || c.math > 8)) {
          return at("algorithm or math type out of range");
        }
        std::vector<std::pair<int, int64_t>> knobs;
        if (graph && (c.engine < 0 || c.engine > 1000000)) return at("engine out of range");
        if (graph && !parse_knob_list(c.knobs, &knobs)) {
          return at("knobs must be '-' or 'k<type>=<value>,...', got '" + c.knobs + "'");
        }
        if (!(c.ms >= 0 && c.ms < 1e9)) return at("time out of range");
        if (!seen.insert({c.layer, c.batch}).second) {
          return at("a second choice for layer '" + c.layer + "' at batch " +
                    std::to_string(c.batch));
        }
        plan.choices.push_back(c);
      } else {
        return at("unknown line '" + key +
                  "' (expected gpu, cudnn, model, conv, graph or graph-split)");
      }
    }
    if (number == 0) return Error{path + ": empty file (not a zoc plan file)"};
    if (!have_gpu || !have_cudnn || !have_model) {
      return Error{path + ": missing its gpu, cudnn or model line"};
    }
    return plan;
  }

  static Expected<PlanFile> load(const std::string& path) {
    constexpr std::streamoff kMaxBytes = 16 << 20;
    std::ifstream f(path, std::ios::binary);
    if (!f) return Error{path + ": cannot open the plan file"};
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    if (size < 0 || size > kMaxBytes) return Error{path + ": not a zoc plan file (over 16 MiB)"};
    f.seekg(0);
    std::string text(static_cast<size_t>(size), '\0');
    if (size > 0 && !f.read(&text[0], size)) return Error{path + ": cannot read the plan file"};
    return parse(text, path);
  }
};

}  // namespace zoc
