#!/usr/bin/env python3
"""CPU tests of the benchmark harness's parts that can break without a GPU, one CTest case each.

The harness's verdicts are only as good as what it compares, so these check, on Debian's CPU
torch: that the JAX rows get the same weights as everyone else (`jax-weights`: the state_dict
converted by tools/harness/jax_weights.py, run through a NumPy NHWC forward shaped like
jax_models.py, reproduces PyTorch's LeNet, ResNet-50, MobileNetV2 and EfficientNet-B0 outputs;
JAX itself is only on the GPU machine); that the quick sweep plans every peer's strongest
configuration in every precision, for both models, and that its two device-command parts cover
it exactly once, and that the zoo's parts plan zoc's profiled fp16 rows against the frameworks'
strongest fp16 rows for both zoo networks (`plan`); that the report compares at equal precision
against the fastest *passing* row, names it, says INCOMPLETE when planned points were not
measured, and shows zoc's per-layer breakdown for the zoo and the seg sweep's table, accuracy
and upsampling GB/s (`report`); that the seg sweep's segmentation networks run eager and as
optimized TorchScript on the exported weights and match the exported `out` map, and that the
judge reads zoc's flat output as that map (`seg`); and that every layer of
zoc's profile of MobileNetV2 and EfficientNet-B0 gets its description from the generated code
(`profile`, with the zoc binary).

  test_harness.py jax-weights|plan|report|seg --work DIR
  test_harness.py profile --work DIR --zoc ZOC
"""

import argparse
import collections
import os
import subprocess
import sys

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HARNESS = os.path.join(ROOT, "tools", "harness")
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, HARNESS)
import common  # noqa: E402
import jax_weights  # noqa: E402
import plan  # noqa: E402


# --- jax-weights: a NumPy NHWC forward with the Flax tree's names and layouts ---------------

def conv(x, p, stride=1, pad=0):
    """x [N, H, W, C]; p['kernel'] [kh, kw, C / groups, O] (HWIO: a depthwise kernel has one
    input channel per group), optional p['bias']."""
    k = p["kernel"]
    x = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    win = sliding_window_view(x, k.shape[:2], axis=(1, 2))[:, ::stride, ::stride]
    if k.shape[2] == 1 and x.shape[3] > 1:  # depthwise: win [N, H, W, C, kh, kw]
        y = np.einsum("nhwcij,ijc->nhwc", win, k[:, :, 0, :])
    else:
        y = np.tensordot(win, k, axes=([3, 4, 5], [2, 0, 1]))
    return y + p["bias"] if "bias" in p else y


def maxpool(x, k, stride, pad=0):
    x = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)), constant_values=-np.inf)
    return sliding_window_view(x, (k, k), axis=(1, 2))[:, ::stride, ::stride].max(axis=(4, 5))


def bn(x, p, s):
    return (x - s["mean"]) / np.sqrt(s["var"] + 1e-5) * p["scale"] + p["bias"]


def relu(x):
    return np.maximum(x, 0)


def lenet_nhwc(v, x):
    p = v["params"]
    x = maxpool(relu(conv(x, p["conv1"], pad=2)), 2, 2)
    x = maxpool(relu(conv(x, p["conv2"], pad=2)), 2, 2)
    x = x.reshape(x.shape[0], -1)
    x = relu(x @ p["fc1"]["kernel"] + p["fc1"]["bias"])
    return x @ p["fc2"]["kernel"] + p["fc2"]["bias"]


def resnet50_nhwc(v, x):
    p, s = v["params"], v["batch_stats"]
    x = relu(bn(conv(x, p["conv1"], 2, 3), p["bn1"], s["bn1"]))
    x = maxpool(x, 3, 2, 1)
    for stage, blocks in enumerate((3, 4, 6, 3)):
        for i in range(blocks):
            name = "layer%d_%d" % (stage + 1, i)
            bp, bs = p[name], s[name]
            stride = 2 if stage > 0 and i == 0 else 1
            y = relu(bn(conv(x, bp["conv1"]), bp["bn1"], bs["bn1"]))
            y = relu(bn(conv(y, bp["conv2"], stride, 1), bp["bn2"], bs["bn2"]))
            y = bn(conv(y, bp["conv3"]), bp["bn3"], bs["bn3"])
            if i == 0:
                x = bn(conv(x, bp["downsample_0"], stride), bp["downsample_1"], bs["downsample_1"])
            x = relu(y + x)
    x = x.mean(axis=(1, 2))
    return x @ p["fc"]["kernel"] + p["fc"]["bias"]


