#!/usr/bin/env python3
"""Fine-tuning on the CPU: scripted networks with parameters of requires_grad=False, which
zoc's training keeps fixed as PyTorch does (frozen_nets says which; case_script_frozen what is
checked), and `--freeze GLOB`, which freezes parameters of any model file (case_freeze_option). Beside test_train.py, whose helpers it uses; tests/train/gpu_zoo_train_check.sh's
prepare step runs it to leave the GPU check's frozen networks and their reference steps.

  test_frozen.py --work DIR --zoc BIN
"""

import argparse
import fnmatch
import glob
import os
import subprocess

import numpy as np

from test_train import ROOT, check, nets, run


def frozen_nets():
    """case_script_frozen's fine-tuning networks, seeded: a partly frozen one (the
    convolution's weight, the layer scale and the classifier have requires_grad=False, the
    convolution's bias trains, so every gradient flows through frozen layers), a frozen
    backbone (convolution and BatchNorm frozen, the classifier trains) and a frozen middle (the
    second of two convolution-BatchNorm blocks frozen, the first and the classifier train), a
    frozen depthwise convolution between trainable layers (zoc's own depthwise kernels in a bf16
    trainer), and the twins of the last two with nothing frozen (the same weights: what their
    bf16 numbers are judged beside)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Partly(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.gamma = nn.Parameter(torch.linspace(0.5, 1.5, 8))
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            x = F.relu(self.conv(x)) * self.gamma.reshape(1, -1, 1, 1)
            return self.fc(x.mean((2, 3)))

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            return self.fc(F.relu(self.bn(self.conv(x))).mean((2, 3)))

    class Middle(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            return self.fc(F.relu(self.bn2(self.conv2(x))).mean((2, 3)))

    class Depthwise(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(8)
            self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
            self.bn2 = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv(x)))
            return self.fc(F.relu(self.bn2(self.dw(x))).mean((2, 3)))

    def spread(bns):  # BatchNorm's affine and statistics away from 1 and 0
        with torch.no_grad():
            for bn in bns:
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)
                bn.running_mean.uniform_(-0.2, 0.2)
                bn.running_var.uniform_(0.5, 1.5)

    torch.manual_seed(1)
    partly, backbone, middle = Partly(), Backbone(), Middle()
    spread((backbone.bn, middle.bn1, middle.bn2))
    depthwise = Depthwise()  # drawn after the others, so that they keep their weights
    spread((depthwise.bn1, depthwise.bn2))
    import copy
    free_middle, free_depthwise = copy.deepcopy(middle), copy.deepcopy(depthwise)
    partly.conv.weight.requires_grad_(False)
    partly.gamma.requires_grad_(False)
    partly.fc.requires_grad_(False)
    backbone.conv.requires_grad_(False)
    backbone.bn.requires_grad_(False)
    middle.conv2.requires_grad_(False)
    middle.bn2.requires_grad_(False)
    depthwise.dw.requires_grad_(False)
    return {"partly": partly, "backbone": backbone, "middle": middle, "free_middle": free_middle,
            "depthwise": depthwise, "free_depthwise": free_depthwise}


def case_script_frozen(a):
    """Fine-tuning: scripted networks with parameters of requires_grad=False (frozen_nets).
    `zoc grad` of each against PyTorch float64 autograd in training mode: the gradient of every
    parameter that trains within 1e-5, none for a frozen one, the frozen parameters unchanged
    and BatchNorm's running statistics updated as PyTorch's; the frozen backbone's training
    graph has no backward node for its frozen layers, the frozen middle's and the partly frozen
    one's no gradient or update of a frozen parameter; fp32 trainers are written with exactly
    the trainable parameters in SGD's range and SGD inside the backward pass on, and bf16 ones
    where the network has no convolution bias; a network with every
    parameter frozen is refused. Leaves in --work what tests/train/gpu_zoo_train_check.sh's
    frozen cases take: NAME.pt, NAME.init.safetensors (its state_dict), NAME.frozen.txt (its
    frozen parameters), batch.safetensors and NAME.grad.safetensors (`zoc grad`'s step, the GPU
    trainers' reference)."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(7)
    batch = {"input": rng.standard_normal((4, 3, 8, 8)).astype(np.float32),
             "labels": rng.integers(0, 10, 4).astype(np.int32)}
    batch_path = os.path.join(a.work, "batch.safetensors")
    nets.safetensors_io.save_file(batch, batch_path)
    shape = ["--input", "3x8x8"]
    worst = 0.0
    for name, net in frozen_nets().items():
        path = os.path.join(a.work, name + ".pt")
        torch.jit.script(net.eval()).save(path)
        net64 = net.double().train()
        before = {k: v.detach().clone() for k, v in net64.state_dict().items()}
        loss = F.cross_entropy(net64(torch.tensor(batch["input"], dtype=torch.float64)),
                               torch.tensor(batch["labels"]).long())
        loss.backward()
        ref = {"grad." + k: p.grad.numpy() for k, p in net64.named_parameters()
               if p.requires_grad}
        ref.update({"after." + k: v.numpy() for k, v in net64.state_dict().items()
                    if "running" in k})
        frozen = {"after." + k: before[k].numpy() for k, p in net64.named_parameters()
                  if not p.requires_grad}
        got = os.path.join(a.work, name + ".grad.safetensors")
        run([a.zoc, "grad", path] + shape + ["--batch-file", batch_path, "-o", got])
        z, _ = nets.safetensors_io.load_file(got)
        grads = {k for k in z if k.startswith("grad.")}
        check(grads == {k for k in ref if k.startswith("grad.")}, "%s: gradients %s, want %s"
              % (name, sorted(grads), sorted(k for k in ref if k.startswith("grad."))))
        err = {k: float(np.linalg.norm(z[k].astype(np.float64) - v) / np.linalg.norm(v))
               for k, v in ref.items()}
        err["loss"] = abs(float(z["loss"].ravel()[0]) - loss.item()) / loss.item()
        bad = {k: e for k, e in err.items() if not e <= 1e-5}
        check(not bad, "%s against PyTorch float64: %s" % (name, bad))
        for k, v in frozen.items():
            check(k in z and np.array_equal(z[k], v.astype(np.float32)),
                  "%s: frozen %s is not written unchanged" % (name, k))
        worst = max([worst] + list(err.values()))
        init = os.path.join(a.work, name + ".init.safetensors")
        run([a.zoc, "extract-weights", path, "-o", init])
        with open(os.path.join(a.work, name + ".frozen.txt"), "w") as f:
            f.write("".join(k[len("after."):] + "\n" for k in sorted(frozen)))
        run([a.zoc, "compile", path] + shape + ["--train", "-o", path + ".trainer"])
        # SGD's range holds exactly the parameters that train; SGD inside the backward pass
        # stays on (no backward call writes a frozen gradient); the frozen middle's BatchNorm
        # writes its dgamma and dbeta, which cuDNN computes together, to a discard buffer (each
        # padded to 16 floats).
        header = open(glob.glob(path + ".trainer/*_train.h")[0]).read()
        trained = sum(p.numel() for p in net64.parameters() if p.requires_grad)
        check("kTrainableElements = %d;" % trained in header, "%s: kTrainableElements is not %d"
              % (name, trained))
        check("kGradWindowElements = 0;" not in header, "%s: in-backward SGD off" % name)
        discard = 2 * 16 if name == "middle" else 0
        check("kGradDiscardElements = %d;" % discard in header, "%s: kGradDiscardElements is "
              "not %d" % (name, discard))
        if name != "partly":  # (bf16 trainers refuse a convolution's bias)
            run([a.zoc, "compile", path] + shape + ["--train", "--precision", "bf16", "-o",
                                                    path + ".bf16"])
    ir = {}
    for name in ("partly", "backbone", "middle", "depthwise"):
        ir[name] = subprocess.run([a.zoc, "ir", os.path.join(a.work, name + ".pt")] + shape +
                                  ["--train"], stdout=subprocess.PIPE, text=True,
                                  check=True).stdout
    check("frozen conv.weight" in ir["backbone"], "conv.weight is not marked frozen:\n" +
          ir["backbone"])
    for op in ("conv2d_grad", "batchnorm2d_grad", "relu_grad", "grad.conv.weight"):
        check(op not in ir["backbone"], "the frozen backbone's training graph has %s:\n%s"
              % (op, ir["backbone"]))
    check("linear_grad" in ir["backbone"], "no linear_grad in:\n" + ir["backbone"])
    for unwanted in ("grad.conv.weight", "grad.gamma", "grad.fc.weight", "grad.fc.bias"):
        check(unwanted not in ir["partly"], "the partly frozen training graph has %s:\n%s"
              % (unwanted, ir["partly"]))
    check("grad.conv.bias" in ir["partly"], "no grad.conv.bias in:\n" + ir["partly"])
    check("grad.dw.weight" not in ir["depthwise"] and "grad.bn2.weight" in ir["depthwise"],
          "the frozen depthwise convolution's training graph:\n" + ir["depthwise"])
    for want in ("grad.conv1.weight", "sgd", "updated.bn1.weight"):
        check(want in ir["middle"], "the frozen middle's training graph lacks %s" % want)
    # A frozen layer between trainable ones passes dx on and computes no gradient of its own.
    for unwanted in ("updated.conv2.weight", "updated.bn2.weight", "grad.conv2.weight",
                     "grad.bn2.weight", "grad.bn2.bias"):
        check(unwanted not in ir["middle"], "the frozen middle's training graph has %s"
              % unwanted)
    # Nothing left to train: refused, as PyTorch's optimizer refuses an empty parameter list.
    net = frozen_nets()["backbone"]
    net.fc.requires_grad_(False)
    path = os.path.join(a.work, "all_frozen.pt")
    torch.jit.script(net.eval()).save(path)
    want = "every parameter of model 'all_frozen' is frozen (requires_grad=False or --freeze)"
    for cmd in (["compile", path] + shape + ["--train", "-o", path + ".trainer"],
                ["grad", path] + shape + ["--batch-file", batch_path, "-o", path + ".g"]):
        r = subprocess.run([a.zoc] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        check(r.returncode != 0 and want in r.stderr, "zoc %s: exit %d, stderr:\n%s"
              % (cmd[0], r.returncode, r.stderr))
        check(not os.path.exists(cmd[-1]), "zoc %s wrote %s" % (cmd[0], cmd[-1]))
    print("ok: frozen parameters kept fixed, no backward through a frozen backbone, %d nets "
          "within %.3g of PyTorch float64; fp32 and bf16 trainers written"
          % (len(frozen_nets()), worst))


def case_freeze_option(a):
    """`--freeze GLOB` freezes what a model file cannot mark (YAML, ONNX) as requires_grad=False
    does: the scripted free_middle with --freeze 'conv2.*' --freeze 'bn2.*' gives `zoc grad`'s
    file of the scripted middle byte for byte (case_script_frozen left both in --work); freezing
    a layer of models/lenet.yaml and of an ONNX network leaves every other gradient exactly as
    without it, with no gradient for the frozen tensors and each written unchanged; a pattern
    that matches nothing is refused, and --freeze without --train too."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def grad(model, out, extra):
        run([a.zoc, "grad", model] + extra + ["-o", out])
        return nets.safetensors_io.load_file(out)[0]

    w = a.work
    got = grad(os.path.join(w, "free_middle.pt"), os.path.join(w, "freeze.st"),
               ["--input", "3x8x8", "--batch-file", os.path.join(w, "batch.safetensors"),
                "--freeze", "conv2.*", "--freeze", "bn2.*"])
    with open(os.path.join(w, "freeze.st"), "rb") as f1, \
            open(os.path.join(w, "middle.grad.safetensors"), "rb") as f2:
        check(f1.read() == f2.read(), "--freeze differs from requires_grad=False: %s" % sorted(got))

    class Plain(nn.Module):  # (no BatchNorm: nothing for the ONNX exporter to fold)
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            x = F.relu(self.conv2(F.relu(self.conv1(x))))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    torch.manual_seed(3)
    onnx_path = os.path.join(w, "plain.onnx")
    torch.onnx.export(Plain().eval(), torch.zeros(1, 3, 8, 8), onnx_path)
    rng = np.random.default_rng(9)
    lenet_batch = os.path.join(w, "lenet_batch.safetensors")
    nets.safetensors_io.save_file(
        {"input": rng.standard_normal((4, 1, 28, 28)).astype(np.float32),
         "labels": rng.integers(0, 10, 4).astype(np.int32)}, lenet_batch)
    lenet = os.path.join(ROOT, "models", "lenet.yaml")
    cases = [(lenet, ["--batch-file", lenet_batch, "--seed", "4"], "conv2.*"),
             (onnx_path, ["--batch-file", os.path.join(w, "batch.safetensors")], "conv2.*")]
    for model, extra, pattern in cases:
        free = grad(model, os.path.join(w, "free.st"), extra)
        frozen = grad(model, os.path.join(w, "frozen.st"), extra + ["--freeze", pattern])
        names = [k[len("grad."):] for k in free if k.startswith("grad.")]
        hit = [n for n in names if fnmatch.fnmatch(n, pattern)]
        check(hit and all("grad." + n not in frozen and "after." + n in frozen for n in hit),
              "%s: frozen %s, got %s" % (model, hit, sorted(frozen)))
        for k, v in free.items():
            if k.startswith("grad.") and k[len("grad."):] not in hit:
                check(np.array_equal(frozen[k], v), "%s: %s changed by --freeze" % (model, k))
    for cmd, want in ((["grad", lenet, "--batch-file", lenet_batch, "--freeze", "conv9.*"],
                       "'conv9.*' matches no trainable parameter of model 'lenet'"),
                      (["compile", lenet, "--freeze", "conv1.*"], "--freeze requires --train")):
        r = subprocess.run([a.zoc] + cmd + ["-o", os.path.join(w, "refused")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(r.returncode != 0 and want in r.stderr, "zoc %s: exit %d, stderr:\n%s"
              % (cmd[0], r.returncode, r.stderr))
        check(not os.path.exists(os.path.join(w, "refused")), "zoc %s wrote" % cmd[0])
    print("ok: --freeze equals requires_grad=False; on YAML and ONNX it leaves every other "
          "gradient as it was")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", required=True)
    p.add_argument("--zoc", required=True)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    case_script_frozen(a)
    case_freeze_option(a)


if __name__ == "__main__":
    main()
