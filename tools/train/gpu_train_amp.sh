#!/usr/bin/env bash
# Issue 38's step-time comparison at the scale the issue asks for: ResNet-50 and MobileNetV2
# (10 classes) on Fashion-MNIST resized to 64x64 and replicated to 3 channels, batch 128, the
# same initial weights (train_pytorch.py --init-out, torchvision's scheme) in every row.
#
#   tools/train/gpu_train_amp.sh prepare [ZOC]   here: train_amp/ (git-ignored): the zoc trainers
#       (fp32, tf32 and bf16 of each model; MobileNetV2 through its TorchScript, scripted by this
#       machine's torch) and a Fashion-MNIST subset: the first SUBSET (20000) training images
#       and the whole test set, as .gz idx files (the whole set does not travel beside the tree)
#   tools/train/gpu_train_amp.sh run zoc         on the GPU machine: build the trainers, one
#       epoch of STEPS (150) steps of each, and the numerics of each reduced precision (AMP_CHECK,
#       "tf32 bf16"): one step of the tf32 trainer against PyTorch's (TF32 on) and float64
#       autograd, within 10x PyTorch TF32's own error; of the bf16 trainer against PyTorch's
#       autocast bf16 and float64, within 3x autocast's own error
#   tools/train/gpu_train_amp.sh run pytorch     on the GPU machine: the PyTorch rows, eager
#       fp32 (TF32 off), tf32, AMP bf16 and fp16 (GradScaler), channels-last where tensor cores
#       run, and torch.compile (default, reduce-overhead: CUDA graphs, and max-autotune while
#       the call's budget lasts: MobileNetV2's did not finish compiling in 555 s on an H200)
#
# Each row is one train_pytorch.py or trainer run's JSON line; $OUT/step_times_<what>.csv
# collects them (impl, model, precision, step_ms, img_per_s, peak memory without the resident
# data sets, the first step's wall time: compilation) and the table is printed.
# Environment: OUT (./train_amp_out), STEPS (150), AMP_BUDGET_S (560), SUBSET (20000), AMP_ROWS
# (a regular expression: only the rows whose names match, e.g. max_autotune).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$ROOT/train_amp
T=$ROOT/tools/train
MODELS=(resnet50 mobilenet_v2)
case "${1:-}" in
  prepare)
    set -e
    zoc=$(realpath "${2:-$ROOT/build/compiler/zoc}")
    "$ROOT/tools/setup.sh" dataset-fashion-mnist
    rm -rf "$DIR" && mkdir -p "$DIR/data"
    ROOT_T=$T /usr/bin/python3 -c '
import gzip, os, sys
sys.path.insert(0, os.environ["ROOT_T"])
import idx_data
out, n = sys.argv[1], int(sys.argv[2])
src = "/usr/share/datasets/fashion-mnist"
px, y = idx_data.read_split(src, "train")
paths = idx_data.write_idx(out, "train", px[:n], y[:n])
px, y = idx_data.read_split(src, "test")
paths += idx_data.write_idx(out, "test", px, y)
for p in paths:
    with open(p, "rb") as f, gzip.open(p + ".gz", "wb", compresslevel=9) as g:
        g.write(f.read())
    os.remove(p)
' "$DIR/data" "${SUBSET:-20000}"
    /usr/bin/python3 "$T/train_pytorch.py" --model mobilenet_v2 --channels 3 --resize 64 \
      --init torchvision --script-out "$DIR/mobilenet_v2.pt"
    for p in fp32 tf32 bf16; do
      "$zoc" compile "$ROOT/models/resnet50.yaml" --set num_classes=10 --set in_channels=3 \
        --set resolution=64 --train --precision $p -o "$DIR/resnet50_$p" | head -1
      "$zoc" compile "$DIR/mobilenet_v2.pt" --input 3x64x64 --train --precision $p \
        -o "$DIR/mobilenet_v2_$p" | head -1
    done
    rm "$DIR/mobilenet_v2.pt"
    du -sh "$DIR"
    exit 0 ;;
  run) WHAT=${2:-} ;;
  *) sed -n '2,21p' "$0" >&2; exit 2 ;;
