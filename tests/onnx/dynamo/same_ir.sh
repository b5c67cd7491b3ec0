#!/usr/bin/env bash
# The dynamo exporter's file and the TorchScript-based exporter's (ts17.onnx) of one model must
# give the same IR after the passes: ops, attributes, layer and parameter names, wiring; only
# the locations (node names differ) and the graph's name (the file's) may differ.
# Usage: same_ir.sh ZOC DIR (the unpacked samples: every model folder holding a ts17.onnx)
set -euo pipefail
zoc=${1:?usage: same_ir.sh ZOC DIR}
dir=${2:?usage: same_ir.sh ZOC DIR}
ir() {
  "$zoc" ir "$1" --optimize 2>/dev/null | sed -e 's/ *# .*$//' -e '1s/^graph [^ ]* /graph G /'
}
checked=0
for ts in "$dir"/*/ts17.onnx; do
  m=$(basename "$(dirname "$ts")")
  a=$(ir "$ts") || { echo "FAIL $m: zoc refuses ts17.onnx"; exit 1; }
  b=$(ir "$(dirname "$ts")/dynamo.onnx") || { echo "FAIL $m: zoc refuses dynamo.onnx"; exit 1; }
  if [ "$a" != "$b" ]; then
    echo "FAIL $m: the two exporters' files give different IR"
    diff <(echo "$a") <(echo "$b") | head -40
    exit 1
  fi
  echo "same IR: $m ($(echo "$a" | grep -c '^  %') values)"
  checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || { echo "FAIL: no model with a ts17.onnx under $dir"; exit 1; }
