#!/usr/bin/env python3
"""The command line's numbers and names through the real binary (issue 31).

Every numeric option is a whole number within its range or a clear error naming the option
(`zoc run --top -1000000` crashed, `--top -1` printed "top--1", `--seed -1` wrapped to 2^64 - 1),
--batch and --input exclude each other, and what the user typed is quoted escaped. Each case
gives the exit code and the text zoc must print; a failing run must print nothing on stdout and
no raw control character on stderr.

Usage: cli_options.py ZOC
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "lenet.yaml")
TOP = "is not a whole number from 1 to 2147483647"
BATCH = "is not a whole number from 1 to 65536"
SEED = "is not a whole number from 0 to 18446744073709551615"
CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]")

# (exit code, text zoc must print, arguments). CLI11 exits 105 on a bad option value.
CASES = [
    (105, f"zoc: error: --top: '-1000000' {TOP}", ["run", MODEL, "--top", "-1000000"]),
    (105, f"zoc: error: --top: '-1' {TOP}", ["run", MODEL, "--top", "-1"]),
    (105, f"zoc: error: --top: '0' {TOP}", ["run", MODEL, "--top", "0"]),
    (105, f"zoc: error: --top: '2147483648' {TOP}", ["run", MODEL, "--top", "2147483648"]),
    (105, f"zoc: error: --top: 'five' {TOP}", ["run", MODEL, "--top", "five"]),
    (105, f"zoc: error: --top: 'a\\x1b[2Jb' {TOP}", ["run", MODEL, "--top", "a\x1b[2Jb"]),
    (105, f"zoc: error: --batch: '0' {BATCH}", ["run", MODEL, "--batch", "0"]),
    (105, f"zoc: error: --batch: '65537' {BATCH}", ["run", MODEL, "--batch", "65537"]),
    (105, f"zoc: error: --batch: '2.5' {BATCH}", ["run", MODEL, "--batch", "2.5"]),
    (105, f"zoc: error: --seed: '+1' {SEED}",
     ["grad", MODEL, "--seed", "+1", "--batch-file", "b.safetensors", "-o", "g.safetensors"]),
    (1, "zoc: error: unknown command '\\x1b]0;title\\x07'", ["\x1b]0;title\x07"]),
    (1, "--input: error: '3x99999999999999999999x32' is not of the form CxHxW with whole numbers",
     ["ir", MODEL, "--input", "3x99999999999999999999x32"]),
    (1, "zoc: error: --batch sizes the random input; with --input the batch is the .npy file's "
        "first dimension", ["run", MODEL, "--batch", "2", "--input", "x.npy"]),
    # The limits themselves are accepted.
    (0, "sample 0: top-3 ", ["run", MODEL, "--top", "3"]),
    (0, "sample 0: top-10 ", ["run", MODEL, "--top", "2147483647"]),
    (0, "sample 1: top-5 ", ["run", MODEL, "--batch", "2", "--seed", "18446744073709551615"]),
]
for cmd in ("run", "init-weights"):
    out = ["-o", "w.safetensors"] if cmd == "init-weights" else []
    for seed in ("-1", "18446744073709551616", "1e3"):
        CASES.append((105, f"zoc: error: --seed: '{seed}' {SEED}",
                      [cmd, MODEL, "--seed", seed] + out))


def main():
    zoc = os.path.abspath(sys.argv[1])
    failed = 0
    with tempfile.TemporaryDirectory(prefix="zoc_cli_") as work:
        for code, want, args in CASES:
            r = subprocess.run([zoc] + args, cwd=work, capture_output=True, timeout=300)
            said = (r.stderr + r.stdout).decode("utf-8", "replace")
            why = ""
            if r.returncode != code:
                why = f"exited {r.returncode}, expected {code}"
            elif want not in said:
                why = f"did not say: {want}"
            elif code != 0 and r.stdout:
                why = "wrote to stdout on failure"
            elif CONTROL.search(r.stderr):
                why = "printed a raw control character"
            if why:
                failed += 1
                print(f"FAIL zoc {' '.join(map(ascii, args))}: {why}\n  it said: {said.strip()}")
    print(f"{len(CASES)} command-line cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
