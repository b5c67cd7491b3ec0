#!/usr/bin/env python3
"""CPU tests of the training baselines (tools/train), one CTest case per subcommand.

The baselines are only worth comparing with zoc's generated trainer if they do the same
training, so these tests check the conventions where they can break: the Python copies of the
C++ data order and normalization are bit-exact (`order`); each trainer writes a well-formed CSV
and JSON log (`pytorch`, `libtorch`); PyTorch eager and LibTorch, started from one init file,
hold the same weights after the same SGD steps (`agree`, the real check); the initial weights
carry the state_dict names zoc's YAML models expect (`init-names`, through `zoc ir --weights`);
the gradient reference writes what it promises (`grad`); `zoc grad` agrees with autograd
(`zoc-grad` on LeNet and ResNet-50, `arith-grad` and `decoder-grad` on tests/train/arith_ops.yaml
and decoder_ops.yaml, `example-mnist` on the PyTorch examples' MNIST network through TorchScript
and ONNX, `script-operands` on a scripted model's own tensors). Fine-tuning with frozen
parameters is test_frozen.py's. Data is a small synthetic idx set (make_synthetic.py), since CI
has no data set package.

  test_train.py CASE --work DIR [--printer BIN] [--libtorch BIN] [--zoc BIN] [--model M]
"""

import argparse
import csv
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRAIN = os.path.join(ROOT, "tools", "train")
sys.path.insert(0, TRAIN)
import compare_grads  # noqa: E402
import idx_data  # noqa: E402
import mt19937_64  # noqa: E402
import nets  # noqa: E402

PY = sys.executable
CSV_HEADER = ("impl,model,dataset,seed,epoch,train_loss,train_acc,test_acc,step_ms,epoch_s,"
              "peak_mem_mb,world_size,img_per_s")


def run(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        raise AssertionError("%s exited with %d" % (os.path.basename(cmd[0]), r.returncode))
    return r.stdout


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def synthetic(work):
    """(raw folder, gzip folder) of the synthetic set, written once per work folder."""
    raw, gz = os.path.join(work, "data_raw"), os.path.join(work, "data_gz")
    if not os.path.exists(os.path.join(gz, "t10k-labels-idx1-ubyte.gz")):
        run([PY, os.path.join(HERE, "make_synthetic.py"), raw, "--gz-copy", gz])
    return raw, gz


def make_init(work, model, seed, extra=()):
    tag = "".join(e.strip("-")[0] for e in extra)  # one file per init variant
    path = os.path.join(work, "init_%s_%d%s.safetensors" % (model, seed, tag))
    run([PY, os.path.join(TRAIN, "train_pytorch.py"), "--model", model, "--seed", str(seed),
         "--init-out", path] + list(extra))
    return path


# The criterion is 1e-4; on the CPU the two run the same ATen kernels in the same order
# and agree bit for bit, so the test asks for far less than the criterion allows: 3 SGD steps
# without weight decay differ by only ~9e-5, and that must be seen.
AGREE_TOL = 1e-6


def compare(ref_path, got_path, init_path):
    """((worst relative L2 difference, its tensor), largest relative change of a weight)."""
    ref_t, _ = nets.safetensors_io.load_file(ref_path)
    got_t, _ = nets.safetensors_io.load_file(got_path)
    start, _ = nets.safetensors_io.load_file(init_path)
    check(set(ref_t) == set(got_t) == set(start), "the trainers saved different names")
    worst, moved = (0.0, ""), 0.0
    for name in sorted(ref_t):
        ref, got = ref_t[name].astype(np.float64), got_t[name].astype(np.float64)
        worst = max(worst, (np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30), name))
        base = start[name].astype(np.float64)
        if name.endswith("weight") and np.linalg.norm(base) > 0:  # zero-init gammas have none
            moved = max(moved, np.linalg.norm(ref - base) / np.linalg.norm(base))
    return worst, moved


