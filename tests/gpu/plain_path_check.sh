#!/usr/bin/env bash
# The plain path on the GPU (issue 33), in one device command: what a forward() without a CUDA
# graph asks of cuDNN and costs on the host, and how its latency compares with graph replay.
#
# For every folder of PLAIN_DIR (tests/gpu/prepare_plain_path_check.sh writes plain_check/):
#   1. builds it, and tests/gpu/plain_path/forward_calls.cpp against it;
#   2. forward_calls --count, with cuDNN's API log on (CUDNN_LOGLEVEL_DBG=3): no plan build,
#      finalize, heuristics query or descriptor creation in a plain forward, nor when switching
#      between prepared batch sizes; forward_calls --time: host CPU per plain forward at batch 1
#      within PLAIN_HOST_LIMIT_US (300), default options replay graphs, replay and plain outputs
#      equal, buffers changing on every call and a caller's own capture handled;
# A folder whose name says legacy (--conv-api legacy) is the comparison: its checks are printed
# and not counted. Then
#   3. the runner at every batch of the harness's quick sweep, with and without a CUDA graph
#      (latency median and host CPU per forward), seeded weights and input.
# Prints one table last; full logs and results.json go to $OUT. Exit status 1 on any FAIL.
# Usage: tests/gpu/plain_path_check.sh [PLAIN_DIR]   (environment: OUT, PLAIN_WORK,
#        PLAIN_HOST_LIMIT_US, PLAIN_STAGES: some of build,check,latency, default all three)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(cd "${1:-$ROOT/plain_check}" && pwd) || exit 2
OUT=${OUT:-$ROOT/plain_check_out}
WORK=${PLAIN_WORK:-/tmp/zoc_plain_check}
LIMIT=${PLAIN_HOST_LIMIT_US:-300}
mkdir -p "$OUT/logs" "$WORK"
. "$ROOT/tools/gpu_env.sh"
gpu_env "" "$WORK"
say() { printf '[%4ds] %s\n' "$SECONDS" "$*"; }
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$1" ]; do wait -n; done; }

build() {  # NAME: the folder and forward_calls against it
  local name=$1 b=$WORK/build/$1 log=$OUT/logs/build_$1.log model cls
  model=$(sed -n 's/^project(\([A-Za-z0-9_]*\) .*/\1/p' "$DIR/$name/CMakeLists.txt")
  cls=$(sed -n 's/^class \([A-Za-z0-9_]*\) .*/\1/p' "$DIR/$name/$model.h" | head -1)
  { cmake -S "$DIR/$name" -B "$b" "${GPU_CMAKE_ARGS[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" \
      -DCUDNN_ROOT="$CUDNN_DIR" && cmake --build "$b" -j 4 &&
    "$NVCC" -std=c++20 -O2 -I "$DIR/$name" -I "$CUDNN_INC" -DZOC_MODEL_HEADER="\"$model.h\"" \
      -DZOC_MODEL_CLASS="$cls" "$ROOT/tests/gpu/plain_path/forward_calls.cpp" "$b/lib$model.a" \
      -L"$CUDNN_LIB_DIR" -l:"$(basename "$CUDNN_LIB")" -lcublas -lcuda -o "$b/forward_calls"; } \
    >"$log" 2>&1 || { echo "BUILD FAILED" >>"$log"; return 1; }
  echo "$b/${model}_main" >"$b/runner"
}

