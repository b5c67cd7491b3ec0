#!/usr/bin/env python3
"""Build the networks zoc compiles in PyTorch and write the reference data zoc is judged against.

zoc's claim is that its generated C++ is both faster than the frameworks and exactly as correct,
so every comparison needs one set of weights, one input and one trusted output that all
implementations share. This script produces them: it builds LeNet or a torchvision ResNet with
seeded weights (BatchNorm parameters and running statistics randomized so that BN folding is
exercised with non-trivial values; the CNN zoo's classifiers by models/zoo.py's recipe), draws a seeded standard-normal input, runs the model in eval
mode in fp32 with TF32 off, and writes `weights.safetensors` (PyTorch state_dict names), `input.npy`,
`output.npy` (raw logits), TorchScript archives for zoc's TorchScript frontend and the framework
baselines, ONNX files for zoc's ONNX frontend (`--onnx`), and `meta.json`. It needs only torch, torchvision and numpy (no safetensors package),
runs on torch 1.13 and 2.x, and writes every file atomically so a failed run leaves nothing half
written. `--check` re-reads the weights with our own reader into a fresh model and asserts the
output is reproduced bit for bit.

Choices worth knowing:
  * ResNets are torchvision's (`weights=None`), default init under `torch.manual_seed(seed)`. With
    --in-channels != 3, `conv1` is replaced by `nn.Conv2d(C, 64, 7, 2, 3, bias=False)` with
    torchvision's own conv init (kaiming_normal_, fan_out, relu).
  * Every BatchNorm is then randomized from a generator seeded with `seed` (stream 1):
    weight ~ U(0.5, 1.5), bias ~ N(0, 0.1), running_mean ~ N(0, 0.1), running_var ~ U(0.5, 1.5).
    Because eval-mode BN divides by running_var rather than the actual variance, each residual
    block would then roughly double the variance of the residual stream (ResNet-152 logits reach
    ~1e10, far beyond fp16's 65504). So the weight of the *last BN of every residual branch*
    (BasicBlock.bn2, Bottleneck.bn3) is additionally multiplied by 1/sqrt(number of blocks), a
    Fixup-style scaling that keeps the logits' std around 0.3-0.7 for every depth.
  * LeNet uses PyTorch's default init under `torch.manual_seed(seed)`.
  * Generators are seeded with seed*16 + stream; the input (stream 2) is drawn on the CPU for
    every device. Weights, input and output files are byte-reproducible (torch 1.13 and 2.11 give
    identical weights); TorchScript archives are not (TorchScript orders some attributes by hash).
  * ONNX (`--onnx 13,17`: model_opset13.onnx, model_opset17.onnx) is written by torch.onnx.export's
    TorchScript-based exporter with a dynamic batch axis ("batch") on `input` and `output`, the
    weights as initializers, and training=TrainingMode.PRESERVE: in its default (EVAL) mode the
    exporter folds every BatchNorm into the convolution before it and names the folded tensors
    "onnx::Conv_193"; PRESERVE (with the model in eval mode) keeps BatchNorm nodes in their
    inference form and every initializer under its state_dict name, so the weights file serves
    the ONNX model too. The exporter still deduplicates initializers of equal value, writing an
    Identity node per extra name. `--onnx-folded` also writes model_folded.onnx in the default
    mode, for zoc's test that such a model is computed correctly under other layer names.
  * The harness's segmentation networks (zoo.SEGMENTATION: DeepLabV3-MobileNetV3-Large,
    FCN-ResNet50; torchvision's defaults, 21 classes, no auxiliary head) follow the zoo's recipe;
    their forward returns {"out": map}, and output.npy holds that map, [N, 21, H, W].
  * Random weights + white-noise input make the logits mostly input-independent (global pooling
    averages the per-input part away); meta.json's output.batch_centered_std says how much is left.
"""

import argparse
import json
import math
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402  (sibling module)
import zoo  # noqa: E402  (sibling module: the CNN zoo's models and weights recipe)

RESNETS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")
ZOO = tuple(m for m in zoo.NAMES if m not in RESNETS) + zoo.SEGMENTATION
MODELS = ("lenet",) + RESNETS + ZOO
DEFAULTS = {  # (num_classes, in_channels, resolution)
    "lenet": (10, 1, 28),
    "resnet": (1000, 3, 224),
}