def check_csv(path, impl, model, epochs):
    with open(path) as f:
        text = f.read()
    check(text.splitlines()[0] == CSV_HEADER, "%s: header %r" % (path, text.splitlines()[0]))
    rows = list(csv.DictReader(text.splitlines()))
    check(len(rows) == epochs, "%s: %d rows for %d epochs" % (path, len(rows), epochs))
    for i, r in enumerate(rows):
        check(r["impl"] == impl and r["model"] == model and r["dataset"] == "fashion-mnist",
              "%s: row %d names %s/%s/%s" % (path, i, r["impl"], r["model"], r["dataset"]))
        check(int(r["epoch"]) == i + 1, "%s: row %d is epoch %s" % (path, i, r["epoch"]))
        for key in ("train_acc", "test_acc"):
            check(0.0 <= float(r[key]) <= 1.0, "%s: %s %s" % (path, key, r[key]))
        check(np.isfinite(float(r["train_loss"])) and float(r["train_loss"]) > 0, "loss")
        check(int(r["world_size"]) >= 1, "%s: world_size %s" % (path, r["world_size"]))
        for key in ("step_ms", "epoch_s", "peak_mem_mb", "img_per_s"):
            check(float(r[key]) > 0, "%s: %s is %s" % (path, key, r[key]))
    return rows


def check_json_lines(stdout, epochs):
    lines = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
    check(len(lines) == epochs, "%d JSON lines for %d epochs" % (len(lines), epochs))
    check(all(set(CSV_HEADER.split(",")) <= set(l) for l in lines), "JSON lines lack CSV fields")


def trainer_cmd(impl, a, model, data, init, out_prefix, steps, epochs, batch):
    common = ["--model", model, "--data", data, "--device", "cpu", "--epochs", str(epochs),
              "--max-steps", str(steps), "--batch", str(batch), "--seed", "3", "--threads", "1",
              "--init-weights", init, "--csv", out_prefix + ".csv",
              "--save-weights", out_prefix + ".safetensors", "--eval-batch", "40"]
    if impl == "pytorch-eager":
        return [PY, os.path.join(TRAIN, "train_pytorch.py")] + common
    return [a.libtorch] + common


# --- cases -----------------------------------------------------------------------------------

def case_ddp(a):
    """train_pytorch.py --ddp (issue 21's baseline) on 2 CPU processes (gloo) takes the same
    steps as one process: each rank's interleaved shard of the global batch, gradients averaged.
    LeNet without dropout (no per-process state), so the weights must agree to rounding."""
    raw, gz = synthetic(a.work)
    init = make_init(a.work, "lenet", 3, [])
    steps, batch = 3, 16
    single = os.path.join(a.work, "single")
    run(trainer_cmd("pytorch-eager", a, "lenet", gz, init, single, steps, 2, batch) +
        ["--no-dropout"])
    ddp = os.path.join(a.work, "ddp2")
    cmd = trainer_cmd("pytorch-eager", a, "lenet", gz, init, ddp, steps, 2, batch)
    # launch.sh gives the processes torchrun's environment (Debian's torchrun 1.13 fails under
    # Python 3.11; the GPU scripts use torch 2.11's).
    cmd = [os.path.join(TRAIN, "launch.sh"), "2"] + cmd + ["--no-dropout", "--ddp"]
    run(cmd)
    worst, moved = compare(single + ".safetensors", ddp + ".safetensors", init)
    print("DDP x2 against one process: max relative L2 difference %.3g (%s); weights moved %.3g"
          % (worst[0], worst[1], moved))
    check(worst[0] <= 1e-5, "DDP x2 differs from one process by %.3g in %s" % worst)
    check(moved > 1e-3, "the steps left the weights where they were (%.3g)" % moved)
    rows = check_csv(ddp + ".csv", "pytorch-ddp", "lenet", 2)
    check(all(r["world_size"] == "2" for r in rows), "world_size column is not 2")
    one = check_csv(single + ".csv", "pytorch-eager", "lenet", 2)
    for r1, r2 in zip(one, rows):
        check(abs(float(r1["train_loss"]) - float(r2["train_loss"])) <= 1e-5, "train_loss differs")
        check(r1["test_acc"] == r2["test_acc"], "test_acc differs: %s vs %s" % (r1["test_acc"],
                                                                              r2["test_acc"]))


