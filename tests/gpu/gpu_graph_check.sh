#!/usr/bin/env bash
# The cuDNN graph-API prototype check, in one GPU-machine call: builds tests/gpu's cudnn_graph_test
# exactly as gpu_check.sh beside it builds the runtime tests (the torch wheel's cuDNN 9.19, linked by
# full path, its folder first on LD_LIBRARY_PATH, CMake and ninja from /opt/torch/.venv) and runs
# it. That test decides whether runtime/zoc/cudnn/graph.h (prebuilt backend-API plans, one
# cudnnBackendExecute per fused convolution) can replace the legacy
# cudnnConvolutionBiasActivationForward, whose ~100 us of host time per call dominates an fp16
# forward without a CUDA graph. It prints one line per case as it goes and a table last; the
# full output and the build log go to $OUT. cuDNN's runtime-fusion engines, should the heuristics
# pick one, compile kernels with NVRTC at plan build, so the toolkit's lib64 is appended to
# LD_LIBRARY_PATH (after the wheel's cuDNN) in case libnvrtc is not in the loader cache. Exit
# status: the test's (non-zero on any failure), 2 if the build failed.
#
# Usage: tests/gpu/gpu_graph_check.sh
# Environment: OUT (default ./gpu_graph_check_out), ZOC_GPU_WORK (scratch, default
# /tmp/zoc_gpu_graph_check), ZOC_GRAPH_TEST_BUDGET_S (seconds of test cases, default 85),
# ZOC_CUDNN_INCLUDE_DIR / ZOC_CUDNN_LIBRARY (another cuDNN than PyTorch's).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/gpu_graph_check_out}
WORK=${ZOC_GPU_WORK:-/tmp/zoc_gpu_graph_check}
mkdir -p "$OUT" "$WORK"

# The cuDNN PyTorch loads (the wheel's), as in gpu_check.sh; then the toolkit's lib64 for NVRTC.
. "$ROOT/tools/gpu_env.sh"
gpu_env "${ZOC_PYTHON:-}" "$WORK"
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"

say() { printf '[%4ds] %s\n' "$SECONDS" "$*"; }
say "cuDNN: $CUDNN_LIB"
say "nvrtc in the loader cache: $( (ldconfig -p 2>/dev/null | grep -o 'libnvrtc.so[^ ]*' | sort -u | paste -sd' ') || true)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/[gpu] /'

B=$WORK/build
say "configure + build cudnn_graph_test (log: $OUT/build.log)"
if ! timeout -k 10 240 cmake -S "$ROOT/tests/gpu" -B "$B" "${GPU_CMAKE_ARGS[@]}" \
       -DCMAKE_CUDA_COMPILER="$NVCC" -DCUDNN_ROOT="$CUDNN_DIR" >"$OUT/build.log" 2>&1 ||
   ! timeout -k 10 240 cmake --build "$B" -j 8 --target cudnn_graph_test cudnn_graph_header_check \
       >>"$OUT/build.log" 2>&1; then
  say "BUILD FAILED; last lines of the log:"
  tail -n 40 "$OUT/build.log"
  exit 2
fi
ldd "$B/cudnn_graph_test" | grep -E 'cudnn|cublas|cudart' | sed 's/^/[ldd] /'

say "running cudnn_graph_test (output: $OUT/cudnn_graph_test.log)"
(cd "$B" && timeout -k 10 300 ./cudnn_graph_test) 2>&1 | tee "$OUT/cudnn_graph_test.log"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && say "TIMED OUT after 300 s"
say "done: exit status $rc, total ${SECONDS}s"
exit "$rc"