class LeNet(nn.Module):
    """conv(5x5, 32) -> relu -> pool -> conv(5x5, 64) -> relu -> pool -> fc 1024 -> relu -> dropout -> fc."""

    def __init__(self, in_channels=1, num_classes=10, resolution=28):
        super().__init__()
        side = resolution // 2 // 2  # two 2x2 max-pools (floor, like PyTorch)
        if side < 1:
            raise ValueError("LeNet needs --resolution >= 4, got %d" % resolution)
        self.conv1 = nn.Conv2d(in_channels, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(64 * side * side, 1024)
        self.dropout = nn.Dropout(0.5)
        self.fc2 = nn.Linear(1024, num_classes)

    def forward(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = torch.flatten(x, 1)  # NCHW order
        x = self.dropout(self.relu(self.fc1(x)))
        return self.fc2(x)


def stream_generator(seed, stream):
    """An independent CPU generator per purpose (1: BatchNorm values, 2: input)."""
    return torch.Generator().manual_seed(seed * 16 + stream)


def randomize_batchnorm(model, seed):
    """Give every BatchNorm non-trivial affine params and running statistics (see docstring)."""
    from torchvision.models.resnet import BasicBlock, Bottleneck

    blocks = [m for m in model.modules() if isinstance(m, (BasicBlock, Bottleneck))]
    branch_last = {id(b.bn2 if isinstance(b, BasicBlock) else b.bn3) for b in blocks}
    branch_scale = 1.0 / math.sqrt(len(blocks)) if blocks else 1.0
    g = stream_generator(seed, 1)
    with torch.no_grad():
        for module in model.modules():  # registration order: deterministic
            if not isinstance(module, nn.BatchNorm2d):
                continue
            shape = module.weight.shape
            scale = branch_scale if id(module) in branch_last else 1.0
            module.weight.copy_((torch.rand(shape, generator=g) + 0.5) * scale)
            module.bias.copy_(torch.randn(shape, generator=g) * 0.1)
            module.running_mean.copy_(torch.randn(shape, generator=g) * 0.1)
            module.running_var.copy_(torch.rand(shape, generator=g) + 0.5)


def build_model(args, seed):
    """The network for `args`, weights drawn from `seed`, in eval mode on the CPU."""
    if args.model in ZOO:  # models/zoo.py's recipe; the state dict written is what eval runs
        model, ran = zoo.calibrated(args.model, seed, args.resolution)
        model.zoc_keys = zoo.used_keys(model, ran)  # what state_dict_arrays writes
        return model
    torch.manual_seed(seed)
    if args.model == "lenet":
        model = LeNet(args.in_channels, args.num_classes, args.resolution)
    else:
        import torchvision

        model = getattr(torchvision.models, args.model)(weights=None, num_classes=args.num_classes)
        if args.in_channels != 3:
            model.conv1 = nn.Conv2d(args.in_channels, 64, 7, 2, 3, bias=False)
            nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
        randomize_batchnorm(model, seed)
    return model.float().eval()


def make_input(args):
    shape = (args.batch, args.in_channels, args.resolution, args.resolution)
    return torch.randn(shape, generator=stream_generator(args.seed, 2), dtype=torch.float32)


def set_deterministic(device):
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("export.py: --device cuda but torch.cuda.is_available() is False")


def run_model(model, x, device):
    """Eval-mode fp32 forward on `device`; returns a CPU tensor. Leaves the model on the CPU."""
    with torch.no_grad():
        y = zoo.main_output(model.to(device)(x.to(device))).float().cpu()
    model.cpu()
    return y


def output_stats(y):
    y64 = y.double()
    return {
        "shape": list(y.shape),
        "mean": float(y64.mean()),
        "std": float(y64.std()) if y.numel() > 1 else 0.0,
        "min": float(y64.min()),
        "max": float(y64.max()),
        "abs_max": float(y64.abs().max()),
        # A class per sample; a segmentation map's per-pixel argmax is too long to list.
        "argmax": [int(i) for i in y.argmax(dim=1)] if y.dim() == 2 else None,
        # How much of the output depends on the input: std of y minus its batch mean. With
        # random weights and white-noise input this is small next to "std" (global pooling
        # averages the per-input part away), so also compare batch-centered outputs.
        "batch_centered_std": float((y64 - y64.mean(0)).std()) if y.shape[0] > 1 else None,
    }


def check_output_sane(y):
    if not torch.isfinite(y).all():
        raise SystemExit("export.py: output has non-finite values")
    std = float(y.double().std()) if y.numel() > 1 else 1.0
    if not 1e-3 <= std <= 1e3 or float(y.abs().max()) > 1e4:
        print("export.py: warning: output std %.3g / abs max %.3g is outside the sane range"
              % (std, float(y.abs().max())), file=sys.stderr)


# --- atomic file writing ---------------------------------------------------------------------

def atomic_write(path, write):
    """Call write(binary_file) on a temp file next to `path`, fsync, then rename over `path`."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def save_npy(path, array):
    atomic_write(path, lambda f: np.save(f, np.ascontiguousarray(array), allow_pickle=False))


def save_json(path, obj):
    text = json.dumps(obj, indent=2, sort_keys=True) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def state_dict_arrays(model, keys=None):
    """state_dict as numpy: floating tensors as float32, integers kept (num_batches_tracked: I64).
    Only `keys` if given; a zoo model's are those of the modules its eval-mode forward runs (no
    auxiliary heads: build_model's zoc_keys)."""
    keys = getattr(model, "zoc_keys", None) if keys is None else keys
    out = {}
    for name, t in model.state_dict().items():
        if keys is not None and name not in keys:
            continue
        t = t.detach().cpu()
        out[name] = (t.float() if t.is_floating_point() else t).contiguous().numpy()
    return out


def save_torchscript(model, x, mode, out_dir):
    """Write model.pt (torch.jit.script) and/or model_traced.pt (torch.jit.trace) from the CPU.
    A segmentation network's dict output is traced with strict=False (the tracer refuses a dict
    otherwise); its scripted form builds that dict with aten::_set_item, which zoc follows."""
    written = []
    with warnings.catch_warnings():  # torch >= 2.10 deprecates torch.jit; zoc still reads it
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*torch.jit.*")
        if mode in ("script", "both"):
            written.append(_save_one(torch.jit.script(model), "model.pt", out_dir))
        if mode in ("trace", "both"):
            with torch.no_grad():
                dense = ".segmentation." in type(model).__module__  # torchvision's FCN, ...
                traced = torch.jit.trace(model, x, strict=not dense)
            written.append(_save_one(traced, "model_traced.pt", out_dir))
    return written


def save_onnx(model, x, opsets, folded, out_dir):
    """Write model_opset<N>.onnx per opset (BatchNorm kept, state_dict names) and, with `folded`,
    model_folded.onnx (the exporter's default eval mode: BatchNorm folded into convolutions)."""
    import inspect

    kwargs = dict(input_names=["input"], output_names=["output"], export_params=True,
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # torch >= 2.5 has a second exporter; this is the one described
    runs = [("model_opset%d.onnx" % o, o, torch.onnx.TrainingMode.PRESERVE) for o in opsets]
    if folded:
        runs.append(("model_folded.onnx", max(opsets), torch.onnx.TrainingMode.EVAL))
    written = []
    for name, opset, mode in runs:
        def write(f, opset=opset, mode=mode):
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, x, f, opset_version=opset, training=mode, **kwargs)
        atomic_write(os.path.join(out_dir, name), write)
        written.append(name)
    model.eval()  # the exporter restores the mode, but be sure
    return written


def _save_one(module, name, out_dir):
    atomic_write(os.path.join(out_dir, name), lambda f: torch.jit.save(module, f))
    return name


# --- self-check ------------------------------------------------------------------------------

def self_check(args, out_dir, reference, written):
    """Reload everything written and assert it reproduces `reference`."""
    tensors, metadata = safetensors_io.load_file(os.path.join(out_dir, "weights.safetensors"))
    fresh = build_model(args, args.seed + 1)  # different seed: the loaded weights must matter
    kept = getattr(fresh, "zoc_keys", None)
    expected = {k: v for k, v in fresh.state_dict().items() if kept is None or k in kept}
    if set(tensors) != set(expected):
        raise AssertionError("state_dict names differ: %s" % sorted(set(tensors) ^ set(expected)))
    for name, ref in expected.items():
        got = torch.from_numpy(tensors[name])
        if tuple(got.shape) != tuple(ref.shape) or got.is_floating_point() != ref.is_floating_point():
            raise AssertionError("%s: %s %s vs model %s %s" % (name, got.dtype, tuple(got.shape),
                                                               ref.dtype, tuple(ref.shape)))
    fresh.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()},
                          strict=kept is None)
    x = torch.from_numpy(np.load(os.path.join(out_dir, "input.npy")))
    stored = torch.from_numpy(np.load(os.path.join(out_dir, "output.npy")))
    y = run_model(fresh, x, args.device)
    if not torch.equal(y, reference) or not torch.equal(stored, reference):
        raise AssertionError("reloaded model does not reproduce output.npy (max abs diff %.3g)"
                             % float((y - reference).abs().max()))
    for name in [w for w in written if w.endswith(".onnx")]:  # ONNX: ONNX's own checker
        import onnx

        onnx.checker.check_model(onnx.load(os.path.join(out_dir, name)))
        print("check: %s passes onnx.checker" % name)
    for name in [w for w in written if w.endswith(".pt")]:  # TorchScript: may differ in last bits
        with warnings.catch_warnings(), torch.no_grad():
            warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*torch.jit.*")
            ys = torch.jit.load(os.path.join(out_dir, name), map_location="cpu")(x)
        ys = (ys[0] if isinstance(ys, tuple) else zoo.main_output(ys)).float()  # GoogLeNet: a
        # namedtuple; a segmentation network: {"out": map}
        rel = float((ys - reference).norm() / reference.norm().clamp_min(1e-30))
        if rel > 1e-5:
            raise AssertionError("%s: relative L2 error %.3g against output.npy" % (name, rel))
        print("check: %s reproduces output (rel L2 %.2g)" % (name, rel))
    print("check: weights.safetensors (%d tensors, metadata %s) reproduces output.npy exactly"
          % (len(tensors), sorted(metadata)))


