#!/usr/bin/env bash
# Where a generated trainer's step spends its GPU time: one training step on a random batch
# (grad_reference.py's seeded images), every kernel timed by Nsight Compute (ncu, serialized:
# each kernel alone on the GPU), summed per kernel name and printed largest first, with the
# step's total. On the GPU machine, after the trainer folder is built or with it built here.
#   tools/train/gpu_kernel_times.sh TRAINER_DIR MODEL [BATCH] [RESOLUTION]
# MODEL is train_pytorch.py's (resnet50, mobilenet_v2); the input has 3 channels. Environment:
# OUT (./kernel_times_out), TOP (25 rows).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(cd "$1" && pwd) MODEL=$2 BATCH=${3:-128} RES=${4:-64}
OUT=${OUT:-$ROOT/kernel_times_out}
WORK=/tmp/zoc_kernel_times/$(basename "$DIR")
mkdir -p "$OUT" "$WORK"
. "$ROOT/tools/gpu_env.sh"
gpu_env
T=$ROOT/tools/train
name=$(basename "$DIR")
(cmake -S "$DIR" -B "$WORK/build" "${GPU_CMAKE_ARGS[@]}" && cmake --build "$WORK/build" -j 8) \
  >"$OUT/build_$name.log" 2>&1 || { echo "$name: build failed"; exit 1; }
bin=$(ls "$WORK"/build/*_train_main)
"$PY" "$T/train_pytorch.py" --model "$MODEL" --channels 3 --resize "$RES" --init torchvision \
  --init-out "$WORK/init.safetensors" >/dev/null 2>&1 &&
"$PY" "$T/grad_reference.py" --model "$MODEL" --in-channels 3 --resolution "$RES" \
  --init-weights "$WORK/init.safetensors" --random-input --batch "$BATCH" --seed 7 \
  --device cuda --out "$WORK/batch.safetensors" >/dev/null 2>&1 ||
  { echo "$name: no batch"; exit 1; }
# Heuristic algorithms (no timing runs to profile), no CUDA graph: the step's own kernels.
ncu --csv --metrics gpu__time_duration.sum "$bin" --weights "$WORK/init.safetensors" \
  --batch-file "$WORK/batch.safetensors" --out "$WORK/step.safetensors" --no-benchmark \
  >"$OUT/ncu_$name.csv" 2>"$OUT/ncu_$name.err" || { echo "$name: ncu failed"; tail -3 "$OUT/ncu_$name.err"; exit 1; }
"$PY" - "$OUT/ncu_$name.csv" "${TOP:-25}" "$name" <<'PY'
import csv, collections, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
head = rows[0]
name_col, value_col = head.index("Kernel Name"), head.index("Metric Value")
unit_col = head.index("Metric Unit")
total, count = collections.Counter(), collections.Counter()
for r in rows[1:]:
    v = float(r[value_col].replace(",", ""))
    v *= {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0,
          "ms": 1.0}[r[unit_col]]
    total[r[name_col][:90]] += v
    count[r[name_col][:90]] += 1
s = sum(total.values())
print(f"{sys.argv[3]}: {sum(count.values())} kernels, {s:.2f} ms of GPU time in one step (serialized)")
for k, v in total.most_common(int(sys.argv[2])):
    print(f"{v:8.3f} ms {100 * v / s:5.1f}% {count[k]:5d}x  {k}")
PY
