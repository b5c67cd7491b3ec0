#!/usr/bin/env bash
# Issue 35's trained network, on the GPU machine: ResNet-50 (models/resnet50.yaml's layers, one
# input channel, 10 classes, 28x28) trained on Fashion-MNIST by tools/train/train_pytorch.py
# (seeded: data order, initialization), so that int8's accuracy is judged on a trained model,
# not on random weights. Writes under $OUT the per-epoch CSV and the final weights in fp16 (the
# fp32 file is 94 MB; fp16 halves it), split into parts of 15 MiB that come back from the
# machine: `cat resnet50_fmnist_fp16.safetensors.part* > resnet50_fmnist_fp16.safetensors`.
# Usage: tools/int8/train_fashion_resnet50.sh DATA_DIR [EPOCHS [SEED [TRAIN_PYTORCH_FLAGS...]]]
#   DATA_DIR: the four Fashion-MNIST idx files (.gz), e.g. Debian's dataset-fashion-mnist.
#   TRAIN_PYTORCH_FLAGS: more flags for train_pytorch.py, e.g. --init torchvision.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=$1 EPOCHS=${2:-5} SEED=${3:-0}
shift $(($# < 3 ? $# : 3))
OUT=${OUT:-$ROOT/int8_train_out}
mkdir -p "$OUT"
. "$ROOT/tools/gpu_env.sh"
gpu_env ""
work=$(mktemp -d)
"$PY" "$ROOT/tools/train/train_pytorch.py" --model resnet50 --data "$DATA" --epochs "$EPOCHS" \
  --seed "$SEED" --csv "$OUT/train_resnet50_fmnist.csv" --save-weights "$work/w.safetensors" "$@"
"$PY" - "$work/w.safetensors" "$work/w16.safetensors" <<'PY'
import sys
sys.path.insert(0, "models")
import numpy as np
from safetensors_io import load_file, save_file
t, meta = load_file(sys.argv[1])
save_file({k: (v.astype(np.float16) if v.dtype == np.float32 else v) for k, v in t.items()},
          sys.argv[2])
PY
split -b 15M -d "$work/w16.safetensors" "$OUT/resnet50_fmnist_fp16.safetensors.part"
sha256sum "$work/w16.safetensors" | cut -d' ' -f1 >"$OUT/resnet50_fmnist_fp16.sha256"
ls -la "$OUT"
