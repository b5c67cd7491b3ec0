#!/usr/bin/env python3
"""What each sweep of the benchmark harness measures: the one place that lists them.

The harness runs in two places: tools/harness/prepare.sh on the CPU machine generates the zoc
folders a sweep needs (zoc builds only there, and the resolution is fixed at compile time), and
tools/harness/run.sh on the GPU machine measures. Both must agree on which folders, models,
resolutions, batch sizes and implementations a sweep contains, so both read this file:
prepare.sh through `plan.py folders MODE`, bench.py by importing it.

A *variant* is one implementation in one configuration (a line in the plots): its family
(zoc, eager, torchscript, libtorch, compile), the runner that executes it, precision, TF32,
memory layout and CUDA graph use. A *group* is a model at one resolution with its batch sizes.
A *step* is one runner process (or one per group for the C++ runners and zoc) over variants
and groups, with the seconds it needs at least to be worth starting.

Modes: quick (one 10-minute device command, builds included), and the parts of the full sweep,
each meant to fit one command: batch-zoc, batch-torch, batch-cpp (ResNet-50 224x224, batch
1..1024), resolution (32..1024 at batch 8), lenet (28x28, batch 1..1024), compile
(torch.compile default at five batch sizes and max-autotune at batch 1), compile-max-32 and
compile-max-256 (default, then max-autotune, at one batch size each: max-autotune's autotuning
alone takes minutes); full runs all parts in one go (for a machine without the 10-minute
limit: raise HARNESS_BUDGET_S).
"""

import sys

POW2_256 = [1 << i for i in range(9)]    # 1 .. 256
POW2_1024 = [1 << i for i in range(11)]  # 1 .. 1024
RES_BATCH = 8  # the fixed batch of the resolution sweep
SAMPLES = {"resnet50": 16, "lenet": 64}  # distinct seeded samples exported (tiled above)
NATIVE_RES = {"resnet50": 224, "lenet": 28}
PARTS = ("batch-zoc", "batch-torch", "batch-cpp", "resolution", "lenet", "compile",
         "compile-max-32", "compile-max-256")
MODES = ("quick",) + PARTS + ("full",)

LAYOUT_LABEL = {"nchw": "NCHW", "channels_last": "channels-last", "nhwc": "NHWC"}


def variant(family, impl, precision, layout="nchw", graph=False, runner=None, **extra):
    """One implementation configuration. `impl` is the CSV's impl column (family first)."""
    tf32 = precision == "tf32"
    if family == "zoc":  # zoc keeps fp16/bf16 activations NHWC, fp32/tf32 NCHW
        layout = "nhwc" if precision in ("fp16", "bf16") else "nchw"
    name = "%s_%s_%s" % (impl, precision, layout)
    words = [impl, precision + (" (TF32 off)" if precision == "fp32" else "")]
    if layout != "nchw":
        words.append(LAYOUT_LABEL[layout])
    v = {"name": name, "family": family, "impl": impl, "precision": precision, "tf32": tf32,
         "layout": layout, "graph": graph, "runner": runner or family, "label": " ".join(words)}
    v.update(extra)
    return v


def zoc(precision, graph, tune=False):
    """zoc rows. With a CUDA graph a per-layer profile is taken too (--profile); tune: the
    convolution algorithms are chosen by measurement first (--tune, a plan file per folder)
    rather than by cuDNN's heuristics."""
    impl = "zoc-graph" if graph else "zoc"
    return variant("zoc", impl + ("-tuned" if tune else ""), precision, graph=graph, tune=tune,
                   profile=20 if graph else 0)


def eager(precision, layout="nchw"):
    return variant("eager", "eager", precision, layout, runner="torch", kind="eager")


def ts_py(precision, layout="nchw", graph=True):
    impl = "torchscript-py-frozen" + ("-graph" if graph else "")
    return variant("torchscript", impl, precision, layout, graph=graph, runner="torch",
                   kind="torchscript")


def ts_cpp(precision, layout="nchw", freeze=False):
    impl = "torchscript-cpp" + ("-frozen" if freeze else "")
    return variant("torchscript", impl, precision, layout, runner="ts_runner", freeze=freeze)


def nn_cpp(precision, layout="nchw"):
    return variant("libtorch", "libtorch-nn", precision, layout, runner="resnet50_nn")


def compiled(precision, layout, mode):
    impl = "compile-" + mode
    graph = mode == "max-autotune"  # inductor's max-autotune captures CUDA graphs itself
    return variant("compile", impl, precision, layout, graph=graph, runner="torch",
                   kind="compile", compile_mode=mode)


