#!/usr/bin/env bash
# `zoc compile --train` refuses what its trainer cannot do yet with a located error, exit 1, no
# stdout and no output folder: a precision other than fp32, NHWC storage, a softmax inside the
# model. Usage: tests/run_train_compile_errors.sh ZOC SCRATCH
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
check "$here/../models/lenet.yaml" "the trainer is fp32 (TF32 off) for now" --precision fp16
check "$here/../models/lenet.yaml" "the trainer stores activations NCHW: drop --layout nhwc" \
  --layout nhwc
check "$here/backend/train_inner_softmax.yaml" \
  "train_inner_softmax.yaml:8:5: error: layer 'soft' (softmax): the trainer does not support a softmax inside the model"
[ $fail -eq 0 ] && echo "every refused --train compile gave its located error"
exit $fail
