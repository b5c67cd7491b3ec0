#!/usr/bin/env bash
# compute-sanitizer over zoc's generated trainers on the GPU machine (issue 17: "GPU checks for
# what the other issues add ... the trainer"). The inference check (tests/gpu/gpu_reliability.sh)
# never runs a backward pass, the SGD kernel, the dropout masks, the double-buffered input copy
# on its second stream or the checkpoint writer; this does, with the same judge (gpu_compare.py
# check-row: memcheck 0 errors; racecheck 0 hazards outside NVIDIA's nvjet GEMM kernels).
#
# For LeNet (with dropout) and ResNet-50 (1 channel, 10 classes, 28x28) from train_check/
# (tests/train/prepare_train_check.sh), on a 512/256-image slice of Fashion-MNIST so the evaluation
# pass stays short under the sanitizer: memcheck of one epoch of --max-steps 4 at batch 32 with
# the step captured in a CUDA graph (the default) and without (--no-graph), writing a checkpoint;
# memcheck of --resume from it for a second epoch; racecheck of 2 steps at batch 4 on an 8 + 8
# image slice, with heuristic algorithms (--no-benchmark: timing every algorithm under racecheck
# would take most of a device call); then the one-batch mode
# (--batch-file, the gradient check's path) under memcheck. Rows, results.md and the exit status
# as tests/gpu/gpu_check.sh's report (1 if any row failed).
# Usage: tests/train/gpu_train_sanitize.sh [train_check]  (environment: OUT, default
#        ./train_check_out/sanitize; SANITIZER_MAX_S, the most one run may take, default 300)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(cd "${1:-$ROOT/train_check}" && pwd)
OUT=${OUT:-$ROOT/train_check_out/sanitize}
W=/tmp/zoc_train_sanitize
MAX_S=${SANITIZER_MAX_S:-300}
mkdir -p "$OUT/logs" "$OUT/rows" "$W/data/tiny"
rm -f "$OUT"/rows/*.json
. "$ROOT/tools/gpu_env.sh"
gpu_env
CMP=("$PY" "$ROOT/tests/gpu/gpu_compare.py")
say() { printf '[%4ds] %s\n' "$SECONDS" "$*"; }
"${CMP[@]}" env --out "$OUT/env.json" >/dev/null 2>&1 || echo '{}' >"$OUT/env.json"

# The slices: the first 512 training and 256 test images, idx headers rewritten; and 8 + 8 for
# racecheck, which checks every shared-memory access and is about 1000x slower than the GPU.
"$PY" - "$DIR/fmnist" "$W/data" <<'PYEOF' || { echo "no Fashion-MNIST slice"; exit 1; }
import gzip, struct, sys
src, dst = sys.argv[1], sys.argv[2]
for d, base, n in ((dst, "train", 512), (dst, "t10k", 256), (dst + "/tiny", "train", 8),
                   (dst + "/tiny", "t10k", 8)):
    for kind, head in (("images-idx3", 16), ("labels-idx1", 8)):
        raw = gzip.open("%s/%s-%s-ubyte.gz" % (src, base, kind)).read()
        per = 28 * 28 if kind.startswith("images") else 1
        out = raw[:4] + struct.pack(">I", n) + raw[8:head] + raw[head:head + n * per]
        open("%s/%s-%s-ubyte" % (d, base, kind), "wb").write(out)
PYEOF

# sanitize NAME TOOL ARGS...: one trainer run under compute-sanitizer, judged as a row.
sanitize() {
  local name=$1 tool=$2 log=$OUT/logs/$2_$1.log rc
  shift 2
  timeout -k 10 "$MAX_S" compute-sanitizer --tool "$tool" --print-limit 30 "$@" >"$log" 2>&1
  rc=$?
  echo "exit status $rc after ${SECONDS}s" >>"$log"
  "${CMP[@]}" check-row --rows "$OUT/rows" --kind sanitizer --name "${tool}_$name" --log "$log" \
    --rc $rc >>"$OUT/logs/compare.log" 2>&1
  say "$tool $name: $(grep -h 'SUMMARY' "$log" | tail -n 1 || tail -n 1 "$log")"
}

for model in lenet resnet50; do
  b=$W/build/$model
  (cmake -S "$DIR/$model" -B "$b" "${GPU_CMAKE_ARGS[@]}" && cmake --build "$b" -j 8) \
    >"$OUT/logs/build_$model.log" 2>&1 ||
    { say "$model: build failed (logs/build_$model.log)"; continue; }
  bin=$b/${model}_train_main
  fit=("$bin" --data "$W/data" --epochs 1 --batch 32 --max-steps 4 --seed 5 --schedule constant)
  sanitize "${model}_fit_graph" memcheck "${fit[@]}" --checkpoint "$W/${model}_ck.safetensors"
  sanitize "${model}_fit_nograph" memcheck "${fit[@]}" --no-graph
  sanitize "${model}_resume" memcheck "$bin" --data "$W/data" --epochs 2 --batch 32 --max-steps 4 \
    --seed 5 --schedule constant --resume "$W/${model}_ck.safetensors"
  sanitize "${model}_fit_graph" racecheck "$bin" --data "$W/data/tiny" --epochs 1 --batch 4 \
    --max-steps 2 --seed 5 --no-benchmark
  # One batch (the gradient check's mode): random inputs and the init weights from PyTorch.
  init=$W/init_$model.safetensors batch=$W/batch_$model.safetensors
  if "$PY" "$ROOT/tools/train/train_pytorch.py" --model $model --seed 7 --init-out "$init" \
       >"$OUT/logs/init_$model.log" 2>&1 &&
     "$PY" "$ROOT/tools/train/grad_reference.py" --model $model --init-weights "$init" \
       --random-input --batch 8 --seed 7 --device cuda --out "$batch" >>"$OUT/logs/init_$model.log" 2>&1; then
    sanitize "${model}_batch" memcheck "$bin" --weights "$init" --batch-file "$batch" \
      --out "$W/out_$model.safetensors" --steps 2
  else
    say "$model: no reference batch (logs/init_$model.log)"
  fi
done
"${CMP[@]}" report --rows "$OUT/rows" --out "$OUT" --env "$OUT/env.json"