def group(model, resolution, batches, sweep):
    return {"model": model, "resolution": resolution, "batches": list(batches), "sweep": sweep}


def step(name, runner, runs, min_s, cap_s):
    """runs: [(variant, [groups])]; min_s: do not start with less time left; cap_s: timeout."""
    return {"name": name, "runner": runner, "runs": runs, "min_s": min_s, "cap_s": cap_s}


def _batch_part(batches, full):
    """ResNet-50 at 224x224 over batch sizes: zoc, PyTorch in Python, LibTorch in C++."""
    r224 = [group("resnet50", 224, batches, "batch")]
    precs = ("fp32", "tf32", "fp16", "bf16")
    nograph = precs if full else ("fp32", "fp16")
    # One Python process for eager and TorchScript: its cuDNN autotuning cache is then shared
    # by the variants with the same convolutions (autotuning dominates a new batch size).
    pythons = [eager("fp32"), eager("tf32"), eager("fp16", "channels_last"), ts_py("fp32"),
               ts_py("tf32"), ts_py("fp16", "channels_last"),
               ts_py("fp16", "channels_last", graph=False)]
    cpps = [(ts_cpp("fp16", "channels_last"), "ts_runner"),
            (nn_cpp("fp16", "channels_last"), "resnet50_nn")]
    if full:
        pythons += [eager("bf16", "channels_last"), ts_py("fp32", graph=False)]
        cpps = [(ts_cpp("fp32"), "ts_runner")] + cpps[:1] + [
            (ts_cpp("fp16", "channels_last", freeze=True), "ts_runner"),
            (nn_cpp("fp32"), "resnet50_nn")] + cpps[1:]
    return {
        "zoc": [step("zoc_r224", "zoc", [(zoc(p, True), r224) for p in precs] +
                     [(zoc(p, True, tune=True), r224) for p in ("fp32", "tf32", "fp16")] +
                     [(zoc(p, False), r224) for p in nograph], 30, 300)],
        "torch": [step("torch_r224", "torch", [(v, r224) for v in pythons], 40,
                       480 if full else 220)],
        "cpp": [step("%s_%s%s_r224" % (runner, v["precision"], "_frozen" if v.get("freeze") else ""),
                     runner, [(v, r224)], 25, 240) for v, runner in cpps],
    }


def _resolution_part(resolutions, full):
    groups = [group("resnet50", r, [RES_BATCH], "resolution") for r in resolutions]
    if not full:  # quick: 224 at batch 8 is already a point of the batch sweep
        groups = [g for g in groups if g["resolution"] != 224]
    precs = ("fp32", "tf32", "fp16", "bf16") if full else ("fp32", "fp16")
    torch_runs = [(eager("fp32"), groups), (eager("fp16", "channels_last"), groups),
                  (ts_py("fp16", "channels_last"), groups)]
    steps = [step("zoc_res", "zoc", [(zoc(p, True), groups) for p in precs], 20, 200),
             step("torch_res", "torch", torch_runs, 30, 200)]
    if full:
        torch_runs.append((ts_py("fp32"), groups))
        steps.append(step("ts_cpp_res", "ts_runner",
                          [(ts_cpp("fp16", "channels_last"), groups)], 30, 200))
        steps.append(step("nn_cpp_res", "resnet50_nn",
                          [(nn_cpp("fp16", "channels_last"), groups)], 30, 200))
    return steps


def _lenet_part(full):
    lenet = [group("lenet", 28, POW2_1024 if full else [1, 4, 16, 64, 256, 1024], "lenet")]
    precs = ("fp32", "tf32", "fp16", "bf16") if full else ("fp32", "fp16")
    zocs = [(zoc(p, True), lenet) for p in precs] + [(zoc("fp32", False), lenet)]
    torch_runs = [(eager("fp32"), lenet), (ts_py("fp32"), lenet)]
    steps = [step("zoc_lenet", "zoc", zocs, 15, 150), step("torch_lenet", "torch", torch_runs, 25, 150)]
    if full:
        torch_runs.append((eager("fp16", "channels_last"), lenet))
        steps.append(step("ts_cpp_lenet", "ts_runner", [(ts_cpp("fp32"), lenet)], 20, 120))
    return steps