def case_order(a):
    """mt19937_64, shuffled_order, the normalization table and a whole split, against C++."""
    got = [int(v) for v in run([a.printer, "mt", "42", "700"]).split()]
    g = mt19937_64.MT19937_64(42)
    check(got == [g() for _ in range(700)], "mt19937_64(42): first 700 outputs differ")
    for count, seed, epoch in ((1, 0, 0), (2, 0, 0), (10, 0, 0), (97, 1, 0), (97, 1, 1),
                               (1000, 7, 3), (60000, 0, 4), (5, (1 << 62) + 9, 2)):
        cpp = [int(v) for v in run([a.printer, "order", str(count), str(seed), str(epoch)]).split()]
        check(cpp == mt19937_64.shuffled_order(count, seed, epoch),
              "shuffled_order(%d, %d, %d) differs" % (count, seed, epoch))
    bits = [int(v, 16) for v in run([a.printer, "table"]).split()]
    check(bits == idx_data.normalization_table().view(np.uint32).tolist(),
          "normalization table differs from zoc::data::normalized_batch")
    raw, gz = synthetic(a.work)
    for folder in (raw, gz):
        pixels, labels = idx_data.read_split(folder, "train")
        h = 0xcbf29ce484222325
        for byte in idx_data.normalize(pixels).tobytes() + labels.astype("<i4").tobytes():
            h = ((h ^ byte) * 0x100000001b3) & ((1 << 64) - 1)
        want = "%d %016x" % (pixels.shape[0], h)
        check(run([a.printer, "split", raw, "train"]).strip() == want,
              "%s: normalized split differs from train::read_split" % folder)
    pixels, _ = idx_data.read_split(raw, "train")
    for size, channels in ((64, 3), (33, 1), (20, 3), (28, 3)):  # enlarge, shrink, unchanged
        got = idx_data.replicate_channels(idx_data.resize(pixels, size), channels)
        check(got.shape == (pixels.shape[0], channels, size, size), "resize shape %s" % (got.shape,))
        h = 0xcbf29ce484222325
        for byte in got.tobytes():
            h = ((h ^ byte) * 0x100000001b3) & ((1 << 64) - 1)
        check(run([a.printer, "resize", raw, "train", str(size), str(channels)]).strip()
              == "%d %016x" % (pixels.shape[0], h),
              "resize to %d x %d x %d differs from zoc::data::resize_bilinear" % (channels, size,
                                                                                  size))
    print("ok: order, generator, normalization, split and resize are bit-exact")


def case_trainer(a, impl):
    """2 epochs of 3 LeNet steps on the CPU: a well-formed CSV, one JSON line per epoch."""
    raw, gz = synthetic(a.work)
    init = make_init(a.work, "lenet", 3)
    prefix = os.path.join(a.work, impl)
    data = gz if impl == "pytorch-eager" else raw
    out = run(trainer_cmd(impl, a, "lenet", data, init, prefix, steps=3, epochs=2, batch=16))
    check_json_lines(out, 2)
    rows = check_csv(prefix + ".csv", impl, "lenet", 2)
    state, _ = nets.safetensors_io.load_file(prefix + ".safetensors")
    check(set(state) == set(nets.build("lenet").state_dict()), "saved weights' names")
    print("ok: %s CSV %s" % (impl, [(r["epoch"], r["train_loss"], r["step_ms"]) for r in rows]))


def case_agree(a):
    """Same init, same batches: Python and LibTorch weights after the same steps agree."""
    raw, gz = synthetic(a.work)
    resnet = a.model == "resnet50"
    init = make_init(a.work, a.model, 3,
                     ["--init", "torchvision", "--zero-init-residual"] if resnet else [])
    steps, batch = (2, 8) if resnet else (3, 16)
    prefixes = {}
    for impl, data in (("pytorch-eager", gz), ("libtorch", raw)):
        prefixes[impl] = os.path.join(a.work, "%s_%s" % (a.model, impl))
        run(trainer_cmd(impl, a, a.model, data, init, prefixes[impl], steps, 1, batch))
    worst, moved = compare(prefixes["pytorch-eager"] + ".safetensors",
                           prefixes["libtorch"] + ".safetensors", init)
    print("max relative L2 difference %.3g (%s); largest weight change from init %.3g"
          % (worst[0], worst[1], moved))
    check(worst[0] <= AGREE_TOL, "weights differ by %.3g > %g in %s" % (worst[0], AGREE_TOL,
                                                                         worst[1]))
    check(moved > 1e-3, "the steps left the weights where they were (%.3g)" % moved)
    if not resnet:  # the check is sharp enough to see a forgotten weight decay
        off = os.path.join(a.work, "libtorch_no_wd")
        run(trainer_cmd("libtorch", a, a.model, raw, init, off, steps, 1, batch) +
            ["--weight-decay", "0"])
        wd = compare(prefixes["pytorch-eager"] + ".safetensors", off + ".safetensors", init)[0]
        print("without weight decay LibTorch differs by %.3g (%s)" % wd)
        check(wd[0] > 10 * AGREE_TOL, "a missing weight decay went unnoticed (%.3g)" % wd[0])
    rows = [check_csv(prefixes[i] + ".csv", i, a.model, 1)[0] for i in prefixes]
    check(abs(float(rows[0]["train_loss"]) - float(rows[1]["train_loss"])) <= 1e-5,
          "train_loss differs: %s vs %s" % (rows[0]["train_loss"], rows[1]["train_loss"]))
    if not resnet:  # the plot script reads both CSVs; without matplotlib it writes the summary
        plots = os.path.join(a.work, "plots")
        run([PY, os.path.join(TRAIN, "plot.py"), "--out", plots] +
            [prefixes[i] + ".csv" for i in prefixes])
        with open(os.path.join(plots, "summary.md")) as f:
            summary = f.read()
        check("pytorch-eager" in summary and "libtorch" in summary, "summary lacks an impl")
    print("ok: %s after %d steps: PyTorch eager and LibTorch agree" % (a.model, steps))


