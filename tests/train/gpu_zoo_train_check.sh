#!/usr/bin/env bash
# The zoo's layers and arithmetic in generated trainers on the GPU (issue 34):
# tests/train/zoo_ops.yaml (layer norm over channels and over features, layer scale,
# squeeze-and-excitation's multiply and a same-shape one, channel shuffle and slices, dilated and
# ceil_mode pooling, adaptive pooling with overlapping bins) and tests/train/arith_ops.yaml (add,
# sub, mul and div with a scalar both ways round, sub and div of two tensors, a reshape, a pad, a
# final log_softmax) and tests/train/decoder_ops.yaml (transposed convolutions, nearest and
# bilinear upsampling in their forms), each trained one step from seeded weights on a seeded batch, against `zoc
# grad`'s step on the CPU (the reference interpreter, whose gradients of these ops are checked against
# finite differences): the loss, the logits and every parameter's gradient within 1e-4
# (relative L2, tests/train/compare_grads.py). Then three SGD steps, and one step under
# compute-sanitizer's memcheck.
#
#   tests/train/gpu_zoo_train_check.sh prepare [ZOC]   here: DIR=zoo_train_check/ (git-ignored:
#                                                       each trainer's folder and reference)
#   tests/train/gpu_zoo_train_check.sh run              on the GPU machine (environment: OUT)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$ROOT/zoo_train_check
MODELS="zoo_ops arith_ops decoder_ops"
case "${1:-}" in
  prepare)
    zoc=$(realpath "${2:-$ROOT/build/compiler/zoc}")
    rm -rf "$DIR" && mkdir -p "$DIR"
    for m in $MODELS; do
      "$zoc" compile "$ROOT/tests/train/$m.yaml" --train -o "$DIR/$m/src" | head -1
      /usr/bin/python3 "$ROOT/tests/train/make_zoo_ops_case.py" "$zoc" "$DIR/$m/case" "$m"
    done
    exit 0 ;;
  run) ;;
  *) echo "usage: $0 prepare [ZOC] | run" >&2; exit 2 ;;
esac
OUT=${OUT:-$ROOT/zoo_train_check_out}
WORK=/tmp/zoc_zoo_train_check
mkdir -p "$OUT" "$WORK"
. "$ROOT/tools/gpu_env.sh"
gpu_env
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$OUT/env.txt"
status=0
check_model() {  # check_model MODEL
  local m=$1 case=$DIR/$1/case log=$OUT/$1.log
  (cmake -S "$DIR/$m/src" -B "$WORK/$m" "${GPU_CMAKE_ARGS[@]}" && cmake --build "$WORK/$m" -j 8) \
    >"$log" 2>&1 || { echo "$m: build failed"; tail -n 20 "$log"; status=1; return; }
  local bin=$WORK/$m/${m}_train_main
  run_step() {  # run_step OUT_FILE [TRAINER OPTION...]
    local out=$1
    shift
    "$bin" --weights "$case/init.safetensors" --batch-file "$case/batch.safetensors" \
      --out "$out" "$@" >>"$log" 2>&1
  }
  if run_step "$WORK/$m.safetensors"; then
    echo "== $m, one step, against zoc grad on the CPU (limit 1e-4)" | tee -a "$OUT/summary.txt"
    $PY "$ROOT/tests/train/compare_grads.py" "$case/ref.safetensors" "$WORK/$m.safetensors" \
      --max 1e-4 --json "$OUT/${m}_vs_zoc_grad.json" | tee -a "$OUT/summary.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  else
    echo "$m: the trainer failed: $(tail -n 2 "$log")" | tee -a "$OUT/summary.txt"; status=1
  fi
  if run_step "$WORK/${m}3.safetensors" --steps 3; then
    echo "$m: 3 SGD steps ran" | tee -a "$OUT/summary.txt"
  else
    echo "$m: 3 SGD steps failed (see $m.log)" | tee -a "$OUT/summary.txt"; status=1
  fi
  if compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" --weights \
       "$case/init.safetensors" --batch-file "$case/batch.safetensors" \
       --out "$WORK/${m}_memcheck.safetensors" >"$OUT/${m}_memcheck.log" 2>&1; then
    echo "$m: memcheck clean ($(grep -c 'ERROR SUMMARY: 0' "$OUT/${m}_memcheck.log") summary)" |
      tee -a "$OUT/summary.txt"
  else
    echo "$m: memcheck found errors (see ${m}_memcheck.log)" | tee -a "$OUT/summary.txt"
    status=1
  fi
}
for m in $MODELS; do check_model "$m"; done
exit $status
