#!/usr/bin/env bash
# Runs the real `zoc ir` on every bad-input case of tests/bad_inputs/ (README.md there describes
# the case files): the command-line half of tests/unit/bad_inputs_test.cpp, which runs the same
# cases in-process. Per case it checks that zoc
#   - exits with the expected code (1, or the case's `exit:`), not by a signal or a timeout,
#   - writes nothing to stdout when it fails (no partial output),
#   - prints no sanitizer report,
#   - prints no raw control character (C0 but the newline, DEL, C1): names are escaped,
#   - prints every `expect:` line on stderr.
# A refused TorchScript archive (tests/bad_inputs/torchscript/) must also be refused before
# anything runs: the dynamic loader's own log (LD_DEBUG) shows that neither zoc's LibTorch plugin
# nor LibTorch was loaded, and `zoc compile` gives the same error and leaves no output folder.
#
# A sanitizer build passes --sample-loaded N: one in N of the cases that load LibTorch
# (torchscript_loaded/, each about 3 s under ASan, most of this script's time there). All of
# them run in-process under the sanitizers (bad_inputs_test.cpp) and here in the release build.
#
# Usage: tests/run_bad_inputs.sh path/to/zoc SOURCE_DIR [--sample-loaded N]
set -u

zoc=$(realpath "$1")
cd "$2" || exit 2
sample_loaded=1
if [ "${3:-}" = --sample-loaded ]; then
  sample_loaded=${4:?--sample-loaded needs a number}
fi
loaded_seen=0
skipped=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

total=0
failed=0

fail() {
  echo "FAIL $case_file: $1"
  echo "  command: zoc ir $model $args"
  sed 's/^/  stderr: /' "$tmp/err" | head -40
  failed=$((failed + 1))
}

# The checks for a refused TorchScript archive described above.
check_refused_archive() {
  rm -f "$tmp"/ld.*
  # shellcheck disable=SC2086
  LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" timeout 300 "$zoc" ir "$model" $args >/dev/null 2>&1
  if ! grep -qs 'libc\.so' "$tmp"/ld.*; then
    fail "the dynamic loader's log (LD_DEBUG) is missing; cannot tell what was loaded"
  elif grep -qs 'libzoc_frontend_torchscript\|libtorch' "$tmp"/ld.*; then
    fail "LibTorch was loaded for a refused archive"
  fi
  rm -rf "$tmp/compile" && mkdir "$tmp/compile"
  timeout 300 "$zoc" compile "$model" --input 3x8x8 -o "$tmp/compile/out" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "zoc compile exited $rc, expected 1"
  elif [ -n "$(ls -A "$tmp/compile")" ]; then
    fail "zoc compile left files behind: $(ls -A "$tmp/compile")"
  elif ! grep -qF -- "${expects[0]}" "$tmp/err"; then
    fail "zoc compile did not say: ${expects[0]}"
  fi
}

for folder in yaml shapes weights onnx torchscript torchscript_loaded; do
  found=0
  for case_file in tests/bad_inputs/$folder/*.yaml tests/bad_inputs/$folder/*.expect; do
    [ -f "$case_file" ] || continue
    # Directives: the leading comment block of NAME.yaml, or the lines of NAME.expect.
    if [[ $case_file == *.yaml ]]; then
      [ -e "${case_file%.yaml}.expect" ] && continue  # the input of a NAME.expect case
      model=$case_file
      directives=$(sed -n '/^#/!q; s/^# \(expect\|args\|exit\|model\): /\1: /p' "$case_file")
    else
      model=${case_file%.expect}.yaml
      directives=$(grep -v '^#' "$case_file")
    fi
    expects=()
    args=""
    want=1
    while IFS= read -r line; do
      case $line in
        "expect: "*) expects+=("${line#expect: }") ;;
        "args: "*) args=${line#args: } ;;
        "exit: "*) want=${line#exit: } ;;
        "model: "*) model=${line#model: } ;;
      esac
    done <<<"$directives"
    found=$((found + 1))
    if [ "$folder" = torchscript_loaded ]; then
      loaded_seen=$((loaded_seen + 1))
      if [ $(((loaded_seen - 1) % sample_loaded)) -ne 0 ]; then
        skipped=$((skipped + 1))
        continue
      fi
    fi
    total=$((total + 1))

    # shellcheck disable=SC2086  # args is a list of words
    timeout 300 "$zoc" ir "$model" $args >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 124 ]; then
      fail "timed out"
    elif [ "$rc" -gt 128 ]; then
      fail "killed by signal $((rc - 128))"
    elif grep -q 'Sanitizer\|runtime error:' "$tmp/err"; then
      fail "sanitizer report"
    elif [ "$rc" -ne "$want" ]; then
      fail "exit code $rc, expected $want"
    elif [ "$rc" -ne 0 ] && [ -s "$tmp/out" ]; then
      fail "wrote to stdout although it failed"
    elif LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$tmp/err"; then
      fail "a raw control character on stderr (names from files must be escaped)"
    else
      for e in "${expects[@]}"; do
        if ! grep -qF -- "$e" "$tmp/err"; then
          fail "missing from stderr: $e"
          break
        fi
      done
      [ "$folder" = torchscript ] && [ "$rc" -ne 0 ] && check_refused_archive
    fi
  done
  if [ "$found" -eq 0 ]; then
    echo "FAIL: no cases in tests/bad_inputs/$folder"
    failed=$((failed + 1))
  fi
done

left=""
[ "$skipped" -eq 0 ] || left=" ($skipped LibTorch cases left to the release build)"
echo "$total bad-input cases through $zoc, $failed failed$left"
[ "$failed" -eq 0 ]