def case_init_names(a):
    """zoc validates the init files against models/lenet.yaml and models/resnet50.yaml."""
    for model, sets in (("lenet", []), ("resnet50", ["--set", "num_classes=10", "--set",
                                                     "in_channels=1", "--set", "resolution=28"])):
        for extra in ([], ["--init", "torchvision"] + (["--zero-init-residual"] if sets else [])):
            init = make_init(a.work, model, 1, extra)
            run([a.zoc, "ir", os.path.join(ROOT, "models", model + ".yaml"), "--weights", init]
                + sets)
            state, meta = nets.safetensors_io.load_file(init)
            if "--zero-init-residual" in extra:
                check(not state["layer1.0.bn3.weight"].any(), "bn3 not zeroed")
            again_dir = os.path.join(a.work, "again")
            os.makedirs(again_dir, exist_ok=True)
            again = make_init(again_dir, model, 1, extra)
            with open(init, "rb") as f1, open(again, "rb") as f2:
                check(f1.read() == f2.read(), "%s init is not reproducible" % model)
    print("ok: init files match the YAML models' names and shapes, reproducibly")


def case_grad(a):
    """grad_reference.py on LeNet: every gradient, the epoch-0 batch, a softmax invariant."""
    raw, gz = synthetic(a.work)
    init = make_init(a.work, "lenet", 3)
    out = os.path.join(a.work, "grads.safetensors")
    run([PY, os.path.join(TRAIN, "grad_reference.py"), "--model", "lenet", "--init-weights", init,
         "--data", gz, "--batch-from-epoch0", "--batch", "8", "--seed", "3", "--out", out])
    t, meta = nets.safetensors_io.load_file(out)
    params = dict(nets.build("lenet").named_parameters())
    for name, p in params.items():
        g = t["grad." + name]
        check(g.shape == tuple(p.shape) and np.isfinite(g).all() and np.abs(g).sum() > 0,
              "grad.%s: shape %s or values" % (name, g.shape))
    pixels, labels = idx_data.read_split(raw, "train")
    idx = mt19937_64.shuffled_order(pixels.shape[0], 3, 0)[:8]
    check(np.array_equal(t["input"], idx_data.normalize(pixels[idx])), "input is not the batch")
    check(np.array_equal(t["labels"], labels[idx].astype(np.int32)), "labels")
    # d(mean CE)/d(logits) rows sum to 0, so the last bias's gradient sums to 0.
    check(abs(float(t["grad.fc2.bias"].astype(np.float64).sum())) < 1e-6, "fc2.bias grad sum")
    check(meta["dropout"] == "identity" and t["loss"].shape == (1,), "metadata / loss")
    print("ok: %d gradients, loss %.6f" % (len(params), float(t["loss"][0])))


MODEL_SETS = {"lenet": [], "resnet50": ["--set", "num_classes=10", "--set", "in_channels=1",
                                        "--set", "resolution=28"]}