def _compile_part(full):
    if not full:  # quick: default mode at the two ends of the batch sweep, if time is left
        g = [group("resnet50", 224, [1, 256], "batch")]
        return [step("compile_default", "torch",
                     [(compiled("fp16", "channels_last", "default"), g)], 90, 300)]
    g_default = [group("resnet50", 224, [1, 8, 32, 64, 256], "batch")]
    g_max = [group("resnet50", 224, [1], "batch")]
    return [step("compile_default", "torch",
                 [(compiled("fp16", "channels_last", "default"), g_default)], 120, 300),
            step("compile_max_autotune", "torch",
                 [(compiled("fp16", "channels_last", "max-autotune"), g_max)], 180, 400)]


def _compile_max_part(batch):
    """max-autotune at one batch size: its autotuning benchmarks every candidate kernel of every
    convolution and matmul shape, about ten seconds each at batch 256 on an H100. Inductor keeps
    those results in its cache (/tmp/torchinductor_$USER), so a part killed by the time limit
    and run again on the same machine resumes rather than restarts; the latency measured is
    the same either way."""
    g = [group("resnet50", 224, [batch], "batch")]
    return [step("compile_default_b%d" % batch, "torch",
                 [(compiled("fp16", "channels_last", "default"), g)], 60, 120),
            step("compile_max_autotune_b%d" % batch, "torch",
                 [(compiled("fp16", "channels_last", "max-autotune"), g)], 240, 570)]


def steps_for(mode, dry=False):
    """The ordered steps of a mode: zoc and the frameworks first, torch.compile last. dry: a
    miniature of the same steps (first two batch sizes, two resolutions) for a plumbing check
    on a machine without a GPU."""
    steps = _steps(mode)
    if dry:
        for s in steps:
            keep = sorted({g["resolution"] for _, groups in s["runs"] for g in groups})[:2]
            s["runs"] = [(v, [dict(g, batches=g["batches"][:2]) for g in groups
                              if g["resolution"] in keep]) for v, groups in s["runs"]]
    return steps


def _steps(mode):
    if mode == "quick":
        b = _batch_part(POW2_256, False)
        return (b["zoc"] + b["torch"] + b["cpp"] + _resolution_part([64, 128, 224, 448], False) +
                _lenet_part(False) + _compile_part(False))
    b = _batch_part(POW2_1024, True)
    parts = {
        "batch-zoc": lambda: b["zoc"],
        "batch-torch": lambda: b["torch"],
        "batch-cpp": lambda: b["cpp"],
        "resolution": lambda: _resolution_part([32, 64, 128, 224, 256, 512, 1024], True),
        "lenet": lambda: _lenet_part(True),
        "compile": lambda: _compile_part(True),
        "compile-max-32": lambda: _compile_max_part(32),
        "compile-max-256": lambda: _compile_max_part(256),
    }
    if mode == "full":
        return [s for name in PARTS for s in parts[name]()]
    if mode not in parts:
        raise SystemExit("plan.py: unknown mode %r (expected one of %s)" % (mode, ", ".join(MODES)))
    return parts[mode]()


def zoc_folder(model, resolution, precision):
    return "%s_r%d_%s" % (model, resolution, precision)


def zoc_folders(mode, dry=False):
    """Generated folders the mode needs: (folder name, model, resolution, precision)."""
    out = {}
    for s in steps_for(mode, dry):
        if s["runner"] != "zoc":
            continue
        for v, groups in s["runs"]:
            for g in groups:
                name = zoc_folder(g["model"], g["resolution"], v["precision"])
                out[name] = (name, g["model"], g["resolution"], v["precision"])
    return sorted(out.values())


def exports(mode, dry=False):
    """(model, resolution, torchscript wanted) the mode's steps need reference data for."""
    out = {}
    for s in steps_for(mode, dry):
        for _, groups in s["runs"]:
            for g in groups:
                out.setdefault((g["model"], g["resolution"]), False)
                if s["runner"] == "ts_runner":  # one archive serves every resolution
                    out[(g["model"], NATIVE_RES[g["model"]])] = True
    return sorted((m, r, ts) for (m, r), ts in out.items())


def main(argv):
    if len(argv) != 3 or argv[1] not in ("folders", "steps"):
        raise SystemExit("usage: plan.py folders|steps MODE")
    if argv[1] == "folders":
        for name, model, res, prec in zoc_folders(argv[2]):
            print(name, model, res, prec)
    else:
        for s in steps_for(argv[2]):
            runs = ", ".join("%s x %d groups" % (v["name"], len(g)) for v, g in s["runs"])
            print("%-20s %-12s min %3ds cap %3ds: %s" % (s["name"], s["runner"], s["min_s"],
                                                        s["cap_s"], runs))


if __name__ == "__main__":
    main(sys.argv)
