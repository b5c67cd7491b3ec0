#!/usr/bin/env bash
# GPU reliability check of generated code (issue 9), for the GPU machine: compute-sanitizer
# memcheck and racecheck of every generated folder (ResNet-50 and LeNet, each precision) run
# with a CUDA graph, and the wrong calls of tests/gpu/reliability/bad_calls.cpp (a batch above the
# maximum, batch 0, host and null pointers, corrupted weights files, a weights file given as the
# plan file) under memcheck, each expecting its documented error.
#
# It runs as the last phase of tests/gpu/gpu_check.sh and reuses what that built and exported:
# $WORK/build/<folder>/zoc_binary (and the folder's static library) and
# $WORK/ref/<model>/weights.safetensors. Each result becomes a row through tests/gpu/gpu_compare.py
# check-row in $OUT/rows, so the GPU check's report lists them. SANITIZE_MODELS (default
# "lenet resnet50") names the models whose folders are sanitized; the wrong calls use
# resnet50_fp16 and lenet_fp32 where present. Runs up to four sanitizer
# processes at a time and stops starting new ones when its time is up.
#
# Racecheck also runs tests/gpu/reliability/vendor_gemm.cpp, the same cuBLAS GEMM and cuDNN 1x1
# convolution with no zoc code, so that hazards inside NVIDIA's kernels can be told apart.
#
# Usage: tests/gpu/gpu_reliability.sh CHECK_DIR  (environment from gpu_check.sh: OUT, WORK, PY,
#        NVCC, CUDNN_INC, CUDNN_LIB; RELIABILITY_BUDGET_S seconds, default 240; SANITIZER_MAX_S,
#        the most one sanitizer run may take, default 240; SANITIZER_BATCH, default 2)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHECK_DIR=$1
: "${OUT:?}" "${WORK:?}" "${PY:?}" "${NVCC:?}" "${CUDNN_INC:?}" "${CUDNN_LIB:?}"
BUDGET=${RELIABILITY_BUDGET_S:-240}
T0=$SECONDS
CMP=("$PY" "$ROOT/tests/gpu/gpu_compare.py")
mkdir -p "$OUT/logs" "$WORK/reliability"
left() { echo $((BUDGET - (SECONDS - T0))); }
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$1" ]; do wait -n; done; }
say() { printf '[reliability %4ds] %s\n' "$((SECONDS - T0))" "$*"; }

# sanitize TOOL FOLDER: the runner's two checked forwards at batch SANITIZER_BATCH (also the
# maximum), and one timed, in a CUDA graph (captured, then replayed).
# CUDA API errors are not reported: the runtime's recorded launches count a captured kernel's
# parameters by asking cuFuncGetParamInfo for indices until it answers CUDA_ERROR_INVALID_VALUE,
# the only way the driver API offers, which memcheck would flag once per kernel; zoc checks every
# CUDA status itself, and memory errors and hazards are still all reported.
SANITIZER_FLAGS=(--report-api-errors no --print-limit 30)
sanitize() {
  local tool=$1 name=$2 model=${2%_*} log=$OUT/logs/${1}_$2.log rc t
  t=$(( $(left) - 10 )); [ "$t" -gt "${SANITIZER_MAX_S:-240}" ] && t=${SANITIZER_MAX_S:-240}
  if [ ! -f "$WORK/build/$name/zoc_binary" ]; then
    echo "skipped: no binary (build failed)" >"$log"; rc=1
  elif [ "$t" -lt 30 ]; then
    echo "skipped: no time left" >"$log"; rc=124
  else
    timeout -k 10 "$t" compute-sanitizer --tool "$tool" "${SANITIZER_FLAGS[@]}" \
      "$(cat "$WORK/build/$name/zoc_binary")" --weights "$WORK/ref/$model/weights.safetensors" \
      --batch "${SANITIZER_BATCH:-2}" --max-batch "${SANITIZER_BATCH:-2}" --warmup 1 --iters 1 \
      --top 0 --graph >"$log" 2>&1
    rc=$?
    echo "exit status $rc after $((SECONDS - T0))s" >>"$log"
  fi
  "${CMP[@]}" check-row --rows "$OUT/rows" --kind sanitizer --name "${tool}_$name" --log "$log" \
    --rc $rc >>"$OUT/logs/compare.log" 2>&1
}