def case_zoc_grad(a):
    """zoc's reference training step (`zoc grad`) against autograd, from the same init weights
    and batch: loss, logits, every parameter's gradient, every BatchNorm running statistic.

    LeNet is well conditioned: zoc must agree with PyTorch fp32 within 1e-5 per tensor (they
    differ by summation order only). ResNet-50's training-mode gradient at 28x28 is not: PyTorch
    fp32 itself differs from the float64 gradient by about 1.4% (median over tensors), so zoc is
    judged against PyTorch in float64, per tensor within 2e-2, and must be at least as close to
    it as PyTorch fp32 is (median). A wrong backward rule gives errors of order 1."""
    _, gz = synthetic(a.work)
    init = make_init(a.work, a.model, 5)
    batch = "4" if a.model == "lenet" else "16"
    refs = {}
    for dtype in ("float32", "float64"):
        refs[dtype] = os.path.join(a.work, "ref_%s_%s.safetensors" % (a.model, dtype))
        run([PY, os.path.join(TRAIN, "grad_reference.py"), "--model", a.model, "--init-weights",
             init, "--data", gz, "--batch-from-epoch0", "--batch", batch, "--seed", "5",
             "--out", refs[dtype]] + (["--float64"] if dtype == "float64" else []))
    got = os.path.join(a.work, "zoc_%s.safetensors" % a.model)
    run([a.zoc, "grad", os.path.join(ROOT, "models", a.model + ".yaml")] + MODEL_SETS[a.model] +
        ["--weights", init, "--batch-file", refs["float32"], "-o", got])
    r32, _ = nets.safetensors_io.load_file(refs["float32"])
    r64, _ = nets.safetensors_io.load_file(refs["float64"])
    z, _ = nets.safetensors_io.load_file(got)
    want = set(compare_grads.compared_names(r32))
    check(want <= set(z), "zoc grad lacks %s" % sorted(want - set(z))[:5])
    check(not {k for k in z if k.startswith("grad.")} - want, "zoc grad has extra gradients")
    if a.model == "lenet":
        err = compare_grads.rel_errors(r32, z, sorted(want))
        bad = {k: e for k, e in err.items() if e > 1e-5}
        check(not bad, "against PyTorch fp32: %s" % bad)
        worst = max(err, key=err.get)
        print("ok: %d tensors within 1e-5 of PyTorch fp32, worst %.3g (%s), loss %.6f"
              % (len(want), err[worst], worst, float(z["loss"][0])))
        return
    zoc = compare_grads.rel_errors(r64, z, sorted(want))
    torch32 = compare_grads.rel_errors(r64, r32, sorted(want))
    bad = {k: e for k, e in zoc.items() if e > 2e-2}
    check(not bad, "against PyTorch float64: %s" % bad)
    med_zoc, med_torch = float(np.median(list(zoc.values()))), float(np.median(list(torch32.values())))
    check(med_zoc <= med_torch, "median error %.3g against float64, PyTorch fp32's is %.3g"
          % (med_zoc, med_torch))
    worst = max(zoc, key=zoc.get)
    print("ok: %d tensors against PyTorch float64: zoc median %.3g, worst %.3g (%s); PyTorch "
          "fp32 median %.3g, worst %.3g" % (len(want), med_zoc, zoc[worst], worst, med_torch,
                                            max(torch32.values())))


def arith_ops_forward(F, x, w):
    """tests/train/arith_ops.yaml in PyTorch: its logits, before the final log_softmax."""
    x = (x - w["mean"]) / w["std"]
    conv = F.conv2d(x, w["conv.weight"], w["conv.bias"], padding=1)
    inv = 1.0 / (conv.sigmoid() + 0.5)
    shift = (1.0 - inv * 0.5 / 4.0) - 0.25
    conv2 = F.conv2d(conv, w["conv2.weight"], w["conv2.bias"])
    ratio = (shift - conv2) / (conv2.sigmoid() + 0.5)
    padded = F.pad(ratio.reshape(-1, 16, 4, 4), (2, 1, 1, 0), value=0.5)
    conv3 = F.conv2d(padded, w["conv3.weight"], w["conv3.bias"], padding=1) * w["ls.gamma"]
    conv3 = (conv3 + w["ls.beta"]) / w["ls.div"].reshape(1, -1, 1, 1)
    conv3 = w["aff.bias"] - conv3 * w["aff.scale"]
    tail = F.conv1d(conv3.mean((2, 3)).unsqueeze(1), w["tail.weight"], w["tail.bias"], stride=2,
                    padding=1)
    return F.linear(tail.squeeze(1), w["fc.weight"], w["fc.bias"]) * w["head.scale"] + \
        w["head.bias"]


