#!/usr/bin/env bash
# The ops the reference interpreter runs but training, and some of them the cuDNN backend, do not
# support yet (tests/backend/inference_only_layers.yaml): `zoc compile` refuses each the backend
# lacks at its own line when it lowers the graph (compiler/lower/choose_layers.cpp), with exit 1,
# no stdout and no output folder (and `zoc ir --precision fp16`, which lowers for it, the same);
# `zoc ir --train` refuses each training lacks for want of a gradient rule, and no other. Usage:
# tests/run_inference_only.sh ZOC SCRATCH
set -uo pipefail
zoc=$1 scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
model=$here/backend/inference_only_layers.yaml
rm -rf "$scratch" && mkdir -p "$scratch"
fail=0
run() {  # what-for expected-count zoc-arguments...
  local what=$1 count=$2
  shift 2
  local stdout status
  stdout=$("$zoc" "$@" 2>"$scratch/err")
  status=$?
  [ $status -eq 1 ] || { echo "$what: expected exit 1, got $status"; fail=1; }
  [ -z "$stdout" ] || { echo "$what: unexpected stdout: $stdout"; fail=1; }
  grep -qE "^$count errors? generated\.$" "$scratch/err" ||
    { echo "$what: expected $count errors; stderr:"; cat "$scratch/err"; fail=1; }
}
expect() {  # line text
  grep -qF "inference_only_layers.yaml:$1:5: error: $2" "$scratch/err" ||
    { echo "missing 'inference_only_layers.yaml:$1:5: error: $2'; stderr:"; cat "$scratch/err"; fail=1; }
}

cudnn="the cuDNN backend does not support"
backend_refusals() {  # after a run that lowers for the cuDNN backend
expect 16 "layer 'gated' (mul): $cudnn mul with broadcasting other than an image by its channel vector yet"
}
run "zoc compile" 1 compile "$model" -o "$scratch/out"
[ ! -e "$scratch/out" ] || { echo "zoc compile wrote an output folder"; fail=1; }
backend_refusals
# `zoc ir` with a target option lowers the graph too: the same refusals, not a lowered graph.
run "zoc ir --precision fp16" 1 ir "$model" --precision fp16
backend_refusals

run "zoc ir --train" 2 ir "$model" --train
grad="yet (inference only)"
unknown="that may be a parameter, which PyTorch trains, or a buffer, which it keeps fixed"
expect 13 "layer 'over' (div): an operand from the weights file ('std') $unknown: training needs to know which"
expect 16 "layer 'gated' (mul): no gradient rule for a mul with broadcasting (other than an image by its channel vector) $grad"

# A form the lowering refuses (compiler/lower/choose_layers.cpp), at its line.
tconv="conv_transpose_output_padding.yaml:7:5: error: layer 'tconv' (conv_transpose2d): $cudnn"
tconv="$tconv a transposed convolution whose output_padding is not below its stride"
"$zoc" compile "$here/backend/conv_transpose_output_padding.yaml" -o "$scratch/tconv" \
  2>"$scratch/err"
[ $? -eq 1 ] && [ ! -e "$scratch/tconv" ] && grep -qF "$tconv" "$scratch/err" ||
  { echo "conv_transpose_output_padding.yaml: not refused; stderr:"; cat "$scratch/err"; fail=1; }

[ $fail -eq 0 ] && echo "every inference-only op was refused at its line by the cuDNN backend and training"
exit $fail
