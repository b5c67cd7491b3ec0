#!/usr/bin/env python3
"""Compares one training step's outputs (loss, logits, grad.<name>, after.<running stats and
frozen parameters>) of an implementation with autograd's, tensor by tensor, as relative L2
error: the check of issue 8's first criterion. REF is grad_reference.py's file (PyTorch fp32, or as --ref-name says); --ref64 its float64 twin, the
exact answer, against which both are judged where fp32 itself is ill-conditioned (ResNet-50's
training-mode gradient: PyTorch fp32 is about 1% off float64 at 28x28).

  compare_grads.py REF GOT [--ref64 REF64] [--max 1e-3] [--against fp32|fp64] [--json OUT]
                   [--fp32-band K] [--ref-name NAME] [--scales]

Prints the worst tensors and a summary line; exit status 1 when a tensor is above --max against
the chosen reference, or GOT lacks a tensor REF has.
"""
import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))  # the baselines' networks and files
import nets  # noqa: E402


def compared_names(ref, got=()):
    """The tensors an implementation must match: loss, logits, every gradient, every running
    statistic after the step (num_batches_tracked is an integer count, not compared), and any
    other tensor after the step that both files hold: a frozen parameter (requires_grad=False),
    which the step must leave as it was."""
    names = {k for k in ref if k.startswith("grad.") or
             (k.startswith("after.") and k.endswith(("running_mean", "running_var")))}
    names |= {k for k in ref if k.startswith("after.") and k in got and
              ref[k].dtype.kind == "f" and not k.endswith("num_batches_tracked")}
    return sorted(names | {"loss", "logits"})


def rel_errors(ref, got, names):
    """{name: relative L2 error of got[name] against ref[name]} (float64 arithmetic)."""
    out = {}
    for k in names:
        a64, b64 = ref[k].astype(np.float64).ravel(), got[k].astype(np.float64).ravel()
        if a64.shape != b64.shape:
            raise ValueError("%s: %s values, expected %s" % (k, b64.shape, a64.shape))
        out[k] = float(np.linalg.norm(a64 - b64) / max(np.linalg.norm(a64), 1e-30))
    return out


def rms(v):
    return float(np.sqrt(np.mean(np.square(v.astype(np.float64))))) if v.size else 0.0


def print_scales(r64, ref, got, names, ref_name):
    """Each tensor's size and both errors against float64, as root mean squares, and the median
    size of the model's gradients: an error far below that median is rounding, not a wrong rule."""
    sizes = [rms(r64[k]) for k in r64 if k.startswith("grad.")]
    print("  median gradient RMS %.3g; per tensor: float64 RMS, error RMS (this, %s)"
          % (float(np.median(sizes)) if sizes else 0.0, ref_name))
    for k in names:
        print("  %-45s %.3g  %.3g  %.3g" % (k, rms(r64[k]), rms(got[k] - r64[k].astype(np.float64)),
                                          rms(ref[k] - r64[k].astype(np.float64))))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ref")
    p.add_argument("got")
    p.add_argument("--ref64", help="grad_reference.py --float64 output for the same batch")
    p.add_argument("--against", choices=("fp32", "fp64"), default="fp32")
    p.add_argument("--max", type=float, default=1e-3, help="largest relative L2 error allowed")
    p.add_argument("--json", help="write every error here")
    p.add_argument("--ref-name", default="PyTorch fp32",
                   help="what REF is, in the printout (e.g. \"PyTorch autocast bf16\"); the JSON "
                        "keys keep their names")
    p.add_argument("--minus", help="weights files instead: compare every float tensor of REF "
                   "and GOT after subtracting this file's (the initial weights): the optimizer "
                   "steps' updates are judged, not the weights they barely move")
    p.add_argument("--fp32-band", type=float, default=0,
                   help="with --against fp64: a tensor above --max still passes when its error "
                        "is at most this many times PyTorch fp32's own (a gradient that is zero "
                        "in exact arithmetic, as the beta of a BatchNorm whose output reaches "
                        "the loss only through later training-mode BatchNorms: rounding over "
                        "rounding)")
    p.add_argument("--scales", action="store_true",
                   help="with --ref64: for each tensor above --max, print root-mean-square sizes "
                        "(float64's value, GOT's and REF's errors against it) beside the median "
                        "size of the model's gradients: whether it is rounding noise")
    a = p.parse_args(argv)
    if a.against == "fp64" and not a.ref64:
        p.error("--against fp64 needs --ref64")
    ref, _ = nets.safetensors_io.load_file(a.ref)
    got, _ = nets.safetensors_io.load_file(a.got)
    names = compared_names(ref, got)
    if a.minus:
        init, _ = nets.safetensors_io.load_file(a.minus)
        names = sorted(k for k, v in ref.items() if v.dtype.kind == "f" and k in init)
        ref = {k: ref[k].astype(np.float64) - init[k] for k in names}
        got = {k: got[k].astype(np.float64) - init[k] for k in names if k in got}
    missing = [k for k in names if k not in got]
    if missing:
        print("missing in %s: %s" % (a.got, ", ".join(missing[:8])))
        return 1
    report = {"vs_fp32": rel_errors(ref, got, names)}
    if a.ref64:
        r64, _ = nets.safetensors_io.load_file(a.ref64)
        if a.minus:
            r64 = {k: r64[k].astype(np.float64) - init[k] for k in names}
        report["vs_fp64"] = rel_errors(r64, got, names)
        report["pytorch_fp32_vs_fp64"] = rel_errors(r64, ref, names)
    judged = report["vs_fp64" if a.against == "fp64" else "vs_fp32"]
    worst = sorted(judged.items(), key=lambda kv: -kv[1])
    for k, e in worst[:5]:
        print("  %-45s %.3g" % (k, e))
    against = a.ref_name if a.against == "fp32" else "PyTorch fp64"
    line = "%d tensors, against %s: median %.3g, worst %.3g (%s)" % (
        len(names), against, float(np.median(list(judged.values()))), worst[0][1], worst[0][0])
    if a.ref64:
        t = report["pytorch_fp32_vs_fp64"]
        line += "; %s against fp64: median %.3g, worst %.3g" % (
            a.ref_name, float(np.median(list(t.values()))), max(t.values()))
    print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    bad = [k for k, e in judged.items() if not e <= a.max]
    if a.scales and a.ref64:
        print_scales(r64, ref, got, bad, a.ref_name)
    if a.fp32_band > 0 and a.against == "fp64":
        # (a non-finite error never passes: inf within K x an overflowing reference's inf)
        band = [k for k in bad if np.isfinite(judged[k]) and
                judged[k] <= a.fp32_band * report["pytorch_fp32_vs_fp64"][k]]
        if band:
            print("%d tensors above %g within %g x %s's own error (rounding dominates: "
                  "zero in exact arithmetic, or ill-conditioned): %s"
                  % (len(band), a.max, a.fp32_band, a.ref_name, ", ".join(band[:3])))
        bad = [k for k in bad if k not in band]
    if bad:
        print("FAIL: %d tensors above %g (%s)" % (len(bad), a.max, ", ".join(bad[:5])))
        return 1
    print("PASS: every tensor within %g" % a.max)
    return 0


if __name__ == "__main__":
    sys.exit(main())