def conv_norm(x, p, s, name, stride=1, act=None):
    """torchvision's Conv2dNormActivation NAME: NAME_0 (conv, padding (k-1)//2) and NAME_1 (BN)."""
    k = p[name + "_0"]["kernel"].shape[0]
    y = bn(conv(x, p[name + "_0"], stride, (k - 1) // 2), p[name + "_1"], s[name + "_1"])
    return act(y) if act else y


def silu(x):
    return x / (1 + np.exp(-x))


def mobilenet_nhwc(model):
    """The NumPy forward of jax_models.MobileNet(model), on the same block list."""
    se = model == "efficientnet_b0"
    act = silu if se else (lambda x: np.clip(x, 0, 6))
    part = "block_%d" if se else "conv_%d"

    def forward(v, x):
        p, s = v["params"], v["batch_stats"]
        x = conv_norm(x, p, s, "features_0", 2, act)
        for name, cin, cout, _, stride, hidden in jax_weights.inverted_residuals(model):
            bp, bs, i, y = p[name], s[name], 0, x
            if hidden != cin:
                y, i = conv_norm(y, bp, bs, part % 0, 1, act), 1
            y = conv_norm(y, bp, bs, part % i, stride, act)
            if se:
                q = bp[part % (i + 1)]
                g = silu(conv(y.mean(axis=(1, 2), keepdims=True), q["fc1"]))
                y = y / (1 + np.exp(-conv(g, q["fc2"])))
                y = conv_norm(y, bp, bs, part % (i + 2))
            else:
                y = bn(conv(y, bp[part % (i + 1)]), bp[part % (i + 2)], bs[part % (i + 2)])
            x = x + y if stride == 1 and cin == cout else y
        x = conv_norm(x, p, s, "features_8" if se else "features_18", 1, act).mean(axis=(1, 2))
        return x @ p["classifier_1"]["kernel"] + p["classifier_1"]["bias"]
    return forward


def case_jax_weights(work):
    import torch
    import export

    worst = 0.0
    for model, res, forward in (("lenet", 28, lenet_nhwc), ("resnet50", 64, resnet50_nhwc),
                                ("mobilenet_v2", 64, mobilenet_nhwc("mobilenet_v2")),
                                ("efficientnet_b0", 64, mobilenet_nhwc("efficientnet_b0"))):
        kind = "lenet" if model == "lenet" else "resnet"
        classes, channels, _ = export.DEFAULTS[kind]
        spec = argparse.Namespace(model=model, in_channels=channels, num_classes=classes,
                                  resolution=res)
        net = export.build_model(spec, 0)
        x = torch.randn(2, channels, res, res, generator=torch.Generator().manual_seed(3))
        with torch.no_grad():
            ref = net(x).numpy().astype(np.float64)
        tensors = {k: t.numpy() for k, t in net.state_dict().items()}
        variables = jax_weights.flax_variables(model, tensors)
        v64 = {c: _tree_map(lambda a: a.astype(np.float64), t) for c, t in variables.items()}
        out = forward(v64, x.numpy().astype(np.float64).transpose(0, 2, 3, 1))
        err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
        print("%s: relative L2 error of the NHWC forward on the converted weights: %.2e" % (
            model, err))
        worst = max(worst, err)
        # The shape check the GPU runner makes against Flax's own tree catches a bad name.
        shapes = _tree_map(lambda a: a.shape, variables)
        shapes["params"]["extra"] = {"kernel": (1,)}
        try:
            jax_weights.check_against(variables, shapes)
            raise SystemExit("check_against accepted a tree with a leaf the weights lack")
        except ValueError as e:
            assert "missing ['/params/extra']" in str(e), e
    if worst > 1e-5:
        raise SystemExit("FAIL: the converted weights do not reproduce PyTorch (%.2e)" % worst)
    print("PASS: Flax-layout weights reproduce PyTorch's LeNet, ResNet-50, MobileNetV2 and "
          "EfficientNet-B0 (worst %.2e)" % worst)


def _tree_map(f, tree):
    return {k: _tree_map(f, v) if isinstance(v, dict) else f(v) for k, v in tree.items()}


# --- plan: every peer's strongest configuration is in the quick sweep -------------------

def case_plan(work):
    def names(mode):
        return [(s["name"], v["name"], g["model"], g["resolution"], b)
                for s in plan.steps_for(mode) for v, groups in s["runs"] for g in groups
                for b in g["batches"]]
    quick = names("quick")
    parts = [n for p in plan.QUICK_PARTS for n in names(p)]
    assert sorted(quick) == sorted(parts), "quick != the union of its parts"
    assert len(set(parts)) == len(parts), "a point is planned twice across quick's parts"
    have = {(v, m) for _, v, m, _, _ in quick}
    for model in ("resnet50", "lenet"):
        for prec in ("fp32", "tf32", "fp16"):
            layout = "channels_last" if prec == "fp16" else "nchw"
            for v in ("torchscript-py-optimized-graph_%s_%s" % (prec, layout),
                      "torchscript-py-frozen-graph_%s_%s" % (prec, layout),
                      "eager_%s_%s" % (prec, layout), "jax-xla_%s_nhwc" % prec,
                      "zoc-graph_%s_%s" % (prec, "nhwc" if prec == "fp16" else "nchw")):
                assert (v, model) in have, "quick lacks %s for %s" % (v, model)
        for v in ("torchscript-cpp-optimized_fp16_channels_last",
                  "torchscript-py-optimized-graph_bf16_channels_last",
                  "compile-default_fp16_channels_last"):
            assert (v, model) in have, "quick lacks %s for %s" % (v, model)
    print("PASS: quick plans %d points in %d steps; every precision has its optimized "
          "TorchScript, JAX/XLA and zoc rows for ResNet-50 and LeNet" % (
              len(quick), len(plan.steps_for("quick"))))
    zoo = [n for p in plan.ZOO_PARTS for n in names(p)]
    assert len(set(zoo)) == len(zoo), "a point is planned twice across the zoo's parts"
    cl = "_fp16_channels_last"
    for model in plan.ZOO:
        batches = lambda v: sorted(b for _, w, m, r, b in zoo if (w, m, r) == (v, model, 224))
        for v in ("zoc-graph_fp16_nhwc", "zoc-graph_fp32_nchw",
                  "eager" + cl, "torchscript-py-frozen-graph" + cl,
                  "torchscript-py-optimized-graph" + cl, "torchscript-cpp-optimized" + cl,
                  "jax-xla_fp16_nhwc", "eager_fp32_nchw",
                  "torchscript-py-optimized-graph_fp32_nchw"):
            assert batches(v) == [1, 8, 32, 64, 256], "zoo: %s %s at %s" % (model, v, batches(v))
        for v in ("compile-default" + cl, "compile-max-autotune" + cl,
                  "zoc-graph-tuned_fp16_nhwc", "jax-xla_fp32_nhwc"):
            assert batches(v) == [1, 256], "zoo: %s %s at %s" % (model, v, batches(v))
    assert not any(s["runner"] == "resnet50_nn" for p in plan.ZOO_PARTS
                   for s in plan.steps_for(p)), "resnet50_nn is ResNet-50 only"
    profiled = [v for p in ("zoo", "zoo-tuned") for s in plan.steps_for(p)
                for v, _ in s["runs"] if v["family"] == "zoc"]
    assert all(v["profile"] for v in profiled), "a zoo zoc row without its per-layer profile"
    folders = [f[0] for f in plan.zoc_folders("zoo")]
    assert folders == ["efficientnet_b0_r224_fp16", "efficientnet_b0_r224_fp32",
                       "mobilenet_v2_r224_fp16", "mobilenet_v2_r224_fp32"], folders
    assert plan.exports("zoo") == [("efficientnet_b0", 224, True), ("mobilenet_v2", 224, True)]
    steps = plan.steps_for("zoo-compile-1")
    one, error = plan.select_steps(steps, ["compile_max_autotune_mobilenet_v2_b1"], "zoo-compile-1")
    assert error is None and [s["name"] for s in one] == ["compile_max_autotune_mobilenet_v2_b1"]
    none, error = plan.select_steps(steps, ["compile_max_autotune_vgg_b1"], "zoo-compile-1")
    assert none is None and "compile_max_autotune_vgg_b1: not a step of mode zoo-compile-1" in error
    assert "compile_max_autotune_efficientnet_b0_b1" in error, error
    print("PASS: the zoo's parts plan %d points once each: zoc fp16 (profiled, tuned) and fp32, "
          "the frameworks' strongest fp16 rows and fp32 where cheap, both networks" % len(zoo))
    # The plain sweep: in every precision zoc's plain row and every peer's plain row, no graphs.
    plain = [n for p in plan.PLAIN_PARTS for n in names(p)]
    assert len(set(plain)) == len(plain), "a point is planned twice across the plain parts"
    rows = {v["name"]: v for p in plan.PLAIN_PARTS for s in plan.steps_for(p) for v, _ in s["runs"]}
    for prec in ("fp32", "tf32", "fp16", "bf16"):
        cl = "channels_last" if prec in ("fp16", "bf16") else "nchw"
        zl = "nhwc" if prec in ("fp16", "bf16") else "nchw"
        for v, models in (("zoc_%s_%s" % (prec, zl), ("resnet50", "lenet")),
                          ("eager_%s_%s" % (prec, cl), ("resnet50", "lenet")),
                          ("torchscript-py-frozen_%s_%s" % (prec, cl), ("resnet50", "lenet")),
                          ("torchscript-py-optimized_%s_%s" % (prec, cl), ("resnet50", "lenet")),
                          ("torchscript-cpp-optimized_%s_%s" % (prec, cl), ("resnet50", "lenet")),
                          ("jax-xla_%s_nhwc" % prec, ("resnet50", "lenet")),
                          ("compile-default_%s_%s" % (prec, cl), ("resnet50",))):
            for model in models:
                got = sorted(b for _, w, m, _, b in plain if (w, m) == (v, model))
                want = plan.QUICK_BATCHES if model == "resnet50" else plan.QUICK_LENET
                assert got == want, "plain: %s %s at %s" % (model, v, got)
    graphs = [v for v in rows.values() if v["graph"] and v["family"] != "zoc"]
    assert not graphs, "a peer row with a CUDA graph in the plain sweep: %s" % graphs
    print("PASS: the plain parts plan %d points once each: zoc's plain path and every peer "
          "without CUDA graphs in all four precisions, ResNet-50 and LeNet" % len(plain))
    _check_seg_plan(names)


def _check_seg_plan(names):
    """The seg sweep: both networks at 520x520, batch 1, 8, 32, every row in fp16 and fp32, once
    across the parts, which together are the seg mode; zoc profiled; max-autotune one network
    and batch size a part; the folders prepare.sh makes and the exports bench.py makes."""
    import zoo
    assert plan.SEG == zoo.SEGMENTATION, (plan.SEG, zoo.SEGMENTATION)
    seg = [n for p in plan.SEG_PARTS for n in names(p)]
    assert len(set(seg)) == len(seg), "a point is planned twice across the seg parts"
    assert sorted(seg) == sorted(names("seg")), "seg != the union of its parts"
    rows = {}
    for _, v, m, r, b in seg:
        assert r == 520, (v, m, r)
        rows.setdefault((v, m), []).append(b)
    for model in plan.SEG:
        for impl in ("zoc-graph", "eager", "torchscript-py-optimized-graph", "compile-default",
                     "compile-max-autotune"):
            for prec in ("fp16", "fp32"):
                layout = {"fp16": "nhwc" if impl == "zoc-graph" else "channels_last",
                          "fp32": "nchw"}[prec]
                got = sorted(rows.get(("%s_%s_%s" % (impl, prec, layout), model), []))
                assert got == [1, 8, 32], "seg: %s %s %s at %s" % (model, impl, prec, got)
    for model in plan.SEG:  # measured engine choices (seg-tuned), no CUDA graph (seg-plain)
        for row in ("zoc-graph-tuned_fp32_nchw", "zoc_fp16_nhwc"):
            got = sorted(rows.get((row, model), []))
            assert got == [1, 8, 32], "seg: %s %s at %s" % (model, row, got)
    assert len(rows) == 2 * 5 * 2 + 2 * 2, sorted(rows)
    variants = [v for p in plan.SEG_PARTS for s in plan.steps_for(p) for v, _ in s["runs"]]
    assert all(v["profile"] for v in variants if v["family"] == "zoc" and v["graph"]), \
        "zoc seg graph row unprofiled"
    ts = [v for v in variants if v["family"] == "torchscript"]
    assert ts and all(v["optimize"] and v["graph"] for v in ts), ts
    for p in plan.SEG_PARTS:  # torch.compile: one network and precision a part, max-autotune
        if p.startswith("seg-compile-"):  # one batch size too
            assert len({(v, m) for _, v, m, _, _ in names(p)}) == 1, p
        if p.startswith("seg-max-"):
            assert len(set((v, m, b) for _, v, m, _, b in names(p))) == 1, p
    assert [f[0] for f in plan.zoc_folders("seg")] == [
        "deeplabv3_mobilenet_v3_large_r520_fp16", "deeplabv3_mobilenet_v3_large_r520_fp32",
        "fcn_resnet50_r520_fp16", "fcn_resnet50_r520_fp32"], plan.zoc_folders("seg")
    assert plan.zoc_folders("seg-zoc") == plan.zoc_folders("seg")
    assert plan.zoc_folders("seg-torch") == []
    assert plan.exports("seg") == [(m, 520, False) for m in plan.SEG], plan.exports("seg")
    print("PASS: the seg parts plan %d points once each: zoc (profiled), eager, optimized "
          "TorchScript in a CUDA graph, torch.compile default and max-autotune, fp16 and fp32, "
          "both networks at 520x520, batch 1, 8, 32" % len(seg))


# --- report: equal-precision speed-ups against the fastest passing row ------------------

def _rec(impl, family, prec, batch, ms, status="PASS", error=None, model="resnet50",
         graph=True, host=None, res=224):
    v = plan.variant(family, impl, prec, "channels_last" if family == "compile" else "nchw",
                     graph=graph)
    r = common.new_record(v, {"model": model, "resolution": res, "sweep": "batch"}, batch)
    r.update(status=status, median_ms=ms, error=error, host_cpu_us=host)
    return r


def case_report(work):
    recs = [_rec("zoc-graph", "zoc", "fp16", 1, 0.30),
            _rec("torchscript-py-optimized-graph", "torchscript", "fp16", 1, 0.45),
            _rec("jax-xla", "jax", "fp16", 1, 0.40),
            _rec("eager", "eager", "fp16", 1, 0.10, status="FAIL", error="rel L2 1 outside"),
            _rec("zoc-graph", "zoc", "fp32", 1, 2.0),
            _rec("torchscript-py-optimized-graph", "torchscript", "fp32", 1, 1.9),
            _rec("jax-xla", "jax", "tf32", 1, 0.5),
            _rec("compile-default", "compile", "fp16", 1, None, status="skipped",
                 error="skipped: time budget"),
            # Without graphs: zoc's plain row against the other plain rows (the eager FAIL row
            # never counts), and against zoc's own graph row above.
            _rec("zoc", "zoc", "fp16", 1, 0.36, graph=False, host=230),
            _rec("torchscript-py-optimized", "torchscript", "fp16", 1, 1.2, graph=False, host=1100),
            _rec("eager", "eager", "fp16", 1, 0.2, status="FAIL", graph=False)]
    # The zoo: zoc's per-layer profile beside the fastest other fp16 row, at batch 1 and 256.
    profile = [["features.1.conv.0.0 + features.1.conv.0.1", 0.5,
                "conv 3x3/1, 32->32, 112x112 -> 112x112, groups 32"],
               ["features.1.conv.0.2", 0.3, "hardtanh"],
               ["features.1.conv.1 + features.1.conv.2", 0.2,
                "conv 1x1/1, 32->16, 112x112 -> 112x112"]]
    for batch, zms, oms in ((1, 0.5, 0.8), (256, 1.2, 1.0)):
        recs += [_rec("zoc-graph", "zoc", "fp16", batch, zms, model="mobilenet_v2"),
                 _rec("torchscript-py-optimized-graph", "torchscript", "fp16", batch, oms,
                      model="mobilenet_v2")]
        recs[-2]["profile"] = profile
    recs += _seg_records()
    raw = os.path.join(work, "raw_in")
    os.makedirs(os.path.join(raw, "raw"), exist_ok=True)
    common.write_json(os.path.join(raw, "raw", "s.json"), {"records": recs})
    out = os.path.join(work, "report")
    p = subprocess.run([sys.executable, os.path.join(HARNESS, "report.py"), "--raw", raw,
                        "--out", out], capture_output=True, text=True)
    print(p.stdout[-1500:], p.stderr[-1500:])
    summary = open(os.path.join(out, "summary.md")).read()
    fp16 = summary.split("### ResNet-50 224, fp16:")[1].split("###")[0]
    # The FAIL row (0.10 ms) is never the fastest; JAX (0.40) is the fastest passing fp16 row.
    assert "| 1 | zoc-graph fp16 NHWC | 0.300 | jax-xla fp16 NHWC | 0.400 | 1.33× |" in fp16, fp16
    fp32 = summary.split("### ResNet-50 224, fp32:")[1].split("###")[0]
    assert "0.95×" in fp32, fp32  # zoc losing a row is shown, not hidden
    tf32 = summary.split("### ResNet-50 224, tf32:")[1].split("###")[0]
    assert "| 1 | – | – | jax-xla tf32 NHWC | 0.500 | – |" in tf32, tf32
    assert "across precisions" in summary
    plain = summary.split("## No CUDA graph anywhere")[1].split("\n## ")[0]
    assert "| zoc fp16 NHWC | 0.360 (230 µs) |" in plain, plain
    assert "| 1 | 0.360 | torchscript-py-optimized fp16 | 1.200 | 3.33× | 0.300 | 1.20 |" in plain, plain
    assert "RESULT: INCOMPLETE" in p.stdout, p.stdout
    assert "compile-default fp16 channels-last, resnet50 r224, batch 1" in p.stdout, p.stdout
    zoo = summary.split("### MobileNetV2 224, fp16:")[1].split("###")[0]
    assert "| 256 | zoc-graph fp16 NHWC | 1.200 | torchscript-py-optimized-graph fp16 | " \
        "1.000 | 0.83× |" in zoo, zoo
    prof = summary.split("## MobileNetV2 224×224 fp16: zoc's time per kind")[1].split("\n## ")[0]
    assert "zoc-graph fp16 NHWC, batch 1: 0.500 ms end to end; the 3 layers sum to 1.000 ms; " \
        "fastest other row: torchscript-py-optimized-graph fp16, 0.800 ms (zoc 1.60× " \
        "faster)" in prof, prof
    assert "batch 256" in prof and "slower by 0.200 ms" in prof, prof
    # GB/s: the depthwise layer's least traffic at batch 256, 411 MB (fp16), over 0.5 ms.
    assert "| depthwise conv 3x3 | 1 | 0.500 | 50.0% | 822 |" in prof, prof
    assert "MobileNetV2 fp16 batch 256: zoc-graph fp16 NHWC 1.200 ms against " in p.stdout
    _check_seg_report(summary, p.stdout, out)
    print("PASS: equal-precision speed-ups name the fastest passing row; INCOMPLETE is "
          "reported; the zoo's tables and zoc's per-layer breakdown are there; the seg table, "
          "its accuracy and its upsampling and transposed convolutions' GB/s too")


def _seg_records():
    """DeepLabV3 at 520: zoc fp16 (profiled: an upsampling and a transposed convolution among
    its layers) against optimized TorchScript and a failed max-autotune row, batch 1 and 32."""
    model, recs = plan.SEG[0], []
    profile = [["classifier.4", 0.30, "conv 1x1/1, 256->21, 65x65 -> 65x65"],
               ["interpolate", 0.05, "upsample bilinear (align_corners false), 21 channels, "
                                     "65x65 -> 520x520"],
               ["up.0", 0.02, "transposed conv 4x4/2, 64->32, 32x32 -> 64x64"]]
    for batch, zms, oms in ((1, 0.9, 1.5), (32, 20.0, 18.0)):
        z = _rec("zoc-graph", "zoc", "fp16", batch, zms, model=model, res=520)
        z.update(profile=profile, rel_l2_err=0.0031, pixel_agree=0.9987)
        t = _rec("torchscript-py-optimized-graph", "torchscript", "fp16", batch, oms,
                 model=model, res=520)
        t.update(rel_l2_err=0.0042, pixel_agree=0.9979)
        m = _rec("compile-max-autotune", "compile", "fp16", batch, 0.5, status="FAIL",
                 error="rel L2 0.5 outside", model=model, res=520)
        m.update(rel_l2_err=0.5, pixel_agree=0.41)
        recs += [z, t, m]
    return recs


def _check_seg_report(summary, stdout, out):
    seg = summary.split("## Segmentation, 520×520")[1].split("\n## ")[0]
    lat = seg.split("### DeepLabV3-MobileNetV3-Large 520×520: median latency")[1].split("###")[0]
    assert "| zoc-graph fp16 NHWC | 0.900 | 20.0 |" in lat, lat
    assert "| compile-max-autotune fp16 channels-last | FAIL | FAIL |" in lat, lat
    fp16 = seg.split("### DeepLabV3-MobileNetV3-Large 520, fp16:")[1].split("###")[0]
    assert "| 1 | zoc-graph fp16 NHWC | 0.900 | torchscript-py-optimized-graph fp16 | 1.500 | " \
        "1.67× |" in fp16, fp16  # the FAIL row (0.5 ms) is never the fastest
    assert "| 32 | zoc-graph fp16 NHWC | 20.0 | torchscript-py-optimized-graph fp16 | 18.0 | " \
        "0.90× |" in fp16, fp16
    acc = seg.split("accuracy of the `out` map")[1].split("###")[0]
    assert "| zoc-graph fp16 NHWC | 0.0031 / 99.870% | 0.0031 / 99.870% |" in acc, acc
    assert "| compile-max-autotune fp16 channels-last | 0.5 / 41.000% FAIL |" in acc, acc
    prof = summary.split("## DeepLabV3-MobileNetV3-Large 520×520 fp16: zoc's time per kind")[1]
    prof = prof.split("\n## ")[0]
    assert "batch 1:" in prof and "batch 32:" in prof, prof
    # Least traffic of the upsampling at batch 1 in fp16: 21 x (65x65 + 520x520) x 2 bytes,
    # 11.5 MB in 0.05 ms; of the transposed convolution: (64x32x32 + 32x64x64) x 2 + its
    # 64x32x4x4 weights x 2 bytes, 0.459 MB in 0.02 ms.
    assert "| interpolate | upsample bilinear (align_corners false), 21 channels, 65x65 -> " \
        "520x520 | 0.050 | 11.5 | 231 |" in prof, prof
    assert "| up.0 | transposed conv 4x4/2, 64->32, 32x32 -> 64x64 | 0.020 | 0.5 | 23 |" in prof
    assert "| upsample bilinear | 1 | 0.050 |" in prof and "| transposed conv 4x4/2 | 1 |" in prof
    assert "DeepLabV3-MobileNetV3-Large fp16 batch 32: zoc-graph fp16 NHWC 20.0 ms" in stdout
    with open(os.path.join(out, "results.csv")) as f:
        header = f.readline().strip().split(",")
    assert "pixel_agree" in header, header


# --- seg: the segmentation networks' PyTorch rows and their accuracy check, on the CPU -------

def case_seg(work):
    """Both networks of the seg sweep at 64x64 on Debian's CPU torch, as the GPU run makes them:
    export.py writes the weights, input and fp32 `out` map (and the trace prepare.sh compiles,
    checked against the map: a dict output is traced with strict=False); torch_impls.py runs
    eager and frozen, optimize_for_inference'd TorchScript on those weights (batch 3 tiles the
    two samples); each row is judged against the map. Then the judge itself: zoc's flat
    [rows, outputs] file is read as the map, a map with its classes rotated and one of the wrong
    size fail."""
    import time
    small = 64
    runs = []
    for model in plan.SEG:
        ref = os.path.join(work, "ref", model)
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "export.py"), "--model",
                        model, "--resolution", str(small), "--batch", str(plan.SAMPLES[model]),
                        "--torchscript", "trace", "--check", "--out", ref], check=True)
        g = {"model": model, "resolution": small, "batches": [1, 3], "sweep": "seg",
             "weights": os.path.join(ref, "weights.safetensors"),
             "input": os.path.join(ref, "input.npy"), "reference": os.path.join(ref, "output.npy"),
             "samples": plan.SAMPLES[model]}
        runs += [{"variant": v, "groups": [g]} for v in (plan.eager("fp32"), plan.ts_opt("fp32"))]
    job = {"device": "cpu", "deadline": time.time() + 900, "step": "seg",
           "records": os.path.join(work, "records.jsonl"), "outputs": os.path.join(work, "out"),
           "timing": {"warmup": 1, "iters": 2, "max_time_ms": 0, "h2d_reps": 0}, "runs": runs}
    if os.path.exists(job["records"]):
        os.remove(job["records"])
    common.write_json(os.path.join(work, "plan.json"), job)
    # oneDNN capped at AVX2: on an AVX-512 CPU (2026-12-01), Debian's torch 1.13 runs
    # DeepLabV3-MobileNetV3's optimize_for_inference'd graph through oneDNN kernels that give
    # rel L2 0.16 against eager (pixel agreement 0.896), which the judge rightly fails; capped,
    # it matches eager within 1.1e-6. This case tests the harness, not that CPU path.
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", DNNL_MAX_CPU_ISA="AVX2")
    subprocess.run([sys.executable, os.path.join(HARNESS, "torch_impls.py"),
                    os.path.join(work, "plan.json")], check=True, env=env)
    recs = common.read_jsonl(job["records"])
    assert len(recs) == 2 * 2 * 2, "%d records" % len(recs)
    for rec in recs:
        ref = os.path.join(work, "ref", rec["model"], "output.npy")
        common.judge(rec, ref, plan.SAMPLES[rec["model"]])
        print("%s %s b%d: %s rel L2 %.2g, pixel agreement %.5f" % (
            rec["model"], rec["label"], rec["batch"], rec["status"], rec.get("rel_l2_err", -1),
            rec.get("pixel_agree", -1)))
        assert rec["status"] == "PASS", rec
        assert rec["rows_checked"] == min(rec["batch"], 2) and rec["pixel_agree"] > 0.999, rec
        assert "top1_agree" not in rec, rec
    _check_seg_judge(work, os.path.join(work, "ref", plan.SEG[0], "output.npy"))
    print("PASS: DeepLabV3-MobileNetV3-Large and FCN-ResNet50 run eager and as optimized "
          "TorchScript on the exported weights and match the exported `out` map; the judge "
          "reads zoc's flat output as the map and refuses a wrong map or size")


