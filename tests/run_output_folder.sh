#!/usr/bin/env bash
# `zoc compile -o` never deletes what zoc did not write (issue 17's data-loss bug, issue 31's
# items 10 and 12), through the real binary: each case states the exit code and the error or
# warning it must give, and checks that the user's files are untouched. Also any valid -o name,
# a full disk's reason, `zoc --version` and an unknown command. Kills: run_output_folder_kills.py.
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
expect 1 "userdir: error: refusing to write into this folder: zoc did not write it (it has no .zoc-generated stamp) and it holds 1 entry ('thesis.txt'); name a new folder, or pass --force to write into it (zoc then replaces the files at the names it writes and keeps everything else)" \
  "$zoc" compile "$model" -o userdir
same userdir/thesis.txt "years of work"
[ "$(ls -A userdir)" = "thesis.txt" ] || { echo "FAIL: userdir gained files: $(ls -A userdir)"; fail=1; }

# --force writes zoc's files beside the user's; it deletes nothing of theirs.
expect 0 "wrote userdir" "$zoc" compile "$model" -o userdir --force
same userdir/thesis.txt "years of work"
[ -f userdir/lenet.cpp ] && [ -f userdir/.zoc-generated ] || { echo "FAIL: --force wrote nothing"; fail=1; }

# A folder zoc wrote is replaced; what the user added there is kept.
expect 0 "wrote out/lenet" "$zoc" compile "$model" -o out/lenet  # parents created
mkdir out/lenet/build && echo "obj" >out/lenet/build/x.o && echo "mine" >out/lenet/NOTES
expect 0 "wrote out/lenet" "$zoc" compile "$model" -o out/lenet --precision fp16
grep -q "fp16" out/lenet/lenet.cpp || { echo "FAIL: out/lenet was not regenerated"; fail=1; }
same out/lenet/build/x.o "obj"
same out/lenet/NOTES "mine"

# Issue 31, item 12: what the stamp lists is replaced or deleted only while it holds what zoc
# wrote. A copied stamp listing the thesis (with another file's hash, or none as an older zoc
# wrote it) and a user folder at a listed path are kept, and the compile says so.
echo "years of work" >out/lenet/thesis.txt
mkdir out/lenet/zoc/mine && echo "mine" >out/lenet/zoc/mine/x.h
printf '%s 14 thesis.txt\nthesis.txt\nzoc/mine\n' "$(printf 'a%.0s' {1..64})" >>out/lenet/.zoc-generated
expect 0 "out/lenet: warning: kept 'thesis.txt': the stamp lists it without a content hash (an older zoc's stamp), so zoc cannot tell it from yours" \
  "$zoc" compile "$model" -o out/lenet --train
grep -q "out/lenet: warning: kept 'zoc/mine': the stamp lists it, but it is not a file zoc wrote" "$scratch/err" ||
  { echo "FAIL: no warning for zoc/mine: $(cat "$scratch/err")"; fail=1; }
same out/lenet/thesis.txt "years of work"
same out/lenet/zoc/mine/x.h "mine"
[ ! -e out/lenet/lenet.cpp ] || { echo "FAIL: zoc's stale lenet.cpp was not deleted"; fail=1; }
# A generated file the user edited is theirs: refused where the new output needs its name, and
# replaced only with --force.
echo "// my fix" >>out/lenet/main.cpp
expect 1 "out/lenet: error: refusing to replace 'main.cpp': it changed since zoc wrote it and the new output needs its name; move it away, or pass --force to replace it" \
  "$zoc" compile "$model" -o out/lenet
grep -q "// my fix" out/lenet/main.cpp || { echo "FAIL: the edited main.cpp changed"; fail=1; }
expect 0 "wrote out/lenet" "$zoc" compile "$model" -o out/lenet --force
grep -q "// my fix" out/lenet/main.cpp && { echo "FAIL: --force did not replace main.cpp"; fail=1; }

# Issue 31, item 10: an older zoc's temporary (`.NAME.tmp.PID`) with the user's files in it is
# never deleted, even when this zoc runs under that PID (exec keeps the shell's PID).
bash -c 'mkdir .reuse.tmp.$$ && echo "rescued" >.reuse.tmp.$$/thesis.txt && echo $$ >pid &&
         exec "$0" compile "$1" -o reuse' "$zoc" "$model" >/dev/null 2>&1
