// Engine configs for a fused-convolution graph: what cuDNN's heuristics offer, which of them keep
// the precision's contract, and how to rebuild one exactly from its engine index and knobs.
//
// Why: the first config of heuristics mode A is often not the fastest (PyTorch's benchmark mode
// times the heuristics' and fallback configs and keeps the fastest, Conv_v8.cpp). zoc's --tune
// does the same (GraphConvLayer::tune) and records each winner in the plan file as an
// EngineChoice, cuDNN's global engine index plus knob choices, which make_config() turns back
// into the same engine config when the model is created, so the plan a model runs is the plan
// that was timed. Header-only C++17; needs cudnn.h (through zoc/cudnn/graph_ops.h).
#pragma once

#include <algorithm>
#include <set>

#include "zoc/cudnn/graph_ops.h"
#include "zoc/cudnn/plan_file.h"

namespace zoc {

// One engine config: what a plan file records for a graph-API layer.
struct EngineChoice {
  int64_t engine = -1;                         // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<std::pair<int, int64_t>> knobs;  // (cudnnBackendKnobType_t, value)
  std::string knob_text() const { return knob_list_text(knobs); }
  bool operator<(const EngineChoice& o) const {
    return engine != o.engine ? engine < o.engine : knobs < o.knobs;
  }
};

namespace graph_detail {

constexpr int kMaxConfigs = 256;  // heuristics results read per mode

// Reads an INT64 attribute; `what` names it for the error.
inline Expected<int64_t> get_int64(const BackendDesc& d, cudnnBackendAttributeName_t attr,
                                   const char* what, const char* layer) {
  int64_t value = 0, count = 0;
  ZOC_BACKEND(cudnnBackendGetAttribute(d.get(), attr, CUDNN_TYPE_INT64, 1, &count, &value),
              std::string("get ") + what, layer);
  return value;
}

// What an engine config is: the engine and knobs, and the engine's notes.
struct ConfigInfo {
  EngineChoice choice;
  std::vector<int> numerical, behavior;
  bool has_numerical(int note) const {
    return std::find(numerical.begin(), numerical.end(), note) != numerical.end();
  }
  bool has_behavior(int note) const {
    return std::find(behavior.begin(), behavior.end(), note) != behavior.end();
  }
  // "eng12 rtc tc {k2=3,...}": engine index, notes, knob choices.
  std::string name() const {
    std::string n = "eng" + std::to_string(choice.engine);
    if (has_behavior(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) n += " rtc";
    if (has_numerical(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) n += " tc";
    if (has_numerical(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) n += " nondet";
    if (has_numerical(CUDNN_NUMERICAL_NOTE_WINOGRAD)) n += " winograd";
    if (!choice.knobs.empty()) n += " {" + choice.knob_text() + "}";
    return n;
  }
};

// Whether an engine keeps the precision's contract: fp32 compute (no down-converted inputs, no
// reduced-precision reduction) and, in fp32 without allow_tf32, no tensor cores (TF32).
inline bool numerics_allowed(const FusedConvSpec& s, const ConfigInfo& info) {
  const bool fp32_strict = s.io_type == CUDNN_DATA_FLOAT && !s.allow_tf32;
  return !info.has_numerical(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) &&
         !info.has_numerical(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) &&
         !(fp32_strict && info.has_numerical(CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
}

inline Status read_notes(const BackendDesc& engine, ConfigInfo* info, const char* layer) {
  int64_t count = 0;
  cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  ZOC_BACKEND(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                       CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                       &count, num),
              "get CUDNN_ATTR_ENGINE_NUMERICAL_NOTE", layer);
  for (int64_t i = 0; i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i)
    info->numerical.push_back(num[i]);
  cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  ZOC_BACKEND(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                       CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                                       &count, beh),
              "get CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE", layer);
  for (int64_t i = 0; i < count && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++i)
    info->behavior.push_back(beh[i]);
  return Status();
}

// The engine index, notes and knob choices of an engine config.
inline Expected<ConfigInfo> describe_config(const BackendDesc& cfg, const char* layer) {
  ConfigInfo info;
  ZOC_ASSIGN_OR_RETURN(BackendDesc engine,
                       BackendDesc::create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine", layer));
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t count = 0;
  ZOC_BACKEND(cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw),
              "get CUDNN_ATTR_ENGINECFG_ENGINE", layer);
  ZOC_ASSIGN_OR_RETURN(info.choice.engine, get_int64(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                                     "CUDNN_ATTR_ENGINE_GLOBAL_INDEX", layer));
  ZOC_TRY(read_notes(engine, &info, layer));

  std::vector<BackendDesc> knobs;
  std::vector<cudnnBackendDescriptor_t> raw_knobs;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    ZOC_ASSIGN_OR_RETURN(BackendDesc k, BackendDesc::create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
                                                            "knob choice", layer));
    raw_knobs.push_back(k.get());
    knobs.push_back(std::move(k));
  }
  ZOC_BACKEND(cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS,
                                       &count, raw_knobs.data()),
              "get CUDNN_ATTR_ENGINECFG_KNOB_CHOICES", layer);
  for (int64_t i = 0; i < count && i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    int64_t value = 0, n = 0;
    ZOC_BACKEND(cudnnBackendGetAttribute(raw_knobs[size_t(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                         CUDNN_TYPE_KNOB_TYPE, 1, &n, &type),
                "get CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE", layer);
    ZOC_BACKEND(cudnnBackendGetAttribute(raw_knobs[size_t(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                         CUDNN_TYPE_INT64, 1, &n, &value),
                "get CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE", layer);
    info.choice.knobs.push_back({int(type), value});
  }
  return info;
}

// One config offered by the heuristics: its descriptor, what it is, and "A#3"-style rank.
struct OfferedConfig {
  BackendDesc cfg;
  ConfigInfo info;
  std::string tag;
};

// The configs heuristics `mode` offers for `graph`, in its order (at most kMaxConfigs). A mode
// that cannot rank this graph gives none, and *notes says why.
inline Expected<std::vector<OfferedConfig>> offered_configs(cudnnBackendDescriptor_t graph,
                                                            cudnnBackendHeurMode_t mode,
                                                            const char* mode_name,
                                                            cudnnBackendDescriptor_t device_prop,
                                                            std::string* notes, const char* layer) {
  std::vector<OfferedConfig> out;
  const std::string what = std::string("heuristics (mode ") + mode_name + ")";
  ZOC_ASSIGN_OR_RETURN(BackendDesc heur,
                       BackendDesc::create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what, layer));
  ZOC_SET_DESC(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, what, layer);
  ZOC_SET_ATTR(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, what, layer);
  if (device_prop) ZOC_SET_DESC(heur, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, device_prop, what, layer);
  const cudnnStatus_t st = cudnnBackendFinalize(heur.get());
  if (st != CUDNN_STATUS_SUCCESS) {
    *notes += "; " + what + ": " + detail::cudnn_status_text(st);
    return Expected<std::vector<OfferedConfig>>(std::move(out));
  }
  int64_t count = 0;
  ZOC_BACKEND(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
              "get the number of CUDNN_ATTR_ENGINEHEUR_RESULTS of " + what, layer);
  count = std::min<int64_t>(count, kMaxConfigs);
  std::vector<BackendDesc> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    ZOC_ASSIGN_OR_RETURN(BackendDesc c, BackendDesc::create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                                            "engine config", layer));
    raw.push_back(c.get());
    cfgs.push_back(std::move(c));
  }
  int64_t got = 0;
  if (count > 0) {
    ZOC_BACKEND(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
                "get CUDNN_ATTR_ENGINEHEUR_RESULTS of " + what, layer);
  }
  if (got <= 0) *notes += "; " + what + ": no engine configs";
  for (int64_t i = 0; i < got && i < count; ++i) {
    ZOC_ASSIGN_OR_RETURN(ConfigInfo info, describe_config(cfgs[size_t(i)], layer));
    out.push_back({std::move(cfgs[size_t(i)]), std::move(info),
                   std::string(mode_name) + "#" + std::to_string(i)});
  }
  return Expected<std::vector<OfferedConfig>>(std::move(out));
}

// Every config heuristics modes A and B and the fallback list offer for `graph` that keeps the
// spec's numerics, each engine + knobs once, in that order (A's best first).
inline Expected<std::vector<OfferedConfig>> all_offered(const FusedConvSpec& s,
                                                        cudnnBackendDescriptor_t graph,
                                                        cudnnBackendDescriptor_t device_prop,
                                                        bool with_mode_b, std::string* notes,
                                                        const char* layer) {
  std::vector<OfferedConfig> out;
  std::set<EngineChoice> seen;
  const cudnnBackendHeurMode_t modes[3] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B,
                                           CUDNN_HEUR_MODE_FALLBACK};
  const char* names[3] = {"A", "B", "FALLBACK"};
  for (int m = 0; m < 3; ++m) {
    if (m == 1 && !with_mode_b) continue;
    ZOC_ASSIGN_OR_RETURN(std::vector<OfferedConfig> offered,
                         offered_configs(graph, modes[m], names[m], device_prop, notes, layer));
    for (OfferedConfig& o : offered) {
      if (!numerics_allowed(s, o.info)) {
        if (notes->size() < 3000)
          *notes += "; " + o.tag + " " + o.info.name() +
                    ": skipped "
                    "(reduced-precision numerics)";
        continue;
      }
      if (seen.insert(o.info.choice).second) out.push_back(std::move(o));
    }
  }
  // fp16/bf16: tensor-core configs first, each group in the order above. The first config of
  // the heuristics for an fp16 convolution + bias + ReLU6 epilogue ran MobileNetV2 20x slower
  // than the one tuning found (H100, cuDNN 9.19, 2026-11-25); a convolution on fp16 data
  // without tensor cores is never the fast one.
  if (s.io_type == CUDNN_DATA_HALF || s.io_type == CUDNN_DATA_BFLOAT16) {
    std::stable_partition(out.begin(), out.end(), [](const OfferedConfig& o) {
      return o.info.has_numerical(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    });
  }
  return Expected<std::vector<OfferedConfig>>(std::move(out));
}

// The engine config `c` for `graph`, built from its engine index and knobs (what a plan file
// holds); the engine and knob descriptors go into *keep, to outlive the config.
inline Expected<BackendDesc> make_config(cudnnBackendDescriptor_t graph, const EngineChoice& c,
                                         std::vector<BackendDesc>* keep, const char* layer) {
  const std::string what = "engine " + std::to_string(c.engine);
  ZOC_ASSIGN_OR_RETURN(BackendDesc engine,
                       BackendDesc::create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, what, layer));
  int64_t index = c.engine;
  ZOC_SET_DESC(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph, what, layer);
  ZOC_SET_ATTR(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index, what, layer);
  ZOC_TRY(finalize(engine, what, layer));
  const cudnnBackendDescriptor_t raw_engine = keep_desc(keep, std::move(engine));
  std::vector<cudnnBackendDescriptor_t> knobs;
  for (const auto& [type_value, value_in] : c.knobs) {
    const std::string kw = what + " knob k" + std::to_string(type_value);
    ZOC_ASSIGN_OR_RETURN(BackendDesc k,
                         BackendDesc::create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, kw, layer));
    cudnnBackendKnobType_t type = cudnnBackendKnobType_t(type_value);
    int64_t value = value_in;
    ZOC_SET_ATTR(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type, kw, layer);
    ZOC_SET_ATTR(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value, kw, layer);
    ZOC_TRY(finalize(k, kw, layer));
    knobs.push_back(keep_desc(keep, std::move(k)));
  }
  const std::string cw = what + " config {" + c.knob_text() + "}";
  ZOC_ASSIGN_OR_RETURN(BackendDesc cfg,
                       BackendDesc::create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, cw, layer));
  ZOC_SET_DESC(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, raw_engine, cw, layer);
  if (!knobs.empty()) {
    ZOC_SET_ATTR(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 int64_t(knobs.size()), knobs.data(), cw, layer);
  }
  ZOC_TRY(finalize(cfg, cw, layer));
  return Expected<BackendDesc>(std::move(cfg));
}

}  // namespace graph_detail
}  // namespace zoc
