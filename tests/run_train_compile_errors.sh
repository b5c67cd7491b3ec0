#!/usr/bin/env bash
# `zoc compile --train` refuses what its trainer cannot do yet with a located error, exit 1, no
# stdout and no output folder: NHWC storage in fp32 (NCHW in bf16 or fp16), a layer
# mixed-precision training lacks. It compiles a softmax inside the model; --precision tf32 gives
# the fp32 trainer with TF32 allowed, bf16 the mixed-precision trainer (bf16 activations in half
# the arena, fp32 weights aligned for cuDNN's vector loads), fp16 the same in fp16 with dynamic
# loss scaling (no SGD inside the backward pass). Usage: tests/run_train_compile_errors.sh ZOC
# SCRATCH
set -uo pipefail
zoc=$1 scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
fail=0
check() {  # model expected-stderr-text [zoc options]
  local model=$1 want=$2
  shift 2
  local stdout status
  stdout=$("$zoc" compile "$model" --train -o "$scratch/out" "$@" 2>"$scratch/err")
  status=$?
  [ $status -eq 1 ] || { echo "$model $*: expected exit 1, got $status"; fail=1; }
  [ -z "$stdout" ] || { echo "$model $*: unexpected stdout: $stdout"; fail=1; }
  [ ! -e "$scratch/out" ] || { echo "$model $*: an output folder was written"; fail=1; }
  grep -qF "$want" "$scratch/err" || { echo "$model $*: missing '$want'; stderr:"; cat "$scratch/err"; fail=1; }
}
check "$here/../models/lenet.yaml" \
  "lenet.yaml:12:5: error: layer 'conv1': fp16 training does not support a convolution with a bias yet (fp32 and tf32 do)" \
  --precision fp16
check "$here/../models/resnet18.yaml" "the fp16 trainer stores activations NHWC: drop --layout nchw" \
  --precision fp16 --layout nchw
check "$here/../models/lenet.yaml" "the fp32 trainer stores activations NCHW: drop --layout nhwc" \
  --layout nhwc
check "$here/../models/resnet18.yaml" "the bf16 trainer stores activations NHWC: drop --layout nchw" \
  --precision bf16 --layout nchw
check "$here/backend/train_conv_transpose_padding.yaml" \
  "train_conv_transpose_padding.yaml:6:5: error: layer 'tconv' (conv_transpose2d): the cuDNN backend does not support a transposed convolution whose output_padding is not below its stride"
# A softmax inside the model trains (it was refused before): its forward and its gradient.
rm -rf "$scratch/inner_softmax"
"$zoc" compile "$here/backend/train_inner_softmax.yaml" --train -o "$scratch/inner_softmax" \
  >/dev/null && grep -q "v.softmax_grad(" "$scratch/inner_softmax/train_inner_softmax_train.cpp" &&
  grep -q "^cudaError_t softmax_grad(" "$scratch/inner_softmax/train_inner_softmax_train_kernels.cu" ||
  { echo "train_inner_softmax: no trainer with the softmax's gradient"; fail=1; }
check "$here/../models/lenet.yaml" \
  "lenet.yaml:12:5: error: layer 'conv1': bf16 training does not support a convolution with a bias yet (fp32 and tf32 do)" \
  --precision bf16
# And what it accepts: tf32 is the fp32 trainer with TF32 allowed, fp32 (the default) keeps it off.
for p in fp32 tf32; do
  want=false; [ $p = tf32 ] && want=true
  rm -rf "$scratch/ok_$p"
  "$zoc" compile "$here/../models/lenet.yaml" --train --precision $p -o "$scratch/ok_$p" >/dev/null &&
    grep -qF "static constexpr bool kTF32 = $want;" "$scratch/ok_$p/lenet_train.h" ||
    { echo "--precision $p: no trainer with kTF32 = $want"; fail=1; }
done
# What bf16 refuses and fp32 trains: a batch norm whose statistics cuDNN's NHWC kernels could
# not load aligned, a linear layer on NHWC rows, logits no linear layer writes.
check "$here/backend/train_bf16_refused.yaml" \
  "train_bf16_refused.yaml:9:5: error: layer 'bn': bf16 training does not support a batch norm over a channel count that is not a multiple of 4 yet" \
  --precision bf16