same ".reuse.tmp.$(cat pid)/thesis.txt" "rescued"
rm -r ".reuse.tmp.$(cat pid)" pid

# Issue 31, items 11 and 10 at fixed instants: the old design renamed out/ aside and then the new
# folder in, so a kill between the two renames left no out/; and it moved the user's files into
# the new folder first, so a kill before that left them in a temporary. Killed on entry to each
# rename in turn (strace), out/ must stay complete, with the user's file in it once there is one.
# (LeakSanitizer cannot run under ptrace: off for these.)
if strace -qq -o /dev/null -e trace=none true 2>/dev/null; then
  "$zoc" compile "$model" -o k11 >/dev/null
  for notes in "" "mine"; do
    [ -n "$notes" ] && echo "$notes" >k11/NOTES
    for k in 1 2 3 4 5 6 7 8; do
      (ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 \
       strace -f -qq -o /dev/null -e trace=rename -e "inject=rename:signal=KILL:when=$k" \
        "$zoc" compile "$model" -o k11 --precision $([ $((k % 2)) = 1 ] && echo fp16 || echo fp32)
       true) >/dev/null 2>&1  # `true`: this shell, not the caller, reports the kill
      [ -f k11/.zoc-generated ] || { echo "FAIL: no k11/ after a kill at rename $k"; fail=1; break; }
      [ -z "$notes" ] || same k11/NOTES "$notes"
    done
  done
  expect 0 "wrote k11" "$zoc" compile "$model" -o k11
  rm -r k11
else
  echo "note: no working strace here; the kills at each rename were skipped"
fi

# Any valid name: the temporary's name does not grow with the output's (was "File name too long").
long=$(printf 'n%.0s' {1..250})
expect 0 "wrote $long" "$zoc" compile "$model" -o "$long"
expect 0 "wrote $long" "$zoc" compile "$model" -o "$long" --precision fp16
rm -r "$long"

# A write that fails says why (was "cannot write 'x'"), and leaves the old output and no
# temporary: a file size limit (EFBIG) always; a full disk (ENOSPC) where a user namespace can
# mount a small tmpfs.
(trap '' XFSZ; ulimit -f 1
 expect 1 "out/lenet: error: cannot write '" "$zoc" compile "$model" -o out/lenet --precision fp16
 grep -q "': File too large" "$scratch/err" || { echo "FAIL: no reason: $(cat "$scratch/err")"; exit 1; }
 exit $fail) || fail=1
grep -q "fp16" out/lenet/lenet.cpp && { echo "FAIL: the failed write changed out/lenet"; fail=1; }
[ ! -e out/lenet/.zoc-staging ] || { echo "FAIL: a failed write left its staging folder"; fail=1; }
if unshare -rm true 2>/dev/null; then
  mkdir small
  unshare -rm bash -c 'mount -t tmpfs -o size=1m tmpfs small && cd small &&
    "$0" compile "$1" -o out >/dev/null && echo "mine" >out/notes &&
    { head -c 2M /dev/zero >fill 2>/dev/null; truncate -s -8K fill; } &&
    "$0" compile "$1" -o out --precision fp16; echo "rc=$?"; grep -c fp16 out/lenet.cpp;
    cat out/notes; ls -A out | grep -c zoc-staging' "$zoc" "$model" >small.log 2>&1
  grep -q "rc=1" small.log && grep -q "': No space left on device" small.log &&
    [ "$(tail -3 small.log | tr '\n' ' ')" = "0 mine 0 " ] ||
    { echo "FAIL: a full disk:"; cat small.log; fail=1; }
else
  echo "note: no user namespace here; the full-disk case ran as a file size limit only"
fi

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

leftovers=$(find . -name '.*.tmp.*' -o -name '.*.old.*' -o -name '.zoc-*' ! -name .zoc-generated)
[ -z "$leftovers" ] || { echo "FAIL: temporaries left behind: $leftovers"; fail=1; }
[ $fail -eq 0 ] && echo "zoc compile -o kept every file it did not write (17 cases)"
exit $fail
