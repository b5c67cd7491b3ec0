#!/usr/bin/env python3
"""What each sweep of the benchmark harness measures: the one place that lists them.

The harness runs in two places: tools/harness/prepare.sh on the CPU machine generates the zoc
folders a sweep needs (zoc builds only there, and the resolution is fixed at compile time), and
tools/harness/run.sh on the GPU machine measures. Both must agree on which folders, models,
resolutions, batch sizes and implementations a sweep contains, so both read this file:
prepare.sh through `plan.py folders MODE`, bench.py by importing it.

A *variant* is one implementation in one configuration (a line in the plots): its family
(zoc, eager, torchscript, libtorch, compile, jax), the runner that executes it, precision, TF32,
memory layout and CUDA graph use. Every peer appears in its strongest documented configuration
(DESIGN.md, "Fair comparison"): cuDNN benchmark on, channels-last for fp16/bf16, CUDA graphs,
TorchScript frozen and `optimize_for_inference`d, torch.compile max-autotune (its own parts: it
autotunes for minutes), JAX/XLA under jax.jit; weaker configurations stay as rows because they
are what many users run and what the study measured. A *group* is a model at one resolution with its batch sizes.
A *step* is one runner process (or one per group for the C++ runners and zoc) over variants
and groups, with the seconds it needs at least to be worth starting.

Modes: quick (every row of the quick sweep); as the device tool stops a command after 10 minutes,
quick also comes as two parts, quick-main (zoc, PyTorch, LibTorch) and quick-jax (JAX/XLA and
torch.compile default, the rows that compile per batch size), each one command, run back to back
on one machine and merged by `report.py --raw`; and the parts of the full sweep,
each meant to fit one command: batch-zoc, batch-torch, batch-cpp (ResNet-50 224x224, batch
1..1024), resolution (32..1024 at batch 8), lenet (28x28, batch 1..1024), compile
(torch.compile default at five batch sizes and max-autotune at batch 1), compile-max-32 and
compile-max-256 (default, then max-autotune, at one batch size each: max-autotune's autotuning
alone takes minutes); full runs all parts in one go (for a machine without the 10-minute
limit: raise HARNESS_BUDGET_S).

The zoo sweep (issue 20: MobileNetV2 and EfficientNet-B0 at 224x224, batch 1, 8, 32, 64, 256),
torchvision's networks with models/zoo.py's weights, compiled by zoc through its TorchScript
route (prepare.sh scripts them first), comes in parts too: zoo (zoc fp16 and fp32 in CUDA graphs
with their per-layer profiles; PyTorch eager, frozen and optimized TorchScript in CUDA graphs;
optimized TorchScript from C++), zoo-tuned (zoc fp16 with every convolution's engine chosen by
measurement, at batch 1 and 256: EfficientNet-B0's tuning alone takes minutes), zoo-jax (JAX/XLA
fp16, and fp32 at batch 1 and 256, whose Flax versions of both networks are jax_models.py's, and
torch.compile's default mode at batch 1 and 256: the rows that compile per batch size), and
zoo-compile-1 / zoo-compile-256 (torch.compile max-autotune at one batch size, EfficientNet-B0
first: the two networks' autotuning does not fit one command; a part run again on the same
machine resumes from inductor's cache, and HARNESS_STEPS runs one step alone on another).

The seg sweep (issue 37: DeepLabV3-MobileNetV3-Large and FCN-ResNet50, torchvision's, with
models/zoo.py's weights, at 520x520, batch 1, 8, 32, fp16 and fp32) compares the `out` map, and
comes in parts too (_seg_parts says what each holds): seg-zoc, seg-torch, seg-tuned,
seg-plain, one torch.compile default part per network and precision (seg-compile-deeplabv3-fp16
... seg-compile-fcn-fp32) and one max-autotune part per network, precision and batch
(seg-max-deeplabv3-fp16-1 ... seg-max-fcn-fp32-32); seg runs them all in one go.

The plain sweep (issue 33: no CUDA graph anywhere) comes in parts too: plain-main, plain-compile
and plain-jax (_plain_parts says what each holds); the report's "no CUDA graph anywhere" tables
compare zoc's plain row with every other plain row of the same precision.
"""

import sys

