#!/usr/bin/env python3
"""Write the forms of issues 36 and 37 (tests/forms/forms.py) for the forms test.

Per form, into OUT/<form>/: `model.pt` (torch.jit.script), `model_traced.pt` (torch.jit.trace),
`model.onnx` (torch.onnx.export, opset 17, BatchNorm kept as models/export.py keeps it),
`input.npy`, and PyTorch's eval-mode fp32 outputs `output_<k>.npy` in the order the model
returns them (a dict's values in insertion order; argmax's int64 as float32). A route that
PyTorch itself cannot export is left without its file, and meta.json says why: zoc cannot be
judged on a file that does not exist. Weights: PyTorch's default init under the seed, then
every norm's affine parameters ~ U(0.5, 1.5) / N(0, 0.1), BatchNorm statistics random (and, for
the torchvision models, calibrated as models/zoo.py does) so that no norm is the identity.
"""

import argparse
import json
import os
import sys
import warnings

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))
from export import atomic_write, save_npy, set_deterministic  # noqa: E402
from forms import FORMS, SEGMENTATION  # noqa: E402

SIZE = (20, 28)  # non-square, small: every form; the segmentation models take SEG_SIZE
SEG_SIZE = (64, 96)
NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.GroupNorm, nn.LayerNorm, nn.InstanceNorm2d)


def randomize_norms(model, seed):
    g = torch.Generator().manual_seed(seed * 16 + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, NORMS) and getattr(m, "weight", None) is not None:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)


def build(name, seed):
    torch.manual_seed(seed)
    if name in SEGMENTATION:
        import torchvision
        from zoo import randomize
        model = getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None).float().eval()
        calibration = torch.randn((4, 3) + SEG_SIZE,
                                  generator=torch.Generator().manual_seed(seed * 16 + 3))
        randomize(model, calibration, seed)
        return model, SEG_SIZE
    model = FORMS[name]().float().eval()
    randomize_norms(model, seed)
    return model, SIZE


def outputs_of(y):
    """The model's outputs as a list of tensors, in the order the model returns them."""
    if isinstance(y, dict):
        return list(y.values())
    if isinstance(y, (tuple, list)):
        return list(y)
    return [y]


def try_write(path, write, notes, key):
    """Writes with `write(f)`; a PyTorch failure is noted in meta.json instead of raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            atomic_write(path, write)
    except Exception as e:  # noqa: BLE001 (the exporter raises many kinds)
        notes[key] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])


def export_one(name, out, seed):
    model, (h, w) = build(name, seed)
    os.makedirs(out, exist_ok=True)
    x = torch.randn((2, 3, h, w), generator=torch.Generator().manual_seed(seed * 16 + 2))
    with torch.no_grad():
        ys = outputs_of(model(x))
    save_npy(os.path.join(out, "input.npy"), x.numpy())
    for k, y in enumerate(ys):
        save_npy(os.path.join(out, "output_%d.npy" % k), y.float().numpy())
    notes = {}
    try_write(os.path.join(out, "model.pt"),
              lambda f: torch.jit.save(torch.jit.script(model), f), notes, "model.pt")
    with torch.no_grad():
        try_write(os.path.join(out, "model_traced.pt"),
                  lambda f: torch.jit.save(torch.jit.trace(model, x, strict=False), f), notes,
                  "model_traced.pt")
        try_write(os.path.join(out, "model.onnx"),
                  lambda f: torch.onnx.export(model, x, f, opset_version=17,
                                              training=torch.onnx.TrainingMode.PRESERVE,
                                              input_names=["input"]), notes, "model.onnx")
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"form": name, "outputs": len(ys), "not_exported": notes,
                   "torch": torch.__version__}, f, indent=1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder of one subfolder per form")
    p.add_argument("--forms", nargs="*", help="default: every form of forms.py")
    p.add_argument("--segmentation", action="store_true", help="also torchvision's four")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    set_deterministic("cpu")
    names = args.forms or list(FORMS) + (list(SEGMENTATION) if args.segmentation else [])
    for name in names:
        export_one(name, os.path.join(args.out, name), args.seed)


if __name__ == "__main__":
    main()
