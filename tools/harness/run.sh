#!/usr/bin/env bash
# The benchmark harness in one command on the GPU machine: every implementation of ResNet-50
# (and LeNet; or, in the zoo modes, MobileNetV2 and EfficientNet-B0) on the same weights and
# input, timed, checked and plotted (README: "Benchmark harness"). GPU time is scarce and a
# device command may run 10 minutes, so this script only sets up the environment and hands over
# to bench.py, which builds, exports and measures against a deadline, then to report.py, which
# always runs and writes results.csv, the plots and summary.md, whatever happened before.
#
# The zoc folders come from tools/harness/prepare.sh on the CPU machine (GEN_DIR, shipped with
# the device tool's carry). zoc and the frameworks run the same cuDNN: the PyTorch wheel's,
# linked and put first on LD_LIBRARY_PATH (tools/gpu_env.sh, as for every GPU script).
#
# Usage: tools/harness/run.sh [MODE] [GEN_DIR]   (MODE: tools/harness/plan.py's docstring)
#   quick (default): one device command, builds included, under 9 minutes; its parts quick-main
#   and quick-jax, and the parts of the full sweep (batch-zoc, batch-torch, batch-cpp,
#   resolution, lenet, compile, compile-max-32, compile-max-256, jax), are meant for one command
#   each, into separate OUT folders merged by `report.py --raw OUT1 OUT2 ... --out DIR`; full
#   runs every part (raise HARNESS_BUDGET_S where no 10-minute limit applies). The zoo sweep
#   (MobileNetV2, EfficientNet-B0 at 224, batch 1..256; GEN_DIR from `prepare.sh zoo`): zoo (zoc,
#   PyTorch, LibTorch), zoo-tuned (zoc with --tune), zoo-jax (JAX/XLA, torch.compile default),
#   zoo-compile-1 and zoo-compile-256 (max-autotune), one command each, merged the same way. The
#   seg sweep (DeepLabV3-MobileNetV3-Large, FCN-ResNet50 at 520x520, batch 1, 8, 32; GEN_DIR
#   from `prepare.sh seg`): seg-zoc, seg-torch, seg-compile-{deeplabv3,fcn}-{fp16,fp32} and
#   seg-max-{deeplabv3,fcn}-{fp16,fp32}-{1,8,32} (max-autotune), one command each, merged the
#   same way (`plan.py steps seg` lists every part's steps).
# Environment: OUT (results; default ./harness_out), HARNESS_WORK (scratch, /tmp/zoc_harness),
#   HARNESS_BUDGET_S (540: everything, report included, ends by then), HARNESS_PYTHON,
#   HARNESS_DEVICE (cuda; cpu for a dry run of the plumbing without a GPU: PyTorch rows on the
#   CPU, LibTorch runners built against the local LibTorch, zoc rows skipped),
#   HARNESS_TORCH_PREFIX (CMake prefix of LibTorch; default: the python's torch), HARNESS_DRY=1
#   (a miniature of the sweep with short timing: with HARNESS_DEVICE=cpu, the dry run),
#   HARNESS_STEPS (comma-separated step names of the mode, `plan.py steps MODE`: only those, e.g.
#   the one a cut part left unmeasured on a fresh machine).
set -uo pipefail
START=$(date +%s.%N)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODE=${1:-quick}
GEN=${2:-$ROOT/harness_gen}
OUT=${OUT:-$ROOT/harness_out}
WORK=${HARNESS_WORK:-/tmp/zoc_harness}
BUDGET=${HARNESS_BUDGET_S:-540}
DEVICE=${HARNESS_DEVICE:-cuda}

. "$ROOT/tools/gpu_env.sh"
gpu_env "${HARNESS_PYTHON:-}" "$WORK"
export HARNESS_CUDNN_DIR=$CUDNN_DIR HARNESS_CUDNN_INC=$CUDNN_INC HARNESS_CUDNN_LIB=$CUDNN_LIB \
  HARNESS_NVCC=$NVCC
mkdir -p "$OUT"
rm -rf "$OUT/raw" "$OUT/logs" "$WORK/out"

elapsed() { "$PY" -c "import time; print(int(time.time() - $START))"; }
echo "[   0s] harness $MODE: GEN_DIR $GEN, OUT $OUT, python $PY, budget ${BUDGET}s"
# bench.py keeps its own deadline; this outer limit only guards against a hang, so that the
# report below still runs in time.
timeout -k 5 $((${BUDGET%.*} - 20)) "$PY" "$ROOT/tools/harness/bench.py" --mode "$MODE" \
  --gen "$GEN" --work "$WORK" --out "$OUT" --start "$START" --budget-s "$BUDGET" \
  --device "$DEVICE" --python "$PY" ${HARNESS_DRY:+--dry} ${HARNESS_STEPS:+--steps "$HARNESS_STEPS"}
bench_rc=$?
[ $bench_rc -eq 0 ] || echo "[$(printf '%4d' "$(elapsed)")s] bench.py ended with status $bench_rc"
"$PY" "$ROOT/tools/harness/report.py" --raw "$OUT" --out "$OUT"
report_rc=$?
# The device tool brings back only a handful of files (8): keep the headline ones loose (the zoo
# and seg modes' two latency plots in place of ResNet-50's) and put everything (raw
# per-iteration JSON, logs, all plots) into one archive. HARNESS_KEEP_FILES=1 leaves the folder
# as it is.
if [ "${HARNESS_KEEP_FILES:-0}" != 1 ]; then
  tar -czf "$WORK/bundle.tar.gz" -C "$OUT" . && mv "$WORK/bundle.tar.gz" "$OUT/bundle.tar.gz" &&
    find "$OUT" -mindepth 1 -maxdepth 1 ! -name bundle.tar.gz ! -name summary.md \
      ! -name results.csv ! -name readme_snippet.md ! -name env.json \
      ! -name latency_vs_batch.png ! -name mobilenet_v2_latency_vs_batch.png \
      ! -name efficientnet_b0_latency_vs_batch.png \
      ! -name deeplabv3_mobilenet_v3_large_latency_vs_batch.png \
      ! -name fcn_resnet50_latency_vs_batch.png -exec rm -rf {} +
fi
echo "[$(printf '%4d' "$(elapsed)")s] done: $OUT holds $(cd "$OUT" && echo *)"
[ $bench_rc -eq 0 ] && exit $report_rc
exit 1
