#!/usr/bin/env bash
# Issue 8's first criterion on the GPU machine, in one call: one training step of each generated
# trainer (train_check/, from prepare_train_check.sh beside this script) against PyTorch autograd
# from the same initial weights and batch (seeded random images and labels, so no data set is
# needed).
# For each of LeNet and ResNet-50 (1 channel, 10 classes, 28x28): build the trainer; write the
# init weights (train_pytorch.py --init-out); compute autograd's step on the GPU in fp32 (TF32 off,
# deterministic cuDNN) and in float64; run the trainer on the same batch; compare every gradient,
# running statistic, the loss and the logits with tests/train/compare_grads.py: against fp32
# within 1e-3 (the criterion), and against float64 next to PyTorch fp32's own distance from it.
# Then 3 SGD and 3 AdamW steps on the batch against torch.optim's in float64 (LeNet's judged,
# ResNet-50's printed), and the weights written as a checkpoint, loaded back by PyTorch.
# Usage: tests/train/gpu_train_check.sh [train_check]  (environment: OUT, default ./train_check_out)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(cd "${1:-$ROOT/train_check}" && pwd)
OUT=${OUT:-$ROOT/train_check_out}
WORK=/tmp/zoc_train_check
mkdir -p "$OUT/logs" "$WORK"
. "$ROOT/tools/gpu_env.sh"
gpu_env
T=$ROOT/tools/train
status=0
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$OUT/env.txt"
for model in lenet resnet50; do
  b=$WORK/build/$model log=$OUT/logs/$model.log batch=16
  [ $model = lenet ] && batch=8
  (cmake -S "$DIR/$model" -B "$b" "${GPU_CMAKE_ARGS[@]}" && cmake --build "$b" -j 8) >"$log" 2>&1 ||
    { echo "$model: build failed (see logs/$model.log)"; status=1; continue; }
  bin=$b/${model}_train_main
  init=$WORK/init_$model.safetensors
  $PY "$T/train_pytorch.py" --model $model --seed 7 --init-out "$init" >>"$log" 2>&1
  for dtype in fp32 fp64; do
    extra=(); [ $dtype = fp64 ] && extra=(--float64)
    $PY "$T/grad_reference.py" --model $model --init-weights "$init" --random-input --batch $batch \
      --seed 7 --device cuda --out "$WORK/ref_${model}_$dtype.safetensors" "${extra[@]}" >>"$log" 2>&1 ||
      { echo "$model: grad_reference.py $dtype failed"; status=1; }
  done
  if ! "$bin" --weights "$init" --batch-file "$WORK/ref_${model}_fp32.safetensors" \
       --out "$WORK/zoc_$model.safetensors" >>"$log" 2>&1; then
    echo "$model: the trainer failed: $(tail -n 2 "$log")"; status=1; continue
  fi
  for against in fp32 fp64; do
    max=1e-3; [ $against = fp64 ] && max=2e-2
    echo "== $model, one step, against PyTorch $against (limit $max)" | tee -a "$OUT/summary.txt"
    $PY "$ROOT/tests/train/compare_grads.py" "$WORK/ref_${model}_fp32.safetensors" \
      "$WORK/zoc_$model.safetensors" --ref64 "$WORK/ref_${model}_fp64.safetensors" \
      --against $against --max $max --json "$OUT/${model}_vs_$against.json" | tee -a "$OUT/summary.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || { [ $against = fp32 ] && status=1; }
  done
  # Label smoothing 0.1 (PyTorch's cross_entropy(label_smoothing=0.1)), LeNet's step in fp32.
  if [ $model = lenet ]; then
    $PY "$T/grad_reference.py" --model $model --init-weights "$init" --random-input \
      --batch $batch --seed 7 --device cuda --label-smoothing 0.1 \
      --out "$WORK/ref_${model}_ls.safetensors" >>"$log" 2>&1 &&
      "$bin" --weights "$init" --batch-file "$WORK/ref_${model}_ls.safetensors" \
        --label-smoothing 0.1 --out "$WORK/zoc_${model}_ls.safetensors" >>"$log" 2>&1 ||
      { echo "$model: label smoothing step failed"; status=1; }
    echo "== $model, label smoothing 0.1, against PyTorch fp32 (limit 1e-3)" |
      tee -a "$OUT/summary.txt"
    $PY "$ROOT/tests/train/compare_grads.py" "$WORK/ref_${model}_ls.safetensors" \
      "$WORK/zoc_${model}_ls.safetensors" --max 1e-3 | tee -a "$OUT/summary.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  fi
  # Three optimizer steps on the batch, SGD and AdamW (each at its usual rate), against the
  # same steps of torch.optim's in float64: LeNet's weight and running-statistic updates (after
  # minus before) within 1e-3. ResNet-50's are printed, not judged: three steps at 28x28 amplify
  # rounding until PyTorch's own fp32 updates are 20-30% from float64's, where no bound tells a
  # right update from a wrong one. Then the checkpoint loaded by PyTorch's load_state_dict.
  for opt in sgd adamw; do
    lr=0.1; [ $opt = adamw ] && lr=1e-3
    echo "== $model, 3 $opt steps (lr $lr), updates against torch.optim in float64" |
      tee -a "$OUT/summary.txt"
    ok=1
    for dtype in fp32 fp64; do
      extra=(); [ $dtype = fp64 ] && extra=(--float64)
      $PY "$T/grad_reference.py" --model $model --init-weights "$init" --random-input \
        --batch $batch --seed 7 --device cuda --out "$WORK/ref3_${model}_$opt.safetensors" \
        --steps 3 --optimizer $opt --lr $lr "${extra[@]}" \
        --weights-out "$WORK/refw_${model}_${opt}_$dtype.safetensors" >>"$log" 2>&1 || ok=0
    done
    if [ $ok = 1 ] &&
       "$bin" --weights "$init" --batch-file "$WORK/ref_${model}_fp32.safetensors" \
         --out "$WORK/zoc3_$model.safetensors" --steps 3 --optimizer $opt --lr $lr \
         --weights-out "$WORK/ckpt_${model}_$opt.safetensors" >>"$log" 2>&1; then
      $PY "$ROOT/tests/train/compare_grads.py" "$WORK/refw_${model}_${opt}_fp32.safetensors" \
        "$WORK/ckpt_${model}_$opt.safetensors" --ref64 "$WORK/refw_${model}_${opt}_fp64.safetensors" \
        --against fp64 --minus "$init" --max 1e-3 | tee -a "$OUT/summary.txt"
      [ "${PIPESTATUS[0]}" -eq 0 ] || [ $model = resnet50 ] || status=1
    else
      echo "$model: $opt steps failed (see logs/$model.log)" | tee -a "$OUT/summary.txt"; status=1
    fi
  done
  if $PY -c "import sys; sys.path.insert(0, '$T'); import nets; n = nets.build('$model'); nets.load(n, '$WORK/ckpt_${model}_adamw.safetensors'); print('checkpoint loads into PyTorch')" >>"$log" 2>&1; then
    echo "$model: the checkpoint loads into PyTorch" | tee -a "$OUT/summary.txt"
  else
    echo "$model: the checkpoint does not load (see logs/$model.log)" | tee -a "$OUT/summary.txt"; status=1
  fi
done
exit $status