check "$here/backend/train_bf16_refused.yaml" \
  "train_bf16_refused.yaml:12:5: error: layer 'fc': bf16 training does not support a linear layer on a flattened activation larger than 1x1 yet" \
  --precision bf16
check "$here/backend/train_bf16_pool_logits.yaml" \
  "train_bf16_pool_logits.yaml:10:5: error: layer 'flat': bf16 training needs the logits written by a linear layer, not by flatten" \
  --precision bf16
# The arithmetic fp32 trains (tests/train/arith_ops.yaml): refused by name at each layer, once
# (not again at its backward nodes).
check "$here/train/arith_ops.yaml" \
  "arith_ops.yaml:18:5: error: layer 'plus': bf16 training does not support an add of a constant yet" \
  --precision bf16
check "$here/train/arith_ops.yaml" \
  "arith_ops.yaml:29:5: error: layer 'view': fp16 training does not support the op reshape yet" \
  --precision fp16
grep -qE "^26 errors generated\.$" "$scratch/err" ||
  { echo "arith_ops fp16: not 26 errors, one per refused layer and the logits'"; cat "$scratch/err"; fail=1; }
for m in train_bf16_refused train_bf16_pool_logits; do
  rm -rf "$scratch/fp32_$m"
  "$zoc" compile "$here/backend/$m.yaml" --train -o "$scratch/fp32_$m" >/dev/null ||
    { echo "$m: the fp32 trainer was refused"; fail=1; }
done
# bf16 parameters start at multiples of 16 floats; the gradient buckets of data-parallel training
# still cover every trainable tensor, gaps and all.
rm -rf "$scratch/gaps"
"$zoc" compile "$here/backend/train_bf16_gaps.yaml" --train --precision bf16 -o "$scratch/gaps" \
  >/dev/null || { echo "train_bf16_gaps: no bf16 trainer"; fail=1; }
awk '/kParamTable\[/ { t = 1; next } /kBucketTable\[/ { b = 1; t = 0; next } /^};/ { t = b = 0 }
     t && /, true, / { gsub(/[{},]/, " "); off[++n] = $2; cnt[n] = $3; if ($2 % 16) bad = bad " " $1 }
     b { gsub(/[{},]/, " "); lo[++m] = $1; hi[m] = $1 + $2 }
     END {
       for (i = 1; i <= n; ++i) {
         in_one = 0
         for (j = 1; j <= m; ++j) if (off[i] >= lo[j] && off[i] + cnt[i] <= hi[j]) in_one = 1
         if (!in_one) bad = bad " uncovered@" off[i]
       }
       if (bad != "" || n == 0 || m == 0) { print "train_bf16_gaps:" bad; exit 1 }
     }' "$scratch/gaps/train_bf16_gaps_train.cpp" ||
  { echo "train_bf16_gaps: a trainable tensor unaligned or outside every gradient bucket"; fail=1; }
# bf16 and fp16: ResNet-18 (no convolution bias), against its fp32 trainer.
for p in fp32 bf16 fp16; do
  rm -rf "$scratch/r18_$p"
  "$zoc" compile "$here/../models/resnet18.yaml" --set resolution=32 --train --precision $p \
    -o "$scratch/r18_$p" >/dev/null || { echo "resnet18 --precision $p: no trainer"; fail=1; }
done
h=$scratch/r18_bf16/resnet18_train.h c=$scratch/r18_bf16/resnet18_train.cpp
arena() { sed -n 's/.*kArenaBytesPerSample = \([0-9]*\);/\1/p' "$1"; }
grep -qF "static constexpr bool kBF16 = true;" "$h" &&
  grep -qF "static constexpr bool kBF16 = false;" "$scratch/r18_fp32/resnet18_train.h" &&
  grep -qF "using Act = __nv_bfloat16;" "$scratch/r18_bf16/resnet18_train_kernels.cu" &&
  grep -qE "^constexpr size_t kA_layer1_0_conv1 = [0-9]+;  // %layer1.0.conv1: Nx64x8x8 bf16$" "$c" &&
  grep -qE "^constexpr size_t kA_fc = [0-9]+;  // %fc: Nx1000 f32$" "$c" ||
  { echo "resnet18 bf16: not a bf16 trainer with fp32 logits"; fail=1; }
