#!/usr/bin/env bash
# Issue 8's training comparison in one command on the GPU machine: build the LibTorch trainer and
# zoc's generated trainer, make the initial weights of each seed, train with PyTorch eager,
# LibTorch and zoc on the same data, order and weights, then write the CSVs, plots and a short
# table under $OUT.
# A device command may run 10 minutes, so every run gets what is left of TRAIN_BUDGET_S and the
# table and timings are written whatever happened; the timings say how to plan the next call.
#
# Usage: tools/train/gpu_train.sh DATA_DIR MODEL EPOCHS SEEDS [IMPLS]
#   DATA_DIR  the four Fashion-MNIST idx files, raw or .gz (train-images-idx3-ubyte[.gz], ...)
#   MODEL     lenet | resnet50;  EPOCHS  e.g. 5;  SEEDS  comma-separated, e.g. 0,1
#   IMPLS     comma-separated, default pytorch-eager,libtorch,zoc (run in this order per seed);
#             IMPL:N runs N processes on N GPUs (issue 21): zoc:N through tools/train/launch.sh,
#             pytorch-ddp:N as train_pytorch.py --ddp under torchrun; --batch stays the global
#             batch, split over the processes
# Environment: OUT (default ./train_out), TRAIN_WORK (scratch: build, raw data, init weights;
#   /tmp/zoc_train), TRAIN_BUDGET_S (570), TRAIN_PYTHON (/opt/torch/.venv/bin/python3),
#   TRAIN_INIT_ARGS (for the init weights, e.g. "--init torchvision --zero-init-residual"),
#   TRAIN_ARGS (passed to every trainer, e.g. "--schedule step --batch 128"), ZOC_TRAINER (the
#   generated trainer folder, `zoc compile --train`; default train_check/MODEL), TRAIN_DEVICE
#   (cuda; cpu for a dry run of the plumbing without a GPU, e.g. TRAIN_DEVICE=cpu
#   TRAIN_PYTHON=/usr/bin/python3 TRAIN_ARGS="--max-steps 3 --batch 16" ... on a synthetic set).
# With the device tool: carry the data folder (the .gz files are 30 MB), e.g.
#   command: "tools/train/gpu_train.sh fmnist resnet50 5 0", carry: ["fmnist"].
set -uo pipefail
START=$(date +%s)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 4 ]; then
  sed -n '8,21p' "$0" >&2
  exit 2
fi
DATA=$1 MODEL=$2 EPOCHS=$3 SEEDS=$4 IMPLS=${5:-pytorch-eager,libtorch,zoc}
ZOC_TRAINER=${ZOC_TRAINER:-$ROOT/train_check/$MODEL}
OUT=${OUT:-$ROOT/train_out}
WORK=${TRAIN_WORK:-/tmp/zoc_train}
BUDGET=${TRAIN_BUDGET_S:-570}
DEVICE=${TRAIN_DEVICE:-cuda}
# The venv's tools and the cuDNN PyTorch uses (the wheel's), first on the library path.
. "$ROOT/tools/gpu_env.sh"
gpu_env "${TRAIN_PYTHON:-}"
export NCCL_NVLS_ENABLE=0  # NVLink multicast off, as the GPU machines require