def decoder_ops_forward(F, x, w):
    """tests/train/decoder_ops.yaml in PyTorch: its logits."""
    y = F.relu(F.conv2d(x, w["conv.weight"], w["conv.bias"], stride=2, padding=1))
    y = F.conv_transpose2d(y, w["tconv.weight"], w["tconv.bias"], stride=2, padding=1,
                           output_padding=1)
    y = F.interpolate(y, scale_factor=(1.5, 2.0), mode="nearest")
    y = F.interpolate(y, size=(9, 11), mode="bilinear", align_corners=False)
    y = F.conv_transpose2d(y, w["tconv2.weight"], groups=2, dilation=2)
    y = F.interpolate(y, scale_factor=(2.0, 2.0), mode="bilinear", align_corners=True)
    y = F.conv2d(y, w["gate.weight"], w["gate.bias"], stride=2)
    y = F.interpolate(y, size=(20, 24), mode="nearest")
    y = F.interpolate(y, scale_factor=(0.5, 0.5), mode="bilinear", align_corners=False)
    y = F.conv2d(y, w["conv2.weight"], w["conv2.bias"], stride=2)
    return F.linear(y.mean((2, 3)), w["fc.weight"], w["fc.bias"])


# Each model checked by yaml_grad: its parameters' shapes, its buffers' (fixed), its PyTorch
# forward (logits), its input [C, H, W], the seed and whether the loss reads through a final
# log_softmax.
YAML_MODELS = {
    "arith_ops": ({"conv.weight": (4, 3, 3, 3), "conv.bias": (4,), "conv2.weight": (4, 4, 1, 1),
                   "conv2.bias": (4,), "conv3.weight": (8, 16, 3, 3), "conv3.bias": (8,),
                   "ls.gamma": (8, 1, 1), "ls.beta": (8, 1, 1), "ls.div": (8,),
                   "aff.scale": (1,), "aff.bias": (1,), "tail.weight": (1, 1, 2),
                   "tail.bias": (1,), "fc.weight": (10, 5), "fc.bias": (10,), "head.scale": (10,),
                   "head.bias": (10,)},
                  {"mean": (3, 1, 1), "std": (3, 1, 1)}, arith_ops_forward, (3, 8, 8), 8, True),
    "decoder_ops": ({"conv.weight": (6, 3, 3, 3), "conv.bias": (6,),
                     "tconv.weight": (6, 4, 3, 3), "tconv.bias": (4,),
                     "tconv2.weight": (4, 1, 2, 2), "gate.weight": (1, 2, 3, 3),
                     "gate.bias": (1,), "conv2.weight": (4, 1, 3, 3), "conv2.bias": (4,),
                     "fc.weight": (10, 4), "fc.bias": (10,)}, {}, decoder_ops_forward, (3, 8, 8),
                    37, False),
}


def draw_buffers(rng, shapes):
    """Buffers as a model's normalization holds them: a `std` in [0.5, 1.5), the rest N(0, 0.25)."""
    return {k: (rng.uniform(0.5, 1.5, s) if k.endswith("std") else 0.5 * rng.standard_normal(s))
            .astype(np.float32) for k, s in shapes.items()}


def yaml_grad(a, model):
    """`zoc grad` of tests/train/<model>.yaml against PyTorch float64 autograd of the same model
    trained as PyTorch users train it (cross_entropy; nll_loss after a final log_softmax): loss,
    logits and every gradient within 1e-5 (relative L2; fp32 against float64)."""
    import torch
    import torch.nn.functional as F
    shapes, buffers, forward, chw, seed, log_softmax = YAML_MODELS[model]
    rng = np.random.default_rng(seed)
    init = {k: (0.4 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}
    fixed = draw_buffers(rng, buffers)
    batch = {"input": rng.standard_normal((4,) + chw).astype(np.float32),
             "labels": rng.integers(0, 10, 4).astype(np.int32)}
    paths = {k: os.path.join(a.work, k + ".safetensors") for k in ("init", "batch", "zoc")}
    nets.safetensors_io.save_file(dict(init, **fixed), paths["init"])
    nets.safetensors_io.save_file(batch, paths["batch"])
    run([a.zoc, "grad", os.path.join(ROOT, "tests", "train", model + ".yaml"), "--weights",
         paths["init"], "--batch-file", paths["batch"], "-o", paths["zoc"]])
    z, _ = nets.safetensors_io.load_file(paths["zoc"])
    w = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in init.items()}
    logits = forward(F, torch.tensor(batch["input"], dtype=torch.float64),
                     dict(w, **{k: torch.tensor(v, dtype=torch.float64) for k, v in fixed.items()}))
    labels = torch.tensor(batch["labels"]).long()
    loss = (F.nll_loss(F.log_softmax(logits, 1), labels) if log_softmax
            else F.cross_entropy(logits, labels))
    loss.backward()
    ref = {"loss": np.array([loss.item()]), "logits": logits.detach().numpy()}
    ref.update({"grad." + k: t.grad.numpy() for k, t in w.items()})
    check({k for k in z if k.startswith("grad.")} == {k for k in ref if k.startswith("grad.")},
          "gradients %s (the buffers have none)" % sorted(z))
    err = {k: float(np.linalg.norm(z[k].astype(np.float64) - v) / np.linalg.norm(v))
           for k, v in ref.items()}
    bad = {k: e for k, e in err.items() if not e <= 1e-5}
    check(not bad, "against PyTorch float64: %s" % bad)
    worst = max(err, key=err.get)
    print("ok: %d tensors within 1e-5 of PyTorch float64, worst %.3g (%s)"
          % (len(err), err[worst], worst))


