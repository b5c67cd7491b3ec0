#!/usr/bin/env bash
# SGD inside the backward pass (the trainers' default in one process, zoc/train/trainer.h's
# use_fused_sgd) must be the same arithmetic as SGD after the step (--no-fused-sgd): on the GPU
# machine, K steps of each trainer both ways, with the same seed, deterministic algorithms chosen
# by cuDNN's heuristics (so that both runs pick the same ones), must leave bit-identical
# checkpoints (weights and momenta); and the default must hold less memory. Trainers: ResNet-50
# and MobileNetV2 in bf16 (tools/train/gpu_train_amp.sh prepare made them, with the data) and
# LeNet in fp32 (generated/lenet_train: convolution and linear biases).
#
#   tests/train/gpu_fused_sgd_check.sh [STEPS]     on the GPU machine; $OUT gets the logs
#
# Builds into /tmp/zoc_train_amp (where gpu_train_amp.sh run epochs builds: it reuses them).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$ROOT/train_amp
STEPS=${1:-40}
OUT=${OUT:-$ROOT/fused_sgd_out}
WORK=/tmp/zoc_train_amp
mkdir -p "$OUT/logs" "$WORK/data"
. "$ROOT/tools/gpu_env.sh"
gpu_env
for f in "$DIR"/data/*.xz; do
  "$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "$WORK/data/$(basename "${f%.xz}")"
done
build() {  # build NAME SOURCE_DIR
  (cmake -S "$2" -B "$WORK/build_$1" "${GPU_CMAKE_ARGS[@]}" &&
   cmake --build "$WORK/build_$1" -j 8) >"$OUT/logs/build_$1.log" 2>&1 &
}
build resnet50_bf16 "$DIR/resnet50_bf16"
build mobilenet_v2_bf16 "$DIR/mobilenet_v2_bf16"
build lenet "$ROOT/generated/lenet_train"
wait
status=0
run() {  # run NAME BINARY TAG ARGS...: one epoch of STEPS steps, its checkpoint as TAG
  local name=$1 bin=$2 tag=$3
  shift 3
  "$bin" --data "$WORK/data" --epochs 1 --max-steps "$STEPS" --batch 128 --seed 3 \
    --deterministic --no-benchmark --checkpoint "$WORK/ck_${name}_$tag.safetensors" "$@" \
    >"$OUT/logs/${name}_$tag.log" 2>&1 || { echo "$name $tag: failed"; tail -n 3 "$OUT/logs/${name}_$tag.log"; status=1; }
}
for m in resnet50_bf16:resnet50 mobilenet_v2_bf16:mobilenet_v2 lenet:lenet; do
  name=${m%%:*} base=${m#*:}
  bin=$WORK/build_$name/${base}_train_main
  [ -x "$bin" ] || { echo "$name: build failed"; tail -n 5 "$OUT/logs/build_$name.log"; status=1; continue; }
  extra=()
  [ "$name" != lenet ] && extra=(--resize 64 --channels 3 --lr 0.05)
  run "$name" "$bin" fused "${extra[@]}"
  run "$name" "$bin" after "${extra[@]}" --no-fused-sgd
  same=yes
  for f in safetensors optim.safetensors; do
    cmp -s "$WORK/ck_${name}_fused.$f" "$WORK/ck_${name}_after.$f" || same=no
  done
  mem() { grep -o '"peak_mem_mb": [0-9.]*' "$OUT/logs/${name}_$1.log" | head -1 | cut -d' ' -f2; }
  step() { grep -o '"step_ms": [0-9.]*' "$OUT/logs/${name}_$1.log" | head -1 | cut -d' ' -f2; }
  echo "$name, $STEPS steps: checkpoints bit-identical: $same; peak MiB fused $(mem fused)," \
    "after the step $(mem after); median step ms $(step fused), $(step after)"
  [ "$same" = yes ] || status=1
  if grep -q "capture failed" "$OUT/logs/${name}_fused.log" "$OUT/logs/${name}_after.log"; then
    echo "$name: a step was not captured as a CUDA graph"; status=1
  fi
done
exit $status
