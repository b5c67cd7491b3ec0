#!/usr/bin/env python3
"""Whether two routes of an export corpus model give zoc the same model: the same generated code
and the same weights, so that a GPU check of one route also covers the other.

A GPU check builds and runs each compiled model (minutes of scarce GPU time per model and
precision). Where torch.jit.script and torch.jit.trace, or the two ONNX exporters, lead zoc to
the same code, a second GPU run of it would repeat the first. This compiles both routes of each
model in fp32 and fp16 with zoc, compares the generated sources after dropping comments, the
class name (the file's stem) and the IR hash (it covers source locations), and compares the
weights zoc extracts (`zoc extract-weights`) tensor by tensor, by name. It prints one line per
model and precision: SAME, or how the code or the weights differ.

Usage: same_code.py --zoc build/compiler/zoc --corpus CORPUS ROUTE_A ROUTE_B MODEL...
       (ROUTE: trace, script, dynamo or ts17; /usr/bin/python3 with numpy)
"""

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

SOURCES = (".cu", ".h", ".cpp")


def source_of(corpus, model, route):
    ext = ".pt" if route in ("trace", "script") else ".onnx"
    return os.path.join(corpus, model, route + ext)


def input_arg(corpus, model):
    with open(os.path.join(corpus, model, "meta.json")) as f:
        return "x".join(str(d) for d in json.load(f)["input"])


def normalized(folder, stem):
    """{file name with the stem as X: its lines without comments, class name or IR hash}"""
    cls = stem[:1].upper() + stem[1:]
    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(SOURCES):
            continue
        with open(os.path.join(folder, name)) as f:
            text = f.read()
        text = re.sub(r"//[^\n]*", "", text)
        text = re.sub(r'kIrHash = "[0-9a-f]+"', 'kIrHash = "-"', text)
        text = re.sub(r"\b%s\b" % re.escape(cls), "X", text)
        text = re.sub(r"\b%s(?=[._\"])" % re.escape(stem), "X", text)
        out[name.replace(stem, "X", 1)] = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return out


def tensors(path):
    """{name: float32 array} of a safetensors file (zoc writes F32 only)."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    head = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    return {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype=np.float32)
            for k, v in head.items() if k != "__metadata__"}


def compare(zoc, corpus, model, routes, precision, tmp):
    code, weights = [], []
    for r in routes:
        src = source_of(corpus, model, r)
        out = os.path.join(tmp, "%s_%s_%s" % (model, r, precision))
        args = [zoc, "compile", src, "-o", out, "--precision", precision]
        if r in ("trace", "script"):
            args += ["--input", input_arg(corpus, model)]
        subprocess.run(args, check=True, capture_output=True)
        code.append(normalized(out, r))
        w = os.path.join(tmp, "%s_%s.safetensors" % (model, r))
        if not os.path.exists(w):
            subprocess.run([zoc, "extract-weights", src, "-o", w], check=True,
                           capture_output=True)
        weights.append(tensors(w))
    diffs = []
    if code[0].keys() != code[1].keys():
        diffs.append("files %s vs %s" % (sorted(code[0]), sorted(code[1])))
    else:
        lines = sum(sum(a != b for a, b in zip(code[0][k], code[1][k]))
                    + abs(len(code[0][k]) - len(code[1][k])) for k in code[0])
        if lines:
            diffs.append("%d generated lines differ" % lines)
    if weights[0].keys() != weights[1].keys():
        diffs.append("weight names differ")
    else:
        worst = max((float(np.abs(weights[0][k] - weights[1][k]).max()) if weights[0][k].size
                     == weights[1][k].size else float("inf")) for k in weights[0])
        if worst:
            diffs.append("weights differ by up to %.3g" % worst)
    return "SAME" if not diffs else "; ".join(diffs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zoc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("route_a")
    ap.add_argument("route_b")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for m in a.models:
            for p in ("fp32", "fp16"):
                try:
                    verdict = compare(a.zoc, a.corpus, m, (a.route_a, a.route_b), p, tmp)
                except subprocess.CalledProcessError as e:
                    verdict = "zoc failed: %s" % e.stderr.decode(errors="replace")[-300:]
                failed += verdict != "SAME"
                print("%s %s %s vs %s: %s" % (m, p, a.route_a, a.route_b, verdict), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
