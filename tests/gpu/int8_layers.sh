#!/usr/bin/env bash
# Issue 35's per-layer analysis in one GPU-machine call: builds tests/gpu/int8_layers.cu with
# nvcc against the cuDNN PyTorch loads (tools/gpu_env.sh, as every GPU script) and runs it at
# the batch sizes given: every ResNet-50 convolution in int8 and in fp16, each tuned over
# cuDNN's offered configs, the int8 winners checked, and the whole-network sums. The question
# it answers: what throughput can an int8 ResNet-50 built on cuDNN's kernels reach against
# tuned fp16, and which layers hold it back (TOPS and GB/s against the peaks)?
#
# Output under $OUT/int8_layers/: build.log, layers_b<N>.log (each ends with the table and the
# sums), steps.log. Exit status: 2 if the build failed, else the last run's.
#
# Usage (repository root, GPU machine): OUT=$OUT tests/gpu/int8_layers.sh [BATCH ...]
# (default: 256). Environment: INT8_ENGINES / FP16_ENGINES (configs timed per layer, default
# 12), INT8_LAYERS_BUDGET_S (per batch; after it, one config per remaining layer; default 400),
# INT8_PEAKS (INT8_TOPS,FP16_TFLOPS,GB/s; default an H200 SXM's 1979,989,4800),
# INT8_LAYERS_ARGS (more options, e.g. --only +z --acc int32; LOG_TAG names the logs),
# ZOC_GPU_WORK (scratch), ZOC_CUDNN_INCLUDE_DIR / ZOC_CUDNN_LIBRARY.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/int8_layers_out}
D=$OUT/int8_layers
WORK=${ZOC_GPU_WORK:-/tmp/zoc_int8_layers}
BUDGET=${INT8_LAYERS_BUDGET_S:-400}
mkdir -p "$D" "$WORK"

. "$ROOT/tools/gpu_env.sh"
gpu_env "${ZOC_PYTHON:-}" "$WORK"  # also makes $WORK/cudnn_link/libcudnn.so for -lcudnn
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"  # NVRTC for runtime fusion

say() { printf '[%4ds] %s\n' "$SECONDS" "$*" | tee -a "$D/steps.log"; }
say "nvcc: $NVCC ($("$NVCC" --version | tail -1)); cuDNN: $CUDNN_LIB"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 |
  sed 's/^/[gpu] /' | tee -a "$D/steps.log"

BIN=$WORK/int8_layers
if ! timeout -k 5 150 "$NVCC" -arch=sm_90 -std=c++17 -O3 -I "$CUDNN_INC" -I "$ROOT/runtime" \
       -I "$ROOT/tests/gpu" -Xcompiler=-Wall,-Wextra "$ROOT/tests/gpu/int8_layers.cu" -o "$BIN" \
       -L"$WORK/cudnn_link" -lcudnn -Xlinker -rpath -Xlinker "$CUDNN_LIB_DIR" \
       >"$D/build.log" 2>&1; then
  say "BUILD FAILED"
  tail -n 40 "$D/build.log"
  exit 2
fi
rc=0
for b in "${@:-256}"; do
  say "batch $b (log: $D/layers_b$b${LOG_TAG:-}.log)"
  timeout -k 5 $((BUDGET + 120)) "$BIN" --batch "$b" --engines "${INT8_ENGINES:-12}" \
    --fp16-engines "${FP16_ENGINES:-12}" --budget-s "$BUDGET" \
    --peaks "${INT8_PEAKS:-1979,989,4800}" ${INT8_LAYERS_ARGS:-} \
    2>&1 | tee "$D/layers_b$b${LOG_TAG:-}.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 124 ] && say "batch $b TIMED OUT"
done
say "done: exit status $rc, total ${SECONDS}s"
exit "$rc"
