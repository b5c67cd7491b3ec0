#!/usr/bin/env python3
"""Run a corpus that export_corpus.py wrote through zoc's reference interpreter, per route.

For each model folder (meta.json, output*.npy, and the route files script.pt, trace.pt,
dynamo.onnx, ts17.onnx) this regenerates the input from the seed (checking meta.json's hash),
runs `zoc run --optimize` on each route file (TorchScript: the module's own weights through
`zoc extract-weights`), and compares the first output with PyTorch's by relative L2 error:

  PASS     within --tol (1e-5) of PyTorch's output; or, where the model (with these synthetic
           weights) is ill-conditioned, at least as close to the float64 result as PyTorch's own
           fp32 output is (twice its distance, or --tol): the float64 result comes from the
           traced or scripted module run in double by this machine's torch, and says which
  WRONG    zoc ran and gave another number: the worst outcome, a bug to fix first
  REFUSED  zoc refused the model; the first error line says why
  NO FILE  the exporter itself failed on the GPU machine (meta.json holds its error)

Writes DIR/report.json and DIR/report.md (a family x route table) and prints the table.
Needs numpy and torch (for the seeded input): Debian's python3-torch.

With --expect FILE (JSON: {model: {route: status}}) it is a test: it fails when a route
expected to PASS does not, or when any route is WRONG or CRASH; a route that now does better
than expected is listed, to be recorded with --write-expect.

Usage: check_corpus.py --zoc build/compiler/zoc --corpus DIR [--only a,b] [--jobs 2]
                       [--routes script,trace,dynamo,ts17] [--timeout 600] [--out DIR]
                       [--expect FILE | --write-expect FILE]
"""

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROUTES = ("script", "trace", "dynamo", "ts17")
FILES = {"script": "script.pt", "trace": "trace.pt", "dynamo": "dynamo.onnx", "ts17": "ts17.onnx"}


def regenerate_input(meta, path):
    import torch

    x = torch.randn((1,) + tuple(meta["input"]),
                    generator=torch.Generator().manual_seed(meta["seed"] * 16 + 2))
    a = x.numpy()
    if hashlib.sha256(a.tobytes()).hexdigest() != meta["input_sha256"]:
        raise RuntimeError("the regenerated input does not match the exporter's (input_sha256)")
    np.save(path, a)


def reference64(folder, meta, x_path):
    """The first output in float64 (output64.npy, cached beside the corpus files), from the
    traced (else scripted) module run in double; None when neither loads here."""
    import torch

    cached = os.path.join(folder, "output64.npy")
    if os.path.exists(cached):
        return np.load(cached)
    for name in ("trace.pt", "script.pt"):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        try:
            m = torch.jit.load(path).eval().double()
            with torch.no_grad():
                y = m(torch.from_numpy(np.load(x_path)).double())
        except Exception:  # noqa: BLE001 - an archive this torch cannot run: no fp64 check
            continue
        if isinstance(y, dict):
            y = next(iter(y.values()))
        elif isinstance(y, (tuple, list)):
            y = y[0]
        out = y.numpy()
        np.save(cached, out)
        return out
    return None


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def first_error(text):
    """The first error line, or for a list of unsupported operations the operations, counted."""
    import collections
    import re

    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "error:" in line and "unsupported" in line:
            ops = collections.Counter()
            for item in lines[i + 1:]:
                if not item.startswith("  "):
                    break
                m = re.search(r": ((?:aten|prim)::\w+)", item) or re.search(r"\((\w+), #\d+\)", item)
                ops[m.group(1) if m else item.strip()[:60]] += 1
            return "unsupported: " + ", ".join(
                k + ("" if v == 1 else " x%d" % v) for k, v in sorted(ops.items()))
    errors = [l for l in lines if "error:" in l]
    text = errors[0] if errors else (lines[-1] if lines else "")
    return text.split("error: ", 1)[-1][:400]


def run_route(zoc, folder, meta, route, tmp, timeout, tol):
    model = os.path.join(folder, FILES[route])
    if not os.path.exists(model):
        err = meta.get("routes", {}).get(route, {}).get("error", "not exported")
        return {"status": "NO FILE", "why": err[:300]}
    x = os.path.join(tmp, "input.npy")
    y = os.path.join(tmp, route + "_out.npy")
    cmd = [zoc, "run", model, "--input", x, "--output", y, "--optimize", "--top", "1"]
    t0 = time.time()
    try:
        if route in ("script", "trace"):
            w = os.path.join(tmp, route + ".safetensors")
            r = subprocess.run([zoc, "extract-weights", model, "-o", w], capture_output=True,
                               text=True, timeout=timeout)
            if r.returncode != 0:
                return {"status": "REFUSED", "why": first_error(r.stderr), "step": "extract"}
            cmd += ["--weights", w]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "TIMEOUT", "why": "over %d s" % timeout}
    seconds = round(time.time() - t0, 1)
    if r.returncode != 0:
        crashed = r.returncode < 0 or "Sanitizer" in r.stderr
        return {"status": "CRASH" if crashed else "REFUSED", "why": first_error(r.stderr),
                "seconds": seconds, "stderr": r.stderr[-4000:]}
    ref = np.load(os.path.join(folder, "output%s.npy" % meta["outputs"][0]["suffix"]))
    if not os.path.exists(y):  # several outputs: `zoc run` wrote Y_<name>.npy for each, in the
        import re              # order its `output 'name':` lines give; the first is compared
        names = re.findall(r"^output '([^']*)':", r.stdout, flags=re.M)
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", names[0]) if names else ""
        y = os.path.join(tmp, "%s_out_%s.npy" % (route, "_" + safe if safe[:1] in ("", ".")
                                                        else safe))
        if not os.path.exists(y):
            return {"status": "WRONG", "why": "no output file for %s" % (names[:1] or "?"),
                    "seconds": seconds}
    got = np.load(y)
    if got.shape != ref.shape:
        return {"status": "WRONG", "why": "shape %s, PyTorch's %s" % (got.shape, ref.shape),
                "seconds": seconds}
    err = rel(got, ref)
    if err <= tol:
        return {"status": "PASS", "rel_l2": err, "seconds": seconds}
    # Ill-conditioned? Judge both against float64.
    ref64 = reference64(folder, meta, x)
    if ref64 is not None and ref64.shape == got.shape:
        torch_err, zoc_err = rel(ref, ref64), rel(got, ref64)
        if zoc_err <= max(tol, 2 * torch_err):
            return {"status": "PASS", "rel_l2": err, "seconds": seconds,
                    "why": "ill-conditioned: against float64 zoc %.3g, PyTorch fp32 %.3g" % (
                        zoc_err, torch_err)}
        return {"status": "WRONG", "rel_l2": err, "seconds": seconds,
                "why": "relative L2 error %.3g (against float64: zoc %.3g, PyTorch fp32 %.3g)" % (
                    err, zoc_err, torch_err)}
    return {"status": "WRONG", "rel_l2": err, "seconds": seconds,
            "why": "relative L2 error %.3g" % err}