mkdir -p "$OUT/csv" "$OUT/logs" "$WORK/data"
rm -f "$OUT"/csv/*.csv "$OUT/timings.txt"
elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((BUDGET - $(elapsed))); }
note() { printf '[%4ds] %s\n' "$(elapsed)" "$*" | tee -a "$OUT/timings.txt"; }

note "gpu_train: $MODEL, $EPOCHS epochs, seeds $SEEDS, impls $IMPLS, data $DATA, $DEVICE," \
  "python $PY"
"$PY" - > "$OUT/env.json" <<'EOF'
import json, subprocess, datetime, torch
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
except OSError:
    gpu = "none"
print(json.dumps({"date_utc": datetime.datetime.utcnow().isoformat(timespec="seconds"),
                  "gpu": gpu, "torch": torch.__version__, "cuda": torch.version.cuda,
                  "cudnn": torch.backends.cudnn.version()}, indent=1))
EOF

# Raw idx for the C++ reader (runtime/zoc/train/datasets.h takes no gzip); Python reads either.
for base in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
            t10k-labels-idx1-ubyte; do
  if [ -f "$DATA/$base" ]; then cp "$DATA/$base" "$WORK/data/$base"
  elif [ -f "$DATA/$base.gz" ]; then gunzip -c "$DATA/$base.gz" > "$WORK/data/$base"
  else note "error: $DATA has neither $base nor $base.gz"; exit 1; fi
done
note "data ready (raw idx in $WORK/data)"

LIBTORCH_BIN=$WORK/build/train_libtorch
if [[ ",$IMPLS," == *",libtorch,"* ]]; then
  prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  cuda_flag=$([ "$DEVICE" = cuda ] && echo ON || echo OFF)
  if cmake -S "$ROOT/tools/train/libtorch" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_PREFIX_PATH="$prefix" -DTRAIN_CUDA="$cuda_flag" > "$OUT/logs/build.log" 2>&1 &&
     cmake --build "$WORK/build" -j 16 >> "$OUT/logs/build.log" 2>&1; then
    note "LibTorch trainer built"
  else
    note "error: LibTorch build failed (logs/build.log): $(tail -n 3 "$OUT/logs/build.log")"
    LIBTORCH_BIN=
  fi
fi

ZOC_BIN=$WORK/zoc_build/${MODEL}_train_main
if [[ ",$IMPLS," == *",zoc"[,:]* ]]; then
  # NCCL for data-parallel runs: the wheel's, the one PyTorch's DDP uses.
  nccl_root=$("$PY" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
  if [ -f "$ZOC_TRAINER/CMakeLists.txt" ] &&
     cmake -S "$ZOC_TRAINER" -B "$WORK/zoc_build" "${GPU_CMAKE_ARGS[@]}" \
       ${nccl_root:+-DNCCL_ROOT="$nccl_root"} > "$OUT/logs/zoc_build.log" 2>&1 &&
     cmake --build "$WORK/zoc_build" -j 16 >> "$OUT/logs/zoc_build.log" 2>&1; then
    note "zoc trainer built from $ZOC_TRAINER"
  else
    note "error: zoc trainer build failed (logs/zoc_build.log): $(tail -n 3 "$OUT/logs/zoc_build.log")"
    ZOC_BIN=
  fi
fi

status=0
for seed in ${SEEDS//,/ }; do
  init=$WORK/init_${MODEL}_s${seed}.safetensors
  # shellcheck disable=SC2086  # TRAIN_INIT_ARGS and TRAIN_ARGS are word lists
  if ! "$PY" "$ROOT/tools/train/train_pytorch.py" --model "$MODEL" --seed "$seed" \
       ${TRAIN_INIT_ARGS:-} --init-out "$init" > "$OUT/logs/init_s$seed.log" 2>&1; then
    note "error: init weights for seed $seed failed (logs/init_s$seed.log)"; status=1; continue
  fi
  for spec in ${IMPLS//,/ }; do
    impl=${spec%%:*} procs=1
    [ "$spec" != "$impl" ] && procs=${spec#*:}
    name=$impl$([ "$spec" != "$impl" ] && echo "-x$procs")
    csv=$OUT/csv/${name}_${MODEL}_s${seed}.csv
    log=$OUT/logs/${name}_${MODEL}_s${seed}.log
    common=(--model "$MODEL" --epochs "$EPOCHS" --seed "$seed" --init-weights "$init" --device "$DEVICE")
    launch=()
    [ "$spec" != "$impl" ] && launch=("$ROOT/tools/train/launch.sh" "$procs")
    case $impl in
      pytorch-eager) cmd=("$PY" "$ROOT/tools/train/train_pytorch.py" --data "$DATA" "${common[@]}") ;;
      pytorch-ddp)
        cmd=("$PY" -m torch.distributed.run --standalone --nproc_per_node "$procs"
             "$ROOT/tools/train/train_pytorch.py" --ddp --data "$DATA" "${common[@]}") ;;
      libtorch)
        if [ -z "$LIBTORCH_BIN" ]; then note "skipped: libtorch seed $seed (no build)"; continue; fi
        cmd=("$LIBTORCH_BIN" --data "$WORK/data" "${common[@]}") ;;
      zoc)  # the same conventions; its learning rate is given as the baselines' default
        if [ -z "$ZOC_BIN" ]; then note "skipped: zoc seed $seed (no build)"; continue; fi
        lr=0.1; [ "$MODEL" = lenet ] && lr=0.05
        cmd=("${launch[@]}" "$ZOC_BIN" --data "$WORK/data" --epochs "$EPOCHS" --seed "$seed"
             --weights "$init" --lr $lr) ;;
      *) note "error: unknown impl $impl"; status=1; continue ;;
    esac
    limit=$(($(left) - 25))
    if [ "$limit" -lt 20 ]; then
      note "skipped: $impl seed $seed (budget spent)"; status=1; continue
    fi
    t0=$(date +%s)
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" "${cmd[@]}" --csv "$csv" ${TRAIN_ARGS:-} > "$log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    note "$name seed $seed: rc $rc, $(($(date +%s) - t0)) s ($(grep -c '^{' "$log") epochs logged)$(
      [ $rc -eq 124 ] && echo ', cut by the budget')"
  done
done

if ls "$OUT"/csv/*.csv > /dev/null 2>&1; then
  "$PY" "$ROOT/tools/train/plot.py" "$OUT"/csv/*.csv --out "$OUT" > "$OUT/logs/plot.log" 2>&1 ||
    note "error: plot.py failed (logs/plot.log)"
fi
# The device tool brings back only a few loose files: keep the headline ones, pack the rest.
tar -czf "$WORK/bundle.tar.gz" -C "$OUT" csv logs && mv "$WORK/bundle.tar.gz" "$OUT/bundle.tar.gz"
note "done: $OUT/{summary.md,timings.txt,env.json,*_accuracy.png,csv/,bundle.tar.gz}"
echo
cat "$OUT/summary.md" 2>/dev/null
echo
echo "per-epoch rows (impl seed epoch test_acc step_ms epoch_s world_size img_per_s):"
for f in "$OUT"/csv/*.csv; do
  [ -f "$f" ] &&
    awk -F, 'NR > 1 { printf "  %-14s %s %2s %s %9s %8s %s %s\n", $1, $4, $5, $8, $9, $10, $12, $13 }' "$f"
done
exit $status
