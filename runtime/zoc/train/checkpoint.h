// Crash-safe checkpoints of generated trainers (issue 17): a checkpoint is two files, the weights
// as a state_dict (`C`, which PyTorch's load_state_dict and zoc's inference read, so it cannot
// hold anything else) and the optimizer state beside it (`C` with `.optim.safetensors`: momenta,
// steps, seed, batch). Each file is written atomically (a temporary file, fsync, rename), but a
// run killed between the two renames would leave weights of epoch N beside momenta of epoch N-1.
// So the pair is committed in an order that leaves a consistent pair at every instant:
//
//   1. the optimizer state goes to `C.optim.safetensors.next` (atomic);
//   2. the weights replace `C` (atomic): the commit point;
//   3. `.next` is renamed over `C.optim.safetensors`.
//
// Reading (`open_checkpoint_pair`) takes the weights' `epochs_done` and the optimizer file of the
// same epoch: `C.optim.safetensors`, or `.next` when a run died between steps 2 and 3 (the next
// write first finishes that rename, or removes a `.next` from before a commit point). A kill at
// any other moment leaves the previous pair as it was. Truncated or corrupt files are refused with
// the reader's located error. CUDA-free, so the CPU tests kill a writer mid-write
// (tests/unit/train_checkpoint_test.cpp).
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "zoc/core/expected.h"
#include "zoc/io/safetensors.h"
#include "zoc/train/options.h"

namespace zoc {

using MetaList = std::vector<std::pair<std::string, std::string>>;

inline std::string checkpoint_meta(const st::File& f, const std::string& key) {
  for (const auto& kv : f.metadata()) {
    if (kv.first == key) return kv.second;
  }
  return "";
}

// Before a new pair is written: a `.next` left by a run that died after its commit point is the
// committed optimizer state (finish its rename); one left before the commit point is garbage.
inline Status settle_checkpoint(const std::string& path) {
  const std::string optim_path = optim_path_for(path);
  const std::string next = optim_path + ".next";
  std::FILE* probe = std::fopen(next.c_str(), "rb");
  if (!probe) return Status::success();
  std::fclose(probe);
  bool committed = false;
  {
    auto weights = st::File::open(path);
    auto pending = st::File::open(next);
    committed =
        weights && pending && !checkpoint_meta(*weights, "epochs_done").empty() &&
        checkpoint_meta(*weights, "epochs_done") == checkpoint_meta(*pending, "epochs_done");
  }
  if (committed ? std::rename(next.c_str(), optim_path.c_str()) != 0
                : std::remove(next.c_str()) != 0) {
    return Error{next + ": cannot " + (committed ? "rename it to " + optim_path : "remove it") +
                 " (left by an interrupted checkpoint)"};
  }
  return Status::success();
}

// Writes the pair in the crash-safe order above. Both metadata lists must carry the same
// `epochs_done`, which is how a reader pairs them.
inline Status write_checkpoint_pair(const std::string& path,
                                    const std::vector<st::TensorToWrite>& weights,
                                    const MetaList& weights_meta,
                                    const std::vector<st::TensorToWrite>& optim,
                                    const MetaList& optim_meta) {
  const std::string optim_path = optim_path_for(path);
  const std::string next = optim_path + ".next";
  ZOC_TRY(settle_checkpoint(path));
  ZOC_TRY(st::write_file(next, optim, optim_meta));
  ZOC_TRY(st::write_file(path, weights, weights_meta));
  if (std::rename(next.c_str(), optim_path.c_str()) != 0) {
    return Error{next + ": cannot rename it to " + optim_path +
                 " (the checkpoint stays readable "
                 "from the two files as they are)"};
  }
  return Status::success();
}

struct CheckpointPair {
  st::File weights, optim;
  std::string epochs_done;  // as both files' metadata say
};

// The weights at `path` and the optimizer state of the same epoch.
inline Expected<CheckpointPair> open_checkpoint_pair(const std::string& path) {
  auto weights = st::File::open(path);
  if (!weights) return Error{"checkpoint: " + weights.error().message};
  const std::string epochs = checkpoint_meta(*weights, "epochs_done");
  if (epochs.empty()) {
    return Error{path +
                 ": no 'epochs_done' in its metadata (not a checkpoint written by a zoc "
                 "trainer?)"};
  }
  const std::string optim_path = optim_path_for(path);
  std::string seen;
  for (const std::string& candidate : {optim_path, optim_path + ".next"}) {
    std::FILE* probe = std::fopen(candidate.c_str(), "rb");
    if (!probe) continue;
    std::fclose(probe);
    auto optim = st::File::open(candidate);
    if (!optim) {
      seen += "; " + optim.error().message;
      continue;
    }
    const std::string e = checkpoint_meta(*optim, "epochs_done");
    if (e == epochs) return CheckpointPair{std::move(*weights), std::move(*optim), epochs};
    seen += "; " + candidate + " holds the optimizer state after epoch " + (e.empty() ? "?" : e);
  }
  return Error{path + " holds the weights after epoch " + epochs +
               " but no optimizer state of "
               "that epoch was found beside it (" +
               optim_path + (seen.empty() ? ": missing" : seen) + "); --resume needs both"};
}

}  // namespace zoc
