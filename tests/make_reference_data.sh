#!/usr/bin/env bash
# Writes the PyTorch reference data the numerical tests compare against (CTest fixture
# `reference_data`). Usage: tests/make_reference_data.sh OUT_DIR [PYTHON]
set -euo pipefail
out=$1
py=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")/.." && pwd)
export_model() {
  local dir=$1; shift
  if [ -f "$out/$dir/output.npy" ] && [ "$out/$dir/output.npy" -nt "$here/models/export.py" ]; then
    return 0
  fi
  "$py" "$here/models/export.py" --out "$out/$dir" --torchscript none --seed 0 --batch 2 "$@"
}
export_model lenet --model lenet
export_model resnet18_64 --model resnet18 --resolution 64
export_model resnet50_64 --model resnet50 --resolution 64
export_model resnet50_1ch_10cls_32 --model resnet50 --resolution 32 --in-channels 1 --num-classes 10
# TorchScript archives, scripted and traced, for the TorchScript frontend's tests
# (tests/numeric/torchscript_test.cpp), and the small models of tests/torchscript/.
export_model resnet18_64_ts --model resnet18 --resolution 64 --torchscript both
export_model resnet50_64_ts --model resnet50 --resolution 64 --torchscript both
export_model lenet_ts --model lenet --torchscript both
# ONNX files, opsets 13 and 17 with a dynamic batch (and, for ResNet-18, one with BatchNorm
# folded by the exporter), for the ONNX frontend's tests (tests/numeric/onnx_test.cpp).
export_model resnet18_64_onnx --model resnet18 --resolution 64 --onnx 13,17 --onnx-folded
export_model resnet50_64_onnx --model resnet50 --resolution 64 --onnx 13,17
export_model lenet_onnx --model lenet --onnx 13,17
ts_models="$here/tests/torchscript/make_models.py"
if [ ! -f "$out/torchscript/unsupported/output.npy" ] ||
   [ "$ts_models" -nt "$out/torchscript/unsupported/output.npy" ]; then
  "$py" "$ts_models" --out "$out/torchscript"
fi
alias_models="$here/tests/torchscript/make_aliasing.py"
if [ ! -f "$out/torchscript/aliasing/cases.txt" ] ||
   [ "$alias_models" -nt "$out/torchscript/aliasing/cases.txt" ]; then
  "$py" "$alias_models" --out "$out/torchscript/aliasing"
fi
# One small model per op of issues 36 and 37 (tests/numeric/ops_vs_pytorch_test.cpp).
op_cases="$here/tests/ops/make_op_cases.py"
if [ ! -f "$out/ops/stamp" ] || [ "$op_cases" -nt "$out/ops/stamp" ]; then
  "$py" "$op_cases" --out "$out/ops"
  touch "$out/ops/stamp"
fi
