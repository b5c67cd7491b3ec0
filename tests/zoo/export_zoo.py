#!/usr/bin/env python3
"""Write one torchvision classifier of the CNN zoo for zoc's zoo test (tests/zoo/zoo_test.cpp).

zoc claims that the TorchScript and ONNX routes compile the classic CNN zoo and that its
reference interpreter computes what PyTorch computes. The zoo test judges that per model against
the files this script writes into --out: `model.pt` (torch.jit.script) and `model_traced.pt`
(torch.jit.trace), `model.onnx` and `model_opset13.onnx` (torch.onnx.export at opsets 17 and
13, as models/export.py --onnx writes them: BatchNorm kept, state_dict names, a dynamic batch
axis), `weights.safetensors` (state_dict names), `input.npy`, `output.npy` (PyTorch's fp32
eval-mode output) and `meta.json`. It runs on Debian's torch 1.13 / torchvision 0.14.

Weights: torchvision's default initialization under torch.manual_seed(seed), then made
non-trivial where the default would hide mistakes, from a generator seeded with the seed:
  * every BatchNorm's weight ~ U(0.5, 1.5) and bias ~ N(0, 0.1); its running statistics are
    calibrated on a batch of 16 other inputs, layer after layer in one eval-mode forward
    (pre-hooks), so that no layer's output explodes or vanishes: running_var = the channel's mean
    square + 4 times the layer's average of it, running_mean ~ N(0, 0.1) * the channel's RMS. The
    mean is not removed and the gains stay within a factor of about 2 across channels because
    the alternatives make the models ill-conditioned: with each channel normalized to its own
    variance PyTorch's own fp32 output drifts up to 4e-4 from float64 (ResNet-152), against
    below 2e-6 this way, and a test within 1e-5 of PyTorch needs PyTorch to be that accurate;
  * the last BatchNorm of every residual branch scaled by 1/sqrt(residual blocks), as
    models/export.py does for ResNets (Fixup-style), for the same reason;
  * every LayerNorm's weight ~ U(0.5, 1.5) and bias ~ N(0, 0.1); ConvNeXt's layer_scale
    ~ U(0.1, 1) instead of 1e-6, which would make every block the identity to within 1e-5.
The weights file holds the state_dict of the modules the eval-mode forward runs: GoogLeNet's and
Inception v3's auxiliary heads (aux_logits, torchvision's default without pretrained weights) run
only in training mode, and zoc, which compiles the eval-mode graph, has no layer for them.

Resolution: 64x64 (--resolution), except Inception v3, which PyTorch itself cannot run below
75x75 (its stem shrinks a 64x64 input to nothing): 96x96. AlexNet's and VGG's adaptive average
pooling to 6x6 and 7x7 takes a 1x1 and a 2x2 map there, which torch.onnx.export refuses ("output
size that are not factor of input size"); their ONNX files are exported at 224x224, where the
pooling is the identity, with their own `onnx_input.npy` and `onnx_output.npy`. Every file is
written atomically.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))
import safetensors_io  # noqa: E402  (models/safetensors_io.py)
from export import (atomic_write, save_json, save_npy, save_onnx,  # noqa: E402
                    set_deterministic, state_dict_arrays)
from zoo import build, randomize, used_keys  # noqa: E402  (models/zoo.py)

# The 17 classifiers of issue 20 and the resolution each is compared at.
MODELS = {
    "resnet152": 64, "resnext50_32x4d": 64, "wide_resnet50_2": 64, "regnet_x_400mf": 64,
    "squeezenet1_1": 64, "mobilenet_v2": 64, "mobilenet_v3_small": 64, "efficientnet_b0": 64,
    "regnet_y_400mf": 64, "densenet121": 64, "googlenet": 64, "inception_v3": 96,
    "shufflenet_v2_x1_0": 64, "mnasnet0_5": 64, "convnext_tiny": 64, "alexnet": 64,
    "vgg11_bn": 64,
}
# Where torch.onnx.export cannot export at the model's resolution (see above): the one it takes.
ONNX_RESOLUTION = {"alexnet": 224, "vgg11_bn": 224}


def main_output(y):
    """A scripted GoogLeNet/Inception returns a namedtuple; the logits come first."""
    return y[0] if isinstance(y, tuple) else y


def rel_l2(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30))


def write_onnx(model, x, args):
    """model.onnx (opset 17) and model_opset13.onnx; at ONNX_RESOLUTION where the model has one,
    with that resolution's onnx_input.npy and onnx_output.npy. Returns the ONNX resolution."""
    res = ONNX_RESOLUTION.get(args.model)
    if res:
        x = torch.randn((args.batch, 3, res, res), generator=torch.Generator().manual_seed(
            args.seed * 16 + 4))
        with torch.no_grad():
            y = main_output(model(x)).float()
        save_npy(os.path.join(args.out, "onnx_input.npy"), x.numpy())
        save_npy(os.path.join(args.out, "onnx_output.npy"), y.numpy())
    save_onnx(model, x, [13, 17], False, args.out)
    os.replace(os.path.join(args.out, "model_opset17.onnx"), os.path.join(args.out, "model.onnx"))
    return res or x.shape[-1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument("--resolution", type=int, help="default: the model's (64; inception_v3 96)")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    start = time.time()
    set_deterministic("cpu")
    res = args.resolution or MODELS[args.model]
    os.makedirs(args.out, exist_ok=True)

    model = build(args.model, args.seed)
    calibration = torch.randn((16, 3, res, res), generator=torch.Generator().manual_seed(
        args.seed * 16 + 3))
    ran = randomize(model, calibration, args.seed)
    x = torch.randn((args.batch, 3, res, res), generator=torch.Generator().manual_seed(
        args.seed * 16 + 2))
    with torch.no_grad():
        y = main_output(model(x)).float()
    if not torch.isfinite(y).all():
        raise SystemExit("export_zoo.py: %s gives non-finite outputs" % args.model)

    state = state_dict_arrays(model, used_keys(model, ran))
    safetensors_io.save_file(state, os.path.join(args.out, "weights.safetensors"),
                             metadata={"model": args.model, "seed": str(args.seed)})
    save_npy(os.path.join(args.out, "input.npy"), x.numpy())
    save_npy(os.path.join(args.out, "output.npy"), y.numpy())
    checks = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(model)
        with torch.no_grad():
            traced = torch.jit.trace(model, x)
        for name, module in (("model.pt", scripted), ("model_traced.pt", traced)):
            atomic_write(os.path.join(args.out, name), lambda f, m=module: torch.jit.save(m, f))
            with torch.no_grad():
                checks[name] = rel_l2(main_output(module(x)).float(), y)
    onnx_start = time.time()
    onnx_res = write_onnx(model, x, args)
    onnx_seconds = time.time() - onnx_start
    for name, e in checks.items():  # TorchScript must compute what eager PyTorch does
        if e > 1e-5:
            raise SystemExit("export_zoo.py: %s of %s is %.3g off eager PyTorch" % (name, args.model, e))
    y64 = y.double()
    save_json(os.path.join(args.out, "meta.json"), {
        "model": args.model, "resolution": res, "batch": args.batch, "seed": args.seed,
        "onnx_resolution": onnx_res, "torch": torch.__version__, "tensors": len(state),
        "params": sum(p.numel() for p in model.parameters()),
        "output_std": float(y64.std()),
        "batch_centered_std": float((y64 - y64.mean(0)).std()) if args.batch > 1 else None,
        "torchscript_vs_eager": checks,
    })
    print("export_zoo: %s %dx%d, %d tensors, output std %.3g (batch-centered %.3g), %.1fs "
          "(ONNX %.1fs)" % (args.model, res, res, len(state), float(y64.std()),
                            float((y64 - y64.mean(0)).std()) if args.batch > 1 else 0.0,
                            time.time() - start, onnx_seconds))


if __name__ == "__main__":
    main()