def _check_seg_judge(work, ref_path):
    """common.judge on fabricated outputs against a real `out` map."""
    ref = np.load(ref_path)
    v = plan.zoc("fp16", True)
    g = {"model": plan.SEG[0], "resolution": ref.shape[-1], "sweep": "seg"}

    def judged(out, batch=2):
        path = os.path.join(work, "fabricated.npy")
        np.save(path, out)
        rec = common.new_record(v, g, batch)
        rec.update(status="ok", output_npy=path)
        return common.judge(rec, ref_path, 2)
    flat = judged((ref + 1e-3 * ref.std()).reshape(ref.shape[0], -1).astype(np.float32))
    assert flat["status"] == "PASS" and flat["pixel_agree"] > 0.99, flat
    rolled = judged(np.roll(ref, 1, axis=1))  # every pixel's classes shifted by one
    assert rolled["status"] == "FAIL" and rolled["pixel_agree"] < 0.5, rolled
    short = judged(ref.reshape(ref.shape[0], -1)[:, :-1])
    assert short["status"] == "FAIL" and "reference (2, 21, " in short["error"], short
    one = judged(ref[:1].reshape(1, -1), batch=1)
    assert one["status"] == "PASS" and one["rows_checked"] == 1, one


# --- profile: what each layer of a zoc profile is, from the generated code ---------------