# --- main ------------------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--num-classes", type=int, help="default 1000 (lenet: 10)")
    p.add_argument("--in-channels", type=int, help="default 3 (lenet: 1)")
    p.add_argument("--resolution", type=int, help="input height = width; default 224 (lenet: 28)")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument("--torchscript", choices=("script", "trace", "both", "none"), default="script")
    p.add_argument("--onnx", default="none",
                   help="ONNX opsets to export, comma-separated (e.g. 13,17), or none")
    p.add_argument("--onnx-folded", action="store_true",
                   help="also write model_folded.onnx, BatchNorm folded by the exporter")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the reference output is computed (fp32, TF32 off)")
    p.add_argument("--check", action="store_true", help="reload what was written and verify it")
    args = p.parse_args(argv)
    classes, channels, resolution = DEFAULTS["lenet" if args.model == "lenet" else "resnet"]
    num_classes_given = args.num_classes
    args.num_classes = classes if args.num_classes is None else args.num_classes
    args.in_channels = channels if args.in_channels is None else args.in_channels
    args.resolution = resolution if args.resolution is None else args.resolution
    for flag in ("num_classes", "in_channels", "resolution", "batch"):
        if getattr(args, flag) < 1:
            p.error("--%s must be >= 1" % flag.replace("_", "-"))
    if args.model in zoo.SEGMENTATION:  # torchvision's default head: 21 classes
        args.num_classes = 21 if num_classes_given is None else args.num_classes
        if args.num_classes != 21 or args.in_channels != 3:
            p.error("the segmentation networks (%s) have 3 input channels and 21 classes"
                    % args.model)
    elif args.model in ZOO and (args.num_classes != 1000 or args.in_channels != 3):
        p.error("the zoo's models (%s) have 3 input channels and 1000 classes" % args.model)
    if args.model == "lenet" and args.resolution < 4:
        p.error("--resolution must be >= 4 for lenet (two 2x2 max-pools)")
    if args.seed < 0:
        p.error("--seed must be >= 0")
    try:
        args.onnx = [] if args.onnx == "none" else sorted({int(o) for o in args.onnx.split(",")})
    except ValueError:
        p.error("--onnx takes opset numbers separated by commas, or none")
    if args.onnx_folded and not args.onnx:
        p.error("--onnx-folded needs --onnx")
    return args