POW2_256 = [1 << i for i in range(9)]    # 1 .. 256
QUICK_BATCHES = [1, 8, 32, 64, 256]      # ResNet-50 in quick: the columns of DESIGN.md's bar
QUICK_LENET = [1, 16, 256, 1024]
POW2_1024 = [1 << i for i in range(11)]  # 1 .. 1024
RES_BATCH = 8  # the fixed batch of the resolution sweep
ZOO = ("mobilenet_v2", "efficientnet_b0")  # the zoo sweep's models (models/zoo.py's weights)
# The seg sweep's models (models/zoo.py's SEGMENTATION), short names for its parts, resolution
# and batch sizes.
SEG = ("deeplabv3_mobilenet_v3_large", "fcn_resnet50")
SEG_SHORT = {"deeplabv3_mobilenet_v3_large": "deeplabv3", "fcn_resnet50": "fcn"}
SEG_RES = 520
SEG_BATCHES = [1, 8, 32]
# Distinct seeded samples exported per model (tiled above), and the resolution of its archive.
# A segmentation output row is a 21x520x520 map (23 MB in fp32, saved per point): two samples.
SAMPLES = {"resnet50": 16, "lenet": 64, "mobilenet_v2": 16, "efficientnet_b0": 16,
           "deeplabv3_mobilenet_v3_large": 2, "fcn_resnet50": 2}
NATIVE_RES = {"resnet50": 224, "lenet": 28, "mobilenet_v2": 224, "efficientnet_b0": 224,
              "deeplabv3_mobilenet_v3_large": SEG_RES, "fcn_resnet50": SEG_RES}
PARTS = ("batch-zoc", "batch-torch", "batch-cpp", "resolution", "lenet", "compile",
         "compile-max-32", "compile-max-256", "jax")
QUICK_PARTS = ("quick-main", "quick-jax")
ZOO_PARTS = ("zoo", "zoo-tuned", "zoo-jax", "zoo-compile-1", "zoo-compile-256")
PLAIN_PARTS = ("plain-main", "plain-compile", "plain-jax")
SEG_PRECS = ("fp16", "fp32")  # fp16 first: zoc's claim is made in fp16
SEG_PARTS = (("seg-zoc", "seg-torch", "seg-tuned", "seg-plain") +
             tuple("seg-compile-%s-%s" % (SEG_SHORT[m], p) for m in SEG for p in SEG_PRECS) +
             tuple("seg-max-%s-%s-%d" % (SEG_SHORT[m], p, b) for m in SEG for p in SEG_PRECS
                   for b in SEG_BATCHES))
MODES = (("quick",) + QUICK_PARTS + PARTS + ("full",) + ZOO_PARTS + PLAIN_PARTS + SEG_PARTS +
         ("seg",))

LAYOUT_LABEL = {"nchw": "NCHW", "channels_last": "channels-last", "nhwc": "NHWC"}
LENET_GRAPH_PRECS = ("fp32", "tf32", "fp16")  # LeNet: the same families and precisions


def variant(family, impl, precision, layout="nchw", graph=False, runner=None, **extra):
    """One implementation configuration. `impl` is the CSV's impl column (family first)."""
    tf32 = precision == "tf32"
    if family == "zoc":  # zoc keeps fp16/bf16 activations NHWC, fp32/tf32 NCHW
        layout = "nhwc" if precision in ("fp16", "bf16") else "nchw"
    if family == "jax":  # Flax convolutions are NHWC; XLA picks its own layouts inside
        layout = "nhwc"
    name = "%s_%s_%s" % (impl, precision, layout)
    words = [impl, precision + (" (TF32 off)" if precision == "fp32" else "")]
    if layout != "nchw":
        words.append(LAYOUT_LABEL[layout])
    v = {"name": name, "family": family, "impl": impl, "precision": precision, "tf32": tf32,
         "layout": layout, "graph": graph, "runner": runner or family, "label": " ".join(words)}
    v.update(extra)
    return v


def zoc(precision, graph, tune=False, profile=True):
    """zoc rows. With a CUDA graph a per-layer profile is taken too (--profile) unless profile
    is False; tune: the convolution algorithms are chosen by measurement first (--tune, a plan
    file per folder) rather than by cuDNN's heuristics. zoc's default replays CUDA graphs; the
    row without (impl "zoc") is the plain path (--no-graph)."""
    impl = "zoc-graph" if graph else "zoc"
    return variant("zoc", impl + ("-tuned" if tune else ""), precision, graph=graph, tune=tune,
                   profile=20 if graph and profile else 0)


def eager(precision, layout="nchw"):
    return variant("eager", "eager", precision, layout, runner="torch", kind="eager")


