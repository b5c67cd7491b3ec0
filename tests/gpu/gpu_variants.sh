#!/usr/bin/env bash
# A/B check of variants of one generated model on the GPU machine, in one short call: is a
# code-generation change (e.g. --pad-input-channels) correct, and is it faster? GPU time is
# scarce, and the full tests/gpu/gpu_check.sh takes about eight minutes; this takes about two.
#
# VARIANTS_DIR holds generated folders of one model, named <anything> (zoc compile ... -o
# VARIANTS_DIR/<name>); MODEL is what models/export.py builds for the reference (resnet50, lenet).
# Each folder is built, checked against PyTorch fp32 (TF32 off) at batch 8 within its precision's
# band (gpu_compare.py), then timed with a CUDA graph at batch 1 and 256 with --profile, one
# run at a time. The table is printed last; full logs and rows go to $OUT.
#
# TUNE=1 times with the algorithms chosen by measurement at each batch (--tune, as the GPU
# check's "tuned" rows) instead of cuDNN's heuristics; the batch-8 accuracy check then runs
# tuned too, so that the engines tuning picks are the ones checked. BATCHES (default "1 256")
# are the timed batch sizes; RUN_TIMEOUT_S (default 120) bounds each run, tuning included.
#
# RACECHECK names variants to run under compute-sanitizer racecheck afterwards (batch 2, CUDA
# graph; up to four at a time, each within RACECHECK_TIMEOUT_S, default 240); their summary lines
# are printed with the table.
#
# Usage: tests/gpu/gpu_variants.sh MODEL VARIANTS_DIR
#        (environment: OUT, default ./variants_out; TUNE=1; BATCHES; RUN_TIMEOUT_S;
#         RACECHECK="name ..."; RACECHECK_TIMEOUT_S)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$1
DIR=$(cd "$2" && pwd)
OUT=${OUT:-$ROOT/variants_out}
WORK=/tmp/zoc_variants
mkdir -p "$OUT/logs" "$OUT/rows" "$WORK"/{build,ref,out,json,plans}
. "$ROOT/tools/gpu_env.sh"
gpu_env
CMP=("$PY" "$ROOT/tests/gpu/gpu_compare.py")
"${CMP[@]}" env --out "$OUT/env.json" >/dev/null 2>&1 &

build() {
  local name=$1 b=$WORK/build/$1
  cmake -S "$DIR/$name" -B "$b" "${GPU_CMAKE_ARGS[@]}" >"$OUT/logs/build_$name.log" 2>&1 &&
    cmake --build "$b" -j 8 >>"$OUT/logs/build_$name.log" 2>&1
}
NAMES=()
for d in "$DIR"/*/; do [ -f "$d/CMakeLists.txt" ] && NAMES+=("$(basename "$d")"); done
for name in "${NAMES[@]}"; do build "$name" & done
"$PY" "$ROOT/models/export.py" --model "$MODEL" --device cuda --torchscript none --batch 8 \
  --out "$WORK/ref" >"$OUT/logs/export.log" 2>&1 &
wait
for name in "${NAMES[@]}"; do
  bin=$WORK/build/$name/${MODEL}_main
  prec=$(sed -n 's/.*static constexpr const char\* kPrecision = "\([a-z0-9]*\)".*/\1/p' \
         "$DIR/$name/$MODEL.h")
  log=$OUT/logs/check_$name.log tune=()
  [ "${TUNE:-0}" = 1 ] && tune=(--tune "$WORK/plans/${name}_b8.plan")
  timeout "${RUN_TIMEOUT_S:-120}" "$bin" --weights "$WORK/ref/weights.safetensors" \
    --input "$WORK/ref/input.npy" --output "$WORK/out/$name.npy" --iters 0 --top 0 --graph \
    "${tune[@]}" >"$log" 2>&1
  "${CMP[@]}" compare --rows "$OUT/rows" --model "$name" --precision "$prec" --batch 8 \
    --mode graph --ref "$WORK/ref/output.npy" --out "$WORK/out/$name.npy" --log "$log" --rc $? \
    --what "run failed" | tee -a "$OUT/summary.txt"
  for n in ${BATCHES:-1 256}; do
    log=$OUT/logs/latency_${name}_b$n.log tune=()
    [ "${TUNE:-0}" = 1 ] && tune=(--tune "$WORK/plans/${name}_b$n.plan")
    timeout "${RUN_TIMEOUT_S:-120}" "$bin" --weights "$WORK/ref/weights.safetensors" --batch $n \
      --graph --top 0 \
      --iters 100 --warmup 20 --profile 20 "${tune[@]}" --json "$WORK/json/${name}_b$n.json" \
      >"$log" 2>&1
    "${CMP[@]}" latency-row --rows "$OUT/rows" --model "$name" --precision "$prec" --batch $n \
      --json "$WORK/json/${name}_b$n.json" --log "$log" --rc $? --graph >/dev/null
    printf '%-24s b%-4d %s |%s first layer: %s\n' "$name" $n \
      "$(grep -h '^latency' "$log" | sed 's/.*: //; s/, p99.*//')" \
      "$(grep -h '^tuned batch' "$log" | sed 's/.* in \([0-9.]* s\).*/ tuned in \1 |/')" \
      "$(grep -h '^ .* conv1 + ' "$log" | sed 's/  */ /g')" | tee -a "$OUT/summary.txt"
  done
done
for name in ${RACECHECK:-}; do
  while [ "$(jobs -rp | wc -l)" -ge 4 ]; do wait -n; done
  ( log=$OUT/logs/racecheck_$name.log
    timeout -k 10 "${RACECHECK_TIMEOUT_S:-240}" compute-sanitizer --tool racecheck --print-limit 30 \
      "$WORK/build/$name/${MODEL}_main" --weights "$WORK/ref/weights.safetensors" --batch 2 \
      --max-batch 2 --warmup 1 --iters 1 --top 0 --graph >"$log" 2>&1
    echo "exit status $?" >>"$log"
    printf 'racecheck %-24s %s (%s)\n' "$name" \
      "$(grep -h 'RACECHECK SUMMARY' "$log" | sed 's/.*RACECHECK SUMMARY: //')" \
      "$(tail -n 1 "$log")" | tee -a "$OUT/summary.txt" ) &
done
wait
cp -r "$WORK/plans" "$OUT/" 2>/dev/null  # what tuning chose, per variant and batch
"${CMP[@]}" report --rows "$OUT/rows" --out "$OUT" --env "$OUT/env.json" >/dev/null 2>&1
cat "$OUT/results.md" 2>/dev/null | tail -n 40
