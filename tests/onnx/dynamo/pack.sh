#!/usr/bin/env bash
# Copies the sample of the exporter corpus that CI checks (README.md here says why these) from a
# corpus folder that tools/corpus/export_corpus.py wrote: per model its meta.json, PyTorch's
# output.npy and dynamo.onnx + dynamo.onnx.data xz-compressed, and for the models in SAME_IR the
# TorchScript-based exporter's ts17.onnx too. Deterministic (xz -6, one thread).
# Usage: tests/onnx/dynamo/pack.sh CORPUS_DIR
set -euo pipefail
corpus=${1:?usage: pack.sh CORPUS_DIR}
here=$(cd "$(dirname "$0")" && pwd)
MODELS="resnet18 mobilenet_v2 efficientnet_b0 convnext_atto shufflenet_v2_x1_0 mixnet_s"
MODELS="$MODELS squeezenet1_1 lcnet_050"
SAME_IR="resnet18 convnext_atto"
for m in $MODELS; do
  rm -rf "${here:?}/$m"
  mkdir -p "$here/$m"
  cp "$corpus/$m/meta.json" "$corpus/$m/output.npy" "$here/$m/"
  files="dynamo.onnx dynamo.onnx.data"
  case " $SAME_IR " in *" $m "*) files="$files ts17.onnx" ;; esac
  for f in $files; do xz -T1 -6 -c "$corpus/$m/$f" > "$here/$m/$f.xz"; done
done
du -sh "$here"