def case_arith_grad(a):
    """tests/train/arith_ops.yaml (add, sub, mul and div with a scalar both ways round, sub and
    div of two tensors, a reshape, a pad, a strided conv1d over the features, buffers and
    parameters of the weights file as operands, a final log_softmax): yaml_grad."""
    yaml_grad(a, "arith_ops")


def case_decoder_grad(a):
    """tests/train/decoder_ops.yaml (transposed convolutions, nearest and bilinear upsampling in
    their forms): yaml_grad."""
    yaml_grad(a, "decoder_ops")


def case_example_mnist(a):
    """The PyTorch examples' MNIST network (examples/mnist/main.py's Net, ending in log_softmax and
    trained with nll_loss), saved as TorchScript and exported to ONNX from its seeded weights:
    `zoc grad` of each file (the weights its own) against float64 autograd, every gradient
    within 1e-5, and `zoc compile --train` writes its trainer."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
            self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
            self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
            x = F.relu(self.fc1(torch.flatten(self.dropout1(x), 1)))
            return F.log_softmax(self.fc2(self.dropout2(x)), dim=1)

    torch.manual_seed(0)
    net = Net().eval()
    files = [os.path.join(a.work, "mnist." + ext) for ext in ("pt", "onnx")]
    torch.jit.script(net).save(files[0])
    torch.onnx.export(net, torch.zeros(1, 1, 28, 28), files[1])
    rng = np.random.default_rng(3)
    batch = {"input": rng.standard_normal((8, 1, 28, 28)).astype(np.float32),
             "labels": rng.integers(0, 10, 8).astype(np.int32)}
    batch_path = os.path.join(a.work, "batch.safetensors")
    nets.safetensors_io.save_file(batch, batch_path)
    net64 = net.double()  # evaluation mode: dropout is the identity, as in `zoc grad`
    loss = F.nll_loss(net64(torch.tensor(batch["input"], dtype=torch.float64)),
                      torch.tensor(batch["labels"]).long())
    loss.backward()
    ref = {"grad." + k: p.grad.numpy() for k, p in net64.named_parameters()}
    for f in files:
        got = f + ".grad.safetensors"
        run([a.zoc, "grad", f, "--input", "1x28x28", "--batch-file", batch_path, "-o", got])
        z, _ = nets.safetensors_io.load_file(got)
        check(set(ref) == {k for k in z if k.startswith("grad.")},
              "%s: gradients %s" % (f, sorted(z)))
        err = {k: float(np.linalg.norm(z[k].astype(np.float64) - v) / np.linalg.norm(v))
               for k, v in ref.items()}
        err["loss"] = abs(float(z["loss"].ravel()[0]) - loss.item()) / loss.item()
        bad = {k: e for k, e in err.items() if not e <= 1e-5}
        check(not bad, "%s against PyTorch float64: %s" % (f, bad))
        run([a.zoc, "compile", f, "--input", "1x28x28", "--train", "-o", f + ".trainer"])
        print("ok: %s: %d tensors within 1e-5 of PyTorch float64, worst %.3g; trainer written"
              % (os.path.basename(f), len(err), max(err.values())))


def case_script_operands(a):
    """A model that reads its own tensors in its forward: input normalization by two buffers
    (`(x - self.mean) / self.std`, fixed), timm's layer scale (`x * self.gamma.reshape(1, -1, 1,
    1)`, a parameter), timm's LearnableAffineBlock (hgnetv2: `self.scale * x + self.bias`, both
    parameters of shape [1]), a shift and a divisor per channel, a parameter per logit and a
    one-element buffer (fixed), scripted: `zoc grad` of the TorchScript file
    against float64 autograd, every parameter's gradient (and none for the buffers) within 1e-5,
    and its trainer written."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.4, 0.5, 0.6]).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor([0.2, 0.25, 0.3]).view(1, 3, 1, 1))
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.gamma = nn.Parameter(torch.linspace(0.5, 1.5, 8))
            self.scale = nn.Parameter(torch.tensor([0.75]))
            self.bias = nn.Parameter(torch.tensor([-0.125]))
            self.shift = nn.Parameter(torch.linspace(-0.3, 0.4, 8).view(1, 8, 1, 1))
            self.div = nn.Parameter(torch.linspace(0.8, 1.6, 8).view(8, 1, 1))
            self.fc = nn.Linear(8, 10)
            self.temperature = nn.Parameter(torch.linspace(0.6, 1.2, 10))
            self.register_buffer("temp", torch.tensor([1.5]))

        def forward(self, x):
            x = F.relu(self.conv((x - self.mean) / self.std))
            x = self.scale * (x * self.gamma.reshape(1, -1, 1, 1)) + self.bias
            x = ((x - self.shift) / self.div).mean((2, 3))
            return self.fc(x) * self.temperature / self.temp

    torch.manual_seed(1)
    net = Net().eval()
    path = os.path.join(a.work, "operands.pt")
    torch.jit.script(net).save(path)
    rng = np.random.default_rng(5)
    batch = {"input": rng.standard_normal((4, 3, 8, 8)).astype(np.float32),
             "labels": rng.integers(0, 10, 4).astype(np.int32)}
    batch_path = os.path.join(a.work, "batch.safetensors")
    nets.safetensors_io.save_file(batch, batch_path)
    net64 = net.double()
    loss = F.cross_entropy(net64(torch.tensor(batch["input"], dtype=torch.float64)),
                           torch.tensor(batch["labels"]).long())
    loss.backward()
    ref = {"grad." + k: p.grad.numpy() for k, p in net64.named_parameters()}
    got = path + ".grad.safetensors"
    run([a.zoc, "grad", path, "--input", "3x8x8", "--batch-file", batch_path, "-o", got])
    z, _ = nets.safetensors_io.load_file(got)
    check(set(ref) == {k for k in z if k.startswith("grad.")}, "gradients %s" % sorted(z))
    err = {k: float(np.linalg.norm(z[k].astype(np.float64) - v) / np.linalg.norm(v))
           for k, v in ref.items()}
    err["loss"] = abs(float(z["loss"].ravel()[0]) - loss.item()) / loss.item()
    bad = {k: e for k, e in err.items() if not e <= 1e-5}
    check(not bad, "against PyTorch float64: %s" % bad)
    run([a.zoc, "compile", path, "--input", "3x8x8", "--train", "-o", path + ".trainer"])
    print("ok: %d tensors within 1e-5 of PyTorch float64, worst %.3g; trainer written"
          % (len(err), max(err.values())))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("case", choices=("order", "pytorch", "libtorch", "agree", "init-names", "grad",
                                    "zoc-grad", "arith-grad", "decoder-grad", "example-mnist",
                                    "script-operands", "ddp"))
    p.add_argument("--work", required=True)
    p.add_argument("--printer")
    p.add_argument("--libtorch")
    p.add_argument("--zoc")
    p.add_argument("--model", default="lenet", choices=nets.MODELS)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    {"order": case_order, "pytorch": lambda x: case_trainer(x, "pytorch-eager"),
     "libtorch": lambda x: case_trainer(x, "libtorch"), "agree": case_agree,
     "init-names": case_init_names, "grad": case_grad, "zoc-grad": case_zoc_grad,
     "arith-grad": case_arith_grad, "decoder-grad": case_decoder_grad,
     "example-mnist": case_example_mnist, "script-operands": case_script_operands,
     "ddp": case_ddp}[a.case](a)


if __name__ == "__main__":
    main()