def check_model(zoc, corpus, name, routes, timeout, tol):
    folder = os.path.join(corpus, name)
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    out = {"kind": meta.get("kind"), "routes": {}}
    if "build_error" in meta:
        return name, {"kind": meta.get("kind"), "build_error": meta["build_error"][-300:]}
    with tempfile.TemporaryDirectory() as tmp:
        regenerate_input(meta, os.path.join(tmp, "input.npy"))
        for route in routes:
            out["routes"][route] = run_route(zoc, folder, meta, route, tmp, timeout, tol)
    return name, out


def table(results, routes):
    rows = ["| model | kind | " + " | ".join(routes) + " |",
            "|---|---|" + "---|" * len(routes)]
    for name, r in sorted(results.items(), key=lambda kv: (kv[1].get("kind", ""), kv[0])):
        cells = []
        for route in routes:
            c = r.get("routes", {}).get(route, {"status": "-"})
            why = c.get("why", "").replace("|", "/")[:160]
            cells.append(c["status"] + (": " + why if why else ""))
        rows.append("| %s | %s | %s |" % (name, r.get("kind", ""), " | ".join(cells)))
    counts = {}
    for r in results.values():
        for route in routes:
            s = r.get("routes", {}).get(route, {}).get("status", "-")
            counts.setdefault(route, {}).setdefault(s, 0)
            counts[route][s] += 1
    summary = ["%s: %s" % (route, ", ".join("%s %d" % kv for kv in sorted(counts[route].items())))
               for route in routes if route in counts]
    return "\n".join(rows), summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zoc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--routes", default=",".join(ROUTES))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--out", default="", help="where report.json/.md go (default: --corpus)")
    ap.add_argument("--expect", default="", help="statuses to hold to (a test)")
    ap.add_argument("--write-expect", default="", help="write this run's statuses there")
    a = ap.parse_args()
    routes = [r for r in a.routes.split(",") if r]
    names = sorted(n for n in os.listdir(a.corpus)
                   if os.path.exists(os.path.join(a.corpus, n, "meta.json")))
    if a.only:
        keep = set(a.only.split(","))
        names = [n for n in names if n in keep]
    results = {}
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        futures = [ex.submit(check_model, a.zoc, a.corpus, n, routes, a.timeout, a.tol)
                   for n in names]
        for fut in cf.as_completed(futures):
            name, r = fut.result()
            results[name] = r
            print("%-28s %s" % (name, " ".join(
                "%s=%s" % (k, v["status"]) for k, v in r.get("routes", {}).items())), flush=True)
    md, summary = table(results, routes)
    out = a.out or a.corpus
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(md + "\n\n" + "\n".join(summary) + "\n")
    print(md)
    print("\n".join(summary))
    wrong = sum(1 for r in results.values() for c in r.get("routes", {}).values()
                if c["status"] in ("WRONG", "CRASH"))
    statuses = {n: {k: c["status"] for k, c in r.get("routes", {}).items()}
                for n, r in results.items()}
    if a.write_expect:
        with open(a.write_expect, "w") as f:
            json.dump(statuses, f, indent=1, sort_keys=True)
            f.write("\n")
    if a.expect:
        return compare_expected(statuses, a.expect) or (1 if wrong else 0)
    return 1 if wrong else 0


def compare_expected(statuses, path):
    """1 when a route expected to PASS does not; lists routes that do better than expected."""
    with open(path) as f:
        expected = json.load(f)
    lost, better = [], []
    for model, routes in expected.items():
        for route, want in routes.items():
            got = statuses.get(model, {}).get(route, "not run")
            if want == "PASS" and got != "PASS":
                lost.append("%s %s: expected PASS, got %s" % (model, route, got))
            elif want != "PASS" and got == "PASS":
                better.append("%s %s: now PASS (expected %s)" % (model, route, want))
    for line in lost:
        print("REGRESSION " + line)
    for line in better:
        print("BETTER " + line + " -- record it with --write-expect")
    print("expectations: %d regressions, %d better" % (len(lost), len(better)))
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
