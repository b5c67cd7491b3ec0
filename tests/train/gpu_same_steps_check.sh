#!/usr/bin/env bash
# Two trainers of one model that must compute the same bits (a fusion, or another emission of the
# same arithmetic, against the trainer before it): on the GPU machine, STEPS steps of each with
# the same seed and deterministic algorithms chosen by cuDNN's heuristics (so that both pick the
# same ones) must leave bit-identical checkpoints (weights, and momenta); then TIMED steps of each
# in the default mode (cudnn.benchmark's timing) give their median step times (TIMED 0: none).
#
#   tests/train/gpu_same_steps_check.sh NAME DIR_A DIR_B BINARY [STEPS [TIMED]] -- [TRAINER ARGS]
#
# DIR_A, DIR_B: generated trainer folders; BINARY: their runner's name (resnet50_train_main);
# the trainer arguments name the data (--data DIR ...). $OUT gets the logs.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
name=$1 a=$2 b=$3 bin=$4
steps=40 timed=150
shift 4
[ "${1:-}" != -- ] && { steps=$1; shift; }
[ "${1:-}" != -- ] && { timed=$1; shift; }
[ "${1:-}" = -- ] && shift
OUT=${OUT:-$ROOT/same_steps_out}
WORK=/tmp/zoc_same_steps/$name
mkdir -p "$OUT/logs" "$WORK"
. "$ROOT/tools/gpu_env.sh"
gpu_env
for side in a b; do
  dir=$a
  [ $side = b ] && dir=$b
  (cmake -S "$dir" -B "$WORK/build_$side" "${GPU_CMAKE_ARGS[@]}" &&
   cmake --build "$WORK/build_$side" -j 8) >"$OUT/logs/build_${name}_$side.log" 2>&1 &
done
wait
status=0
for side in a b; do
  exe=$WORK/build_$side/$bin
  [ -x "$exe" ] || { echo "$name $side: build failed"; tail -n 5 "$OUT/logs/build_${name}_$side.log"; exit 1; }
  "$exe" "$@" --epochs 1 --max-steps "$steps" --seed 3 --deterministic --no-benchmark \
    --checkpoint "$WORK/ck_$side.safetensors" >"$OUT/logs/${name}_${side}_same.log" 2>&1 ||
    { echo "$name $side: failed"; tail -n 3 "$OUT/logs/${name}_${side}_same.log"; status=1; }
  [ "$timed" -gt 0 ] || continue
  "$exe" "$@" --epochs 1 --max-steps "$timed" >"$OUT/logs/${name}_${side}_timed.log" 2>&1 ||
    { echo "$name $side: timed run failed"; status=1; }
done
same=yes
for f in safetensors optim.safetensors; do
  cmp -s "$WORK/ck_a.$f" "$WORK/ck_b.$f" || same=no
done
[ "$same" = yes ] || status=1
field() { grep -o "\"$2\": [0-9.]*" "$OUT/logs/${name}_$1.log" | head -1 | cut -d' ' -f2; }
echo "$name, $steps steps: checkpoints bit-identical: $same; median step ms over $timed steps:" \
  "A $(field a_timed step_ms), B $(field b_timed step_ms); peak MiB A $(field a_timed peak_mem_mb)," \
  "B $(field b_timed peak_mem_mb)"
if grep -q "capture failed" "$OUT/logs/${name}"_*.log; then
  echo "$name: a step was not captured as a CUDA graph"; status=1
fi
exit $status
