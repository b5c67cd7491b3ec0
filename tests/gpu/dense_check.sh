#!/usr/bin/env bash
# The dense-prediction layers on the GPU in one device command (issue 37):
#   1. tests/backend/dense_layers.yaml (every upsampling form, one of them writing a model output
#      straight to the caller's rows, transposed convolutions, five outputs) in fp32 and fp16
#      against zoc's interpreter, under compute-sanitizer too: the folder zoo_check/ that
#      `REF_BATCH=B tests/gpu/prepare_zoo_check.sh build/compiler/zoc dense_layers` wrote here
#      (batch 1, B and B in a CUDA graph; the same REF_BATCH here, default 4);
#   2. the segmentation networks of the export corpus against PyTorch's fp32, every output and
#      the argmax map: each folder that `CHECK_BATCH=2 OUT_DIR=DIR tests/gpu/prepare_corpus_check.sh
#      CORPUS ROUTE unet fcn_resnet50 ...` wrote here (one route per folder).
# Usage: tests/gpu/dense_check.sh [CORPUS_CHECK_DIR... (default corpus_check)]
#        (OUT: where the checks write their results, as OUT/layers and OUT/<folder's name>;
#        DENSE_LAYERS=0 skips the first check; CORPUS_BUDGET_S bounds each folder's)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RESULTS=${OUT:-$ROOT/dense_check_out}
rc=0
if [ "${DENSE_LAYERS:-1}" != 0 ]; then
  OUT=$RESULTS/layers ZOC_GPU_WORK=/tmp/zoc_dense_layers ZOC_GPU_BUDGET_S=${LAYERS_BUDGET_S:-300} \
    ZOC_GPU_MODELS=dense_layers ZOC_SANITIZE_MODELS=dense_layers ZOC_LATENCY_MODELS= \
    ZOC_GPU_BATCHES="1 ${REF_BATCH:-4}" ZOC_GPU_GRAPH_BATCH=${REF_BATCH:-4} \
    ZOC_GPU_TUNED=0 ZOC_EXPORT_TORCHSCRIPT=none "$ROOT/tests/gpu/gpu_check.sh" "$ROOT/zoo_check" || rc=1
fi
[ $# -gt 0 ] || set -- "$ROOT/corpus_check"
for dir in "$@"; do
  name=$(basename "$dir")
  OUT=$RESULTS/$name ZOC_GPU_WORK=/tmp/zoc_dense_$name ZOC_GPU_BUDGET_S=${CORPUS_BUDGET_S:-360} \
    "$ROOT/tests/gpu/corpus_check.sh" "$dir" || rc=1
done
exit $rc