def ts_py(precision, layout="nchw", graph=True):
    impl = "torchscript-py-frozen" + ("-graph" if graph else "")
    return variant("torchscript", impl, precision, layout, graph=graph, runner="torch",
                   kind="torchscript")


def ts_opt(precision, layout="nchw", graph=True):
    """torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(model))): PyTorch's
    documented deployment step (BN folded, conv + add + ReLU as cuDNN's fused kernels)."""
    impl = "torchscript-py-optimized" + ("-graph" if graph else "")
    return variant("torchscript", impl, precision, layout, graph=graph, runner="torch",
                   kind="torchscript", optimize=True)


def ts_cpp(precision, layout="nchw", freeze=False, optimize=False):
    impl = "torchscript-cpp" + ("-optimized" if optimize else "-frozen" if freeze else "")
    return variant("torchscript", impl, precision, layout, runner="ts_runner", freeze=freeze,
                   optimize=optimize)


def jax_xla(precision):
    """Flax (linen) under jax.jit, compiled per batch size: fp32 with the highest matmul and
    convolution precision, tf32 as JAX's default precision, fp16/bf16 parameters and inputs."""
    return variant("jax", "jax-xla", precision, runner="jax", kind="jax")


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


def _python_rows(full):
    """Eager and TorchScript rows, Python. Every precision has its optimized TorchScript row in a
    CUDA graph (the strongest TorchScript configuration), fp16/bf16 channels-last."""
    cl = "channels_last"
    rows = [eager("fp32"), eager("tf32"), eager("fp16", cl),
            ts_py("fp32"), ts_py("tf32"), ts_py("fp16", cl), ts_py("fp16", cl, graph=False),
            ts_opt("fp32"), ts_opt("tf32"), ts_opt("fp16", cl), ts_opt("bf16", cl),
            ts_opt("fp32", graph=False), ts_opt("fp16", cl, graph=False)]
    if full:
        rows += [eager("bf16", cl), ts_py("fp32", graph=False), ts_opt("tf32", graph=False),
                 ts_opt("bf16", cl, graph=False)]
    return rows


def _batch_part(batches, full):
    """ResNet-50 at 224x224 over batch sizes: zoc, PyTorch in Python, LibTorch in C++."""
    r224 = [group("resnet50", 224, batches, "batch")]
    precs = ("fp32", "tf32", "fp16", "bf16")
    nograph = precs if full else ("fp32", "fp16")
    # Tuning (--tune) gained 9-16% in fp32 (legacy API) and nothing in fp16 (2026-11-22); on the
    # graph API (fp32, tf32 by default) it gains up to 5% in tf32 (13.7 against 14.4 ms at
    # batch 256, 2026-11-24) and takes about 40 s per precision over the sweep: quick tunes both.
    tuned = ("fp32", "tf32", "fp16") if full else ("fp32", "tf32")
    # One Python process for eager and TorchScript: its cuDNN autotuning cache is then shared
    # by the variants with the same convolutions (autotuning dominates a new batch size).
    pythons = _python_rows(full)
    cl = "channels_last"
    cpps = [(ts_cpp("fp16", cl), "ts_runner"), (ts_cpp("fp16", cl, optimize=True), "ts_runner"),
            (nn_cpp("fp16", cl), "resnet50_nn")]
    if full:
        cpps = [(ts_cpp("fp32"), "ts_runner"), (ts_cpp("fp32", optimize=True), "ts_runner")] + \
            cpps[:2] + [(ts_cpp("fp16", cl, freeze=True), "ts_runner"),
                        (nn_cpp("fp32"), "resnet50_nn")] + cpps[2:]
    return {
        "zoc": [step("zoc_r224", "zoc", [(zoc(p, True), r224) for p in precs] +
                     [(zoc(p, True, tune=True), r224) for p in tuned] +
                     [(zoc(p, False), r224) for p in nograph], 30, 300)],
        "torch": [step("torch_r224", "torch", [(v, r224) for v in pythons], 40,
                       480 if full else 240)],
        "cpp": [step("%s_%s%s_r224" % (runner, v["precision"], _cpp_suffix(v)),
                     runner, [(v, r224)], 25, 240) for v, runner in cpps],
    }


def _cpp_suffix(v):
    return "_optimized" if v.get("optimize") else "_frozen" if v.get("freeze") else ""


