#!/usr/bin/env bash
# The INT8 probe of issue 35 in one GPU-machine call: builds tests/gpu/int8_probe.cu with nvcc
# against the cuDNN PyTorch loads (the wheel's, through tools/gpu_env.sh, as every GPU script),
# runs it on ResNet-50's convolution shapes at batch 256 and at batch 1, and, when Nsight Compute
# is installed, once more under ncu on two shapes so that the kernel names say which
# instructions the int8 engines use (sm90 wgmma / IMMA, or older paths). The question it answers:
# does cuDNN's graph API run an int8 convolution with a fused requantizing epilogue (per-channel
# scale, bias, ReLU, int8 out; optionally an int8 residual) on sm_90, exactly, and how fast next
# to zoc's fp16 graph? The runtime-fusion engines compile with NVRTC at plan build, so the
# toolkit's lib64 is appended to LD_LIBRARY_PATH in case libnvrtc is not in the loader cache.
#
# Output, all under $OUT/int8_probe/: build.log, probe_b256.log, probe_b1.log (each ends with
# the table), json_b*/ (each plan's CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION), ncu.log and
# ncu_metrics.txt. The whole run keeps under INT8_PROBE_BUDGET_S seconds (default 230): each
# step's timeout is cut to what is left. Exit status: 2 if the build failed, else the batch-256
# run's (non-zero only when nothing ran).
#
# Usage (repository root, GPU machine): OUT=$OUT tests/gpu/int8_probe.sh
# Environment: OUT (default ./int8_probe_out), ZOC_GPU_WORK (scratch, default /tmp/zoc_int8_probe),
# INT8_ENGINES (int8 engine configs timed per shape at batch 256, default 2),
# INT8_PROBE_BUDGET_S, ZOC_CUDNN_INCLUDE_DIR / ZOC_CUDNN_LIBRARY (another cuDNN than PyTorch's).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/int8_probe_out}
D=$OUT/int8_probe
WORK=${ZOC_GPU_WORK:-/tmp/zoc_int8_probe}
BUDGET=${INT8_PROBE_BUDGET_S:-230}
mkdir -p "$D" "$WORK"

. "$ROOT/tools/gpu_env.sh"
gpu_env "${ZOC_PYTHON:-}" "$WORK"  # also makes $WORK/cudnn_link/libcudnn.so for -lcudnn
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"

say() { printf '[%4ds] %s\n' "$SECONDS" "$*" | tee -a "$D/steps.log"; }
# The timeout for a step: its own cap, or what is left of the budget (at least 5 s).
left() {
  local l=$((BUDGET - SECONDS))
  [ "$l" -lt 5 ] && l=5
  if [ "$l" -lt "$1" ]; then echo "$l"; else echo "$1"; fi
}

say "nvcc: $NVCC ($("$NVCC" --version | tail -1))"
say "cuDNN: $CUDNN_LIB (headers $CUDNN_INC)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 |
  sed 's/^/[gpu] /' | tee -a "$D/steps.log"

BIN=$WORK/int8_probe
say "build (log: $D/build.log)"
if ! timeout -k 5 "$(left 150)" "$NVCC" -arch=sm_90 -std=c++17 -O3 -I "$CUDNN_INC" \
       -I "$ROOT/runtime" -I "$ROOT/tests/gpu" -Xcompiler=-Wall,-Wextra \
       "$ROOT/tests/gpu/int8_probe.cu" -o "$BIN" -L"$WORK/cudnn_link" -lcudnn \
       -Xlinker -rpath -Xlinker "$CUDNN_LIB_DIR" >"$D/build.log" 2>&1; then
  say "BUILD FAILED; last lines of the log:"
  tail -n 40 "$D/build.log"
  exit 2
fi
ldd "$BIN" | grep -E 'cudnn|cudart' | sed 's/^/[ldd] /' | tee -a "$D/steps.log"

mkdir -p "$D/json_b256" "$D/json_b1"
say "batch 256 (log: $D/probe_b256.log)"
timeout -k 5 "$(left 130)" "$BIN" --batch 256 --engines "${INT8_ENGINES:-2}" \
  --json-dir "$D/json_b256" 2>&1 | tee "$D/probe_b256.log"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && say "batch 256 TIMED OUT"

say "batch 1 (log: $D/probe_b1.log)"
timeout -k 5 "$(left 60)" "$BIN" --batch 1 --check-batch 1 --warmup 20 --iters 100 \
  --json-dir "$D/json_b1" 2>&1 | tee "$D/probe_b1.log"
[ "${PIPESTATUS[0]}" = 124 ] && say "batch 1 TIMED OUT"

NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null |
      head -1 || true)
if [ -z "$NCU" ] || [ ! -x "$NCU" ]; then
  say "ncu not found: no kernel names"
elif [ $((BUDGET - SECONDS)) -lt 30 ]; then
  say "no time left for ncu"
else
  # Tensor-pipe metrics this ncu knows for Hopper (gmma = wgmma, imma = int8 mma.sync).
  "$NCU" --query-metrics --chip gh100 >"$D/ncu_metrics.txt" 2>&1 || true
  metrics=gpu__time_duration.sum
  for m in sm__inst_executed_pipe_tensor_op_gmma sm__inst_executed_pipe_tensor_op_imma \
           sm__inst_executed_pipe_tensor_op_hmma; do
    grep -q "^$m " "$D/ncu_metrics.txt" && metrics="$metrics,$m.sum"
  done
  say "ncu ($NCU), metrics $metrics (log: $D/ncu.log)"
  probe_args=(--batch 256 --only "l1_3x3,l3_1x1" --warmup 0 --iters 1 --check-batch 0
              --no-residual)
  timeout -k 5 "$(left 120)" "$NCU" --print-summary per-kernel --launch-count 60 \
    --metrics "$metrics" "$BIN" "${probe_args[@]}" >"$D/ncu.log" 2>&1
  nrc=$?
  if [ "$nrc" != 0 ] && [ "$metrics" != gpu__time_duration.sum ] &&
     [ $((BUDGET - SECONDS)) -gt 30 ]; then
    say "ncu exit $nrc with tensor metrics; again with the duration only"
    timeout -k 5 "$(left 120)" "$NCU" --print-summary per-kernel --launch-count 60 \
      --metrics gpu__time_duration.sum "$BIN" "${probe_args[@]}" >"$D/ncu.log" 2>&1
    nrc=$?
  fi
  say "ncu exit status $nrc; kernels (launches, name, grid x block):"
  grep -E 'Context [0-9]+, Stream [0-9]+' "$D/ncu.log" | sed -E 's/^ +//; s/, Context.*//' |
    sort | uniq -c | head -40 | tee -a "$D/steps.log"
fi
say "done: exit status $rc, total ${SECONDS}s"
exit "$rc"
