#!/usr/bin/env bash
# What each part of zoc's training step buys, on the GPU machine: the generated trainer on the
# same data and weights with CUDA graphs and cuDNN algorithm timing each on or off, one short
# epoch (--max-steps) per variant, the median step time of each printed side by side.
# Usage: tools/train/gpu_zoc_ablation.sh DATA_DIR MODEL [MAX_STEPS]  (environment: OUT, as
# tools/train/gpu_train.sh, whose build and data it reuses through TRAIN_WORK)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=$1 MODEL=$2 STEPS=${3:-150}
OUT=${OUT:-$ROOT/train_out}
export TRAIN_WORK=${TRAIN_WORK:-/tmp/zoc_ablation}
mkdir -p "$OUT"
for variant in default --no-graph --no-benchmark "--no-graph --no-benchmark"; do
  name=${variant// /}
  args="--max-steps $STEPS"; [ "$variant" = default ] || args="$args $variant"
  OUT=$OUT/ablation$name TRAIN_BUDGET_S=200 TRAIN_ARGS="$args" \
    "$ROOT/tools/train/gpu_train.sh" "$DATA" "$MODEL" 1 0 zoc > "$OUT/ablation$name.txt" 2>&1
  printf '%-28s %s\n' "$variant" "$(grep -o '"step_ms": [0-9.]*, "step_ms_mean": [0-9.]*' \
    "$OUT/ablation$name/logs/zoc_${MODEL}_s0.log" || echo "failed: see ablation$name.txt")"
done