def got_kinds(layers):
    import layer_profile
    return collections.Counter(layer_profile.kind_of(t, what) for t, _, what in layers)


def case_profile(work, zoc):
    """Both networks compiled as prepare.sh does: every title their profiles report gets its
    description, the kinds of layer come out as the networks have them, and every convolution
    and activation its least DRAM traffic (the report's GB/s)."""
    import re
    import shutil
    import layer_profile

    # Every activation is fused (ReLU6 into the depthwise convs, zoc's kernel, and into the 1x1
    # expansions, cuDNN's graph-API epilogue; SiLU and the gates' sigmoid likewise): none is left.
    want = {"mobilenet_v2": {"depthwise conv 3x3": 17, "conv 1x1 (+ residual)": 10,
                             "hardtanh": 0, "linear": 1},
            "efficientnet_b0": {"depthwise conv 3x3": 7, "depthwise conv 5x5": 9, "sigmoid": 0,
                                "silu": 0, "conv 1x1 on a 1x1 map (squeeze-excitation)": 32,
                                "multiply each channel by a per-sample scale": 16}}
    for model, kinds in want.items():  # the TorchScript route of prepare.sh
        scripted, pt = os.path.join(work, model), os.path.join(work, model + ".pt")
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "export.py"), "--model",
                        model, "--resolution", "64", "--batch", "1", "--torchscript", "script",
                        "--out", scripted], check=True, stdout=subprocess.DEVNULL)
        shutil.copy(os.path.join(scripted, "model.pt"), pt)
        gen = os.path.join(work, model + "_fp16")
        subprocess.run([zoc, "compile", pt, "--input", "3x224x224", "-o", gen, "--precision",
                        "fp16"], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(gen, model + ".cpp")) as f:  # the titles --profile reports
            titles = re.findall(r'^\s+"(.*)",$', f.read().split("::kTitles[")[1].split("};")[0],
                                re.M)
        layers = layer_profile.compact([{"layer": t, "ms": 0.01} for t in titles],
                                       layer_profile.layer_notes(gen, model))
        unknown = [t for t, _, what in layers if not what]
        assert not unknown, "%s: no description for %s" % (model, unknown)
        sized = [t for t, _, what in layers if layer_profile.traffic_mb(what, 1, "fp16")]
        assert len(sized) == sum(n for k, n in got_kinds(layers).items()
                                 if k.startswith(("conv", "depthwise", "silu", "hardtanh",
                                                  "sigmoid"))), (model, sized)
        # Every convolution's FLOPs (the report's TFLOP/s), its groups counted: the stem
        # (3x3/2, 3->32, 112x112 out) and, summed, the network's multiply-adds at 224 as
        # torchvision's documentation gives them (0.30 and 0.39 GMACs; zoc's graph folds
        # BatchNorm, and the classifier and SE's tiny convolutions are a few MFLOP of it).
        flops = [layer_profile.gflop(what, 1) for _, _, what in layers]
        convs = [f for f in flops if f is not None]
        assert len(convs) == sum(n for k, n in got_kinds(layers).items()
                                 if k.startswith(("conv", "depthwise"))), model
        stem = [f for (t, _, w), f in zip(layers, flops) if w.startswith("conv 3x3/2, 3->")]
        assert stem and abs(stem[0] - 2 * 3 * 9 * 32 * 112 * 112 / 1e9) < 1e-9, stem
        gmacs = {"mobilenet_v2": 0.30, "efficientnet_b0": 0.39}[model]
        assert abs(sum(convs) / 2 - gmacs) < 0.03, (model, sum(convs) / 2)
        got = got_kinds(layers)
        assert all(got[k] == n for k, n in kinds.items()), "%s: %s" % (model, got)
        print("%s: %d layers described, %s" % (model, len(layers), dict(got)))
    _check_upsample_notes(work, zoc)
    print("PASS: every layer of zoc's MobileNetV2 and EfficientNet-B0 profiles has its "
          "description, depthwise and squeeze-excitation convolutions recognized; every "
          "upsampling its channels and sizes")


