#!/usr/bin/env python3
"""The command line's numbers, names and files through the real binary (issue 31).

Every numeric option is a whole number within its range or a clear error naming the option
(`zoc run --top -1000000` crashed, `--top -1` printed "top--1", `--seed -1` wrapped to 2^64 - 1),
--batch and --input exclude each other, and what the user typed is quoted escaped. The files it
names: an --input array of the wrong shape is an error at that file in numpy's spelling (a
scalar was "shape ,"; a TorchScript model's .npy that cannot give the input shape is that file's
error, not "no static input shape"), and a weights or output file that cannot be written (the
file-size limit stands in for a full disk) says why, once, and leaves nothing behind. Each case
gives the exit code and the text zoc must print; a failing run must print nothing on stdout and
no raw control character on stderr.

Usage: cli_options.py ZOC
"""
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "lenet.yaml")
PT = os.path.join(ROOT, "tests", "torchscript", "torch2.11", "opzoo", "model.pt")
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
    (1, "--input: error: input height must be between 1 and 1048576, got 0",
     ["grad", MODEL, "--input", "3x0x32", "--batch-file", "b.safetensors", "-o", "g.safetensors"]),
    (1, "zoc: error: --batch sizes the random input; with --input the batch is the .npy file's "
        "first dimension", ["run", MODEL, "--batch", "2", "--input", "x.npy"]),
    # The limits themselves are accepted.
    (0, "sample 0: top-3 ", ["run", MODEL, "--top", "3"]),
    (0, "sample 0: top-10 ", ["run", MODEL, "--top", "2147483647"]),
    (0, "sample 1: top-5 ", ["run", MODEL, "--batch", "2", "--seed", "18446744073709551615"]),
]
# Written by main() into the scratch folder: a float32 scalar and a vector, as numpy saves them.
CASES += [
    (1, "scalar.npy: error: the array has shape (), but model 'lenet' takes (N, 1, 28, 28) with "
        "N >= 1", ["run", MODEL, "--input", "scalar.npy"]),
    (1, "vector.npy: error: the array has shape (5,), but model 'lenet' takes (N, 1, 28, 28)",
     ["run", MODEL, "--input", "vector.npy"]),
]
# A TorchScript model takes its input shape from the .npy: one it cannot use is that file's
# error, not "a TorchScript model has no static input shape" (issue 32).
CASES += [
    (1, "int32.npy: error: dtype '<i4' is not a float type", ["run", PT, "--input", "int32.npy"]),
    (1, "fortran.npy: error: fortran_order True is not supported",
     ["run", PT, "--input", "fortran.npy"]),
    (1, "missing.npy: error: cannot open: No such file", ["run", PT, "--input", "missing.npy"]),
    (1, "three.npy: error: the array has shape (3, 16, 16), but the model takes an image batch "
        "(N, C, H, W) with N >= 1", ["run", PT, "--input", "three.npy"]),
    (1, "five.npy: error: the array has shape (1, 1, 3, 16, 16), but the model takes an image "
        "batch (N, C, H, W) with N >= 1", ["run", PT, "--input", "five.npy"]),
]
# Under a 4 KiB file-size limit (the writers see EFBIG, as they would ENOSPC on a full disk).
FULL = [
    (1, "w.safetensors: error: cannot write w.safetensors.tmp.", "File too large",
     ["init-weights", MODEL, "-o", "w.safetensors"]),
    (1, "y.npy: error: cannot write y.npy.tmp.", "File too large",
     ["run", MODEL, "--batch", "256", "--output", "y.npy"]),
]
for cmd in ("run", "init-weights"):
    out = ["-o", "w.safetensors"] if cmd == "init-weights" else []
    for seed in ("-1", "18446744073709551616", "1e3"):
        CASES.append((105, f"zoc: error: --seed: '{seed}' {SEED}",
                      [cmd, MODEL, "--seed", seed] + out))


def npy(shape, descr="<f4", fortran=False):
    """A little-endian .npy file of zeros (float32 unless told), as numpy writes version 1.0."""
    dims = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {dims}, }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    count = 1
    for d in shape:
        count *= d
    return (b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() +
            bytes(4 * count))


def small_files():
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def check(zoc, work, code, wants, args, preexec=None):
    """Runs one case; returns why it failed, or ""."""
    before = set(os.listdir(work))
    r = subprocess.run([zoc] + args, cwd=work, capture_output=True, timeout=300,
                       preexec_fn=preexec)
    said = (r.stderr + r.stdout).decode("utf-8", "replace")
    missing = [w for w in wants if w not in said]
    left = set(os.listdir(work)) - before
    if r.returncode != code:
        return f"exited {r.returncode}, expected {code}\n  it said: {said.strip()}"
    if missing:
        return f"did not say: {missing[0]}\n  it said: {said.strip()}"
    if code != 0 and r.stdout:
        return "wrote to stdout on failure"
    if code != 0 and left:
        return f"left files behind: {sorted(left)}"
    if CONTROL.search(r.stderr):
        return "printed a raw control character"
    return ""


def main():
    zoc = os.path.abspath(sys.argv[1])
    failed = 0
    with tempfile.TemporaryDirectory(prefix="zoc_cli_") as work:
        for name, shape, descr, fortran in (
                ("scalar.npy", [], "<f4", False), ("vector.npy", [5], "<f4", False),
                ("int32.npy", [1, 3, 16, 16], "<i4", False),
                ("fortran.npy", [1, 3, 16, 16], "<f4", True),
                ("three.npy", [3, 16, 16], "<f4", False),
                ("five.npy", [1, 1, 3, 16, 16], "<f4", False)):
            with open(os.path.join(work, name), "wb") as f:
                f.write(npy(shape, descr, fortran))
        runs = [(code, [want], args, None) for code, want, args in CASES]
        runs += [(code, [a, b], args, small_files) for code, a, b, args in FULL]
        for code, wants, args, preexec in runs:
            why = check(zoc, work, code, wants, args, preexec)
            if why:
                failed += 1
                print(f"FAIL zoc {' '.join(map(ascii, args))}: {why}")
    print(f"{len(runs)} command-line cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
