#!/usr/bin/env bash
# The whole GPU-machine check of generated models, in one call (GPU time is scarce: GPU.md).
#
# Generated folders are produced on the CPU machine and shipped as gpu_check/<model>_<precision>/
# (git-ignored: pass it to the device tool with carry). Weights are too big to ship, so this
# script makes them here with models/export.py, with a fixed input and PyTorch's fp32 output
# (TF32 off). Then, in phases, each judged and recorded by tests/gpu/gpu_compare.py: (1) build the
# runtime tests (tests/gpu) and every folder in parallel while exporting, run the runtime tests;
# (2) correctness of every build at batch 1, 8, 64 (and 8 with --graph, built for batch 64, and
# 64 with algorithms chosen by measurement, --tune) against the matching PyTorch rows, four runs
# at a time; (3) latency, alone on the GPU: each precision with and without --graph at batch 1
# and 256, then tuned with the per-layer profile (--tune, --profile), then frozen TorchScript in
# a CUDA graph (fp32 TF32 off, fp16 channels-last) on the same weights; (4) reliability
# (tests/gpu/gpu_reliability.sh): compute-sanitizer memcheck and racecheck of every folder with a
# CUDA graph, and wrong calls (batch above the maximum, bad pointers, corrupted weights) under
# memcheck. One failing build or run never stops the others:
# it becomes a FAIL row with its log tail. Full logs, results.json and results.md go to $OUT; the
# short table is printed last; the exit status is 1 if any zoc correctness row, zoc run, test or
# memcheck failed. A time budget skips late phases rather than letting the device tool's
# 10-minute limit kill the run with no report.
#
# Usage: tests/gpu/gpu_check.sh [GPU_CHECK_DIR (default gpu_check)]
# Environment: OUT (default ./gpu_check_out), ZOC_GPU_WORK (scratch, default /tmp/zoc_gpu_check),
# ZOC_OWN_ERROR (tools/corpus/torch_precision_error.py's JSON: a model whose weights make
# PyTorch's own reduced precision miss the band is judged within twice PyTorch's error),
# ZOC_GPU_BUDGET_S (default 540), ZOC_LATENCY_MODELS (default resnet50; empty: no latency phase),
# ZOC_GPU_MODELS (only these models' folders; default all), ZOC_GPU_BATCHES (default "1 8 64"),
# ZOC_GPU_GRAPH_BATCH (the CUDA-graph row's batch, default 8),
# ZOC_GPU_TUNED (0: no --tune correctness row), ZOC_SANITIZE_MODELS (the models whose folders
# phase 4 sanitizes, default "lenet resnet50"), ZOC_EXPORT_TORCHSCRIPT (default script). A model
# with a folder CHECK_DIR/_ref/<model>/ (weights.safetensors, input.npy and output.npy at batch
# 64, e.g. the interpreter's, tests/gpu/prepare_zoo_check.sh) is not exported. For a dry run of the
# plumbing on a machine without a GPU: ZOC_PYTHON (python with torch), ZOC_EXPORT_DEVICE=cpu,
# ZOC_CUDNN_INCLUDE_DIR and ZOC_CUDNN_LIBRARY (another cuDNN than PyTorch's).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHECK_DIR=$(cd "${1:-$ROOT/gpu_check}" 2>/dev/null && pwd) || { echo "no folder ${1:-gpu_check}" >&2; exit 2; }
OUT=${OUT:-$ROOT/gpu_check_out}
WORK=${ZOC_GPU_WORK:-/tmp/zoc_gpu_check}
BUDGET=${ZOC_GPU_BUDGET_S:-540}
LATENCY_MODELS=${ZOC_LATENCY_MODELS-resnet50}
BATCHES=${ZOC_GPU_BATCHES:-1 8 64}
export SANITIZE_MODELS=${ZOC_SANITIZE_MODELS-lenet resnet50}
mkdir -p "$OUT/logs" "$OUT/rows" "$WORK"/{build,ref,out,json,plans}
rm -f "$OUT"/rows/*.json

# The venv's tools and the cuDNN that PyTorch loads (the wheel's), so zoc and the baselines run
# the same library, linked by full path, with a libcudnn.so link in $WORK for -lcudnn users.
. "$ROOT/tools/gpu_env.sh"
gpu_env "${ZOC_PYTHON:-}" "$WORK"
CMP=("$PY" "$ROOT/tests/gpu/gpu_compare.py")
CMAKE_ARGS=("${GPU_CMAKE_ARGS[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" -DCUDNN_ROOT="$CUDNN_DIR")

say() { printf '[%4ds] %s\n' "$SECONDS" "$*"; }
left() { echo $((BUDGET - SECONDS)); }
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$1" ]; do wait -n; done; }
# run LOG TIMEOUT CMD...: runs CMD with a time limit, output to LOG; returns its status.
run() { local log=$1 t=$2; shift 2; timeout -k 10 "$t" "$@" >"$log" 2>&1; }

{ "${CMP[@]}" env --out "$OUT/env.json" --extra "{\"cudnn_linked\": \"$CUDNN_LIB\"}"; nvidia-smi; } \
  >"$OUT/logs/env.log" 2>&1 &
say "GPU check of $CHECK_DIR; logs in $OUT/logs; budget ${BUDGET}s"

# --- phase 1: builds, exports, runtime tests ------------------------------------------------
FOLDERS=()
for d in "$CHECK_DIR"/*/; do
  name=$(basename "$d")
  [ -f "$d/CMakeLists.txt" ] || continue
  [ -z "${ZOC_GPU_MODELS:-}" ] || [[ " $ZOC_GPU_MODELS " == *" ${name%_*} "* ]] || continue
  FOLDERS+=("$name")
