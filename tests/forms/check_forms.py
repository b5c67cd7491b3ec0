#!/usr/bin/env python3
"""Run zoc on every form make_forms.py wrote, per route, and compare with the expected table.

Routes: `script` (model.pt), `trace` (model_traced.pt), `onnx` (model.onnx). Per route the form
goes through `zoc run` on the reference interpreter with the file's own weights (what it reads
without --weights: a module's state_dict, ONNX's initializers) on make_forms.py's input; the
verdict is
  PASS                  every output within relative L2 1e-5 of PyTorch's (argmax: exactly),
  REFUSED: <message>    zoc's first error message, paths and line numbers removed,
  MISMATCH <error>      outputs off PyTorch's (never an expected verdict),
  NOT EXPORTED          PyTorch wrote no file for the route (meta.json says why).
The verdicts are printed as `form route verdict` lines; with --expected, every line must equal
the file's line for that form and route (forms missing from the file fail), so that a form that
starts or stops passing, or a refusal whose text changes, shows in the diff.
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

ROUTES = (("script", "model.pt"), ("trace", "model_traced.pt"), ("onnx", "model.onnx"))
TOLERANCE = 1e-5


def first_error(text):
    """zoc's first error without what varies: folders, source positions, and the list of every
    op zoc maps that an unsupported-operation error carries; its listed problems joined by |."""
    lines = text.splitlines()
    for k, line in enumerate(lines):
        m = re.search(r"error: (.*)", line)
        if not m:
            continue
        message = re.sub(r" \(zoc maps .*\):$", ":", m.group(1))
        for item in lines[k + 1:]:
            if not item.startswith("  "):
                break
            message += " " + item.strip() + " |"
        message = re.sub(r" at [^\s]+:\d+(:\d+)?", "", message.rstrip(" |"))
        return re.sub(r"(/[^\s:'\"]+/)", "", message).strip()
    return (text.strip().splitlines() or ["no message"])[-1]


def zoc(binary, *args):
    r = subprocess.run([binary] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def output_names(stdout):
    """`zoc run`'s `output 'name': type` lines, in the graph's output order."""
    return re.findall(r"^output '([^']*)':", stdout, flags=re.M)


def file_safe(name):
    out = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return "_" + out if not out or out[0] == "." else out


def rel_l2(got, want):
    if got.shape != want.shape:
        return float("inf")
    den = max(float(np.linalg.norm(want.astype(np.float64))), 1e-30)
    return float(np.linalg.norm(got.astype(np.float64) - want.astype(np.float64))) / den


def judge(binary, folder, model, scratch):
    path = os.path.join(folder, model)
    # Every route runs on the file's own weights: a module's state_dict, ONNX's initializers.
    args = ["run", path, "--input", os.path.join(folder, "input.npy"), "--top", "1"]
    out = os.path.join(scratch, "out.npy")
    rc, text = zoc(binary, *args, "--output", out)
    if rc != 0:
        return "REFUSED: " + first_error(text)
    wants = sorted(f for f in os.listdir(folder) if re.match(r"output_\d+\.npy$", f))
    names = output_names(text)
    files = [out] if len(wants) == 1 else [
        os.path.join(scratch, "out_%s.npy" % file_safe(n)) for n in names]
    if len(files) != len(wants):
        return "MISMATCH %d outputs, PyTorch %d" % (len(files), len(wants))
    worst = max(rel_l2(np.load(f), np.load(os.path.join(folder, w))) for f, w in zip(files, wants))
    return "PASS" if worst <= TOLERANCE else "MISMATCH rel L2 %.3g" % worst


def verdicts(binary, root, forms):
    for form in forms:
        folder = os.path.join(root, form)
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
        scratch = os.path.join(folder, "zoc")
        os.makedirs(scratch, exist_ok=True)
        for route, model in ROUTES:
            if model in meta["not_exported"]:
                yield form, route, "NOT EXPORTED"
            else:
                yield form, route, judge(binary, folder, model, scratch)


def read_expected(path):
    table = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                form, route, verdict = line.rstrip("\n").split(" ", 2)
                table[(form, route)] = verdict
    return table


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zoc", required=True)
    p.add_argument("--dir", required=True, help="make_forms.py's --out")
    p.add_argument("--expected", help="the table the verdicts must equal")
    p.add_argument("--forms", nargs="*", help="default: every folder of --dir")
    args = p.parse_args(argv)
    forms = args.forms or sorted(d for d in os.listdir(args.dir)
                                 if os.path.exists(os.path.join(args.dir, d, "meta.json")))
    expected = read_expected(args.expected) if args.expected else None
    failed = 0
    for form, route, verdict in verdicts(args.zoc, args.dir, forms):
        line = "%s %s %s" % (form, route, verdict)
        want = None if expected is None else expected.get((form, route), "(no expected line)")
        bad = verdict.startswith("MISMATCH") or (want is not None and want != verdict)
        failed += bad
        print(("FAIL " if bad else "") + line + ("\n  expected: " + want if bad and want else ""),
              flush=True)
    print("%d of the verdicts differ from what they should be" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
