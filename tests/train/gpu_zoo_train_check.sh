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
# Then fine-tuning (frozen parameters, requires_grad=False): tests/train/test_frozen.py's
# networks (a partly frozen one, a frozen backbone, a frozen middle block, a frozen depthwise
# convolution), scripted and checked against PyTorch float64 on the CPU, as fp32 trainers (and
# bf16 ones but for the first, within 1e-1 of zoc grad's fp32 (the depthwise pair 2e-1): these
# tiny networks' BatchNorm gradients are 8e-2 and 1.5e-1 from it in bf16 with nothing frozen
# too, so the frozen middle's and depthwise network's bf16 steps are also compared with their
# twins', within 1e-3): the same one-step check, in which the frozen tensors after the step must
# equal their initial values; and 30 steps of the epoch loop on a synthetic data set with SGD
# inside the backward pass and after it (--no-fused-sgd), deterministic, whose checkpoints must
# be bit-identical, and with AdamW and weight decay, each holding every frozen tensor unchanged
# and no optimizer state for it (tests/train/compare_frozen.py).
#
#   tests/train/gpu_zoo_train_check.sh prepare [ZOC]   here: DIR=zoo_train_check/ (git-ignored:
#                                                       each trainer's folder and reference)
#   tests/train/gpu_zoo_train_check.sh run              on the GPU machine (environment: OUT;
#                                                       ZOC_ZOO_TRAIN_ONLY="m ...": those only)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$ROOT/zoo_train_check
MODELS="zoo_ops arith_ops decoder_ops"
FROZEN="frozen_partly frozen_backbone frozen_middle frozen_depthwise frozen_backbone_bf16
        frozen_middle_bf16 frozen_free_middle_bf16 frozen_depthwise_bf16
        frozen_free_depthwise_bf16"
case "${1:-}" in
  prepare)
    zoc=$(realpath "${2:-$ROOT/build/compiler/zoc}")
    rm -rf "$DIR" && mkdir -p "$DIR"
    for m in $MODELS; do
      "$zoc" compile "$ROOT/tests/train/$m.yaml" --train -o "$DIR/$m/src" | head -1
      /usr/bin/python3 "$ROOT/tests/train/make_zoo_ops_case.py" "$zoc" "$DIR/$m/case" "$m"
    done
    f=$DIR/frozen
    /usr/bin/python3 "$ROOT/tests/train/test_frozen.py" --zoc "$zoc" --work "$f"
    /usr/bin/python3 "$ROOT/tests/train/make_synthetic.py" "$f/data" --train 960 --test 64
    for n in partly backbone middle depthwise backbone:bf16 middle:bf16 free_middle:bf16 \
        depthwise:bf16 free_depthwise:bf16; do
      net=${n%:*} m=frozen_${n/:/_} precision=fp32
      [ "$net" != "$n" ] && precision=${n#*:}
      "$zoc" compile "$f/$net.pt" --input 3x8x8 --train --precision $precision \
        -o "$DIR/$m/src" | head -1
      mkdir -p "$DIR/$m/case"
      cp "$f/$net.init.safetensors" "$DIR/$m/case/init.safetensors"
      cp "$f/batch.safetensors" "$DIR/$m/case/batch.safetensors"
      cp "$f/$net.grad.safetensors" "$DIR/$m/case/ref.safetensors"
      cp "$f/$net.frozen.txt" "$DIR/$m/case/frozen.txt"
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
    >"$log" 2>&1 || { echo "$m: build failed"; tail -n 20 "$log"; status=1; return 1; }
  local bin limit=1e-4
  bin=$(ls "$WORK/$m"/*_train_main)
  [[ $m == *_bf16 ]] && limit=1e-1
  # (bn1's gradients of the depthwise pair are 1.5e-1 from fp32 in bf16, frozen or not: this
  # 8-channel network's BatchNorm sums cancel; the twin check below judges the frozen one.)
  [[ $m == *depthwise_bf16 ]] && limit=2e-1
  run_step() {  # run_step OUT_FILE [TRAINER OPTION...]
    local out=$1
    shift
    "$bin" --weights "$case/init.safetensors" --batch-file "$case/batch.safetensors" \
      --out "$out" "$@" >>"$log" 2>&1
  }
  if run_step "$WORK/$m.safetensors"; then
    echo "== $m, one step, against zoc grad on the CPU (limit $limit)" | tee -a "$OUT/summary.txt"
    $PY "$ROOT/tests/train/compare_grads.py" "$case/ref.safetensors" "$WORK/$m.safetensors" \
      --max $limit --json "$OUT/${m}_vs_zoc_grad.json" | tee -a "$OUT/summary.txt" || status=1
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
# The epoch loop of a fine-tuning trainer: SGD inside the backward pass and after it, and AdamW
# with weight decay.
check_loop() {  # check_loop MODEL
  local m=$1 bin ck=$WORK/$1_ck run
  bin=$(ls "$WORK/$m"/*_train_main) || { status=1; return 0; }
  mkdir -p "$ck"
  for run in fused unfused adamw; do
    local extra=()
    [ $run = unfused ] && extra=(--no-fused-sgd)
    [ $run = adamw ] && extra=(--optimizer adamw --weight-decay 0.05)
    "$bin" --data "$DIR/frozen/data" --resize 8 --channels 3 --epochs 1 --max-steps 30 \
      --batch 32 --seed 3 --deterministic --no-benchmark \
      --weights "$DIR/$m/case/init.safetensors" --checkpoint "$ck/$run.safetensors" \
      "${extra[@]}" >>"$OUT/$m.log" 2>&1 || {
      echo "$m: the $run loop failed" | tee -a "$OUT/summary.txt"
      status=1
      return 0
    }
  done
  local init=$DIR/$m/case/init.safetensors list=$DIR/$m/case/frozen.txt
  $PY "$ROOT/tests/train/compare_frozen.py" "$init" "$list" "$ck/fused.safetensors" \
    "$ck/unfused.safetensors" | sed "s/^/$m: SGD: /" | tee -a "$OUT/summary.txt" || status=1
  $PY "$ROOT/tests/train/compare_frozen.py" "$init" "$list" "$ck/adamw.safetensors" |
    sed "s/^/$m: AdamW: /" | tee -a "$OUT/summary.txt" || status=1
}
[ -n "${ZOC_ZOO_TRAIN_ONLY:-}" ] && { MODELS=; FROZEN=; }  # these alone (space-separated)
for m in $MODELS; do check_model "$m" || true; done
for m in ${ZOC_ZOO_TRAIN_ONLY:-} $FROZEN; do
  if check_model "$m" && [[ $m == frozen_* ]]; then check_loop "$m"; fi
done
# bf16's distance from zoc grad's fp32 is the precision's: the frozen middle's and the frozen
# depthwise network's gradients must be their twins' with nothing frozen.
for net in middle depthwise; do
  a=$WORK/frozen_${net}_bf16.safetensors b=$WORK/frozen_free_${net}_bf16.safetensors
  if [ -f "$a" ] && [ -f "$b" ]; then
    echo "== frozen_${net}_bf16's step against its twin with nothing frozen (limit 1e-3)" |
      tee -a "$OUT/summary.txt"
    $PY "$ROOT/tests/train/compare_grads.py" "$a" "$b" --max 1e-3 --ref-name "the frozen one" |
      tee -a "$OUT/summary.txt" || status=1
  fi
done
exit $status
