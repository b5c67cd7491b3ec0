#!/usr/bin/env bash
# A tensor and a constant, constant padding and reshapes on the GPU in one device command (issue
# 36):
#   1. tests/backend/constant_operand_layers.yaml (zoc's const_op kernel in every form, input
#      normalization, timm's LearnableAffineBlock, the pad kernel, reshapes and flattens that
#      copy between stored orders) in fp32 and fp16 against
#      zoc's interpreter, under compute-sanitizer too, with tests/gpu's kernel and runtime tests:
#      the folder zoo_check/ that `REF_BATCH=16 tests/gpu/prepare_zoo_check.sh
#      build/compiler/zoc constant_operand_layers` wrote here;
#   2. the export corpus's models these layers unblock (hgnetv2_b0, mobileone_s0,
#      tf_efficientnet_b0, resnest14d, skresnet18) against PyTorch's fp32: the folder that
#      `OUT_DIR=corpus_check tests/gpu/prepare_corpus_check.sh CORPUS ts17 hgnetv2_b0 ...` wrote.
# Usage: tests/gpu/constant_operand_check.sh [CORPUS_CHECK_DIR (default corpus_check)]
#        (OUT: where the checks write, as OUT/layers and OUT/corpus; LAYERS=0 skips the first)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RESULTS=${OUT:-$ROOT/constant_operand_check_out}
rc=0
[ "${LAYERS:-1}" = 0 ] ||
OUT=$RESULTS/layers ZOC_GPU_WORK=/tmp/zoc_constant_layers ZOC_GPU_BUDGET_S=${LAYERS_BUDGET_S:-300} \
  ZOC_GPU_MODELS=constant_operand_layers ZOC_SANITIZE_MODELS=constant_operand_layers \
  ZOC_LATENCY_MODELS= ZOC_GPU_BATCHES="1 ${REF_BATCH:-16}" ZOC_GPU_GRAPH_BATCH=${REF_BATCH:-16} \
  ZOC_GPU_TUNED=0 ZOC_EXPORT_TORCHSCRIPT=none "$ROOT/tests/gpu/gpu_check.sh" "$ROOT/zoo_check" ||
  rc=1
OUT=$RESULTS/corpus ZOC_GPU_WORK=/tmp/zoc_constant_corpus ZOC_GPU_BUDGET_S=420 \
  "$ROOT/tests/gpu/corpus_check.sh" "${1:-$ROOT/corpus_check}" || rc=1
exit $rc