done
MODELS=$(printf '%s\n' "${FOLDERS[@]}" | sed 's/_[^_]*$//' | sort -u)
say "folders: ${FOLDERS[*]:-none}"

build_folder() {  # name: configure + build; finds the binary and records its path
  local name=$1 b=$WORK/build/$1 log=$OUT/logs/build_$1.log
  rm -rf "$b"
  if run "$log" 300 cmake -S "$CHECK_DIR/$name" -B "$b" "${CMAKE_ARGS[@]}" &&
     timeout -k 10 300 cmake --build "$b" -j 6 >>"$log" 2>&1; then
    local model=${name%_*} bin
    bin=$b/${model}_main; [ -x "$bin" ] || bin=$b/$model
    [ -x "$bin" ] || bin=$(find "$b" -maxdepth 1 -type f -perm -u+x | head -1)
    [ -n "$bin" ] && echo "$bin" >"$b/zoc_binary" || echo "build ok but no executable in $b" >>"$log"
  fi
}
export_model() {  # model: weights, input and PyTorch output at batch 64, sliced per batch
  local model=$1 ref=$WORK/ref/$1 log=$OUT/logs/export_$1.log
  rm -rf "$ref"
  if [ -d "$CHECK_DIR/_ref/$model" ]; then
    cp -r "$CHECK_DIR/_ref/$model" "$ref" && echo "reference from $CHECK_DIR/_ref/$model" >"$log"
  else
    run "$log" 300 "$PY" "$ROOT/models/export.py" --model "$model" --device "${ZOC_EXPORT_DEVICE:-cuda}" \
      --torchscript "${ZOC_EXPORT_TORCHSCRIPT:-script}" --batch 64 --out "$ref" || return
  fi
  for n in $BATCHES; do "${CMP[@]}" slice "$ref/input.npy" "$n" "$ref/input_b$n.npy" >>"$log" 2>&1; done
}
gpu_tests() {  # tests/gpu: each test built on its own, so one failing build spares the other
  local b=$WORK/build/gpu_tests log=$OUT/logs/build_gpu_tests.log t rc tlog
  run "$log" 300 cmake -S "$ROOT/tests/gpu" -B "$b" "${CMAKE_ARGS[@]}"
  for t in kernels_test runtime_test; do
    tlog=$OUT/logs/$t.log
    if timeout -k 10 300 cmake --build "$b" -j 4 --target "$t" >>"$log" 2>&1; then
      (cd "$b" && TMPDIR=$WORK run "$tlog" 120 "./$t"); rc=$?
    else
      cp "$log" "$tlog"; rc=1
    fi
    "${CMP[@]}" check-row --rows "$OUT/rows" --kind test --name "$t" --log "$tlog" --rc $rc
  done
}

gpu_tests >/dev/null 2>&1 &
for name in "${FOLDERS[@]}"; do build_folder "$name" & done
for model in $MODELS; do export_model "$model" & done
wait
say "builds and exports done"

