#!/usr/bin/env python3
"""One training step of a torchvision classifier of the CNN zoo by PyTorch autograd, fp32 and
float64: the oracle of zoc's generated trainers on the zoo (tests/train/gpu_zoo_nets_check.sh),
as grad_reference.py is for LeNet and ResNet-50.

The network is models/zoo.py's (torchvision's constructor under a seed, then its randomized
BatchNorm and LayerNorm affine parameters, calibrated statistics and ConvNeXt layer scales), with
GoogLeNet's and Inception v3's auxiliary heads removed (zoc compiles the main output only), or,
for `timm:NAME`, timm's model with its own initialization under the seed (a machine with timm). The
step: BatchNorm in training mode, dropout and stochastic depth the identity (no other
implementation can draw PyTorch's masks), softmax cross-entropy averaged over a seeded batch
(N(0, 1) images, uniform labels over the 1000 classes), backward; TF32 off, deterministic cuDNN.

Writes, for each MODEL: OUT/MODEL/init.safetensors (the state_dict the step starts from, which
the trainer loads), OUT/MODEL/ref32.safetensors and ref64.safetensors in grad_reference.py's
format (`input`, `labels`, `logits`, `loss`, `grad.<name>`, `after.<buffer>`).

  zoo_grad_reference.py --out OUT [--batch 8] [--seed 0] [timm:]MODEL[:RESOLUTION] ...
  (OUT/MODEL without the timm: prefix)
"""

import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "models"))
import nets  # noqa: E402
import zoo  # noqa: E402


def network(name, seed, resolution):
    if name.startswith("timm:"):  # timm's own initialization under the seed, no dropout
        import timm
        torch.manual_seed(seed)
        # drop_rate 0: timm's classifier heads call F.dropout, which no module switch reaches
        return timm.create_model(name[len("timm:"):], pretrained=False, drop_rate=0.0)
    model, _ = zoo.calibrated(name, seed, resolution)
    for aux in ("aux1", "aux2", "AuxLogits"):  # GoogLeNet's and Inception v3's training heads
        if hasattr(model, aux):
            setattr(model, aux, None)
    if hasattr(model, "aux_logits"):
        model.aux_logits = False
    return model


def step(model, x, y, dtype):
    """(tensors, loss) of one training step of a copy of model in dtype on the GPU."""
    net = model.to(dtype=dtype).cuda()
    net.train()
    for m in net.modules():  # the identity: see the docstring
        if isinstance(m, nn.modules.dropout._DropoutNd) or type(m).__name__ == "StochasticDepth":
            m.eval()
    logits = net(x.cuda().to(dtype))
    if not torch.is_tensor(logits):  # a namedtuple in training mode (GoogLeNet, Inception v3)
        logits = logits[0]
    loss = F.cross_entropy(logits, y.cuda())
    loss.backward()
    out = {"input": x.numpy(), "labels": y.numpy().astype(np.int32),
           "logits": logits.detach().cpu().float().numpy(),
           "loss": loss.detach().cpu().float().reshape(1).numpy()}
    for name, p in net.named_parameters():
        if p.grad is None:
            raise ValueError("parameter %s received no gradient" % name)
        out["grad." + name] = p.grad.detach().cpu().float().numpy()
    for name, b in net.named_buffers():
        t = b.detach().cpu()
        out["after." + name] = (t.float() if t.is_floating_point() else t).numpy()
    return out, float(loss)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="+", help="MODEL or MODEL:RESOLUTION (default 64)")
    p.add_argument("--out", required=True)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    for spec in a.models:
        name, _, res = spec.rpartition(":") if spec.count(":") > spec.startswith("timm:") \
            else (spec, "", "")
        res = int(res or 64)
        folder = os.path.join(a.out, name.split(":")[-1])
        os.makedirs(folder, exist_ok=True)
        model = network(name, a.seed, res)
        nets.save(model, os.path.join(folder, "init.safetensors"), {"model": name})
        g = torch.Generator().manual_seed(a.seed * 16 + 5)
        x = torch.randn((a.batch, 3, res, res), generator=g, dtype=torch.float32)
        y = torch.randint(0, 1000, (a.batch,), generator=g, dtype=torch.int64)
        for dtype, file in ((torch.float32, "ref32"), (torch.float64, "ref64")):
            fresh = copy.deepcopy(model)  # the same weights, never stepped before
            tensors, loss = step(fresh, x, y, dtype)
            meta = {"model": name, "seed": str(a.seed), "batch": str(a.batch),
                    "resolution": str(res), "dropout": "identity", "tf32": "off",
                    "torch": torch.__version__, "dtype": str(dtype)}
            nets.safetensors_io.save_file(tensors, os.path.join(folder, file + ".safetensors"),
                                          metadata=meta)
        print("zoo_grad_reference: %s %dx%d batch %d loss %.6f" % (name, res, res, a.batch, loss))


if __name__ == "__main__":
    main()
