#!/usr/bin/env bash
# The zoo's layers in a generated trainer on the GPU (issue 34): tests/train/zoo_ops.yaml (layer
# norm over channels and over features, layer scale, squeeze-and-excitation's multiply and a
# same-shape one, channel shuffle and slices, dilated and ceil_mode pooling, adaptive pooling with
# overlapping bins) trained one step from seeded weights on a seeded batch, against `zoc grad`'s
# step on the CPU (the reference interpreter, whose gradients of these ops are checked against
# finite differences): the loss, the logits and every parameter's gradient within 1e-4 (relative
# L2, tests/train/compare_grads.py).
# Then three SGD steps, and one step under compute-sanitizer's memcheck.
#
#   tests/train/gpu_zoo_train_check.sh prepare [ZOC]   here: DIR=zoo_train_check/ (git-ignored:
#                                                       the trainer's folder and the reference)
#   tests/train/gpu_zoo_train_check.sh run              on the GPU machine (environment: OUT)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$ROOT/zoo_train_check
case "${1:-}" in
  prepare)
    zoc=$(realpath "${2:-$ROOT/build/compiler/zoc}")
    rm -rf "$DIR" && mkdir -p "$DIR"
    "$zoc" compile "$ROOT/tests/train/zoo_ops.yaml" --train -o "$DIR/src" | head -1
    /usr/bin/python3 "$ROOT/tests/train/make_zoo_ops_case.py" "$zoc" "$DIR/case"
    exit 0 ;;
  run) ;;
  *) echo "usage: $0 prepare [ZOC] | run" >&2; exit 2 ;;
esac
OUT=${OUT:-$ROOT/zoo_train_check_out}
WORK=/tmp/zoc_zoo_train_check
mkdir -p "$OUT" "$WORK"
. "$ROOT/tools/gpu_env.sh"
gpu_env
log=$OUT/zoo_ops.log
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$OUT/env.txt"
(cmake -S "$DIR/src" -B "$WORK/build" "${GPU_CMAKE_ARGS[@]}" && cmake --build "$WORK/build" -j 8) \
  >"$log" 2>&1 || { echo "zoo_ops: build failed"; tail -n 20 "$log"; exit 1; }
bin=$WORK/build/zoo_ops_train_main
status=0
run_step() {  # run_step OUT_FILE [TRAINER OPTION...]
  local out=$1
  shift
  "$bin" --weights "$DIR/case/init.safetensors" --batch-file "$DIR/case/batch.safetensors" \
    --out "$out" "$@" >>"$log" 2>&1
}
if run_step "$WORK/zoc.safetensors"; then
  echo "== zoo_ops, one step, against zoc grad on the CPU (limit 1e-4)" | tee -a "$OUT/summary.txt"
  $PY "$ROOT/tests/train/compare_grads.py" "$DIR/case/ref.safetensors" "$WORK/zoc.safetensors" \
    --max 1e-4 --json "$OUT/zoo_ops_vs_zoc_grad.json" | tee -a "$OUT/summary.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
  echo "zoo_ops: the trainer failed: $(tail -n 2 "$log")" | tee -a "$OUT/summary.txt"; status=1
fi
if run_step "$WORK/zoc3.safetensors" --steps 3; then
  echo "zoo_ops: 3 SGD steps ran" | tee -a "$OUT/summary.txt"
else
  echo "zoo_ops: 3 SGD steps failed (see zoo_ops.log)" | tee -a "$OUT/summary.txt"; status=1
fi
if compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" --weights \
     "$DIR/case/init.safetensors" --batch-file "$DIR/case/batch.safetensors" \
     --out "$WORK/zoc_memcheck.safetensors" >"$OUT/memcheck.log" 2>&1; then
  echo "zoo_ops: memcheck clean ($(grep -c 'ERROR SUMMARY: 0' "$OUT/memcheck.log") summary)" |
    tee -a "$OUT/summary.txt"
else
  echo "zoo_ops: memcheck found errors (see memcheck.log)" | tee -a "$OUT/summary.txt"; status=1
fi
exit $status