esac
[ "$WHAT" = zoc ] || [ "$WHAT" = pytorch ] || { echo "usage: $0 run zoc|pytorch" >&2; exit 2; }
START=$(date +%s)
OUT=${OUT:-$ROOT/train_amp_out}
STEPS=${STEPS:-150}
BUDGET=${AMP_BUDGET_S:-560}
WORK=/tmp/zoc_train_amp
mkdir -p "$OUT/logs" "$WORK/data"
. "$ROOT/tools/gpu_env.sh"
gpu_env
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  "$PY" -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'
} | tee "$OUT/env_$WHAT.txt"
for f in "$DIR"/data/*.gz; do gunzip -c "$f" >"$WORK/data/$(basename "${f%.gz}")"; done
COMMON=(--data "$WORK/data" --resize 64 --channels 3 --epochs 1 --max-steps "$STEPS" --batch 128)
lr() { [ "$1" = resnet50 ] && echo 0.1 || echo 0.05; }
left() { echo $((BUDGET - ($(date +%s) - START))); }
for m in "${MODELS[@]}"; do
  "$PY" "$T/train_pytorch.py" --model "$m" --channels 3 --resize 64 --init torchvision \
    --init-out "$WORK/init_$m.safetensors" >/dev/null
done
rows=$OUT/rows_$WHAT.jsonl
: >"$rows"
status=0
row() {  # row NAME SECONDS COMMAND...: its last JSON line into $rows, or the failure named
  local name=$1 limit=$2
  shift 2
  [[ "$name" =~ ${AMP_ROWS:-.} ]] || return 0
  if [ "$limit" -lt 30 ]; then echo "$name: skipped (budget spent)"; return; fi
  if timeout "$limit" "$@" >"$OUT/logs/$name.log" 2>&1; then
    grep '^{' "$OUT/logs/$name.log" | tail -1 >>"$rows"
    echo "$name: $(date +%s) ok"
  else
    echo "$name: failed or over ${limit} s: $(tail -n 2 "$OUT/logs/$name.log" | tr '\n' ' ')"
    status=1
  fi
}
if [ "$WHAT" = zoc ]; then
  for m in "${MODELS[@]}"; do
    for p in fp32 tf32 bf16; do
      [[ "zoc_${m}_$p" =~ ${AMP_ROWS:-.} ]] || continue
      (cmake -S "$DIR/${m}_$p" -B "$WORK/build_${m}_$p" "${GPU_CMAKE_ARGS[@]}" &&
       cmake --build "$WORK/build_${m}_$p" -j 4) >"$OUT/logs/build_${m}_$p.log" 2>&1 &
    done
  done
  wait
  echo "built in $(( $(date +%s) - START )) s"
  for m in "${MODELS[@]}"; do
    for p in fp32 tf32 bf16; do
      row "zoc_${m}_$p" "$(left)" "$WORK/build_${m}_$p/${m}_train_main" "${COMMON[@]}" \
        --lr "$(lr "$m")" --weights "$WORK/init_$m.safetensors"
    done
    # The reduced precisions' numerics: one step at batch 16 against PyTorch in the same
    # precision (TF32 on; autocast bf16) and float64.
    for p in ${AMP_CHECK:-tf32 bf16}; do
      [ -x "$WORK/build_${m}_$p/${m}_train_main" ] || continue
      for ref in $p fp64; do
        [ -f "$WORK/ref_${m}_$ref.safetensors" ] && continue
        case $ref in tf32) extra=(--tf32) ;; bf16) extra=(--autocast) ;; *) extra=(--float64) ;; esac
        "$PY" "$T/grad_reference.py" --model "$m" --in-channels 3 --resolution 64 \
          --init-weights "$WORK/init_$m.safetensors" --random-input --batch 16 --seed 7 \
          --device cuda --out "$WORK/ref_${m}_$ref.safetensors" "${extra[@]}" \
          >>"$OUT/logs/${p}_$m.log" 2>&1 || { echo "$m: grad_reference $ref failed"; status=1; }
      done
      "$WORK/build_${m}_$p/${m}_train_main" --weights "$WORK/init_$m.safetensors" \
        --batch-file "$WORK/ref_${m}_$p.safetensors" --out "$WORK/zoc_${m}_$p.safetensors" \
        >>"$OUT/logs/${p}_$m.log" 2>&1 || { echo "$m: $p step failed"; status=1; }
      band=10; [ $p = bf16 ] && band=3
      echo "== $m $p, one step, against float64 (limit 2e-2, or ${band}x PyTorch $p's error)"
      "$PY" "$ROOT/tests/train/compare_grads.py" "$WORK/ref_${m}_$p.safetensors" \
        "$WORK/zoc_${m}_$p.safetensors" --ref64 "$WORK/ref_${m}_fp64.safetensors" \
        --against fp64 --max 2e-2 --fp32-band $band --json "$OUT/${p}_${m}_vs_fp64.json" |
        tail -n 4 || status=1
    done
  done
else
  for m in "${MODELS[@]}"; do
    row "pt_${m}_fp32" "$(left)" "$PY" "$T/train_pytorch.py" --model "$m" "${COMMON[@]}" \
      --lr "$(lr "$m")" --init-weights "$WORK/init_$m.safetensors" --precision fp32
    for p in tf32 bf16 fp16; do
      row "pt_${m}_${p}_cl" "$(left)" "$PY" "$T/train_pytorch.py" --model "$m" "${COMMON[@]}" \
        --lr "$(lr "$m")" --init-weights "$WORK/init_$m.safetensors" --precision $p \
        --channels-last
    done
    row "pt_${m}_bf16_cl_compile" "$(left)" "$PY" "$T/train_pytorch.py" --model "$m" \
      "${COMMON[@]}" --lr "$(lr "$m")" --init-weights "$WORK/init_$m.safetensors" \
      --precision bf16 --channels-last --compile default
    row "pt_${m}_bf16_cl_reduce_overhead" "$(left)" "$PY" "$T/train_pytorch.py" --model "$m" \
      "${COMMON[@]}" --lr "$(lr "$m")" --init-weights "$WORK/init_$m.safetensors" \
      --precision bf16 --channels-last --compile reduce-overhead
  done
  for m in mobilenet_v2 resnet50; do  # last: compilation may take the rest of the budget
    row "pt_${m}_bf16_cl_max_autotune" "$(left)" "$PY" "$T/train_pytorch.py" --model "$m" \
      "${COMMON[@]}" --lr "$(lr "$m")" --init-weights "$WORK/init_$m.safetensors" \
      --precision bf16 --channels-last --compile max-autotune
  done
fi
"$PY" - "$rows" "$OUT/step_times_$WHAT.csv" <<'EOF'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys = ("impl", "model", "precision", "channels_last", "step_ms", "img_per_s", "model_peak_mb",
        "first_step_s", "test_acc")
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(keys)
    for r in rows:
        if r.get("impl") == "zoc":
            r["model_peak_mb"], r["channels_last"] = r.get("trainer_mem_mb"), False
        w.writerow([r.get(k) for k in keys])
        print("%-30s %-13s %-5s CL=%-5s %8.2f ms %8.0f img/s %8.0f MiB first %s acc %.3f" % (
            r["impl"], r["model"], r.get("precision"), r.get("channels_last"), r["step_ms"],
            r["img_per_s"], r.get("model_peak_mb") or 0, r.get("first_step_s"), r["test_acc"]))
EOF
echo "elapsed $(( $(date +%s) - START )) s"
exit $status
