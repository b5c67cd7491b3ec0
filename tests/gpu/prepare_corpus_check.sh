#!/usr/bin/env bash
# Generates the folders tests/gpu/corpus_check.sh runs on the GPU machine: third-party models of
# the export corpus (tools/corpus/export_corpus.py, e.g. timm's families exported by PyTorch
# 2.11's default ONNX exporter) compiled here through one route, in fp32 and fp16, into
# corpus_check/<model>_<precision>/ (git-ignored; copy it to the GPU machine with the tree),
# and per model corpus_check/_ref/<model>/:
#   weights.safetensors.xz  the ONNX file's initializers (`zoc extract-weights`), xz-compressed:
#                           the corpus's tiled weights compress ~400x (ResNet-50: 97 MiB, 240 KB)
#   input.json, output.npy  a seeded batch of CHECK_BATCH, default 8 (its shape, seed and SHA-256: corpus_check.sh
#                           regenerates it there, as the corpus's reader does) and PyTorch's fp32
#                           output for it, from the corpus's traced (else scripted) module run
#                           by this machine's torch: [N, classes], or, for several outputs or an
#                           image (segmentation), every output flattened into one row per sample
#                           in the model's order, as zoc's generated code writes them
#   parts.json              then each output's name and shape, for gpu_compare.py to split by
# (A dense-prediction model's reference maps are large: CHECK_BATCH=2 keeps the folder small.)
# The GPU check compares zoc's generated code with that output at batch 1 and 8 (and 8 in a
# CUDA graph), as it does for the torchvision zoo.
# Usage: tests/gpu/prepare_corpus_check.sh CORPUS_DIR ROUTE MODEL...
#        (ROUTE: dynamo or ts17, ONNX; trace or script, TorchScript)
#        environment ZOC (default build/compiler/zoc), OUT_DIR (default corpus_check)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
corpus=$(realpath "$1") route=$2
shift 2
zoc=$(realpath "${ZOC:-$repo/build/compiler/zoc}")
out=${OUT_DIR:-$repo/corpus_check}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
rm -rf "$out" && mkdir -p "$out/_ref"
for m in "$@"; do
  # The model's own name for the file (the generated class is named after it), its external
  # data beside it under the name the file gives; a TorchScript route's module as <model>.pt.
  # (TorchScript has no static input shape: the corpus's meta.json gives it.)
  rm -rf "${scratch:?}"/*
  input=()
  case $route in
    trace | script)
      cp "$corpus/$m/$route.pt" "$scratch/$m.pt" && src=$scratch/$m.pt
      input=(--input "$(/usr/bin/python3 -c 'import json, sys
print("x".join(map(str, json.load(open(sys.argv[1]))["input"])))' "$corpus/$m/meta.json")") ;;
    *) cp "$corpus/$m/$route.onnx" "$scratch/$m.onnx" && src=$scratch/$m.onnx
       [ ! -f "$corpus/$m/$route.onnx.data" ] || cp "$corpus/$m/$route.onnx.data" "$scratch/" ;;
  esac
  ref=$out/_ref/$m
  mkdir -p "$ref"
  /usr/bin/python3 - "$corpus/$m" "$ref" "${CHECK_BATCH:-8}" <<'PY'
import hashlib, json, os, sys
import numpy as np, torch
folder, ref, batch = sys.argv[1:]
meta = json.load(open(os.path.join(folder, "meta.json")))
shape, seed = [int(batch)] + list(meta["input"]), meta["seed"] * 16 + 3
x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
with open(os.path.join(ref, "input.json"), "w") as f:
    json.dump({"shape": shape, "seed": seed,
               "sha256": hashlib.sha256(x.numpy().tobytes()).hexdigest()}, f)
for name in ("trace.pt", "script.pt"):
    path = os.path.join(folder, name)
    if os.path.exists(path):
        break
with torch.no_grad():
    y = torch.jit.load(path).eval()(x)
# Every output, in the model's order (a dict's values: torchvision's segmentation `out`, `aux`).
names = list(y.keys()) if isinstance(y, dict) else None
ys = list(y.values()) if isinstance(y, dict) else list(y) if isinstance(y, (tuple, list)) else [y]
names = names or ["output%d" % k for k in range(len(ys))]
if len(ys) == 1 and ys[0].dim() == 2:
    np.save(os.path.join(ref, "output.npy"), ys[0].numpy())  # [N, classes], as before
else:
    # zoc's rows: each sample's outputs flattened one after another; parts.json says where.
    rows = np.concatenate([t.reshape(t.shape[0], -1).numpy() for t in ys], axis=1)
    np.save(os.path.join(ref, "output.npy"), rows)
    with open(os.path.join(ref, "parts.json"), "w") as f:
        json.dump([{"name": n, "shape": list(t.shape[1:])} for n, t in zip(names, ys)], f)
print("%s: PyTorch %s outputs %s from %s" % (meta["name"], torch.__version__,
                                             [tuple(t.shape) for t in ys], name))
PY
  "$zoc" extract-weights "$src" -o "$ref/weights.safetensors" >/dev/null
  xz -T2 -6 "$ref/weights.safetensors"
  for p in fp32 fp16; do
    "$zoc" compile "$src" -o "$out/${m}_$p" --precision "$p" "${input[@]}" | head -1
  done
done
du -sh "$out"
