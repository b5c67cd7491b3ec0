#!/usr/bin/env bash
# A failed `zoc compile` reports a located error, writes nothing to stdout, and leaves the
# previous output folder exactly as it was. Usage: tests/run_compile_failure.sh ZOC SCRATCH
set -uo pipefail
zoc=$1 scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
"$zoc" compile "$here/../models/lenet.yaml" -o "$scratch/out" >/dev/null || { echo "setup compile failed"; exit 1; }
before=$(cd "$scratch/out" && find . -type f -exec md5sum {} + | sort)
stdout=$("$zoc" compile "$here/backend/conv_transpose_output_padding.yaml" -o "$scratch/out" \
  --precision fp16 2>"$scratch/err")
status=$?
fail=0
[ $status -eq 1 ] || { echo "expected exit 1, got $status"; fail=1; }
[ -z "$stdout" ] || { echo "unexpected stdout: $stdout"; fail=1; }
grep -q "conv_transpose_output_padding.yaml:7:5: error: layer 'tconv' (conv_transpose2d): the \
cuDNN backend does not support" "$scratch/err" ||
  { echo "missing error; stderr:"; cat "$scratch/err"; fail=1; }
after=$(cd "$scratch/out" && find . -type f -exec md5sum {} + | sort)
[ "$before" = "$after" ] || { echo "the previous output changed"; fail=1; }
[ "$(ls -A "$scratch" | wc -l)" -eq 2 ] || { echo "left behind:"; ls -A "$scratch"; fail=1; }
[ $fail -eq 0 ] && echo "failed compile left the previous output intact"
exit $fail