a16=$(arena "$h") a32=$(arena "$scratch/r18_fp32/resnet18_train.h")
[ -n "$a16" ] && [ $((a16 * 10)) -le $((a32 * 6)) ] ||
  { echo "resnet18 bf16: arena $a16 bytes per sample, not about half of fp32's $a32"; fail=1; }
misaligned=$(sed -n 's/^constexpr size_t kP_[A-Za-z0-9_]* = \([0-9]*\);.*/\1/p' "$c" |
  awk '$1 % 64 != 0' | head -1)
[ -z "$misaligned" ] || { echo "resnet18 bf16: a parameter at byte $misaligned, not 64-aligned"; fail=1; }
# fp16: the same layout in fp16, the loss scale's kernels (bf16 has none), every gradient kept
# until the overflow check (no window for SGD inside the backward pass, which bf16 has).
h=$scratch/r18_fp16/resnet18_train.h k=$scratch/r18_fp16/resnet18_train_kernels.cu
grep -qF "static constexpr bool kFP16 = true;" "$h" &&
  grep -qF "static constexpr bool kBF16 = false;" "$h" &&
  grep -qF "static constexpr bool kFP16 = false;" "$scratch/r18_bf16/resnet18_train.h" &&
  grep -qF "static constexpr size_t kGradWindowElements = 0;" "$h" &&
  ! grep -qF "static constexpr size_t kGradWindowElements = 0;" "$scratch/r18_bf16/resnet18_train.h" &&
  grep -qF "using Act = __half;" "$k" && grep -q "^cudaError_t unscale_grads(" "$k" &&
  grep -q "^cudaError_t update_scale(" "$k" &&
  ! grep -q "unscale_grads" "$scratch/r18_bf16/resnet18_train_kernels.cu" &&
  grep -qE "^constexpr size_t kA_layer1_0_conv1 = [0-9]+;  // %layer1.0.conv1: Nx64x8x8 f16$" \
    "$scratch/r18_fp16/resnet18_train.cpp" &&
  [ "$(arena "$h")" = "$a16" ] ||
  { echo "resnet18 fp16: not a loss-scaled fp16 trainer laid out as the bf16 one"; fail=1; }
# Depthwise layers: zoc's kernels in bf16 and fp16 (3x3 and 5x5), cuDNN for a grouped layer and
# in fp32.
for p in fp32 bf16 fp16; do
  rm -rf "$scratch/dw_$p"
  "$zoc" compile "$here/backend/train_bf16_depthwise.yaml" --train --precision $p \
    -o "$scratch/dw_$p" >/dev/null || { echo "train_bf16_depthwise --precision $p: refused"; fail=1; }
done
for c in "$scratch"/dw_bf16/train_bf16_depthwise_train.cpp "$scratch"/dw_fp16/train_bf16_depthwise_train.cpp; do
[ "$(grep -cE 'v\.depthwise(_grad)?\((dw3|dw5)_' "$c")" = 4 ] &&
  grep -qF 'v.conv(grouped_' "$c" && grep -qF 'v.conv_grad(grouped_' "$c" &&
  grep -qF '#include "zoc/kernels/depthwise_grad.cuh"' "${c%.cpp}_kernels.cu" &&
  ! grep -qE 'v\.depthwise|depthwise_grad\.cuh' "$scratch"/dw_fp32/train_bf16_depthwise_train* ||
  { echo "train_bf16_depthwise: depthwise layers not on zoc's kernels in bf16/fp16 only"; fail=1; }
done
[ $fail -eq 0 ] && echo "every refused --train compile gave its located error; fp32, tf32, bf16 and fp16 compile"
exit $fail
