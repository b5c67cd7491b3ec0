#!/usr/bin/env bash
# Compiles a model with zoc and FileChecks one generated file.
# Usage: tests/run_filecheck.sh ZOC FILECHECK MODEL PRECISION GENERATED_FILE CHECK_FILE OUT_DIR
#        [more zoc compile options]
set -euo pipefail
zoc=$1 filecheck=$2 model=$3 precision=$4 file=$5 check=$6 out=$7
shift 7
mkdir -p "$(dirname "$out")"
"$zoc" compile "$model" -o "$out" --precision "$precision" "$@" >/dev/null
"$filecheck" --match-full-lines=false "$check" --input-file "$out/$file"
