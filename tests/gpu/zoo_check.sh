#!/usr/bin/env bash
# The CNN zoo on the GPU (issue 20): every folder tests/gpu/prepare_zoo_check.sh generated, built
# and run by tests/gpu/gpu_check.sh in fp32 and fp16 at batch 1, 8 and 64 (and 8 in a CUDA graph
# built for 64) against PyTorch's fp32 output on weights exported here by models/export.py, and
# zoo_layers against zoc's interpreter, under compute-sanitizer memcheck and racecheck too. The
# 17 models take longer than one device command may run, so they come in two parts, each one
# call (run back to back; each builds what it runs).
# Part dw is the models with depthwise convolutions (zoc's own kernel) or activations other than
# ReLU in a convolution's epilogue (cuDNN's graph API in fp16) and their test models, in one call. Usage: tests/gpu/zoo_check.sh 1|2|dw [CHECK_DIR (default zoo_check)]
# (OUT as gpu_check.sh's)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case "${1:-}" in
  1) models="zoo_layers depthwise_layers epilogue_layers constant_operand_layers resnet152 resnext50_32x4d wide_resnet50_2 regnet_x_400mf squeezenet1_1
             mobilenet_v2 mobilenet_v3_small efficientnet_b0"
     sanitize="zoo_layers depthwise_layers epilogue_layers constant_operand_layers" ;;
  2) models="regnet_y_400mf densenet121 googlenet inception_v3 shufflenet_v2_x1_0 mnasnet0_5
             convnext_tiny alexnet vgg11_bn"
     sanitize= ;;
  dw) models="zoo_layers depthwise_layers epilogue_layers constant_operand_layers mobilenet_v2 mobilenet_v3_small
              efficientnet_b0 regnet_y_400mf shufflenet_v2_x1_0 mnasnet0_5 convnext_tiny"
      sanitize="zoo_layers depthwise_layers epilogue_layers constant_operand_layers" ;;
  *) echo "usage: $0 1|2|dw [CHECK_DIR]" >&2; exit 2 ;;
esac
export ZOC_GPU_MODELS=$(echo $models) ZOC_SANITIZE_MODELS=$sanitize ZOC_LATENCY_MODELS=
export ZOC_GPU_TUNED=0 ZOC_EXPORT_TORCHSCRIPT=none
exec "$ROOT/tests/gpu/gpu_check.sh" "${2:-$ROOT/zoo_check}"
