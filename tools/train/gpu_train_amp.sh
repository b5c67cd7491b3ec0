#!/usr/bin/env bash
# Issue 38's step-time comparison at the scale the issue asks for: ResNet-50 and MobileNetV2
# (10 classes) on Fashion-MNIST resized to 64x64 and replicated to 3 channels, batch 128, the
# same initial weights (train_pytorch.py --init-out, torchvision's scheme) in every row.
#
#   tools/train/gpu_train_amp.sh prepare [ZOC]   here: train_amp/ (git-ignored): the zoc trainers
#       (fp32, tf32, bf16 and fp16 of each model; MobileNetV2 through its TorchScript, scripted
#       by this machine's torch) and Fashion-MNIST as .xz idx files: the first SUBSET (40000)
#       training images and the whole test set (all 60000 would not travel beside the tree to the
#       GPU machine: its copy of the tree is limited to 64 MiB)
#   tools/train/gpu_train_amp.sh run zoc         on the GPU machine: build the trainers, one
#       epoch of STEPS (150) steps of each, and the numerics of each reduced precision (AMP_CHECK,
#       "tf32 bf16 fp16"): one step of the tf32 trainer against PyTorch's (TF32 on) and float64
#       autograd, within 10x PyTorch TF32's own error; of the bf16 (fp16) trainer against
#       PyTorch's autocast bf16 (fp16, both with the loss scaled by AMP_FP16_SCALE, 256: the
#       first step of 65536 overflows in both) and float64, within 3x autocast's own error
#   tools/train/gpu_train_amp.sh run pytorch     on the GPU machine: the PyTorch rows, eager
#       fp32 (TF32 off), tf32, AMP bf16 and fp16 (GradScaler), channels-last where tensor cores
#       run, and torch.compile (default, reduce-overhead: CUDA graphs, and max-autotune while
#       the call's budget lasts: MobileNetV2's did not finish compiling in 555 s on an H200)
#   tools/train/gpu_train_amp.sh run epochs      on the GPU machine: issue 38's accuracy runs,
#       EPOCHS (5) whole epochs for each seed of SEEDS ("0 1"; each seed its own initial
#       weights, ResNet-50's with zero-init residuals, and data order) and each precision of
#       AMP_PRECISIONS ("bf16"; or fp16): zoc, PyTorch AMP channels-last eager and under
#       torch.compile reduce-overhead (fp16 with a GradScaler); every epoch's line
#       goes to $OUT/epochs.csv (impl, model, precision, seed, epoch, test_acc, step_ms,
#       img_per_s, peak_mib) and the mean final accuracies are printed
#
# Each row is one train_pytorch.py or trainer run's JSON line; $OUT/step_times_<what>.csv
# collects them (impl, model, precision, step_ms, img_per_s, peak memory without the resident
# data sets, the first step's wall time: compilation) and the table is printed.
# Environment: OUT (./train_amp_out), STEPS (150), AMP_BUDGET_S (560), SUBSET (40000), AMP_ROWS
# (a regular expression: only the rows whose names match, e.g. max_autotune), EPOCHS, SEEDS,
# AMP_PRECISIONS, AMP_CHECK_BATCH (16: the numerics checks' batch), AMP_FP16_SCALE.
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
import lzma, os, sys
sys.path.insert(0, os.environ["ROOT_T"])
import idx_data
out, n = sys.argv[1], int(sys.argv[2])
src = "/usr/share/datasets/fashion-mnist"
px, y = idx_data.read_split(src, "train")
paths = idx_data.write_idx(out, "train", px[:n], y[:n])
px, y = idx_data.read_split(src, "test")
paths += idx_data.write_idx(out, "test", px, y)
for p in paths:
    with open(p, "rb") as f, lzma.open(p + ".xz", "wb", preset=9 | lzma.PRESET_EXTREME) as g:
        g.write(f.read())
    os.remove(p)
' "$DIR/data" "${SUBSET:-40000}"
    /usr/bin/python3 "$T/train_pytorch.py" --model mobilenet_v2 --channels 3 --resize 64 \
      --init torchvision --script-out "$DIR/mobilenet_v2.pt"
    for p in fp32 tf32 bf16 fp16; do
      "$zoc" compile "$ROOT/models/resnet50.yaml" --set num_classes=10 --set in_channels=3 \
        --set resolution=64 --train --precision $p -o "$DIR/resnet50_$p" | head -1
      "$zoc" compile "$DIR/mobilenet_v2.pt" --input 3x64x64 --train --precision $p \
        -o "$DIR/mobilenet_v2_$p" | head -1
    done
    rm "$DIR/mobilenet_v2.pt"
    du -sh "$DIR"
    exit 0 ;;
  run) WHAT=${2:-} ;;
  *) sed -n '2,34p' "$0" >&2; exit 2 ;;
