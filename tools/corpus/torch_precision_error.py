#!/usr/bin/env python3
"""How far PyTorch's own fp16 and bf16 are from its fp32 on a corpus model: the conditioning
that a GPU band (DESIGN.md: fp16/bf16 within 2e-2 relative L2 of fp32) assumes.

zoc's GPU checks compare zoc's fp16 output with PyTorch's fp32 one. With the corpus's synthetic
weights (tools/corpus/export_corpus.py) a few models amplify rounding far more than trained
networks do; there zoc's fp16 error says nothing about zoc until PyTorch's own fp16 is measured
on the same weights and input. This builds the model exactly as export_corpus.py does (same seed,
same tiled weights), takes the seeded batch of 8 of tests/gpu/prepare_corpus_check.sh, and
prints per model the relative L2 error against fp32 (TF32 off) of float64, and of fp16 and bf16
(the module cast with .half()/.bfloat16(), channels-last, input cast the same way). The JSON also
keeps, per sample, the squared distance and the squared norm of the reference (`fp16_samples`
...), so that a check of the first B samples is judged by PyTorch's error on those same samples.

Usage (GPU machine: torch >= 2.9, timm, torchvision):
  torch_precision_error.py MODEL... [--seed 7] [--json FILE]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_corpus  # noqa: E402


def kind_of(name):
    """As the corpus's folders: torchvision's name first (efficientnet_b0 is in both lists)."""
    if name in export_corpus.TORCHVISION:
        return "torchvision"
    if name in export_corpus.SEGMENTATION:
        return "segmentation"
    return "timm"


def rel(a, b):
    import torch

    a, b = a.double().flatten(), b.double().flatten()
    return float(torch.linalg.norm(a - b) / max(float(torch.linalg.norm(b)), 1e-30))


def per_sample(a, b):
    """[[|a_i - b_i|^2, |b_i|^2] per sample i]: the parts of a relative L2 over any samples."""
    a, b = a.double().flatten(1), b.double().flatten(1)
    return [[float(d), float(r)] for d, r in zip(((a - b) ** 2).sum(1), (b ** 2).sum(1))]


def measure(name, seed):
    import torch

    kind = kind_of(name)
    model = export_corpus.tiled_weights(export_corpus.build(kind, name), seed)
    shape = (8,) + tuple(model._zoc_input)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed * 16 + 3))
    first = lambda y: (next(iter(y.values())) if isinstance(y, dict)  # noqa: E731
                       else y[0] if isinstance(y, (tuple, list)) else y)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    out = {"model": name, "kind": kind}
    with torch.no_grad():
        m = model.to(dev).eval()
        ref = first(m(x.to(dev))).float().cpu()
        exact = first(m.double()(x.double().to(dev))).cpu()
        out["fp64"], out["fp64_samples"] = rel(exact, ref), per_sample(exact, ref)
        for tag, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            mm = model.to(dt).to(memory_format=torch.channels_last)
            y = first(mm(x.to(dev, dt).contiguous(memory_format=torch.channels_last)))
            out[tag] = rel(y.float().cpu(), ref)
            out[tag + "_samples"] = per_sample(y.float().cpu(), ref)
    return out


def main():
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    print("| model | float64 vs fp32 | PyTorch fp16 vs fp32 | PyTorch bf16 vs fp32 |")
    print("|---|---|---|---|")
    for name in a.models:
        try:
            r = measure(name, a.seed)
        except Exception as e:  # noqa: BLE001 - one model's failure is a row, not the end
            r = {"model": name, "error": "%s: %s" % (type(e).__name__, str(e)[:200])}
            print("| %s | %s |" % (name, r["error"]), flush=True)
        else:
            print("| %s | %.3g | %.3g | %.3g |" % (name, r["fp64"], r["fp16"], r["bf16"]),
                  flush=True)
        rows.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