def _jax_part(full):
    """JAX/XLA rows: ResNet-50 over the batch sweep and LeNet, compiled per batch size."""
    precs = ("fp32", "tf32", "fp16", "bf16") if full else ("fp32", "tf32", "fp16")
    r224 = [group("resnet50", 224, POW2_1024 if full else QUICK_BATCHES, "batch")]
    lenet = [group("lenet", 28, POW2_1024 if full else QUICK_LENET, "lenet")]
    return [step("jax_lenet", "jax", [(jax_xla(p), lenet) for p in precs], 30, 150),
            step("jax_r224", "jax", [(jax_xla(p), r224) for p in precs], 60, 480)]


def _resolution_part(resolutions, full):
    groups = [group("resnet50", r, [RES_BATCH], "resolution") for r in resolutions]
    if not full:  # quick: 224 at batch 8 is already a point of the batch sweep
        groups = [g for g in groups if g["resolution"] != 224]
    precs = ("fp32", "tf32", "fp16", "bf16") if full else ("fp32", "fp16")
    torch_runs = [(eager("fp32"), groups), (eager("fp16", "channels_last"), groups),
                  (ts_py("fp16", "channels_last"), groups), (ts_opt("fp32"), groups),
                  (ts_opt("fp16", "channels_last"), groups)]
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
    """LeNet 28x28 with the same families and precisions as ResNet-50 (JAX: _jax_part,
    torch.compile: _compile_part)."""
    lenet = [group("lenet", 28, POW2_1024 if full else QUICK_LENET, "lenet")]
    precs = ("fp32", "tf32", "fp16", "bf16")
    zocs = ([(zoc(p, True), lenet) for p in precs] + [(zoc("fp32", True, tune=True), lenet)] +
            [(zoc(p, False), lenet) for p in ("fp32", "fp16")])
    torch_runs = [(v, lenet) for v in _python_rows(full)]
    cl = "channels_last"
    cpps = [ts_cpp("fp16", cl), ts_cpp("fp16", cl, optimize=True)]
    if full:
        cpps = [ts_cpp("fp32"), ts_cpp("fp32", optimize=True)] + cpps
    return [step("zoc_lenet", "zoc", zocs, 15, 150),
            step("torch_lenet", "torch", torch_runs, 25, 200),
            step("ts_cpp_lenet", "ts_runner", [(v, lenet) for v in cpps], 20, 120)]


def _compile_part(full):
    if not full:  # quick: default mode at the two ends of each batch sweep
        g = [group("resnet50", 224, [1, 256], "batch")]
        lenet = [group("lenet", 28, [1, 1024], "lenet")]
        return [step("compile_default", "torch",
                     [(compiled("fp16", "channels_last", "default"), g + lenet)], 90, 300)]
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


def _zoo_parts():
    """The zoo sweep's parts: MobileNetV2 and EfficientNet-B0 at 224x224, every row fp16
    channels-last (zoc: NHWC) plus fp32 (TF32 off) where it costs little, as zoc's claim there
    is made in fp16. zoc's fp16 graph rows carry their per-layer profile (the report shows it
    at batch 1 and 256: where zoc loses time if it loses); the tuned fp16 row has a part of its
    own, as tuning EfficientNet-B0 takes minutes per batch size."""
    cl = "channels_last"
    zoo = [group(m, 224, QUICK_BATCHES, "batch") for m in ZOO]
    ends = [group(m, 224, [1, 256], "batch") for m in ZOO]
    pythons = [eager("fp16", cl), ts_py("fp16", cl), ts_opt("fp16", cl), eager("fp32"),
               ts_opt("fp32")]
    main = [step("zoc_zoo", "zoc", [(zoc("fp16", True), zoo), (zoc("fp32", True), zoo)], 30, 240),
            step("torch_zoo", "torch", [(v, zoo) for v in pythons], 60, 300),
            step("ts_runner_fp16_optimized_zoo", "ts_runner",
                 [(ts_cpp("fp16", cl, optimize=True), zoo)], 25, 150)]
    # Tuning times every engine config of every layer: EfficientNet-B0's graph-API epilogues
    # (SiLU, sigmoid) offer many runtime-compiled ones, 103 s at batch 1 on the H100
    # (2026-11-25), so the tuned row measures the two ends of the sweep only, one model a step.
    tuned = [step("zoc_zoo_tuned_%s" % m, "zoc",
                  [(zoc("fp16", True, tune=True), [group(m, 224, [1, 256], "batch")])], 60, cap)
             for m, cap in zip(ZOO, (150, 330))]
    # JAX compiles per batch size (~30 s each for EfficientNet-B0): fp16, the claim's precision,
    # at every batch first; fp32 at the ends.
    jax = [step("jax_zoo_fp16", "jax", [(jax_xla("fp16"), zoo)], 40, 300),
           step("compile_default_zoo", "torch", [(compiled("fp16", cl, "default"), ends)], 90,
                300),
           step("jax_zoo_fp32", "jax", [(jax_xla("fp32"), ends)], 40, 150)]
    parts = {"zoo": main, "zoo-tuned": tuned, "zoo-jax": jax}
    # max-autotune: minutes of autotuning per model and batch size (H100, 2026-11-25:
    # MobileNetV2 about 340 s at batch 1 and 450 s at 256, EfficientNet-B0 415 s at 1 and over
    # 500 s at 256), EfficientNet-B0 first with most of a command's time; run again, a part
    # resumes from inductor's cache.
    for batch in (1, 256):
        parts["zoo-compile-%d" % batch] = [
            step("compile_max_autotune_%s_b%d" % (m, batch), "torch",
                 [(compiled("fp16", cl, "max-autotune"), [group(m, 224, [batch], "batch")])],
                 120, cap) for m, cap in zip(reversed(ZOO), (520, 480))]
    return parts