esac
[[ "$WHAT" =~ ^(zoc|pytorch|epochs)$ ]] || { echo "usage: $0 run zoc|pytorch|epochs" >&2; exit 2; }
START=$(date +%s)
OUT=${OUT:-$ROOT/train_amp_out}
STEPS=${STEPS:-150}
BUDGET=${AMP_BUDGET_S:-560}
FP16_SCALE=${AMP_FP16_SCALE:-256}
WORK=/tmp/zoc_train_amp
mkdir -p "$OUT/logs" "$WORK/data"
. "$ROOT/tools/gpu_env.sh"
gpu_env
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  "$PY" -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'
} | tee "$OUT/env_$WHAT.txt"
for f in "$DIR"/data/*.xz; do
  "$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "$WORK/data/$(basename "${f%.xz}")"
done
COMMON=(--data "$WORK/data" --resize 64 --channels 3 --epochs 1 --max-steps "$STEPS" --batch 128)
lr() { [ "$1" = resnet50 ] && echo 0.1 || echo 0.05; }
left() { echo $((BUDGET - ($(date +%s) - START))); }
for m in "${MODELS[@]}"; do
  [ "$WHAT" = epochs ] && break
  "$PY" "$T/train_pytorch.py" --model "$m" --channels 3 --resize 64 --init torchvision \
    --init-out "$WORK/init_$m.safetensors" >/dev/null
done
rows=$OUT/rows_$WHAT.jsonl
: >"$rows"
status=0
row() {  # row NAME SECONDS COMMAND...: its JSON lines into $rows, or the failure named
  local name=$1 limit=$2
  shift 2
  [[ "$name" =~ ${AMP_ROWS:-.} ]] || return 0
  if [ "$limit" -lt 30 ]; then echo "$name: skipped (budget spent)"; return; fi
  if timeout "$limit" "$@" >"$OUT/logs/$name.log" 2>&1; then
    grep '^{' "$OUT/logs/$name.log" >>"$rows"
    echo "$name: $(date +%s) ok"
  else
    echo "$name: failed or over ${limit} s: $(tail -n 2 "$OUT/logs/$name.log" | tr '\n' ' ')"
    status=1
  fi
}
build() {  # build MODEL PRECISION: the trainer into $WORK, in the background
  (cmake -S "$DIR/$1_$2" -B "$WORK/build_$1_$2" "${GPU_CMAKE_ARGS[@]}" &&
   cmake --build "$WORK/build_$1_$2" -j 4) >"$OUT/logs/build_$1_$2.log" 2>&1 &
}
if [ "$WHAT" = epochs ]; then
  ep=(--data "$WORK/data" --resize 64 --channels 3 --epochs "${EPOCHS:-5}" --batch 128)
  for m in "${MODELS[@]}"; do
    for p in ${AMP_PRECISIONS:-bf16}; do [[ "zoc_$m" =~ ${AMP_ROWS:-.} ]] && build "$m" $p; done
  done
  wait
  echo "built in $(( $(date +%s) - START )) s"
  for m in "${MODELS[@]}"; do
    for s in ${SEEDS:-0 1}; do
      init=$WORK/init_${m}_s$s.safetensors zero=()
      [ "$m" = resnet50 ] && zero=(--zero-init-residual)
      "$PY" "$T/train_pytorch.py" --model "$m" --channels 3 --resize 64 --init torchvision \
        "${zero[@]}" --seed "$s" --init-out "$init" >/dev/null
      for p in ${AMP_PRECISIONS:-bf16}; do
        row "zoc_${m}_${p}_s$s" "$(left)" "$WORK/build_${m}_$p/${m}_train_main" "${ep[@]}" \
          --lr "$(lr "$m")" --seed "$s" --weights "$init"
        pt=("$PY" "$T/train_pytorch.py" --model "$m" "${ep[@]}" --lr "$(lr "$m")" --seed "$s"
            --init-weights "$init" --precision $p --channels-last)
        row "pt_${m}_${p}_cl_s$s" "$(left)" "${pt[@]}"
        row "pt_${m}_${p}_cl_reduce_overhead_s$s" "$(left)" "${pt[@]}" --compile reduce-overhead
      done
    done
  done
elif [ "$WHAT" = zoc ]; then
  for m in "${MODELS[@]}"; do
    for p in fp32 tf32 bf16 fp16; do
      [[ "zoc_${m}_$p" =~ ${AMP_ROWS:-.} ]] && build "$m" $p
    done
  done
  wait
  echo "built in $(( $(date +%s) - START )) s"
  for m in "${MODELS[@]}"; do
    for p in fp32 tf32 bf16 fp16; do
      row "zoc_${m}_$p" "$(left)" "$WORK/build_${m}_$p/${m}_train_main" "${COMMON[@]}" \
        --lr "$(lr "$m")" --weights "$WORK/init_$m.safetensors"
    done
    # The reduced precisions' numerics: one step at batch 16 against PyTorch in the same
    # precision (TF32 on; autocast bf16 or fp16) and float64.
    for p in ${AMP_CHECK:-tf32 bf16 fp16}; do
      [ -x "$WORK/build_${m}_$p/${m}_train_main" ] || continue
      for ref in $p fp64; do
        [ -f "$WORK/ref_${m}_$ref.safetensors" ] && continue
        case $ref in
          tf32) extra=(--tf32) ;; bf16) extra=(--autocast bf16) ;;
          fp16) extra=(--autocast fp16 --loss-scale "$FP16_SCALE") ;; *) extra=(--float64) ;;
        esac
        "$PY" "$T/grad_reference.py" --model "$m" --in-channels 3 --resolution 64 \
          --init-weights "$WORK/init_$m.safetensors" --random-input \
          --batch "${AMP_CHECK_BATCH:-16}" --seed 7 \
          --device cuda --out "$WORK/ref_${m}_$ref.safetensors" "${extra[@]}" \
          >>"$OUT/logs/${p}_$m.log" 2>&1 || { echo "$m: grad_reference $ref failed"; status=1; }
      done
      scale=(); [ "$p" = fp16 ] && scale=(--loss-scale "$FP16_SCALE")
      "$WORK/build_${m}_$p/${m}_train_main" --weights "$WORK/init_$m.safetensors" \
        --batch-file "$WORK/ref_${m}_$p.safetensors" --out "$WORK/zoc_${m}_$p.safetensors" \
        "${scale[@]}" >>"$OUT/logs/${p}_$m.log" 2>&1 || { echo "$m: $p step failed"; status=1; }
      band=10 name="PyTorch tf32"
      [ "$p" != tf32 ] && band=3 name="PyTorch autocast $p"
      [ "$p" = fp16 ] && name="PyTorch autocast fp16 (loss scale $FP16_SCALE)"
      echo "== $m $p, one step, against float64 (limit 2e-2, or ${band}x PyTorch $p's error)"
      "$PY" "$ROOT/tests/train/compare_grads.py" "$WORK/ref_${m}_$p.safetensors" \
        "$WORK/zoc_${m}_$p.safetensors" --ref64 "$WORK/ref_${m}_fp64.safetensors" \
        --against fp64 --max 2e-2 --fp32-band $band --ref-name "$name" \
        --json "$OUT/${p}_${m}_vs_fp64.json" |
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
csv=$OUT/step_times_$WHAT.csv
[ "$WHAT" = epochs ] && csv=$OUT/epochs.csv
"$PY" - "$rows" "$csv" "$WHAT" <<'EOF'
import collections, csv, json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:  # the peak without the resident data sets; zoc keeps them on the host
    r["peak_mib"] = r.get("trainer_mem_mb") if r["impl"] == "zoc" else r.get("model_peak_mb")
    r["channels_last"] = r.get("channels_last", False)
if sys.argv[3] == "epochs":
    keys = ("impl", "model", "precision", "seed", "epoch", "test_acc", "step_ms", "img_per_s",
            "peak_mib")
else:
    keys = ("impl", "model", "precision", "channels_last", "step_ms", "img_per_s", "peak_mib",
            "first_step_s", "test_acc")
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(keys)
    for r in rows:
        w.writerow([r.get(k) for k in keys])
        print("%-30s %-13s %-5s s%-2s e%-2s CL=%-5s %8.2f ms %8.0f img/s %6.0f MiB first %s "
              "acc %.4f" % (r["impl"], r["model"], r.get("precision"), r.get("seed"),
                            r.get("epoch"), r["channels_last"], r["step_ms"], r["img_per_s"],
                            r["peak_mib"] or 0, r.get("first_step_s"), r["test_acc"]))
if sys.argv[3] == "epochs":  # the last epoch of each run, then its mean over the seeds
    last, runs = {}, collections.defaultdict(list)
    for r in rows:
        runs[(r["impl"], r["model"], r.get("precision"), r["seed"])].append(r)
    print("\nimpl, model, precision: final test accuracy per seed, mean; median step ms; peak MiB")
    by = collections.defaultdict(list)
    for (impl, model, prec, seed), rs in sorted(runs.items()):
        by[(impl, model, prec)].append((seed, rs[-1]["epoch"], rs[-1]["test_acc"], rs))
    for (impl, model, prec), v in sorted(by.items()):
        accs = ["s%s e%s %.4f" % (s, e, a) for s, e, a, _ in v]
        steps = [r["step_ms"] for _, _, _, rs in v for r in rs]
        peak = max(r["peak_mib"] or 0 for _, _, _, rs in v for r in rs)
        print("%-32s %-13s %-5s %s mean %.4f; %.2f ms; %.0f MiB" % (
            impl, model, prec, ", ".join(accs), statistics.mean(a for _, _, a, _ in v),
            statistics.median(steps), peak))
EOF
echo "elapsed $(( $(date +%s) - START )) s"
exit $status