def _check_upsample_notes(work, zoc):
    """tests/backend/dense_layers.yaml's upsamplings (nearest and bilinear, by scale and to a
    size) each get their channels and sizes, hence their least traffic, from the generated code;
    and the comment zoc wrote before it named the channels is read through the call constant."""
    import layer_profile
    gen = os.path.join(work, "dense_fp16")
    subprocess.run([zoc, "compile", os.path.join(ROOT, "tests", "backend", "dense_layers.yaml"),
                    "-o", gen, "--precision", "fp16"], check=True, stdout=subprocess.DEVNULL)
    model = [f[:-4] for f in os.listdir(gen) if f.endswith(".cpp") and f != "main.cpp"][0]
    notes = layer_profile.layer_notes(gen, model)
    ups = [w for w in notes.values() if layer_profile.UPSAMPLE.match(w)]
    assert len(ups) >= 4 and all(layer_profile.upsample_shape(w) for w in ups), ups
    # Model outputs written by their upsampling layers: fp32 out, the model's precision in.
    caller = [w for w in ups if "caller's fp32" in w]
    assert len(caller) == 2, ups
    c, h, w, p, q = layer_profile.upsample_shape(caller[0])
    want = c * (h * w * 2 + p * q * 4) * 8 / 1e6
    assert abs(layer_profile.traffic_mb(caller[0], 8, "fp16") - want) < 1e-9, caller[0]
    old = os.path.join(work, "old_comment")
    os.makedirs(old, exist_ok=True)
    with open(os.path.join(old, "m.cpp"), "w") as f:
        f.write("constexpr zoc::UpsampleCall kUp_up = {.g = {.c = 21, .h = 33, .w = 33,\n"
                "::layers(\n  // up: bilinear upsampling 33x33 -> 520x520\n"
                "  ZOC_TRY(v.upsample(kUp_up, \"up\"));\n")
    got = layer_profile.layer_notes(old, "m")["up"]
    assert layer_profile.upsample_shape(got) == (21, 33, 33, 520, 520), got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=("jax-weights", "plan", "report", "seg", "profile"))
    ap.add_argument("--work", required=True)
    ap.add_argument("--zoc", help="the zoc binary (profile)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.case == "profile":
        return case_profile(a.work, a.zoc)
    {"jax-weights": case_jax_weights, "plan": case_plan, "report": case_report,
     "seg": case_seg}[a.case](a.work)


if __name__ == "__main__":
    main()
