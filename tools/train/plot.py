#!/usr/bin/env python3
"""Accuracy-against-time plots and a summary table from the training CSVs, like the study's.

Issue 8 judges zoc's trainer by test accuracy (mean over seeds) and time per step against the
PyTorch eager and LibTorch baselines run the same way. This reads any number of per-epoch CSVs
(train_pytorch.py, train_libtorch, later zoc's trainer: header impl, model, dataset, seed, epoch,
train_loss, train_acc, test_acc, step_ms, epoch_s, peak_mem_mb), averages each implementation
over its seeds epoch by epoch, and writes under --out:
  summary.md                 one row per (model, impl): seeds, epochs, final test accuracy
                             (mean and spread over seeds), median step time, training time,
                             peak memory; always written, and printed
  <model>_accuracy.png       test accuracy against cumulative training time (sum of epoch_s:
                             training only, evaluation excluded) and against epoch, one line per
                             impl; only where matplotlib imports (it does on the GPU machine)

  plot.py a.csv b.csv ... --out DIR
"""

import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict

FIELDS = ("impl", "model", "dataset", "seed", "epoch", "train_loss", "train_acc", "test_acc",
          "step_ms", "epoch_s", "peak_mem_mb")
# Columns added for data-parallel runs (issue 21); older CSVs without them read as one process.
OPTIONAL = {"world_size": 1.0, "img_per_s": float("nan")}


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [k for k in FIELDS if k not in (reader.fieldnames or [])]
            if missing:
                raise ValueError("%s: missing columns %s" % (path, ", ".join(missing)))
            for line, r in enumerate(reader, start=2):
                try:
                    rows.append({"impl": r["impl"], "model": r["model"], "dataset": r["dataset"],
                                 "seed": int(r["seed"]), "epoch": int(r["epoch"]),
                                 **{k: float(r[k]) for k in FIELDS[5:]},
                                 **{k: float(r[k]) if r.get(k) else d
                                    for k, d in OPTIONAL.items()}})
                except ValueError as e:
                    raise ValueError("%s:%d: %s" % (path, line, e))
    return rows


def curves(rows):
    """{(model, impl): {"epochs": [...], "acc": [...], "time": [...], "seeds": n, ...}}: per
    epoch, the mean over seeds of test accuracy and of cumulative training seconds."""
    runs = defaultdict(dict)  # (model, impl) -> seed -> epoch -> row
    for r in rows:  # several processes: one more line, "impl x N GPUs"
        impl = r["impl"] if r["world_size"] <= 1 else "%s x%d GPUs" % (r["impl"], r["world_size"])
        runs[(r["model"], impl)].setdefault(r["seed"], {})[r["epoch"]] = r
    out = {}
    for key, seeds in sorted(runs.items()):
        epochs = sorted(set.intersection(*(set(s) for s in seeds.values())))
        cum = {seed: {} for seed in seeds}
        for seed, by_epoch in seeds.items():
            total = 0.0
            for e in sorted(by_epoch):
                total += by_epoch[e]["epoch_s"]
                cum[seed][e] = total
        finals = [seeds[s][epochs[-1]]["test_acc"] for s in seeds] if epochs else []
        out[key] = {
            "epochs": epochs, "seeds": len(seeds),
            "acc": [statistics.mean(seeds[s][e]["test_acc"] for s in seeds) for e in epochs],
            "time": [statistics.mean(cum[s][e] for s in seeds) for e in epochs],
            "final": finals,
            "step_ms": statistics.median(r["step_ms"] for s in seeds.values() for r in s.values()),
            "peak_mb": max(r["peak_mem_mb"] for s in seeds.values() for r in s.values()),
            "img_per_s": statistics.median(r["img_per_s"] for s in seeds.values()
                                           for r in s.values()),
        }
    return out


def summary(cs):
    lines = ["| model | impl | seeds | epochs | final test acc (mean) | spread over seeds | "
             "median step ms | images/s | train s (mean) | peak MiB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (model, impl), c in cs.items():
        if not c["epochs"]:
            continue
        spread = max(c["final"]) - min(c["final"])
        lines.append("| %s | %s | %d | %d | %.4f | %.4f | %.3f | %.0f | %.1f | %.0f |" % (
            model, impl, c["seeds"], c["epochs"][-1], c["acc"][-1], spread, c["step_ms"],
            c["img_per_s"], c["time"][-1], c["peak_mb"]))
    return "\n".join(lines) + "\n"


def plot(cs, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed; wrote the summary only", file=sys.stderr)
        return []
    written = []
    for model in sorted({m for m, _ in cs}):
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
        for (m, impl), c in cs.items():
            if m != model or not c["epochs"]:
                continue
            label = "%s (%d seed%s)" % (impl, c["seeds"], "" if c["seeds"] == 1 else "s")
            left.plot(c["time"], c["acc"], marker="o", label=label)
            right.plot(c["epochs"], c["acc"], marker="o", label=label)
        left.set_xlabel("cumulative training time (s, evaluation excluded)")
        right.set_xlabel("epoch")
        for ax in (left, right):
            ax.set_ylabel("test accuracy (mean over seeds)")
            ax.grid(True, alpha=0.3)
            ax.legend()
        fig.suptitle("%s on Fashion-MNIST" % model)
        fig.tight_layout()
        path = os.path.join(out, "%s_accuracy.png" % model)
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv", nargs="+")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    try:
        cs = curves(read_rows(a.csv))
    except (OSError, ValueError) as e:
        raise SystemExit("plot.py: error: %s" % e)
    os.makedirs(a.out, exist_ok=True)
    text = summary(cs)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    for path in plot(cs, a.out):
        print("plot.py: wrote %s" % path)


if __name__ == "__main__":
    main()
