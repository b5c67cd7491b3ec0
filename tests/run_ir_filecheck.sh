#!/usr/bin/env bash
# Prints a model's IR with `zoc ir` and FileChecks it (the golden test of a printed graph).
# Usage: tests/run_ir_filecheck.sh ZOC FILECHECK MODEL CHECK_FILE [more zoc ir options]
# ZOC_CHECK_PREFIX, if set, names the check file's prefix (one file checking several runs).
set -euo pipefail
zoc=$1 filecheck=$2 model=$3 check=$4
shift 4
"$zoc" ir "$model" "$@" |
  "$filecheck" --match-full-lines=false --check-prefix="${ZOC_CHECK_PREFIX:-CHECK}" "$check"
