#!/usr/bin/env bash
# `zoc compile --train` refuses what its trainer cannot do yet with a located error, exit 1, no
# stdout and no output folder: bf16 or fp16, NHWC storage, a softmax inside the model; and
# --precision tf32 gives the fp32 trainer with TF32 allowed. Usage: tests/run_train_compile_errors.sh ZOC SCRATCH
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
check "$here/../models/lenet.yaml" "bf16 and fp16 mixed-precision training are not built yet" --precision fp16
check "$here/../models/lenet.yaml" "the trainer stores activations NCHW: drop --layout nhwc" \
  --layout nhwc
check "$here/backend/train_inner_softmax.yaml" \
  "train_inner_softmax.yaml:8:5: error: layer 'soft' (softmax): the trainer does not support a softmax inside the model"
check "$here/../models/lenet.yaml" "bf16 and fp16 mixed-precision training are not built yet" --precision bf16
# And what it accepts: tf32 is the fp32 trainer with TF32 allowed, fp32 (the default) keeps it off.
for p in fp32 tf32; do
  want=false; [ $p = tf32 ] && want=true
  rm -rf "$scratch/ok_$p"
  "$zoc" compile "$here/../models/lenet.yaml" --train --precision $p -o "$scratch/ok_$p" >/dev/null &&
    grep -qF "static constexpr bool kTF32 = $want;" "$scratch/ok_$p/lenet_train.h" ||
    { echo "--precision $p: no trainer with kTF32 = $want"; fail=1; }
done
[ $fail -eq 0 ] && echo "every refused --train compile gave its located error; fp32 and tf32 compile"
exit $fail