def _plain_parts():
    """The sweep without CUDA graphs anywhere (issue 33): zoc's plain path (--no-graph) against
    every peer as it runs without graphs, in all four precisions, ResNet-50 224 at every batch of
    quick and LeNet, with host CPU time per forward. zoc's graph rows come along (no profile) for
    the plain/graph ratio. plain-main: zoc, PyTorch eager, frozen and optimized TorchScript
    without graphs, optimized TorchScript and the nn API from C++ (and zoc's fp32 plain row tuned,
    the counterpart of PyTorch's cuDNN autotuning); plain-compile: torch.compile's default mode
    (no CUDA graphs; one compile per batch size); plain-jax: JAX/XLA under jit (XLA's own
    defaults, which may use command buffers inside) in all four precisions."""
    precs = ("fp32", "tf32", "fp16", "bf16")
    lay = {"fp32": "nchw", "tf32": "nchw", "fp16": "channels_last", "bf16": "channels_last"}
    r224 = [group("resnet50", 224, QUICK_BATCHES, "batch")]
    lenet = [group("lenet", 28, QUICK_LENET, "lenet")]
    # fp32's plain row also tuned (--tune): cuDNN's heuristics pick slower FMA kernels than
    # PyTorch's autotuning (cudnn.benchmark) finds at batch 8 and 32 (H200, 2026-11-26).
    zocs = ([(zoc(p, True, profile=False), r224 + lenet) for p in precs] +
            [(zoc(p, False), r224 + lenet) for p in precs] +
            [(zoc("fp32", False, tune=True), r224 + lenet)])
    pythons = ([eager(p, lay[p]) for p in precs] + [ts_py(p, lay[p], graph=False) for p in precs] +
               [ts_opt(p, lay[p], graph=False) for p in precs])
    main = [step("zoc_plain", "zoc", zocs, 30, 300),
            step("torch_plain", "torch", [(v, r224 + lenet) for v in pythons], 40, 330)]
    main += [step("ts_runner_%s_optimized_plain" % p, "ts_runner",
                  [(ts_cpp(p, lay[p], optimize=True), r224 + lenet)], 25, 120) for p in precs]
    main += [step("resnet50_nn_%s_plain" % p, "resnet50_nn", [(nn_cpp(p, lay[p]), r224)], 25, 90)
             for p in ("fp32", "fp16")]
    # About 20 s per compile and batch size on an H200 (2026-11-26), fp16 first.
    compile_steps = [step("compile_default_%s_plain" % p, "torch",
                          [(compiled(p, lay[p], "default"), r224)], 60, 150)
                     for p in ("fp16", "fp32", "bf16", "tf32")]
    jax = [step("jax_plain_lenet", "jax", [(jax_xla(p), lenet) for p in precs], 30, 150),
           step("jax_plain_r224", "jax", [(jax_xla(p), r224) for p in precs], 60, 480)]
    return {"plain-main": main, "plain-compile": compile_steps, "plain-jax": jax}


