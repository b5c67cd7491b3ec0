#!/usr/bin/env bash
# fp16 training's dynamic loss scale across a checkpoint, on the GPU machine: an fp16 trainer
# (zoc compile --train --precision fp16, built) runs 2 epochs of K steps straight, and 1 epoch
# then --resume for the second; both end with bit-identical weights only if the resumed run
# continues with the checkpoint's loss scale, growth count and skipped steps (a scale restarted
# at 65536 would overflow, skip a step and differ). With SGD, then AdamW (--lr 1e-3), whose bias
# corrections count the steps not skipped (the count must come back from the checkpoint too).
# Constant learning rate, deterministic convolution algorithms. Prints each run's last epoch
# line (its loss_scale, skipped_steps).
# Usage: tests/train/gpu_loss_scale_check.sh BINARY DATA_DIR WEIGHTS [K]
#   (environment: OUT, the run's logs and checkpoints; the data options of
#   tools/train/gpu_train_amp.sh: --resize 64 --channels 3)
set -uo pipefail
BIN=$1 DATA=$2 WEIGHTS=$3 K=${4:-40}
OUT=${OUT:-./loss_scale_out}
mkdir -p "$OUT"
common=(--data "$DATA" --resize 64 --channels 3 --batch 128 --seed 5 --lr 0.1 --schedule constant
        --max-steps "$K" --deterministic)
run() {  # run NAME OPTION...
  local name=$1; shift
  "$BIN" "${common[@]}" "$@" >"$OUT/$name.txt" 2>&1 ||
    { echo "loss scale check: run $name failed"; tail -n 3 "$OUT/$name.txt"; exit 1; }
  grep '^{' "$OUT/$name.txt" | tail -n 1 |
    grep -o '"epoch": [0-9]*\|"loss_scale": [^,]*\|"skipped_steps": [0-9]*' |
    tr '\n' ' ' | sed "s/^/$name: /"
  echo
}
status=0
for opt in sgd adamw; do
  o=(--optimizer "$opt"); [ "$opt" = adamw ] && o+=(--lr 1e-3)
  run "${opt}_straight" "${o[@]}" --weights "$WEIGHTS" --epochs 2 \
    --checkpoint "$OUT/${opt}_straight.safetensors"
  run "${opt}_half" "${o[@]}" --weights "$WEIGHTS" --epochs 1 \
    --checkpoint "$OUT/${opt}_half.safetensors"
  run "${opt}_resumed" "${o[@]}" --epochs 2 --resume "$OUT/${opt}_half.safetensors" \
    --checkpoint "$OUT/${opt}_resumed.safetensors"
  grep -q '"loss_scale"' "$OUT/${opt}_straight.txt" ||
    { echo "loss scale check: no loss_scale in the epoch lines (not an fp16 trainer?)"; exit 1; }
  if cmp -s "$OUT/${opt}_straight.safetensors" "$OUT/${opt}_resumed.safetensors"; then
    echo "PASS ($opt): 2 epochs straight and 1 + --resume give bit-identical fp16 weights"
  else
    echo "FAIL ($opt): the resumed fp16 run's weights differ from the straight run's"
    status=1
  fi
done
exit $status
