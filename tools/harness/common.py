"""Pieces every part of the benchmark harness shares: statistics, accuracy, records, files.

Every implementation, whatever runs it (a zoc binary, a LibTorch program, PyTorch in Python),
ends up as *point records*: one dict per (variant, model, resolution, batch) with the same keys,
so that the report does not care where a number came from. The statistics are computed here from
the per-iteration times each runner reports (numpy's percentile, which zoc's timing.h also
reproduces), and the accuracy verdict is computed here against the PyTorch fp32 reference with
TF32 off, with the bands of DESIGN.md (shared with tests/gpu/gpu_compare.py, imported from there).
"""

import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
from gpu_compare import BANDS, compare_arrays  # noqa: E402  (one definition of the bands)

VARIANT_KEYS = ("name", "family", "impl", "precision", "tf32", "layout", "graph", "label")


def new_record(v, g, batch, step=""):
    """A record for variant v, group g, batch; status 'pending' until a runner fills it."""
    rec = {k: v.get(k) for k in VARIANT_KEYS}
    rec.update(variant=v["name"], model=g["model"], resolution=g["resolution"],
               sweep=g["sweep"], batch=batch, step=step, status="pending")
    return rec


def latency_stats(ms):
    """Median, tails, mean and count of per-iteration milliseconds; {} if there are none."""
    if not ms:
        return {}
    a = np.asarray(ms, dtype=np.float64)
    return {"median_ms": float(np.percentile(a, 50)), "p90_ms": float(np.percentile(a, 90)),
            "p99_ms": float(np.percentile(a, 99)), "min_ms": float(a.min()),
            "max_ms": float(a.max()), "mean_ms": float(a.mean()), "iters": int(a.size),
            "timed_s": float(a.sum() / 1000.0)}


def fill_timing(rec, iter_ms, host_cpu_us=None, host_wall_us=None):
    """Per-iteration lists into the record, with statistics and throughput."""
    rec["iter_ms"] = [float(x) for x in iter_ms]
    rec.update(latency_stats(rec["iter_ms"]))
    if rec.get("median_ms"):
        rec["img_per_s"] = 1000.0 * rec["batch"] / rec["median_ms"]
    if host_cpu_us:
        rec["iter_host_cpu_us"] = [float(x) for x in host_cpu_us]
        rec["host_cpu_us"] = float(np.median(host_cpu_us))
    if host_wall_us:
        rec["host_wall_us"] = float(np.median(host_wall_us))


def fill_h2d(rec, h2d):
    if h2d:
        rec.update(h2d_bytes=h2d.get("bytes"), h2d_pageable_ms=h2d.get("pageable_ms"),
                   h2d_pinned_ms=h2d.get("pinned_ms"))


def band_of(precision):
    return BANDS.get(precision)


def as_reference_shape(out, ref):
    """A runner's output in the reference's shape: zoc writes [rows, outputs] flat, where a
    segmentation network's reference is its `out` map [rows, classes, H, W] (NCHW, the model's
    own layout, whatever zoc's inside); anything else is returned as it came, to be refused."""
    if out.shape != ref.shape and out.shape[:1] == ref.shape[:1] and out.size == ref.size:
        return out.reshape(ref.shape)
    return out


def judge(rec, ref_path, samples):
    """Accuracy of rec['output_npy'] (first rows) against the reference; sets PASS or FAIL.
    A segmentation map ([N, classes, H, W]) is judged the same way, relative L2 over the whole
    map, and its per-pixel argmax agreement is recorded as pixel_agree (not judged).

    Only records that ran ('ok') are judged; oom/error/skipped keep their status."""
    if rec.get("status") != "ok":
        return rec
    band = band_of(rec["precision"])
    rec["band"] = band
    rows = min(rec["batch"], samples)
    try:
        out = np.load(rec["output_npy"]).astype(np.float64)
        ref = np.load(ref_path)[:rows]
    except (OSError, KeyError, ValueError) as e:
        rec.update(status="FAIL", error="no output to check: %s" % e)
        return rec
    out = as_reference_shape(out, ref)
    if out.shape != ref.shape:
        rec.update(status="FAIL", error="output %s, reference %s" % (out.shape, ref.shape))
    elif not np.isfinite(out).all():
        rec.update(status="FAIL", error="non-finite output")
    else:
        acc = compare_arrays(out, ref)  # "top1": argmax over axis 1, per pixel for a map
        rec.update(rel_l2_err=acc["rel_l2"], max_abs_err=acc["max_abs"],
                   centered_rel_l2=acc.get("centered_rel_l2"), rows_checked=rows)
        rec["pixel_agree" if ref.ndim == 4 else "top1_agree"] = acc["top1"]
        ok = band is not None and acc["rel_l2"] <= band
        rec["status"] = "PASS" if ok else "FAIL"
        if not ok:
            rec["error"] = "rel L2 %.3g outside the %s band %s" % (acc["rel_l2"], rec["precision"],
                                                                 band)
    return rec


def md_table(header, rows):
    """A Markdown table (report.py's summary, layer_profile.py's breakdowns)."""
    out = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(out)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_jsonl(path):
    """Records of a JSON-lines file; a line cut short by a killed writer is skipped."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def tail(path, lines=12):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:]).rstrip()
    except OSError as e:
        return "(no log: %s)" % e


def tile_samples(samples, batch):
    """The first `batch` samples, repeating them in order (as zoc's --tile does)."""
    index = np.arange(batch) % samples.shape[0]
    return np.ascontiguousarray(samples[index])


def load_plan(description, argv=None):
    """The plan file a Python runner is given (bench.py writes it), its outputs folder made."""
    import argparse
    p = argparse.ArgumentParser(description=description)
    p.add_argument("plan")
    a = p.parse_args(argv)
    with open(a.plan) as f:
        plan = json.load(f)
    os.makedirs(plan["outputs"], exist_ok=True)
    return plan


def describe(e):
    """An exception's type and message, first 400 characters (the log has the traceback)."""
    return ("%s: %s" % (type(e).__name__, e))[:400]


def emit_record(plan, rec):
    """Appends a Python runner's record to the plan's JSON-lines file and prints a line."""
    with open(plan["records"], "a") as f:
        f.write(json.dumps(rec) + "\n")
    what = ("%.4f ms" % rec["median_ms"]) if rec.get("median_ms") is not None else rec["status"]
    print("[%6.1fs left] %-45s %s r%d b%-4d %s%s" % (
        plan["deadline"] - time.time(), rec["label"], rec["model"], rec["resolution"],
        rec["batch"], what, (": " + rec["error"].splitlines()[-1][:120]) if rec.get("error") else ""),
        flush=True)