def _seg_parts():
    """The seg sweep's parts, each one device command: every row in fp16 (channels-last; zoc
    NHWC) and fp32 (TF32 off), both networks at 520x520, batch 1, 8, 32. seg-zoc: zoc in CUDA
    graphs with the per-layer profile; seg-torch: PyTorch eager and optimized TorchScript in a
    CUDA graph (frozen, optimize_for_inference), one process per network; seg-tuned: zoc fp32
    with measured engine choices (--tune); seg-plain: zoc fp16 without a CUDA graph (forward(),
    the default path);
    seg-compile-NET-PREC: torch.compile's default mode, a compile per batch size, about a minute
    each; seg-max-NET-PREC-BATCH: torch.compile max-autotune at one batch size, as its
    autotuning at 520x520 takes minutes per shape (a part cut by the time limit and run again on
    the same machine resumes from inductor's cache)."""
    cl = "channels_last"
    lay = {"fp16": cl, "fp32": "nchw"}
    every = [group(m, SEG_RES, SEG_BATCHES, "seg") for m in SEG]
    zocs = [(zoc(p, True), every) for p in SEG_PRECS]
    parts = {"seg-zoc": [step("zoc_seg", "zoc", zocs, 40, 480)]}
    # fp32 loses to PyTorch's cudnn.benchmark on the dilated backbones' 3x3 convolutions
    # (2026-11-29): zoc fp32 with every convolution's engine chosen by measurement (--tune),
    # one network a step.
    parts["seg-tuned"] = [
        step("zoc_seg_tuned_%s" % SEG_SHORT[m], "zoc",
             [(zoc("fp32", True, tune=True), [group(m, SEG_RES, SEG_BATCHES, "seg")])], 60, 270)
        for m in SEG]
    # The default path: zoc's forward() without a CUDA graph (--no-graph), fp16, against eager
    # (also without one) and the graph rows of the other parts.
    parts["seg-plain"] = [step("zoc_seg_plain", "zoc", [(zoc("fp16", False), every)], 40, 270)]
    parts["seg-torch"] = [
        step("torch_seg_%s" % SEG_SHORT[m], "torch",
             [(v, [group(m, SEG_RES, SEG_BATCHES, "seg")]) for v in
              (eager("fp16", cl), ts_opt("fp16", cl), eager("fp32"), ts_opt("fp32"))], 60, 270)
        for m in SEG]
    for m in SEG:
        for p in SEG_PRECS:
            name = "%s_%s" % (SEG_SHORT[m], p)
            parts["seg-compile-%s-%s" % (SEG_SHORT[m], p)] = [
                step("compile_default_seg_" + name, "torch",
                     [(compiled(p, lay[p], "default"), [group(m, SEG_RES, SEG_BATCHES, "seg")])],
                     90, 540)]
            for b in SEG_BATCHES:
                parts["seg-max-%s-%s-%d" % (SEG_SHORT[m], p, b)] = [
                    step("compile_max_autotune_seg_%s_b%d" % (name, b), "torch",
                         [(compiled(p, lay[p], "max-autotune"), [group(m, SEG_RES, [b], "seg")])],
                         120, 540)]
    return parts


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


def select_steps(steps, names, mode):
    """(the steps named, in the mode's order; None) or (None, an error naming the unknown ones
    and the mode's steps): bench.py --steps, to run again only what a cut part left."""
    have = [s["name"] for s in steps]
    unknown = [n for n in names if n not in have]
    if unknown:
        return None, "%s: not a step of mode %s (its steps: %s)" % (
            ", ".join(unknown), mode, ", ".join(have))
    return [s for s in steps if s["name"] in names], None


def _steps(mode):
    if mode in ZOO_PARTS:
        return _zoo_parts()[mode]
    if mode in PLAIN_PARTS:
        return _plain_parts()[mode]
    if mode in SEG_PARTS:
        return _seg_parts()[mode]
    if mode == "seg":
        parts = _seg_parts()
        return [s for name in SEG_PARTS for s in parts[name]]
    if mode in ("quick",) + QUICK_PARTS:
        b = _batch_part(QUICK_BATCHES, False)
        main = (b["zoc"] + b["torch"] + b["cpp"] + _resolution_part([64, 128, 224, 448], False) +
                _lenet_part(False))
        jax_lenet, jax_r224 = _jax_part(False)  # ResNet-50's JAX compiles last: the longest
        rest = [jax_lenet] + _compile_part(False) + [jax_r224]
        return {"quick": main + rest, "quick-main": main, "quick-jax": rest}[mode]
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
        "jax": lambda: _jax_part(True),
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
    if len(argv) == 2 and argv[1] == "seg-models":  # prepare.sh: whose refusal to explain
        print(" ".join(SEG))
        return
    if len(argv) != 3 or argv[1] not in ("folders", "steps"):
        raise SystemExit("usage: plan.py folders|steps MODE, or plan.py seg-models")
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