say "plain-path check of $DIR on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
names=()
for d in "$DIR"/*/; do names+=("$(basename "$d")"); done
STAGES=${PLAIN_STAGES:-build,check,latency}
has() { [[ ",$STAGES," == *",$1,"* ]]; }
if has build; then
  for n in "${names[@]}"; do throttle 6; build "$n" & done
  wait
fi
say "built: $(for n in "${names[@]}"; do [ -f "$WORK/build/$n/runner" ] && printf '%s ' "$n"; done)"

status=0
touch "$OUT/checks.txt"
for n in "${names[@]}"; do
  has check || break
  b=$WORK/build/$n
  [ -f "$b/runner" ] || { echo "FAIL build $n" | tee -a "$OUT/checks.txt"; status=1; continue; }
  big=32; [[ $n == lenet* ]] && big=256
  CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stderr timeout 300 "$b/forward_calls" --count "" $big \
    >"$OUT/logs/count_$n.log" 2>"$WORK/count_$n.err"
  timeout 300 "$b/forward_calls" --time "" "$LIMIT" >"$OUT/logs/time_$n.log" 2>&1
  for mode in count time; do
    grep -q "passed, .* failed" "$OUT/logs/${mode}_$n.log" ||
      echo "$n: FAIL forward_calls --$mode did not finish" >>"$OUT/checks.txt"
  done
  # A folder built with --conv-api legacy is the comparison: its failures are what the legacy
  # fused call costs, reported but not counted.
  tag=""; [[ $n == *legacy* ]] && tag="(comparison, not counted) "
  sed "s/^/$n: $tag/" "$OUT/logs/count_$n.log" "$OUT/logs/time_$n.log" | grep -E "PASS|FAIL" |
    sed "s/^\(.*not counted) \)FAIL/\1fails/" >>"$OUT/checks.txt"
  say "$n: $(cat "$OUT/logs/count_$n.log" "$OUT/logs/time_$n.log" | grep -c PASS) passed," \
    "$(cat "$OUT/logs/count_$n.log" "$OUT/logs/time_$n.log" | grep -c FAIL) failed" \
    "(cuDNN log to stderr: $(wc -c <"$WORK/count_$n.err") bytes)"
done

# Latency with and without a CUDA graph, one run at a time.
mkdir -p "$WORK/lat"
for n in "${names[@]}"; do
  has latency || break
  b=$WORK/build/$n
  [ -f "$b/runner" ] || continue
  batches=1,8,32,64,256; [[ $n == lenet* ]] && batches=1,16,256,1024
  for mode in graph no-graph; do
    timeout 240 "$(cat "$b/runner")" --batches $batches --warmup 20 --iters 200 --max-time-ms 400 \
      --top 0 --$mode --json "$WORK/lat/lat_${n}_$mode.json" >"$OUT/logs/lat_${n}_$mode.log" 2>&1 ||
      { echo "FAIL latency $n $mode" >>"$OUT/checks.txt"; status=1; }
  done
done
"$PY" - "$OUT" "$WORK/lat" >"$WORK/latency_table.txt" <<'PYEOF'
import glob, json, os, sys
out, lat = sys.argv[1], sys.argv[2]
rows = {}
for f in sorted(glob.glob(os.path.join(lat, "lat_*.json"))):
    name = os.path.basename(f)[4:-5]
    folder, mode = name.rsplit("_", 1)
    try:
        j = json.load(open(f))
    except ValueError:
        continue
    for p in j.get("points", []):
        rows.setdefault(folder, {}).setdefault(p["batch"], {})[mode] = (
            p["latency_ms"]["median"], p["host_cpu_us"]["median"])
lines = ["| folder | batch | graph ms | plain ms | plain / graph | plain host CPU us |",
         "|---|---|---|---|---|---|"]
for folder, by_batch in rows.items():
    for b, m in sorted(by_batch.items()):
        g, p = m.get("graph"), m.get("no-graph")
        if g and p:
            lines.append("| %s | %d | %.3f | %.3f | %.2f | %.0f |" % (folder, b, g[0], p[0],
                                                                     p[0] / g[0], p[1]))
json.dump(rows, open(os.path.join(out, "results.json"), "w"), indent=1)
open(os.path.join(out, "latency.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PYEOF
# Everything but the summary in one archive (the device tool brings back a few files).
tar -czf "$WORK/raw.tar.gz" -C "$WORK" lat -C "$OUT" logs && mv "$WORK/raw.tar.gz" "$OUT/" &&
  rm -rf "$OUT/logs"
echo
cat "$OUT/checks.txt"
echo
cat "$WORK/latency_table.txt"
echo "plain-path check: $(grep -c PASS "$OUT/checks.txt") PASS, $(grep -c FAIL "$OUT/checks.txt") FAIL"
[ "$(grep -c FAIL "$OUT/checks.txt")" = 0 ] || status=1
exit $status
