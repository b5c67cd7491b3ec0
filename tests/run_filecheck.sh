#!/usr/bin/env bash
# Compiles a model with zoc and FileChecks generated files (GENERATED_FILE: one file, or several
# joined by commas, checked as one text in that order, e.g. resnet50.h,resnet50.cpp).
# Usage: tests/run_filecheck.sh ZOC FILECHECK MODEL PRECISION GENERATED_FILE CHECK_FILE OUT_DIR
#        [more zoc compile options]
set -euo pipefail
zoc=$1 filecheck=$2 model=$3 precision=$4 file=$5 check=$6 out=$7
shift 7
mkdir -p "$(dirname "$out")"
"$zoc" compile "$model" -o "$out" --precision "$precision" "$@" >/dev/null
IFS=, read -r -a files <<<"$file"
for f in "${files[@]}"; do cat "$out/$f"; done >"$out.checked"
"$filecheck" --match-full-lines=false "$check" --input-file "$out.checked"
