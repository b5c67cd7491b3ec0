#!/usr/bin/env bash
# Generates the CNN zoo's folders for the GPU check (issue 20) into zoo_check/ (git-ignored; it
# travels to the GPU machine with the device tool's `carry`), on the CPU machine where zoc builds:
#   - each of the 17 torchvision classifiers of models/zoo.py, scripted here by Debian's torch
#     (models/script_zoo.sh) and compiled through the TorchScript route at
#     224x224 in fp32 (TF32 off, NCHW) and fp16 (NHWC) into zoo_check/<model>_<precision>/;
#   - tests/backend/zoo_layers.yaml (every zoo layer the backend emits, 18x18),
#     tests/backend/depthwise_layers.yaml (zoc's depthwise kernel in all its forms) and
#     tests/backend/epilogue_layers.yaml (every activation in a convolution's epilogue) and
#     tests/backend/dense_layers.yaml (segmentation decoders' layers, several outputs) and
#     tests/backend/constant_operand_layers.yaml (a tensor and a constant), in fp32 and
#     fp16, each with its reference computed here by zoc's interpreter (`zoc init-weights`,
#     `zoc run`) into zoo_check/_ref/<name>/, which the GPU check uses instead of exporting.
# The weights are not shipped (AlexNet's and VGG's are 0.2-0.5 GB): tests/gpu/gpu_check.sh
# exports them on the GPU machine with models/export.py, which builds the same networks.
# Usage: [REF_BATCH=N] tests/gpu/prepare_zoo_check.sh [ZOC_BINARY] [MODEL...]
#   REF_BATCH: the test models' reference batch (default 64; dense_layers' five outputs take
#   1.1 MB per sample: 4 keeps the folder small enough to travel, tests/gpu/dense_check.sh)
#   (default: all 17, zoo_layers, depthwise_layers, epilogue_layers and dense_layers)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
zoc=$(realpath "${1:-$repo/build/compiler/zoc}")
shift || true
cd "$repo"
models=("$@")
[ ${#models[@]} -gt 0 ] || read -r -a models <<<"$(/usr/bin/python3 -c \
  'import sys; sys.path.insert(0, "models"); import zoo; print(" ".join(zoo.NAMES))') zoo_layers depthwise_layers epilogue_layers \
dense_layers constant_operand_layers"
out=$repo/zoo_check
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
rm -rf "$out" && mkdir -p "$out"

for m in "${models[@]}"; do
  if [ -f "tests/backend/$m.yaml" ]; then  # a small test model of tests/backend
    ref=$out/_ref/$m
    mkdir -p "$ref"
    "$zoc" init-weights "tests/backend/$m.yaml" -o "$ref/weights.safetensors" --seed 0
    [ "$m" = zoo_layers ] || /usr/bin/python3 tests/gpu/he_scale.py "$ref/weights.safetensors"
    /usr/bin/python3 -c 'import numpy as np, os, sys, yaml
i = yaml.safe_load(open(sys.argv[1]))["input"]
shape = (int(os.environ.get("REF_BATCH", 64)), i["channels"], i["height"], i["width"])
np.save(sys.argv[2], np.random.default_rng(2).standard_normal(shape).astype(np.float32))' \
      "tests/backend/$m.yaml" "$ref/input.npy"
    "$zoc" run "tests/backend/$m.yaml" --weights "$ref/weights.safetensors" \
      --input "$ref/input.npy" --output "$ref/output.npy" | tail -1
    # Several outputs (zoc run wrote output_<layer>.npy each) or an image: one row per sample,
    # every output flattened in the model's order, as the generated code writes them, and
    # parts.json saying where each lies (tests/gpu/gpu_compare.py compares each).
    /usr/bin/python3 - "tests/backend/$m.yaml" "$ref" <<'PY'
import json, os, sys
import numpy as np, yaml
model, ref = sys.argv[1:]
spec = yaml.safe_load(open(model))
names = spec.get("output")
ops = {k: v.get("op") for layer in spec["layers"] for k, v in layer.items()}
names = names if isinstance(names, list) and len(names) > 1 else None
ys = ([np.load(os.path.join(ref, "output_%s.npy" % n)) for n in names] if names
      else [np.load(os.path.join(ref, "output.npy"))])
if names or ys[0].ndim > 2:
    np.save(os.path.join(ref, "output.npy"), np.concatenate([y.reshape(len(y), -1) for y in ys], 1))
    for n in names or []:  # in output.npy now: the folder travels smaller
        os.remove(os.path.join(ref, "output_%s.npy" % n))
    with open(os.path.join(ref, "parts.json"), "w") as f:
        # An argmax output is a class map: judged by its agreeing entries (gpu_compare.py).
        json.dump([dict({"name": n, "shape": list(y.shape[1:])},
                        **({"classes": True} if ops.get(n) == "argmax" else {}))
                   for n, y in zip(names or ["output"], ys)], f)
PY
    src=tests/backend/$m.yaml input=()
  else
    models/script_zoo.sh "$m" "$scratch/$m.pt"
    src=$scratch/$m.pt input=(--input 3x224x224)
  fi
  for p in fp32 fp16; do
    "$zoc" compile "$src" -o "$out/${m}_$p" --precision "$p" "${input[@]}" | head -1
  done
done
du -sh "$out"