def versions():
    import torchvision

    return {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "numpy": np.__version__, "python": sys.version.split()[0]}


def main(argv=None):
    start = time.time()
    args = parse_args(argv)
    set_deterministic(args.device)
    os.makedirs(args.out, exist_ok=True)

    model = build_model(args, args.seed)
    x = make_input(args)
    y = run_model(model, x, args.device)
    check_output_sane(y)
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    ver = versions()

    weights_meta = {"format": "pt", "model": args.model, "seed": str(args.seed),
                    "torch": ver["torch"], "torchvision": ver["torchvision"]}
    safetensors_io.save_file(state_dict_arrays(model), os.path.join(args.out, "weights.safetensors"),
                             metadata=weights_meta)
    save_npy(os.path.join(args.out, "input.npy"), x.numpy())
    save_npy(os.path.join(args.out, "output.npy"), y.numpy())
    written = ["weights.safetensors", "input.npy", "output.npy"]
    scripts = save_torchscript(model, x, args.torchscript, args.out)
    scripts += save_onnx(model, x, args.onnx, args.onnx_folded, args.out) if args.onnx else []
    written += scripts + ["meta.json"]

    stats = output_stats(y)
    meta = {
        "model": args.model, "num_classes": args.num_classes, "in_channels": args.in_channels,
        "resolution": args.resolution, "batch": args.batch, "seed": args.seed,
        "device": args.device, "dtype": "float32", "tf32": False,
        "input_shape": list(x.shape), "output": stats, "param_count": params,
        "versions": ver, "files": written,
        "init": "lenet: PyTorch default" if args.model == "lenet" else
                "models/zoo.py's recipe" if args.model in ZOO else
                "torchvision default; BatchNorm randomized (see export.py docstring)",
    }
    save_json(os.path.join(args.out, "meta.json"), meta)
    if args.check:
        self_check(args, args.out, y, scripts)

    print("export: %s params=%s output=%s std=%.4g files=%s -> %s (%.1fs)" % (
        args.model, format(params, ","), "x".join(map(str, stats["shape"])), stats["std"],
        ",".join(written), args.out, time.time() - start))


if __name__ == "__main__":
    main()
