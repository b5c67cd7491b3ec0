#!/usr/bin/env bash
# `zoc compile -o` never deletes what zoc did not write (issue 17's data-loss bug), through the
# real binary: each case states the exit code and the error it must give, and checks that the
# user's files are untouched. Also `zoc --version` and an unknown command.
# Usage: tests/run_output_folder.sh ZOC SCRATCH
set -uo pipefail
zoc=$(realpath "$1") scratch=$2
model=$(cd "$(dirname "$0")/.." && pwd)/models/lenet.yaml
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
fail=0
# expect CODE 'stderr substring' zoc ARGS...: exit code, stderr, and nothing on stdout on failure.
expect() {
  local code=$1 want=$2
  shift 2
  local out err rc
  out=$("$@" 2>"$scratch/err")
  rc=$?
  err=$(cat "$scratch/err")
  if [ "$rc" -ne "$code" ]; then
    echo "FAIL: '$*' exited $rc, expected $code; stderr: $err"; fail=1
  elif [ -n "$want" ] && [[ "$err$out" != *"$want"* ]]; then
    echo "FAIL: '$*' did not say: $want"; echo "  it said: $err$out"; fail=1
  elif [ "$code" -ne 0 ] && [ -n "$out" ]; then
    echo "FAIL: '$*' wrote to stdout on failure: $out"; fail=1
  fi
}
same() { [ "$(cat "$1")" = "$2" ] || { echo "FAIL: $1 changed or is gone"; fail=1; }; }

mkdir userdir && echo "years of work" >userdir/thesis.txt
expect 1 "userdir: error: refusing to replace this folder: zoc did not write it (it has no .zoc-generated stamp) and it holds 1 entry ('thesis.txt'); name a new folder, or pass --force to replace it with everything in it" \
  "$zoc" compile "$model" -o userdir
same userdir/thesis.txt "years of work"
[ "$(ls -A userdir)" = "thesis.txt" ] || { echo "FAIL: userdir gained files: $(ls -A userdir)"; fail=1; }

expect 0 "wrote userdir" "$zoc" compile "$model" -o userdir --force
[ ! -e userdir/thesis.txt ] && [ -f userdir/lenet.cpp ] && [ -f userdir/.zoc-generated ] ||
  { echo "FAIL: --force did not replace userdir"; fail=1; }

# A folder zoc wrote is replaced; what the user added there is kept.
expect 0 "wrote out/lenet" "$zoc" compile "$model" -o out/lenet  # parents created
mkdir out/lenet/build && echo "obj" >out/lenet/build/x.o && echo "mine" >out/lenet/NOTES
expect 0 "wrote out/lenet" "$zoc" compile "$model" -o out/lenet --precision fp16
grep -q "fp16" out/lenet/lenet.cpp || { echo "FAIL: out/lenet was not regenerated"; fail=1; }
same out/lenet/build/x.o "obj"
same out/lenet/NOTES "mine"

echo "plain" >afile
expect 1 "afile: error: exists and is not a folder; zoc writes a folder here and will not replace a file" \
  "$zoc" compile "$model" -o afile --force
same afile "plain"

mkdir -p cwd/sub && echo "keep" >cwd/keep.txt
(cd cwd/sub && expect 1 ".: error: is the current folder or contains it; zoc writes the generated code into a folder of its own: name a new one (for example -o out/model)" \
  "$zoc" compile "$model" -o . --force
 expect 1 "..: error: is the current folder or contains it" "$zoc" compile "$model" -o .. --force
 exit $fail) || fail=1
same cwd/keep.txt "keep"

mkdir real && echo "keep" >real/keep.txt && ln -s real link
expect 1 "link: error: is a symbolic link (to 'real'); zoc neither replaces a link nor writes through one: give the real folder's path" \
  "$zoc" compile "$model" -o link --force
same real/keep.txt "keep"
[ -L link ] || { echo "FAIL: the link is gone"; fail=1; }

expect 0 "zoc 0." "$zoc" --version
expect 1 "zoc: error: unknown command 'complie'; the commands are ir, compile, run" "$zoc" complie "$model"

leftovers=$(find . -name '.*.tmp.*' -o -name '.*.old.*')
[ -z "$leftovers" ] || { echo "FAIL: temporaries left behind: $leftovers"; fail=1; }
[ $fail -eq 0 ] && echo "zoc compile -o kept every file it did not write (9 cases)"
exit $fail