# bad_calls FOLDER: builds tests/gpu/reliability/bad_calls.cpp against the folder, runs it under
# memcheck with corrupted copies of the model's weights.
bad_calls() {
  local name=$1 model=${1%_*} log=$OUT/logs/bad_calls_$1.log rc=1 dir=$WORK/reliability/$1
  local weights=$WORK/ref/$model/weights.safetensors lib cls
  mkdir -p "$dir/bad"
  lib=$(find "$WORK/build/$name" -maxdepth 1 -name "lib$model.a" | head -1)
  cls=$(sed -n 's/^class \([A-Za-z0-9_]*\) .*/\1/p' "$CHECK_DIR/$name/$model.h" | head -1)
  if [ -z "$lib" ] || [ -z "$cls" ] || [ ! -f "$weights" ]; then
    echo "no library, class or weights for $name" >"$log"
  elif ! "$NVCC" -std=c++20 -O1 -I "$CHECK_DIR/$name" -I "$CUDNN_INC" \
         -DZOC_MODEL_HEADER="\"$model.h\"" -DZOC_MODEL_CLASS="$cls" \
         "$ROOT/tests/gpu/reliability/bad_calls.cpp" "$lib" -L"$(dirname "$CUDNN_LIB")" \
         -l:"$(basename "$CUDNN_LIB")" -lcublas -lcuda \
         -o "$dir/bad_calls" >"$log" 2>&1; then
    echo "build of bad_calls failed" >>"$log"
  elif ! "$PY" "$ROOT/tests/gpu/reliability/corrupt_weights.py" "$weights" "$dir/bad" >>"$log" 2>&1; then
    echo "corrupt_weights.py failed" >>"$log"
  else
    timeout -k 10 200 compute-sanitizer --tool memcheck "${SANITIZER_FLAGS[@]}" "$dir/bad_calls" "$weights" \
      "$dir/bad/truncated.safetensors" "end past the" \
      "$dir/bad/bad_header.safetensors" "header is not valid JSON" \
      "$dir/bad/header_past_end.safetensors" "header length" \
      "$dir/bad/nan.safetensors" "NaN or infinite values" \
      "$dir/bad/renamed.safetensors" "missing tensor" >>"$log" 2>&1
    rc=$?
  fi
  "${CMP[@]}" check-row --rows "$OUT/rows" --kind test --name "bad_calls_$name" --log "$log" \
    --rc $rc >>"$OUT/logs/compare.log" 2>&1
  "${CMP[@]}" check-row --rows "$OUT/rows" --kind sanitizer --name "memcheck_bad_calls_$name" \
    --log "$log" --rc $rc >>"$OUT/logs/compare.log" 2>&1
  say "bad calls $name: $(tail -n 1 "$log")"
}

# vendor_gemm PRECISION: the library calls alone under racecheck (see the top comment).
vendor_gemm() {
  local prec=$1 log=$OUT/logs/racecheck_vendor_gemm_$1.log rc=1 bin=$WORK/reliability/vendor_gemm
  if [ -x "$bin" ] || "$NVCC" -std=c++17 -O1 -I "$CUDNN_INC" "$ROOT/tests/gpu/reliability/vendor_gemm.cpp" \
       -L"$(dirname "$CUDNN_LIB")" -l:"$(basename "$CUDNN_LIB")" -lcublas -o "$bin" >"$log" 2>&1; then
    timeout -k 10 120 compute-sanitizer --tool racecheck "${SANITIZER_FLAGS[@]}" "$bin" "$prec" >"$log" 2>&1
    rc=$?
  else
    echo "build of vendor_gemm failed" >>"$log"
  fi
  "${CMP[@]}" check-row --rows "$OUT/rows" --kind sanitizer --name "racecheck_vendor_gemm_$prec" \
    --log "$log" --rc $rc >>"$OUT/logs/compare.log" 2>&1
  say "vendor GEMM $prec: $(grep -h 'RACECHECK SUMMARY' "$log" || tail -n 1 "$log")"
}

FOLDERS=()
for d in "$CHECK_DIR"/*/; do [ -f "$d/CMakeLists.txt" ] && FOLDERS+=("$(basename "$d")"); done
vendor_gemm fp16 && vendor_gemm bf16 &
for name in resnet50_fp16 lenet_fp32; do
  [ -d "$CHECK_DIR/$name" ] && { throttle 4; bad_calls "$name" & }
done
# LeNet first (fast), then ResNet-50; memcheck before racecheck. racecheck of ResNet-50 (slow:
# every shared-memory access of cuDNN's kernels) two at a time; in fp32 and fp16 only unless
# RACECHECK_ALL=1 (RACECHECK_PARALLEL of them at a time, default 2).
for model in ${SANITIZE_MODELS-lenet resnet50}; do
  for tool in memcheck racecheck; do
    for prec in fp32 tf32 fp16 bf16; do
      name=${model}_$prec
      [ -d "$CHECK_DIR/$name" ] || continue
      slow=0; [ "$tool" = racecheck ] && [ "$model" != lenet ] && [[ "$model" != *_layers ]] && slow=1
      [ $slow = 1 ] && [ "${RACECHECK_ALL:-0}" != 1 ] && [ "$prec" != fp32 ] && [ "$prec" != fp16 ] && continue
      throttle $((slow ? ${RACECHECK_PARALLEL:-2} : 4))
      sanitize "$tool" "$name" &  # records a SKIP row once the time is up
    done
  done
done
wait
say "done: $(grep -l 'ERROR SUMMARY: 0 errors' "$OUT"/logs/{memcheck,racecheck}_*.log 2>/dev/null | wc -l) sanitizer runs with 0 errors"
