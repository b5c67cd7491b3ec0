#!/usr/bin/env bash
# Copies the sample of the exporter corpus that CI checks (README.md here says why these) from a
# corpus folder that tools/corpus/export_corpus.py wrote: per model its meta.json, PyTorch's
# output.npy and dynamo.onnx + dynamo.onnx.data xz-compressed, and for the models in SAME_IR the
# TorchScript-based exporter's ts17.onnx too. Deterministic (xz -6, one thread).
# Usage: tests/onnx/dynamo/pack.sh CORPUS_DIR
set -euo pipefail
corpus=${1:?usage: pack.sh CORPUS_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# The first eight show an exporter form each (README.md); the rest widen the sample to 32
# architectures, the smallest model of each, so that CI sees what users bring.
MODELS="resnet18 mobilenet_v2 efficientnet_b0 convnext_atto shufflenet_v2_x1_0 mixnet_s"
MODELS="$MODELS squeezenet1_1 lcnet_050"
MODELS="$MODELS dla46_c mobilenetv3_small_050 ese_vovnet19b_slim_dw mnasnet_small tinynet_e"
MODELS="$MODELS repghostnet_050 ghostnet_050 regnetx_002 regnety_002 cs3darknet_s"
MODELS="$MODELS mobilenetv4_conv_small spnasnet_100 rexnet_100 mobileone_s0 hardcorenas_a"
MODELS="$MODELS tf_efficientnet_b0 fbnetc_100 hgnetv2_b0 gernet_s repvgg_a0 densenet121"
MODELS="$MODELS googlenet dpn48b resnext26ts"
SAME_IR="resnet18 convnext_atto"
for m in $MODELS; do
  rm -rf "${here:?}/$m"
  mkdir -p "$here/$m"
  cp "$corpus/$m/meta.json" "$corpus/$m"/output*.npy "$here/$m/"
  files="dynamo.onnx dynamo.onnx.data"
  case " $SAME_IR " in *" $m "*) files="$files ts17.onnx" ;; esac
  for f in $files; do xz -T1 -6 -c "$corpus/$m/$f" > "$here/$m/$f.xz"; done
done
du -sh "$here"