# --- phase 2: correctness against PyTorch -----------------------------------------------------
check_run() {  # name batch mode
  local name=$1 n=$2 mode=$3 model=${1%_*} prec=${1##*_}
  local id=${name}_b${n}_$mode ref=$WORK/ref/$model log=$OUT/logs/run_${name}_b${n}_$mode.log
  local out=$WORK/out/$id.npy json=$WORK/json/$id.json rc what="zoc run failed"
  rm -f "$out" "$json"
  if [ ! -f "$WORK/build/$name/zoc_binary" ]; then
    what="build failed"; rc=1; cp "$OUT/logs/build_$name.log" "$log" 2>/dev/null
  elif [ ! -f "$ref/input_b$n.npy" ]; then
    what="export.py failed"; rc=1; cp "$OUT/logs/export_$model.log" "$log" 2>/dev/null
  elif [ "$(left)" -lt 200 ]; then
    what="skipped: time budget"; rc=124; echo "$what" >"$log"
  else
    # The graph row also runs below its maximum batch (--max-batch 64), the run-time batch path.
    local extra=(--no-graph --max-batch "$n"); [ "$mode" = graph ] && extra=(--graph --max-batch 64)
    # tuned: algorithms chosen by measurement first (--tune), then the same check with them.
    [ "$mode" = tuned ] && extra=(--graph --max-batch "$n" --tune "$WORK/plans/$name.plan")
    run "$log" 120 "$(cat "$WORK/build/$name/zoc_binary")" --weights "$ref/weights.safetensors" \
      --input "$ref/input_b$n.npy" --output "$out" --json "$json" \
      --warmup 0 --iters 0 --top 3 "${extra[@]}"
    rc=$?
  fi
  "${CMP[@]}" compare --rows "$OUT/rows" --model "$model" --precision "$prec" --batch "$n" \
    --mode "$mode" --ref "$ref/output.npy" --out "$out" --json "$json" --log "$log" \
    --rc "$rc" --what "$what" ${ZOC_OWN_ERROR:+--own-error "$ZOC_OWN_ERROR"} \
    $([ -f "$ref/parts.json" ] && echo --parts "$ref/parts.json") \
    >>"$OUT/logs/compare.log" 2>&1
}
for name in "${FOLDERS[@]}"; do
  for n in $BATCHES; do throttle 4; check_run "$name" "$n" eager & done
  throttle 4; check_run "$name" "${ZOC_GPU_GRAPH_BATCH:-8}" graph &
  [ "${ZOC_GPU_TUNED:-1}" = 0 ] || { throttle 4; check_run "$name" 64 tuned & }
done
wait
say "correctness done"

# --- phase 3: latency, one run at a time -----------------------------------------------------
latency_run() {  # name batch graph(0/1) tag [extra runner options]
  local name=$1 n=$2 graph=$3 tag=${4:-} model=${1%_*} prec=${1##*_}
  local more=("${@:5}")
  local id=${name}_b${n}_g${graph}${tag:+_$tag} log json rc=1 extra=() iters=200 warmup=20
  log=$OUT/logs/latency_$id.log json=$WORK/json/latency_$id.json
  rm -f "$json"
  extra=(--no-graph); [ "$graph" = 1 ] && extra=(--graph)
  [ "$n" -ge 64 ] && iters=50 warmup=10
  if [ -f "$WORK/build/$name/zoc_binary" ]; then
    run "$log" 180 "$(cat "$WORK/build/$name/zoc_binary")" --weights "$WORK/ref/$model/weights.safetensors" \
      --batch "$n" --max-batch 256 --warmup $warmup --iters $iters --top 0 --json "$json" "${extra[@]}" \
      "${more[@]}"
    rc=$?
  else
    echo "no binary: build failed (see build_$name.log)" >"$log"
  fi
  local gflag=(); [ "$graph" = 1 ] && gflag=(--graph)
  "${CMP[@]}" latency-row --rows "$OUT/rows" --model "$model" --precision "$prec" --batch "$n" \
    --json "$json" --log "$log" --rc $rc --tag "$tag" "${gflag[@]}" >>"$OUT/logs/compare.log" 2>&1
  say "latency $id: $(grep -h '^latency' "$log" 2>/dev/null | sed 's/.*: //' || echo failed)"
}
for model in $LATENCY_MODELS; do
  for prec in fp32 tf32 fp16 bf16; do
    [ -d "$CHECK_DIR/${model}_$prec" ] || continue
    for graph in 0 1; do
      for n in 1 256; do
        if [ "$(left)" -gt 260 ]; then latency_run "${model}_$prec" $n $graph; else say "skip latency ${model}_$prec (time)"; fi
      done
    done
    # With algorithms chosen by measurement (a plan per folder, extended per batch size) and
    # the per-layer profile.
    for n in 1 256; do
      if [ "$(left)" -gt 260 ]; then
        latency_run "${model}_$prec" $n 1 tuned --tune "$WORK/plans/${model}_$prec.plan" --profile 20
      fi
    done
  done
  if [ -f "$WORK/ref/$model/weights.safetensors" ] && [ "$(left)" -gt 150 ]; then
    say "torch baselines for $model"
    run "$OUT/logs/torch_latency_$model.log" 240 "${CMP[@]}" torch-latency --rows "$OUT/rows" \
      --model "$model" --weights "$WORK/ref/$model/weights.safetensors"
    grep -h '^torch' "$OUT/logs/torch_latency_$model.log"
  fi
  # The same runs again: the spread between the two is the noise of this machine today.
  if [ -d "$CHECK_DIR/${model}_fp16" ] && [ "$(left)" -gt 240 ]; then
    for n in 1 256; do latency_run "${model}_fp16" $n 1 repeat; done
  fi
done

# --- phase 4: reliability: memcheck and racecheck of every folder, wrong calls -------------
export OUT WORK PY NVCC CUDNN_INC CUDNN_LIB
RELIABILITY_BUDGET_S=$(( $(left) - 15 )) "$ROOT/tests/gpu/gpu_reliability.sh" "$CHECK_DIR"
say "reliability done"

# --- report ----------------------------------------------------------------------------------
"${CMP[@]}" report --rows "$OUT/rows" --out "$OUT" --env "$OUT/env.json"
status=$?
say "total ${SECONDS}s"
exit $status
